/* check.c - `cypatch check`: will it bind under that site-packages? */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: cypatch check --against SITE_PACKAGES [--json] EXT.so|WHEEL\n"
	"\n"
	"Predicts, without running Python, what importing the extension (or each\n"
	"extension of the wheel that references a mapped layout) will do with the\n"
	"providers installed in SITE_PACKAGES: every cimported module is resolved\n"
	"as the import system would, every cimported function and variable looked\n"
	"up among the provider's exported capsules (12.6.2-style trampolines\n"
	"followed), fallback stubs honoured; each failure is printed as the\n"
	"message CPython would raise. Type sizes are not checked. Python-level\n"
	"imports that do not run at import time (under an except clause, under a\n"
	"condition, in a function) are listed as deferred, not failures. A wheel with\n"
	"per-CUDA-major trees (pkg/cu12/, pkg/cu13/) is checked for the tree its\n"
	"package imports under the site's cuda-bindings (or cuda-python) major\n"
	"version; the other trees' modules are listed as skipped. For a wheel, the\n"
	"Python code each import runs first is read too: the __init__.py of every\n"
	"package on the module's path and, transitively, the wheel's own modules\n"
	"they (and the wheel's extensions) import at import time; an import there\n"
	"of a mapped module that the site lacks, not under a handler that swallows\n"
	"ImportError, is a failure of the extension, named with its file and line.\n"
	"\n"
	"  --against DIR  the site-packages directory to check against\n"
	"  --json         print the prediction as JSON\n"
	"  --rules FILE   add a rules file to the built-in ones\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 everything binds, 1 a failure is predicted, 2 bad input,\n"
	"3 bad rules, 64 usage error.\n";

/* The import statements that lead to the first failure, when it lies in
 * the Python code the import runs first. */
static void print_via(const json_t *via)
{
	json_t *v;
	size_t i;

	printf("    via");
	json_array_foreach(via, i, v)
		printf("%s%s", i ? " -> " : " ", json_string_value(v));
	printf("\n");
}

static void print_text(const json_t *r)
{
	json_t *e, *f;
	size_t i, j;
	const char *k;
	json_t *v;

	json_array_foreach(json_object_get(r, "extensions"), i, e) {
		printf("%s (%s%s):\n", json_string_value(json_object_get(e, "file")),
		       json_string_value(json_object_get(e, "module")),
		       json_is_true(json_object_get(e, "fallback")) ? ", fallback stubs" : "");
		json_object_foreach(json_object_get(e, "binds"), k, v)
			printf("  cimport %s -> %s\n", k, json_string_value(v));
		if (json_object_get(e, "skipped"))
			printf("  skipped: %s\n", json_string_value(json_object_get(e, "skipped")));
		json_array_foreach(json_object_get(e, "failures"), j, f) {
			printf("  would fail: %s\n", json_string_value(f));
			if (!j && json_object_get(e, "via"))
				print_via(json_object_get(e, "via"));
		}
		json_array_foreach(json_object_get(e, "deferred"), j, f)
			printf("  deferred: %s\n", json_string_value(f));
	}
	printf("%s\n", json_is_true(json_object_get(r, "ok")) ? "binds" : "FAILS");
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "against", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "rules", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_rules rules_files = { { NULL }, 0 };
	const char *site = NULL;
	int json = 0, c;
	cp_rules *rules = NULL;
	cp_error err = { CP_OK, "" };
	json_t *result = NULL;
	bool ok = false;
	cp_status st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': site = optarg; break;
		case 'j': json = 1; break;
		case 'r':
			if (cli_add_rules(&rules_files, "check", optarg))
				return CP_E_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return cli_usage_error("check", "%s", "unknown option");
		}
	}
	if (!site || argc - optind != 1)
		return cli_usage_error("check", "%s", "needs --against SITE_PACKAGES and one EXT.so or WHEEL");
	st = cli_load_rules(&rules, rules_files.file, rules_files.n, &err);
	if (!st)
		st = cp_predict(argv[optind], rules, site, &result, &ok, &err);
	if (!st && json)
		st = cli_print_json(result);
	else if (!st)
		print_text(result);
	json_decref(result);
	cp_rules_free(rules);
	if (st)
		return cli_error(&err);
	return ok ? 0 : CP_E_FAILED;
}
