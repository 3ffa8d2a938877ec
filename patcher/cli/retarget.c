/* retarget.c - `cypatch --target-layout LAYOUT`: rewrite an extension so
 * that it binds to the other layout. */
#include "common.h"

#include "check.h"
#include "error.h"
#include "emit.h"
#include "plan.h"
#include "rules.h"
#include "scan.h"
#include "write.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RULES 32

static const char usage[] =
	"usage: cypatch --target-layout LAYOUT [-o OUT | --in-place] [--dry-run] [--rules FILE]... EXT.so\n"
	"       cypatch --target-layout fallback [-o OUT | --in-place] [--dry-run] EXT.so\n"
	"\n"
	"Rewrites every reference the extension makes to a module of the other\n"
	"layout (cimported modules, capsule signatures over mangled types,\n"
	"Python-level import names, __pyx_f filenames, entries of Cython 3.2+\n"
	"string blobs) to LAYOUT (legacy or bindings with the built-in rules).\n"
	"Names that fit are written in place; longer ones go into a new\n"
	"read-only segment and every reference is redirected. The result is\n"
	"scanned again and must bind to LAYOUT only, with every other byte as it\n"
	"was, before it replaces anything; it is written atomically.\n"
	"\n"
	"With 'fallback', no name is rewritten: every import and capsule check\n"
	"goes through an injected stub that binds to the layout the extension was\n"
	"built against when it is installed, and to the other one otherwise\n"
	"(docs/fallback.md).\n"
	"\n"
	"  -t, --target-layout LAYOUT  the layout to bind to, or 'fallback' for both\n"
	"  -o, --output OUT            write OUT and leave EXT.so as it is\n"
	"      --in-place              replace EXT.so (the default)\n"
	"  -n, --dry-run               print the plan (every edit) and write nothing\n"
	"      --rules FILE            add a rules file to the built-in ones\n"
	"      --no-fallback           refuse what strings alone cannot express instead\n"
	"                              of injecting the fallback stub for it\n"
	"  -h, --help                  show this help\n"
	"\n"
	"What strings alone cannot express (import a.b.c used through attributes,\n"
	"from cuda import cuda towards bindings, an immediate that would outgrow\n"
	"its field) is covered by the fallback stub instead, which says so.\n"
	"\n"
	"Exit status: 0 done or nothing to do, 2 bad input or a reference that\n"
	"cannot be rewritten, 3 bad rules, 64 usage error, 74 output error.\n";

struct opts {
	const char *layout, *output, *input;
	const char *rules[MAX_RULES];
	int nrules, dry_run, in_place, no_fallback;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "target-layout", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "in-place", no_argument, NULL, 'i' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "rules", required_argument, NULL, 'r' },
		{ "no-fallback", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	for (c = 1; c < argc; c++)
		if (!strcmp(argv[c], "--help") || !strcmp(argv[c], "-h")) {
			fputs(usage, stdout);
			return -1;
		}
	optind = 1;
	while ((c = getopt_long(argc, argv, "t:o:nh", longopts, NULL)) != -1) {
		switch (c) {
		case 't': o->layout = optarg; break;
		case 'o': o->output = optarg; break;
		case 'i': o->in_place = 1; break;
		case 'n': o->dry_run = 1; break;
		case 'F': o->no_fallback = 1; break;
		case 'r':
			if (o->nrules == MAX_RULES)
				return cli_usage_error("--target-layout", "more than %s --rules files", "32");
			o->rules[o->nrules++] = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return cli_usage_error("--target-layout", "%s", "unknown option");
		}
	}
	if (!o->layout)
		return cli_usage_error("--target-layout", "%s", "needs a layout");
	if (o->output && o->in_place)
		return cli_usage_error("--target-layout", "%s", "-o and --in-place exclude each other");
	if (argc - optind != 1)
		return cli_usage_error("--target-layout", "%s", "expects exactly one EXT.so");
	o->input = argv[optind];
	return 0;
}

static cp_status write_checked(const cp_image *img, const cp_scan *scan, const struct cp_plan *plan,
			       const char *target, cp_error *err)
{
	uint8_t *out = NULL;
	size_t outlen = 0;
	struct stat sb;
	char tmp[4200];
	cp_status st;

	if (stat(img->path, &sb))
		return cp_fail(err, CP_E_INPUT, "%s: cannot stat", img->path);
	st = cp_emit(img, plan, &out, &outlen, err);
	if (!st)
		st = cp_write_temp(target, out, outlen, sb.st_mode, tmp, sizeof(tmp), err);
	if (!st) {
		st = cp_check(img, scan, plan, tmp, out, outlen, err);
		if (st)
			unlink(tmp);
		else
			st = cp_write_commit(tmp, target, err);
	}
	free(out);
	return st;
}

static void report(const struct opts *o, const struct cp_plan *plan, const char *dest)
{
	if (plan->target < 0)
		printf("%s: %zu import and capsule calls now go through the fallback stub, which accepts "
		       "both layouts (%zu edits, %llu new bytes) -> %s\n", o->input, plan->nchanged,
		       plan->nedits, (unsigned long long)cp_plan_new_bytes(plan), dest);
	else
		printf("%s: %zu references now bind to the %s layout (%zu edits, %llu new bytes) -> %s\n",
		       o->input, plan->nchanged, o->layout, plan->nedits,
		       (unsigned long long)cp_plan_new_bytes(plan), dest);
}

static int run(const struct opts *o, cp_rules *rules, cp_error *err)
{
	cp_image *img = NULL;
	cp_scan *scan = NULL;
	struct cp_plan plan;
	bool fallback = !strcmp(o->layout, "fallback");
	int target = fallback ? -1 : cp_rules_layout_index(rules, o->layout);
	const char *dest = o->output ? o->output : o->input;
	cp_status st;

	memset(&plan, 0, sizeof(plan));
	if (target < 0 && !fallback)
		return cli_usage_error("--target-layout", "no layout named '%s' in the rules", o->layout);
	st = cp_image_open(o->input, &img, err);
	if (!st)
		st = cp_scan_run(img, rules, &scan, err);
	if (!st && !scan->layouts_seen)
		st = cp_fail(err, CP_E_INPUT, "%s: references no module the rules map; nothing to retarget",
			     o->input);
	if (!st)
		st = fallback ? cp_plan_fallback(img, scan, &plan, err) : cp_plan_make(img, scan, target, &plan, err);
	if (st && plan.inexpressible && !o->no_fallback) {
		/* strings cannot say it; the stubs bind to the target at import */
		printf("%s; the fallback stub covers it\n", err->msg);
		fallback = true;
		st = cp_plan_fallback(img, scan, &plan, err);
	}
	if (!st && !plan.nedits && !cp_plan_new_bytes(&plan)) {
		if (fallback)
			printf("%s: already fallback-patched (binds to %s, else to %s); nothing to do\n", o->input,
			       scan->fallback_layout[0], scan->fallback_layout[1]);
		else
			printf("%s: already binds to the %s layout; nothing to do\n", o->input, o->layout);
	} else if (!st && o->dry_run) {
		printf("%s: %zu %s for the %s layout:\n", o->input, plan.nchanged,
		       fallback ? "calls to redirect" : "references to rewrite", o->layout);
		cp_plan_print(&plan, img, stdout);
	} else if (!st) {
		st = write_checked(img, scan, &plan, dest, err);
		if (!st)
			report(o, &plan, dest);
	}
	cp_plan_free(&plan);
	cp_scan_free(scan);
	cp_image_close(img);
	return st ? cli_error(err) : 0;
}

int cmd_retarget(int argc, char **argv)
{
	struct opts o;
	cp_rules *rules = NULL;
	cp_error err = { CP_OK, "" };
	int rc;

	memset(&o, 0, sizeof(o));
	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (cli_load_rules(&rules, o.rules, o.nrules, &err))
		return cli_error(&err);
	rc = run(&o, rules, &err);
	cp_rules_free(rules);
	return rc;
}
