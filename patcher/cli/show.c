/* show.c - `cypatch show`: what an extension references, per layout. */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: cypatch show [--json] [--all] [--rules FILE]... EXT.so\n"
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
	"  --rules FILE  add a rules file to the built-in cuda-python rules\n"
	"  -h, --help    show this help\n"
	"\n"
	"Exit status: 0 listed, 2 bad input file, 3 bad rules, 64 usage error.\n";

int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "rules", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_rules rules_files = { { NULL }, 0 };
	int json = 0, all = 0, c;
	cp_rules *rules = NULL;
	cp_image *img = NULL;
	cp_scan *scan = NULL;
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
		case 'r':
			if (cli_add_rules(&rules_files, "show", optarg))
				return CP_E_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return cli_usage_error("show", "%s", "unknown option");
		}
	}
	if (argc - optind != 1)
		return cli_usage_error("show", "%s", "expects exactly one EXT.so");
	st = cli_load_rules(&rules, rules_files.file, rules_files.n, &err);
	if (!st)
		st = cp_image_open(argv[optind], &img, &err);
	if (!st)
		st = cp_scan_run(img, rules, &scan, &err);
	if (!st)
		st = json ? cp_scan_write_json(scan, stdout, &err) : cp_scan_write_text(scan, stdout, all, &err);
	cp_scan_free(scan);
	cp_image_close(img);
	cp_rules_free(rules);
	return st ? cli_error(&err) : 0;
}
