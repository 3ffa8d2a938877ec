/* main.c - the cypatch command: subcommand dispatch, --help, --version. */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: cypatch [--version] [--help] COMMAND [ARGS]\n"
	"       cypatch --target-layout LAYOUT|fallback [-o OUT | --in-place] [--dry-run] EXT.so\n"
	"       cypatch repair -w DIR -t LAYOUT|fallback WHEEL...\n"
	"\n"
	"Repairs compiled Cython extensions whose provider modules moved between\n"
	"layouts (cuda-python's cuda.ccudart -> cuda.bindings.cyruntime, ...).\n"
	"\n"
	"commands:\n"
	"  show    list what an extension references, per layout\n"
	"  repair  patch the extensions of wheels (auditwheel-style)\n"
	"  check   predict, from the files, whether it binds under a site-packages\n"
	"  verify  import it under an interpreter and prove every binding (--gpu)\n"
	"  --target-layout LAYOUT   rewrite an extension to bind to LAYOUT\n"
	"          (legacy or bindings; 'cypatch --target-layout --help')\n"
	"\n"
	"'cypatch COMMAND --help' describes a command. Exit codes: docs/exit-codes.md.\n";

/* git's rule: output that did not reach stdout (`> /dev/full`, a closed
 * pipe's reader gone with SIGPIPE ignored) is a failure, not a success.
 * A command that failed already said so on its one line: rc stands. */
static int flushed(int rc)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);
	int saved = errno;

	if (fclose(stdout) != 0 && !bad) {
		bad = 1;
		saved = errno;
	}
	if (!bad || rc)
		return rc;
	fprintf(stderr, "cypatch: writing to stdout failed: %s\n", strerror(saved ? saved : EIO));
	return CP_E_IO;
}

static int dispatch(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return CP_E_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("cypatch %s\n", CYPATCH_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "show"))
		return cmd_show(argc - 1, argv + 1);
	if (!strcmp(argv[1], "repair"))
		return cmd_repair(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify"))
		return cmd_verify(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-t") || !strncmp(argv[1], "--target-layout", 15))
		return cmd_retarget(argc, argv);
	fprintf(stderr, "cypatch: '%s' is not a command (see 'cypatch --help')\n", argv[1]);
	return CP_E_USAGE;
}

int main(int argc, char **argv)
{
	return flushed(dispatch(argc, argv));
}
