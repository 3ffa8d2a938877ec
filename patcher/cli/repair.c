/* repair.c - `cypatch repair`: the wheel step of a packaging pipeline. */
#include "common.h"
#include "releases/releases.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
	"usage: cypatch repair -w DIR -t LAYOUT [--keep-requires] [--json] WHEEL...\n"
	"\n"
	"Writes each WHEEL again into DIR with every extension that references a\n"
	"mapped layout patched for LAYOUT (legacy, bindings or fallback; see\n"
	"'cypatch --target-layout --help'). Other members keep their compressed\n"
	"bytes; RECORD is rewritten for what changed and <dist-info>/cypatch.json\n"
	"records what was done. METADATA's cuda-python / cuda-bindings requirement\n"
	"is made to admit exactly the releases the repaired wheel binds under, as\n"
	"'cypatch requires' shows (docs/repair.md). The same input gives the same\n"
	"bytes. A wheel that\n"
	"needs nothing is copied. A hostile or broken wheel (paths leaving the\n"
	"target, symlinks, duplicate names, implausible sizes, a RECORD that does\n"
	"not match) is refused and nothing is written for it.\n"
	"\n"
	"  -w, --wheel-dir DIR         where the repaired wheels go (created if missing)\n"
	"  -t, --target-layout LAYOUT  legacy, bindings or fallback\n"
	"      --keep-requires         leave METADATA's requirement as it is\n"
	"      --tolerate-missing SPEC stand in for the cimported functions and modules\n"
	"                              the releases SPEC names lack (docs/tolerate.md)\n"
	"      --keep-sources          leave the import statements of the wheel's\n"
	"                              Python sources as they are\n"
	"      --no-fallback           refuse what strings alone cannot express\n"
	"      --keep-build-id         keep the extensions' GNU build-ids\n"
	"      --no-fsync              rename each wheel into place without waiting\n"
	"                              for the disk: atomic for readers, but a power\n"
	"                              loss may leave it empty (as cp and auditwheel)\n"
	"      --drop-signature        write a signed wheel (RECORD.jws, RECORD.p7s)\n"
	"                              that changes without its signature, named in\n"
	"                              cypatch.json, to be signed again (without it,\n"
	"                              such a wheel is refused: the signature would\n"
	"                              no longer match)\n"
	"      --full-check            the check walks all of each extension's code\n"
	"                              again, and fails (exit 70) if that walk and the\n"
	"                              walk of the changed functions disagree; an\n"
	"                              extension whose bytes name no mapped module\n"
	"                              is scanned in full too\n"
	"      --json                  print a JSON summary on stdout\n"
	"      --rules FILE            add a rules file to the built-in ones\n"
	"  -h, --help                  show this help\n"
	"\n"
	"A progress line per wheel goes to stderr when it is a terminal.\n"
	"Exit status: 0 every wheel written, 2 a bad wheel or extension, 3 bad\n"
	"rules, 64 usage error, and 2 also when the output cannot be written (the first failure's status).\n";

struct opts {
	struct cp_repair_opts r;
	struct cli_rules rules;
	int json;
};

/* mkdir -p, as auditwheel creates its wheel directory. */
static int make_dirs(const char *path)
{
	char buf[4096];
	size_t i, n = strlen(path);

	if (n >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -1;
		buf[i] = path[i];
	}
	return 0;
}

static const struct option longopts[] = {
	{ "wheel-dir", required_argument, NULL, 'w' },
	{ "target-layout", required_argument, NULL, 't' },
	{ "keep-requires", no_argument, NULL, 'k' },
	{ "relax-requires", no_argument, NULL, 'R' }, /* the default's old name */
	{ "keep-sources", no_argument, NULL, 'S' },
	{ "no-fallback", no_argument, NULL, 'F' },
	{ "keep-build-id", no_argument, NULL, 'K' },
	{ "no-fsync", no_argument, NULL, 'N' },
	{ "full-check", no_argument, NULL, 'C' },
	{ "drop-signature", no_argument, NULL, 'D' },
	{ "tolerate-missing", required_argument, NULL, 'M' },
	{ "json", no_argument, NULL, 'j' },
	{ "rules", required_argument, NULL, 'r' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int parse(int argc, char **argv, struct opts *o)
{
	struct stat sb;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "w:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w': o->r.outdir = optarg; break;
		case 't': o->r.layout = optarg; break;
		case 'k': o->r.keep_requires = true; break;
		case 'R': break;
		case 'S': o->r.keep_sources = true; break;
		case 'F': o->r.no_fallback = true; break;
		case 'K': o->r.keep_build_id = true; break;
		case 'N': o->r.no_fsync = true; break;
		case 'C': o->r.full_check = true; break;
		case 'D': o->r.drop_signature = true; break;
		case 'M': o->r.tolerate = optarg; break;
		case 'j': o->json = 1; break;
		case 'r':
			if (cli_add_rules(&o->rules, "repair", optarg))
				return CP_E_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return cli_bad_option("repair", argv);
		}
	}
	if (!o->r.outdir || !o->r.layout)
		return cli_usage_error("repair", "%s", "needs -w DIR and -t LAYOUT");
	if (optind == argc)
		return cli_usage_error("repair", "%s", "expects at least one WHEEL");
	if (stat(o->r.outdir, &sb) && make_dirs(o->r.outdir)) {
		fprintf(stderr, "cypatch: %s: cannot create the wheel directory: %s\n", o->r.outdir,
			strerror(errno));
		return CP_E_IO;
	}
	if (stat(o->r.outdir, &sb) || !S_ISDIR(sb.st_mode))
		return cli_usage_error("repair", "-w %s: not a directory", o->r.outdir);
	return 0;
}

static const char *outcome(enum cp_patch_outcome k)
{
	static const char *const names[] = { "patched", "planned", "already", "no-mapped-reference",
					     "not-an-extension" };

	return names[k];
}

static void print_text(const char *wheel, const struct cp_repair_result *r)
{
	size_t i;

	if (r->untouched) {
		printf("%s: needs nothing (%zu extension%s, none to patch); copied -> %s\n", wheel, r->next,
		       r->next == 1 ? "" : "s", r->out);
		return;
	}
	printf("%s: %zu of %zu extensions patched%s -> %s\n", wheel, r->npatched, r->next,
	       r->metadata_changed ? ", Requires-Dist made the releases it binds under" : "", r->out);
	if (r->requires_kept[0])
		printf("  note: Requires-Dist kept as it was: %s\n", r->requires_kept);
	for (i = 0; i < r->next; i++)
		printf("  %-18s %s%s\n", outcome(r->ext[i].r.outcome), r->ext[i].path,
		       r->ext[i].r.outcome == CP_PATCHED && r->ext[i].r.fallback ? " (fallback stub)" : "");
	for (i = 0; i < r->nsources; i++)
		printf("  %-18s %s\n", "imports-rewritten", r->sources[i]);
	if (r->left)
		printf("  note: %d import line%s naming cuda in Python sources %s a shape cypatch does not "
		       "rewrite (parentheses, continuation lines, `import a.b.c` without `as`)\n", r->left,
		       r->left == 1 ? "" : "s", r->left == 1 ? "has" : "have");
}

static json_t *summary(const char *wheel, const struct cp_repair_result *r, const cp_error *err)
{
	json_t *exts = json_array();
	size_t i;

	for (i = 0; r && i < r->next; i++)
		json_array_append_new(exts, json_pack("{s:s, s:s, s:b, s:s?}", "path", r->ext[i].path,
						      "outcome", outcome(r->ext[i].r.outcome), "fallback_stub",
						      r->ext[i].r.outcome == CP_PATCHED && r->ext[i].r.fallback, "covered",
						      r->ext[i].r.covered[0] ? r->ext[i].r.covered : NULL));
	json_t *srcs = json_array();

	for (i = 0; r && i < r->nsources; i++)
		json_array_append_new(srcs, json_string(r->sources[i]));
	return json_pack("{s:s, s:s?, s:b, s:b, s:s?, s:o, s:o, s:i, s:s?}", "wheel", wheel, "output",
			 err ? NULL : r->out, "untouched", r && !err && r->untouched, "metadata_changed",
			 r && r->metadata_changed, "requires_kept", r && r->requires_kept[0] ? r->requires_kept : NULL,
			 "extensions", exts, "python_sources", srcs, "import_lines_left",
			 r ? r->left : 0, "error", err ? err->msg : NULL);
}

/* A file name after the last '/'. */
static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Two inputs of one file name would be written to one output, the second
 * over the first: refused before either is. */
static int same_file_names(char **wheels, int n, const char *outdir)
{
	cp_error err = { CP_OK, "" };
	int i, k;

	for (i = 1; i < n; i++)
		for (k = 0; k < i; k++)
			if (!strcmp(file_name(wheels[i]), file_name(wheels[k]))) {
				cp_fail(&err, CP_E_INPUT, "%s: the same file name as %s: both would be written to %s/%s",
					wheels[i], wheels[k], outdir, file_name(wheels[i]));
				return cli_error(&err);
			}
	return 0;
}

int cmd_repair(int argc, char **argv)
{
	struct opts o;
	cp_rules *rules = NULL;
	cp_releases *kb = NULL;
	cp_error err = { CP_OK, "" };
	json_t *all;
	int rc, first = 0, i, tty = isatty(STDERR_FILENO);

	memset(&o, 0, sizeof(o));
	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (strcmp(o.r.layout, "fallback") && strcmp(o.r.layout, "legacy") && strcmp(o.r.layout, "bindings"))
		return cli_usage_error("repair", "no layout named '%s'", o.r.layout);
	rc = same_file_names(argv + optind, argc - optind, o.r.outdir);
	if (rc)
		return rc;
	if (cli_load_rules(&rules, o.rules.file, o.rules.n, &err) ||
	    ((!o.r.keep_requires || o.r.tolerate) && cli_load_releases(&kb, &err))) {
		cp_rules_free(rules);
		return cli_error(&err);
	}
	o.r.kb = kb;
	all = json_array();
	for (i = optind; i < argc; i++) {
		struct cp_repair_result r;
		char out[4200];
		cp_status st;

		if (tty)
			fprintf(stderr, "[%d/%d] %s\n", i - optind + 1, argc - optind, argv[i]);
		/* the path cp_repair_wheel writes: a signal now removes its
		 * temporaries and exits 2 naming it */
		snprintf(out, sizeof(out), "%s/%s", o.r.outdir, file_name(argv[i]));
		cp_cleanup_begin(out);
		st = cp_repair_wheel(argv[i], rules, &o.r, &r, &err);
		cp_cleanup_end();
		if (st) {
			cli_error(&err);
			first = first ? first : (int)st;
		} else if (!o.json) {
			print_text(argv[i], &r);
		}
		json_array_append_new(all, summary(argv[i], &r, st ? &err : NULL));
		cp_repair_result_free(&r);
	}
	if (o.json && cli_print_json(all))
		first = first ? first : CP_E_IO;
	json_decref(all);
	cp_rules_free(rules);
	cp_releases_free(kb);
	return first;
}
