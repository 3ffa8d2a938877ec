/* main.c - the cypatch command: subcommand dispatch from a table, --help,
 * --version. */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* The subcommands, in the order the usage lists them: its "commands:"
 * lines are made from this table (names of at most eight characters). */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "show", cmd_show, "list what an extension references, per layout" },
	{ "repair", cmd_repair, "patch the extensions of wheels (auditwheel-style)" },
	{ "check", cmd_check, "predict, from the files, whether it binds under a site-packages" },
	{ "verify", cmd_verify, "import it under an interpreter and prove every binding (--gpu)" },
	{ "releases", cmd_releases, "list the cuda-python releases cypatch knows and what each exports" },
	{ "requires", cmd_requires, "print the Requires-Dist a wheel should carry: the releases it binds under" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char usage_head[] =
	"usage: cypatch [--version] [--help] COMMAND [ARGS]\n"
	"       cypatch --target-layout LAYOUT|fallback [-o OUT | --in-place] [--dry-run] EXT.so\n"
	"       cypatch repair -w DIR -t LAYOUT|fallback WHEEL...\n"
	"\n"
	"Repairs compiled Cython extensions whose provider modules moved between\n"
	"layouts (cuda-python's cuda.ccudart -> cuda.bindings.cyruntime, ...).\n"
	"\n"
	"commands:\n";

/* The one command spelt as an option (cmd_retarget), then the footer. */
static const char usage_tail[] =
	"  --target-layout LAYOUT   rewrite an extension to bind to LAYOUT\n"
	"          (legacy or bindings; 'cypatch --target-layout --help')\n"
	"\n"
	"'cypatch COMMAND --help' describes a command. Exit codes: docs/exit-codes.md.\n";

static void print_usage(FILE *f)
{
	size_t i;

	fputs(usage_head, f);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s  %s\n", commands[i].name, commands[i].help);
	fputs(usage_tail, f);
}

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
	size_t i;

	if (argc < 2) {
		print_usage(stderr);
		return CP_E_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("cypatch %s\n", CYPATCH_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		print_usage(stdout);
		return 0;
	}
	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	/* the retarget reads its layout option itself: it gets the whole line */
	if (!strcmp(argv[1], "-t") || !strncmp(argv[1], "--target-layout", 15))
		return cmd_retarget(argc, argv);
	fprintf(stderr, "cypatch: '%s' is not a command (see 'cypatch --help')\n", argv[1]);
	return CP_E_USAGE;
}

int main(int argc, char **argv)
{
	opterr = 0; /* an unknown option is told once, by the command's own one line */
	return flushed(dispatch(argc, argv));
}
