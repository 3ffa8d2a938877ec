/* common.c - rules loading and error printing for the subcommands. */
#include "common.h"
#include "releases/releases.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

extern const char cypatch_builtin_rules[];
extern const char cypatch_builtin_rules_name[];

/* An error is one line however the names in it were spelt: a control
 * character (a member called "a\nb.py") is written as \xNN. */
static void put_line(FILE *f, const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
}

int cli_error(const cp_error *err)
{
	fputs("cypatch: ", stderr);
	put_line(stderr, err->msg);
	fputc('\n', stderr);
	return err->code ? (int)err->code : CP_E_INTERNAL;
}

int cli_usage_error(const char *command, const char *fmt, const char *arg)
{
	fprintf(stderr, "cypatch %s: ", command);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see 'cypatch %s --help')\n", command);
	return CP_E_USAGE;
}

int cli_bad_option(const char *command, char *const *argv)
{
	fprintf(stderr, "cypatch %s: '%s': an unknown option, or one without its argument (see 'cypatch %s --help')\n",
		command, argv[optind - 1], command);
	return CP_E_USAGE;
}

cp_status cli_load_rules(cp_rules **out, const char *const *files, int nfiles, cp_error *err)
{
	cp_rules *r = cp_rules_new();
	cp_status st;
	int i;

	*out = NULL;
	if (!r) {
		err->code = CP_E_INTERNAL;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return CP_E_INTERNAL;
	}
	st = cp_rules_load_string(r, cypatch_builtin_rules_name, cypatch_builtin_rules, err);
	for (i = 0; !st && i < nfiles; i++)
		st = cp_rules_load_file(r, files[i], err);
	if (st) {
		cp_rules_free(r);
		return st;
	}
	*out = r;
	return CP_OK;
}

int cli_add_rules(struct cli_rules *r, const char *command, const char *file)
{
	if (r->n == CLI_MAX_RULES)
		return cli_usage_error(command, "more than %s --rules files", "32");
	r->file[r->n++] = file;
	return 0;
}

int cli_print_json(const json_t *doc)
{
	if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || fputc('\n', stdout) == EOF)
		return CP_E_IO;
	return 0;
}

/* rules/releases.txt, compiled in (CMakeLists.txt) */
extern const char cp_releases_builtin[];

cp_status cli_load_releases(struct cp_releases **out, cp_error *err)
{
	return cp_releases_parse(cp_releases_builtin, strlen(cp_releases_builtin), out, err);
}
