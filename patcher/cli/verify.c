/* verify.c - `cypatch verify`: import it under an interpreter and prove
 * every binding (and, with --gpu, call the CUDA functions through them). */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: cypatch verify --python PY [--gpu] [--timeout S] [--json] EXT.so|WHEEL\n"
	"\n"
	"Imports the extension (or every extension of the wheel that references a\n"
	"mapped layout, from the wheel unpacked) under the interpreter PY, whose\n"
	"site-packages decide the layout, in a child process, and checks that each\n"
	"cimported function and variable slot holds the pointer its provider\n"
	"exports. With --gpu it then calls cuInit, cuDeviceGetCount and\n"
	"cudaGetDeviceCount, each through the extension's own slot where it binds\n"
	"the function, else through the provider module its proven bindings came\n"
	"from (a call its providers do not offer is not made), and needs a device.\n"
	"\n"
	"  --python PY    the interpreter to import under (default: python3)\n"
	"  --gpu          call the CUDA functions (as above) and say through what\n"
	"  --timeout S    give the child S seconds (default 120)\n"
	"  --json         print the report as JSON\n"
	"  --rules FILE   add a rules file to the built-in ones\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 every binding proven, 1 a binding or call failed, 2 bad\n"
	"input or an import that did not finish, 3 bad rules, 64 usage error.\n";

static void print_text(const json_t *r)
{
	json_t *e, *b, *g;
	const char *k;
	size_t i, j;

	printf("python %s (%s)\n", json_string_value(json_object_get(r, "python")),
	       json_string_value(json_object_get(r, "executable")));
	json_array_foreach(json_object_get(r, "extensions"), i, e) {
		json_t *imp = json_object_get(e, "import"), *bs = json_object_get(e, "bindings");
		size_t bound = 0, stood = 0;

		if (json_object_get(e, "skipped")) {
			printf("  %s: skipped: %s\n", json_string_value(json_object_get(e, "module")),
			       json_string_value(json_object_get(e, "skipped")));
			continue;
		}
		if (json_object_get(imp, "error")) {
			printf("  %s: import failed: %s\n", json_string_value(json_object_get(e, "module")),
			       json_string_value(json_object_get(imp, "error")));
			continue;
		}
		json_array_foreach(bs, j, b) {
			bound += json_is_true(json_object_get(b, "bound"));
			stood += json_is_true(json_object_get(b, "stood_in"));
		}
		printf("  %s: imported; %zu of %zu bindings proven", json_string_value(json_object_get(e, "module")),
		       bound, json_array_size(bs));
		if (stood)
			printf(", %zu stood in for (the installed release lacks them)", stood);
		putchar('\n');
		json_array_foreach(bs, j, b)
			printf("    %-8s %-28s %s\n", json_string_value(json_object_get(b, "kind")),
			       json_string_value(json_object_get(b, "name")),
			       json_is_true(json_object_get(b, "bound")) ? json_string_value(json_object_get(b, "provider"))
			       : json_is_true(json_object_get(b, "stood_in")) ? "stood in for" : "NOT BOUND");
	}
	json_object_foreach(json_object_get(r, "gpu"), k, g) {
		const char *via = json_string_value(json_object_get(g, "via"));

		if (json_object_get(g, "skipped"))
			printf("  gpu %s: not called: %s\n", k, json_string_value(json_object_get(g, "skipped")));
		else if (json_object_get(g, "error"))
			printf("  gpu %s (through %s): %s\n", k, via, json_string_value(json_object_get(g, "error")));
		else if (json_object_get(g, "count"))
			printf("  gpu %s (through %s): status %lld, count %lld\n", k, via,
			       json_integer_value(json_object_get(g, "status")), json_integer_value(json_object_get(g, "count")));
		else
			printf("  gpu %s (through %s): status %lld\n", k, via, json_integer_value(json_object_get(g, "status")));
	}
	if (json_is_true(json_object_get(r, "ok")))
		printf("verified\n");
	else
		printf("FAILED: %s\n", json_string_value(json_object_get(r, "why")));
}

int cmd_verify(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "python", required_argument, NULL, 'p' },
		{ "gpu", no_argument, NULL, 'g' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "rules", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cp_verify_opts o = { "python3", false, 120 };
	struct cli_rules rules_files = { { NULL }, 0 };
	int json = 0, c;
	cp_rules *rules = NULL;
	cp_error err = { CP_OK, "" };
	json_t *result = NULL;
	bool ok = false;
	cp_status st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': o.python = optarg; break;
		case 'g': o.gpu = true; break;
		case 'T':
			o.timeout_s = atoi(optarg);
			if (o.timeout_s <= 0)
				return cli_usage_error("verify", "--timeout %s: not a number of seconds", optarg);
			break;
		case 'j': json = 1; break;
		case 'r':
			if (cli_add_rules(&rules_files, "verify", optarg))
				return CP_E_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return cli_bad_option("verify", argv);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error("verify", "%s", "expects exactly one EXT.so or WHEEL");
	st = cli_load_rules(&rules, rules_files.file, rules_files.n, &err);
	if (!st)
		st = cp_verify(argv[optind], rules, &o, &result, &ok, &err);
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
