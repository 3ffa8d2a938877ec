/* check.c - `cypatch check`: will it bind under that site-packages? */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: cypatch check --against SITE_PACKAGES [--json] EXT.so|WHEEL\n"
	"       cypatch check --release SPEC [--release SPEC ...] [--json] EXT.so|WHEEL...\n"
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
	"With --release, the same prediction under every cuda-python and cuda-bindings\n"
	"release cypatch knows (`cypatch releases`) that SPEC names and that ships for\n"
	"the consumer's Python, from what cypatch holds of each release (its modules\n"
	"and exported capsules) instead of files: one line per release, \"binds\" or the\n"
	"failure of each extension. SPEC is 'all' or a distribution with PEP 440\n"
	"specifiers ('cuda-bindings>=12.9,<14', 'cuda-python'). For a wheel, its own\n"
	"Requires-Dist on cuda-python / cuda-bindings is set against the verdicts:\n"
	"the releases it admits where the wheel fails (floor too low), and those it\n"
	"forbids where the wheel binds.\n"
	"\n"
	"  --against DIR  the site-packages directory to check against\n"
	"  --release SPEC the releases to check against (repeatable)\n"
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
		json_array_foreach(json_object_get(e, "stood_in"), j, f)
			printf("  stood in for: %s\n", json_string_value(f));
	}
	printf("%s\n", json_is_true(json_object_get(r, "ok")) ? "binds" : "FAILS");
}

/* check --against: the exit status. */
static int against(const char *path, const cp_rules *rules, const char *site, int json, cp_error *err)
{
	json_t *result = NULL;
	bool ok = false;
	cp_status st = cp_predict(path, rules, site, &result, &ok, err);

	if (!st && json)
		st = cli_print_json(result);
	else if (!st)
		print_text(result);
	json_decref(result);
	if (st)
		return cli_error(err);
	return ok ? 0 : CP_E_FAILED;
}

/* How grave an exit status is: a usage error, then any error, then a
 * predicted failure. */
static int gravity(int rc)
{
	return rc == CP_E_USAGE ? 3 : rc == CP_E_FAILED ? 1 : rc ? 2 : 0;
}

/* check --release of each file; the gravest exit status. */
static int releases_of_all(char **paths, int n, const char *const *specs, size_t nspecs, const cp_rules *rules,
			   int json)
{
	int worst = 0, rc, i;

	for (i = 0; i < n; i++) {
		rc = check_releases(paths[i], specs, nspecs, rules, json);
		if (gravity(rc) > gravity(worst))
			worst = rc;
	}
	return worst;
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "against", required_argument, NULL, 'a' },
		{ "release", required_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'j' },
		{ "rules", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_rules rules_files = { { NULL }, 0 };
	const char *site = NULL, *specs[16];
	size_t nspecs = 0;
	int json = 0, c;
	cp_rules *rules = NULL;
	cp_error err = { CP_OK, "" };
	cp_status st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': site = optarg; break;
		case 'R':
			if (nspecs == sizeof(specs) / sizeof(specs[0]))
				return cli_usage_error("check", "%s", "too many --release");
			specs[nspecs++] = optarg;
			break;
		case 'j': json = 1; break;
		case 'r':
			if (cli_add_rules(&rules_files, "check", optarg))
				return CP_E_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return cli_bad_option("check", argv);
		}
	}
	if (!site == !nspecs || argc - optind < 1 || ((site || json) && argc - optind != 1))
		return cli_usage_error("check", "%s", "needs --against SITE_PACKAGES and one EXT.so or WHEEL, "
				       "or --release SPEC and EXT.so or WHEEL files (one with --json)");
	st = cli_load_rules(&rules, rules_files.file, rules_files.n, &err);
	if (!st && nspecs) {
		c = releases_of_all(argv + optind, argc - optind, specs, nspecs, rules, json);
		cp_rules_free(rules);
		return c;
	}
	if (!st)
		c = against(argv[optind], rules, site, json, &err);
	cp_rules_free(rules);
	return st ? cli_error(&err) : c;
}
