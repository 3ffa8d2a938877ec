/* common.h - what the subcommands share: rules, errors, option parsing. */
#ifndef CP_CLI_COMMON_H
#define CP_CLI_COMMON_H

#include <jansson.h>
#include "cypatch.h"

/* Prints "cypatch: <message>" on stderr and returns the status. */
int cli_error(const cp_error *err);

/* Prints "cypatch: <command>: <message>" for a usage error; returns CP_E_USAGE. */
int cli_usage_error(const char *command, const char *fmt, const char *arg);

/* What getopt_long answered '?' to (argv[optind - 1]): one line, CP_E_USAGE.
 * (main sets opterr to 0: getopt prints nothing of its own.) */
int cli_bad_option(const char *command, char *const *argv);

/* The --rules files of a command line. */
#define CLI_MAX_RULES 32
struct cli_rules {
	const char *file[CLI_MAX_RULES];
	int n;
};

/* Adds a --rules FILE; a usage error (returned) past CLI_MAX_RULES. */
int cli_add_rules(struct cli_rules *r, const char *command, const char *file);

/* A JSON document on stdout, indented, keys in order; CP_E_IO on failure. */
int cli_print_json(const json_t *doc);

/* The built-in rules plus the files given with --rules. */
cp_status cli_load_rules(cp_rules **out, const char *const *files, int nfiles, cp_error *err);

/* What cypatch knows of every release (rules/releases.txt, compiled in). */
struct cp_releases;
cp_status cli_load_releases(struct cp_releases **out, cp_error *err);

/* check --release (check_releases.c): the exit status. */
int check_releases(const char *path, const char *const *specs, size_t nspecs, const cp_rules *rules, int json);

int cmd_show(int argc, char **argv);
int cmd_retarget(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_releases(int argc, char **argv);
int cmd_requires(int argc, char **argv);

#endif
