/* retarget.c - `cypatch --target-layout LAYOUT`: rewrite an extension so
 * that it binds to the other layout. */
#include "common.h"
#include "releases/releases.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	"With --tolerate-missing SPEC, a cimported function (or whole module) that\n"
	"a release SPEC names lacks is bound, where the installed release lacks it,\n"
	"to a stand-in that returns its return type's error (CUDA_ERROR_NOT_SUPPORTED,\n"
	"cudaErrorNotSupported, ...): the stub does it, for any LAYOUT\n"
	"(docs/tolerate.md).\n"
	"\n"
	"  -t, --target-layout LAYOUT  the layout to bind to, or 'fallback' for both\n"
	"  -o, --output OUT            write OUT and leave EXT.so as it is\n"
	"      --in-place              replace EXT.so (the default)\n"
	"  -n, --dry-run               print the plan (every edit) and write nothing\n"
	"      --rules FILE            add a rules file to the built-in ones\n"
	"      --tolerate-missing SPEC stand in for what the releases SPEC names lack\n"
	"                              ('cuda-bindings>=13.0', 'all'; see cypatch releases)\n"
	"      --no-fallback           refuse what strings alone cannot express instead\n"
	"                              of injecting the fallback stub for it\n"
	"      --keep-build-id         keep the GNU build-id (by default a new one is\n"
	"                              derived from the old one and the changes)\n"
	"      --no-fsync              rename the output into place without waiting\n"
	"                              for the disk: atomic for readers, but a power\n"
	"                              loss may leave it empty (as cp and patchelf)\n"
	"      --timings               print the seconds each stage took to stderr\n"
	"      --full-check            the check walks all of the output's code again,\n"
	"                              not only the functions an edit changed, and\n"
	"                              fails (exit 70) if the two walks disagree; a\n"
	"                              module whose bytes name no mapped module is\n"
	"                              scanned in full too\n"
	"  -h, --help                  show this help\n"
	"\n"
	"What strings alone cannot express (import a.b.c used through attributes,\n"
	"from cuda import cuda towards bindings, an immediate that would outgrow\n"
	"its field) is covered by the fallback stub instead, which says so.\n"
	"\n"
	"Exit status: 0 done or nothing to do, 2 bad input or a reference that\n"
	"cannot be rewritten, 3 bad rules, 64 usage error; 2 also when the output cannot be written.\n";

struct opts {
	const char *layout, *output, *input, *tolerate;
	struct cli_rules rules;
	int dry_run, in_place, no_fallback, keep_build_id, no_fsync, timings, full_check;
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
		{ "keep-build-id", no_argument, NULL, 'K' },
		{ "no-fsync", no_argument, NULL, 'N' },
		{ "timings", no_argument, NULL, 'T' },
		{ "full-check", no_argument, NULL, 'C' },
		{ "tolerate-missing", required_argument, NULL, 'M' },
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
		case 'K': o->keep_build_id = 1; break;
		case 'N': o->no_fsync = 1; break;
		case 'T': o->timings = 1; break;
		case 'C': o->full_check = 1; break;
		case 'M': o->tolerate = optarg; break;
		case 'r':
			if (cli_add_rules(&o->rules, "--target-layout", optarg))
				return CP_E_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return cli_bad_option("--target-layout", argv);
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

static void report(const struct opts *o, const struct cp_patch_result *r, const char *dest)
{
	if (r->covered[0])
		printf("%s; the fallback stub covers it\n", r->covered);
	if (r->outcome == CP_ALREADY && r->fallback)
		printf("%s: already fallback-patched (binds to %s, else to %s); nothing to do\n", o->input,
		       r->layouts[0], r->layouts[1]);
	else if (r->outcome == CP_ALREADY)
		printf("%s: already binds to the %s layout; nothing to do\n", o->input, o->layout);
	else if (r->outcome == CP_PATCHED && r->standin_funcs + r->standin_modules)
		printf("%s: %zu import and capsule calls now go through the stub, which binds to %s and "
		       "stands in for %zu cimported function%s and %zu module%s that releases of %s lack "
		       "(%zu edits, %llu new bytes%s) -> %s\n", o->input, r->nchanged,
		       strcmp(o->layout, "fallback") ? o->layout : "either layout", r->standin_funcs,
		       r->standin_funcs == 1 ? "" : "s", r->standin_modules, r->standin_modules == 1 ? "" : "s",
		       o->tolerate, r->nedits, r->new_bytes, r->build_id ? ", build-id recomputed" : "", dest);
	else if (r->outcome == CP_PATCHED && r->fallback)
		printf("%s: %zu import and capsule calls now go through the fallback stub, which accepts "
		       "both layouts (%zu edits, %llu new bytes%s) -> %s\n", o->input, r->nchanged, r->nedits,
		       r->new_bytes, r->build_id ? ", build-id recomputed" : "", dest);
	else if (r->outcome == CP_PATCHED)
		printf("%s: %zu references now bind to the %s layout (%zu edits, %llu new bytes%s) -> %s\n",
		       o->input, r->nchanged, o->layout, r->nedits, r->new_bytes,
		       r->build_id ? ", build-id recomputed" : "", dest);
}

/* One line: the stages that ran, and their sum. */
static void print_timings(const char *input, const struct cp_patch_result *r)
{
	double total = 0;
	int s;

	fprintf(stderr, "cypatch: %s: timings:", input);
	for (s = 0; s < CP_NSTAGES; s++) {
		fprintf(stderr, " %s %.3f s", cp_stage_name((enum cp_stage)s), r->seconds[s]);
		total += r->seconds[s];
	}
	fprintf(stderr, ", total %.3f s\n", total);
}

static int run(const struct opts *o, cp_rules *rules, cp_error *err)
{
	struct cp_patch_opts po;
	struct cp_patch_result r;
	const char *dest = o->output ? o->output : o->input;
	bool fallback = !strcmp(o->layout, "fallback");
	struct cp_releases *kb = NULL;
	cp_status st;

	if (!fallback && cp_rules_layout_index(rules, o->layout) < 0)
		return cli_usage_error("--target-layout", "no layout named '%s' in the rules", o->layout);
	memset(&po, 0, sizeof(po));
	po.layout = o->layout;
	po.no_fallback = o->no_fallback;
	po.keep_build_id = o->keep_build_id;
	po.no_fsync = o->no_fsync;
	po.full_check = o->full_check;
	po.tolerate = o->tolerate;
	po.check_tolerance = true;
	if (o->tolerate && cli_load_releases(&kb, err))
		return cli_error(err);
	po.releases = kb;
	if (o->dry_run) {
		po.dry_run = stdout;
		printf("%s: the plan for the %s layout:\n", o->input, o->layout);
	}
	if (!o->dry_run)
		cp_cleanup_begin(dest); /* a signal now removes the temporary file and exits 2 */
	st = cp_patch_file(o->input, dest, rules, &po, &r, err);
	cp_cleanup_end();
	cp_releases_free(kb);
	if (!st && r.outcome == CP_NOT_EXTENSION)
		st = err->code = CP_E_INPUT; /* the scan's message says why */
	if (!st && r.outcome == CP_NOTHING_MAPPED)
		st = cp_fail(err, CP_E_INPUT, "%s: references no module the rules map; nothing to retarget",
			     o->input);
	if (!st)
		report(o, &r, dest);
	if (o->timings)
		print_timings(o->input, &r);
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
	if (cli_load_rules(&rules, o.rules.file, o.rules.n, &err))
		return cli_error(&err);
	rc = run(&o, rules, &err);
	cp_rules_free(rules);
	return rc;
}
