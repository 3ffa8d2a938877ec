/* requires.c - `cypatch requires`: the Requires-Dist a wheel should carry. */
#include "common.h"
#include "predict/requirement.h"
#include "releases/releases.h"
#include "repair/requires.h"
#include "wheel/wheel.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: cypatch requires [--json] WHEEL...\n"
	"\n"
	"Prints the Requires-Dist lines on cuda-python / cuda-bindings that WHEEL\n"
	"should carry: each admitting exactly the releases cypatch knows where the\n"
	"wheel binds (check --release all), within the CUDA majors the line admits\n"
	"now; what 'cypatch repair' writes into a repaired wheel. Changes nothing.\n"
	"\n"
	"  --json         print {wheel, lines: [{before, after}], changed, kept} per\n"
	"                 wheel (kept: lines under which the wheel binds under no\n"
	"                 release cypatch knows, left as they are)\n"
	"  --rules FILE   add a rules file to the built-in ones\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 (also when the lines would change), 2 a wheel check cannot\n"
	"predict or a line cypatch cannot rewrite (the others are still told; the\n"
	"first failure's status), 3 bad rules, 64 usage error.\n";

/* The Requires-Dist lines on ours in a METADATA, as JSON strings. */
static json_t *our_lines(const char *meta, size_t len)
{
	struct cp_requires_dist r;
	json_t *out = json_array();
	size_t pos = 0;

	while (cp_requires_dist_next(meta, len, &pos, &r))
		if (r.ours)
			json_array_append_new(out, json_stringn(meta + r.value, r.end - r.value));
	return out;
}

/* The wheel's METADATA as it is and as cypatch would write it. */
static cp_status rewrite_wheel(const char *path, const cp_rules *rules, const cp_releases *kb, json_t **doc,
			       cp_error *err)
{
	struct cp_release_verdict *v = NULL;
	struct cp_wheel *w = NULL;
	uint8_t *meta = NULL;
	char where[4400], *out = NULL;
	size_t n = 0, len = 0, outlen = 0, at, kept = 0;
	bool changed = false;
	cp_status st = cp_release_verdicts(path, NULL, rules, kb, &v, &n, err);

	if (!st)
		st = cp_wheel_open(path, &w, err);
	if (!st)
		st = cp_wheel_read_metadata(w, &at, &meta, &len, where, sizeof(where), err);
	if (!st)
		st = cp_requires_rewrite((const char *)meta, len, v, n, where, &out, &outlen, &changed, &kept, err);
	if (!st) {
		json_t *before = our_lines((const char *)meta, len), *after = our_lines(out, outlen), *lines = json_array();
		size_t i;

		for (i = 0; i < json_array_size(before); i++)
			json_array_append_new(lines, json_pack("{s:O, s:O}", "before", json_array_get(before, i),
							       "after", json_array_get(after, i)));
		*doc = json_pack("{s:s, s:o, s:b, s:I}", "wheel", path, "lines", lines, "changed", changed, "kept",
				 (json_int_t)kept);
		json_decref(before);
		json_decref(after);
	}
	free(out);
	free(meta);
	free(v);
	cp_wheel_close(w);
	return st;
}

static void print_text(const json_t *doc)
{
	json_t *l;
	size_t i;

	printf("%s: %s\n", json_string_value(json_object_get(doc, "wheel")),
	       !json_array_size(json_object_get(doc, "lines")) ? "no Requires-Dist on cuda-python or cuda-bindings"
	       : json_is_true(json_object_get(doc, "changed")) ? "Requires-Dist as it should be"
							      : "Requires-Dist already true");
	json_array_foreach(json_object_get(doc, "lines"), i, l) {
		const char *b = json_string_value(json_object_get(l, "before"));
		const char *a = json_string_value(json_object_get(l, "after"));

		if (strcmp(a, b))
			printf("  - %s\n  + %s\n", b, a);
		else
			printf("    %s\n", a);
	}
	if (json_integer_value(json_object_get(doc, "kept")))
		printf("  note: %lld line(s) kept as they are: the wheel binds under no release cypatch knows of the "
		       "CUDA majors they admit\n", (long long)json_integer_value(json_object_get(doc, "kept")));
}

static int parse(int argc, char **argv, int *json, struct cli_rules *rules)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "rules", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'j')
			*json = 1;
		else if (c == 'r' && cli_add_rules(rules, "requires", optarg))
			return CP_E_USAGE;
		else if (c == 'h')
			return fputs(usage, stdout), -1;
		else if (c != 'r')
			return cli_bad_option("requires", argv);
	}
	return optind == argc ? cli_usage_error("requires", "%s", "expects at least one WHEEL") : 0;
}

int cmd_requires(int argc, char **argv)
{
	struct cli_rules r = { { NULL }, 0 };
	cp_error err = { CP_OK, "" };
	cp_releases *kb = NULL;
	cp_rules *rules = NULL;
	json_t *all = json_array();
	int json = 0, rc = parse(argc, argv, &json, &r), i;

	if (!rc && (cli_load_rules(&rules, r.file, r.n, &err) || cli_load_releases(&kb, &err)))
		rc = cli_error(&err);
	for (i = optind; rules && kb && i < argc; i++) { /* on after a failure; the first one's status */
		json_t *doc = NULL;

		if (rewrite_wheel(argv[i], rules, kb, &doc, &err)) {
			int st = cli_error(&err);

			rc = rc ? rc : st;
			continue;
		}
		if (!json)
			print_text(doc);
		json_array_append_new(all, doc);
	}
	if (json && rules && kb && json_array_size(all) && cli_print_json(json_array_size(all) == 1 && argc - optind == 1
									  ? json_array_get(all, 0) : all))
		rc = rc ? rc : CP_E_IO;
	json_decref(all);
	cp_rules_free(rules);
	cp_releases_free(kb);
	return rc < 0 ? 0 : rc;
}
