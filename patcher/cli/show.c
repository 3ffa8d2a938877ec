/* show.c - `cypatch show`: what an extension references, per layout. */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: cypatch show [--json] [--all] [--exports] [--rules FILE]... EXT.so\n"
	"\n"
	"Lists every reference a compiled Cython extension makes to a module that\n"
	"the rules map between layouts: cimported modules, functions (name,\n"
	"signature, slot), types, variables, Python-level import names, __pyx_f\n"
	"filenames and entries of Cython 3.2+ string blobs, each with where it\n"
	"lives and every site that points at it.\n"
	"\n"
	"  --json        print the stable JSON form (docs/json.md)\n"
	"  --all         also list other strings naming mapped modules (messages,\n"
	"                docstrings); the JSON form always has them\n"
	"  --exports     list instead what EXT.so exports in __pyx_capi__, as\n"
	"                `check` reads it from a provider: one line per capsule,\n"
	"                `function NAME SIGNATURE` or `variable NAME SIGNATURE`\n"
	"                (NAME `?` where the key is a Python object that cannot be\n"
	"                read); with --json a list of {kind, name, signature}\n"
	"  --rules FILE  add a rules file to the built-in cuda-python rules\n"
	"  -h, --help    show this help\n"
	"\n"
	"Exit status: 0 listed, 2 bad input file, 3 bad rules, 64 usage error.\n";

static cp_status print_exports_text(const struct cp_exports *ex, cp_error *err)
{
	size_t i;

	for (i = 0; i < ex->n; i++)
		printf("%s %s %s\n", ex->v[i].variable ? "variable" : "function",
		       ex->v[i].name ? ex->v[i].name : "?", ex->v[i].sig);
	if (fflush(stdout) || ferror(stdout))
		return cp_fail(err, CP_E_IO, "writing the list failed");
	return CP_OK;
}

static json_t *export_json(const struct cp_export *e)
{
	return json_pack("{s:s, s:s?, s:s}", "kind", e->variable ? "variable" : "function",
			 "name", e->name, "signature", e->sig);
}

static cp_status print_exports_json(const struct cp_exports *ex, cp_error *err)
{
	json_t *list = json_array();
	size_t i;
	int rc;

	for (i = 0; list && i < ex->n; i++)
		if (json_array_append_new(list, export_json(&ex->v[i]))) {
			json_decref(list);
			list = NULL;
		}
	if (!list)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	rc = json_dumpf(list, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(list);
	if (rc || fputc('\n', stdout) == EOF || fflush(stdout))
		return cp_fail(err, CP_E_IO, "writing the list failed");
	return CP_OK;
}

/* The references (the default listing). */
static cp_status show_refs(const char *file, const cp_rules *rules, int json, int all, cp_error *err)
{
	cp_image *img = NULL;
	cp_scan *scan = NULL;
	cp_status st = cp_image_open(file, &img, err);

	if (!st)
		st = cp_scan_run(img, rules, &scan, err);
	if (!st)
		st = cp_scan_describe_sites(scan, img, err);
	st = cp_image_settle(img, st, err);
	if (!st)
		st = json ? cp_scan_write_json(scan, stdout, err) : cp_scan_write_text(scan, stdout, all, err);
	cp_scan_free(scan);
	cp_image_close(img);
	return st;
}

/* --exports: what check reads as the file's exports (predict/exports.c). */
static cp_status show_exports(const char *file, const cp_rules *rules, int json, cp_error *err)
{
	struct cp_exports ex = { NULL, 0, 0 };
	cp_status st = cp_exports_of_file(file, rules, &ex, err);

	if (!st)
		st = json ? print_exports_json(&ex, err) : print_exports_text(&ex, err);
	cp_exports_free(&ex);
	return st;
}

int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "exports", no_argument, NULL, 'e' },
		{ "rules", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_rules rules_files = { { NULL }, 0 };
	int json = 0, all = 0, exports = 0, c;
	cp_rules *rules = NULL;
	cp_error err = { CP_OK, "" };
	cp_status st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'a':
			all = 1;
			break;
		case 'e':
			exports = 1;
			break;
		case 'r':
			if (cli_add_rules(&rules_files, "show", optarg))
				return CP_E_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return cli_bad_option("show", argv);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error("show", "%s", "expects exactly one EXT.so");
	if (exports && all)
		return cli_usage_error("show", "%s", "--exports and --all do not go together");
	st = cli_load_rules(&rules, rules_files.file, rules_files.n, &err);
	if (!st)
		st = exports ? show_exports(argv[optind], rules, json, &err)
			     : show_refs(argv[optind], rules, json, all, &err);
	cp_rules_free(rules);
	return st ? cli_error(&err) : 0;
}
