/* releases.c - `cypatch releases`: the cuda-python releases cypatch knows. */
#include "common.h"
#include "releases/releases.h"
#include "rules/rules.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>


static const char usage[] =
	"usage: cypatch releases [--json] [--release DIST==VERSION]\n"
	"\n"
	"Lists the cuda-python and cuda-bindings releases cypatch knows (compiled\n"
	"in from rules/releases.txt, made by scripts/releases from the releases'\n"
	"wheels): each with its Requires-Python, how many modules it ships, and\n"
	"how many functions and variables it exports from each module the rules\n"
	"map. With --release, one release's modules and every capsule its\n"
	"extensions export, with its signature.\n"
	"\n"
	"  --json                 print it as JSON\n"
	"  --release DIST==VERSION  one release (cuda-python==12.5.0)\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: 0, 2 a release it does not know, 64 usage error.\n";

#define MAX_MAPPED 32

/* The number of functions and variables of each mapped module in a release. */
struct tally {
	const char *module[MAX_MAPPED];
	size_t functions[MAX_MAPPED], variables[MAX_MAPPED];
	size_t n, modules, extensions;
};

static void count(const cp_releases *kb, const cp_rules *rules, size_t rel, struct tally *t)
{
	size_t i, k;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < kb->nitem; i++) {
		const struct cp_release_item *it = &kb->item[i];

		if (!cp_releases_has(kb, i, rel))
			continue;
		if (it->kind == CP_REL_EXTENSION || it->kind == CP_REL_PYTHON) {
			t->modules++;
			t->extensions += it->kind == CP_REL_EXTENSION;
			continue;
		}
		if (cp_rules_module_layout(rules, it->module) < 0)
			continue;
		for (k = 0; k < t->n && strcmp(t->module[k], it->module); k++)
			;
		if (k == t->n && t->n == MAX_MAPPED)
			continue;
		t->module[k] = it->module;
		t->n += k == t->n;
		if (it->kind == CP_REL_FUNCTION)
			t->functions[k]++;
		else
			t->variables[k]++;
	}
}

static json_t *release_json(const cp_releases *kb, const cp_rules *rules, size_t rel)
{
	const struct cp_release *r = &kb->rel[rel];
	json_t *exports = json_object();
	struct tally t;
	size_t k;

	count(kb, rules, rel, &t);
	for (k = 0; k < t.n; k++)
		json_object_set_new(exports, t.module[k], json_pack("{s:I, s:I}", "functions", (json_int_t)t.functions[k],
								     "variables", (json_int_t)t.variables[k]));
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o}", "distribution", r->dist, "version", r->version,
			 "requires_python", r->requires_python, "modules", (json_int_t)t.modules, "extensions",
			 (json_int_t)t.extensions, "exports", exports);
}

static void print_release(const cp_releases *kb, const cp_rules *rules, size_t rel)
{
	const struct cp_release *r = &kb->rel[rel];
	struct tally t;
	size_t k;

	count(kb, rules, rel, &t);
	printf("%-13s %-13s python %-7s %3zu modules", r->dist, r->version, r->requires_python, t.modules);
	for (k = 0; k < t.n; k++)
		printf("%s %s %zu", k ? "," : ";", t.module[k], t.functions[k] + t.variables[k]);
	printf("\n");
}

static int list(const cp_releases *kb, const cp_rules *rules, int json)
{
	json_t *doc, *all;
	size_t i;
	int rc;

	if (!json) {
		printf("%zu releases, listed %s; functions and variables exported by the modules the rules map:\n",
		       kb->nrel, kb->date);
		for (i = 0; i < kb->nrel; i++)
			print_release(kb, rules, i);
		return 0;
	}
	all = json_array();
	for (i = 0; i < kb->nrel; i++)
		json_array_append_new(all, release_json(kb, rules, i));
	doc = json_pack("{s:s, s:o}", "date", kb->date, "releases", all);
	rc = cli_print_json(doc);
	json_decref(doc);
	return rc;
}

static const char *kind_word(enum cp_release_kind k)
{
	static const char *const word[] = { "extension", "python", "function", "variable" };

	return word[k];
}

/* The text form of one(): a line per module, then per capsule. */
static void print_one(const json_t *modules, const json_t *capsules)
{
	const char *k;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)modules, k, v)
		printf("module %s %s\n", k, json_string_value(v));
	json_array_foreach(capsules, i, v)
		printf("%s %s.%s %s\n", json_string_value(json_object_get(v, "kind")),
		       json_string_value(json_object_get(v, "module")), json_string_value(json_object_get(v, "name")),
		       json_string_value(json_object_get(v, "signature")));
}

/* One release: its modules, then its capsules. */
static int one(const cp_releases *kb, size_t rel, int json)
{
	json_t *modules = json_object(), *capsules = json_array(), *doc;
	size_t i;
	int rc = 0;

	for (i = 0; i < kb->nitem; i++) {
		const struct cp_release_item *it = &kb->item[i];

		if (!cp_releases_has(kb, i, rel))
			continue;
		if (it->name)
			json_array_append_new(capsules, json_pack("{s:s, s:s, s:s, s:s}", "module", it->module, "name",
								  it->name, "kind", kind_word(it->kind), "signature",
								  it->sig));
		else
			json_object_set_new(modules, it->module, json_string(kind_word(it->kind)));
	}
	doc = json_pack("{s:s, s:s, s:s, s:o, s:o}", "distribution", kb->rel[rel].dist, "version",
			kb->rel[rel].version, "requires_python", kb->rel[rel].requires_python, "modules", modules,
			"capsules", capsules);
	if (json)
		rc = cli_print_json(doc);
	else
		print_one(modules, capsules);
	json_decref(doc);
	return rc;
}

/* --release DIST==VERSION: its index, or -1 after saying why. */
static long find_release(const cp_releases *kb, const char *spec)
{
	const char *eq = strstr(spec, "==");
	char dist[64];
	long i;

	if (!eq || (size_t)(eq - spec) >= sizeof(dist)) {
		cli_usage_error("releases", "--release wants DIST==VERSION, not '%s'", spec);
		return -2;
	}
	memcpy(dist, spec, (size_t)(eq - spec));
	dist[eq - spec] = '\0';
	i = cp_releases_find(kb, dist, eq + 2);
	if (i < 0)
		fprintf(stderr, "cypatch: %s: not a release cypatch knows (see 'cypatch releases')\n", spec);
	return i;
}

int cmd_releases(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "release", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *spec = NULL;
	cp_error err = { CP_OK, "" };
	cp_releases *kb = NULL;
	cp_rules *rules = NULL;
	int json = 0, c, rc;
	long rel;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'r': spec = optarg; break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return cli_bad_option("releases", argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("releases", "%s", "takes no arguments");
	if (cli_load_releases(&kb, &err) ||
	    cli_load_rules(&rules, NULL, 0, &err)) {
		cp_releases_free(kb);
		return cli_error(&err);
	}
	rel = spec ? find_release(kb, spec) : -1;
	if (!spec)
		rc = list(kb, rules, json);
	else
		rc = rel >= 0 ? one(kb, (size_t)rel, json) : rel == -2 ? CP_E_USAGE : CP_E_INPUT;
	cp_rules_free(rules);
	cp_releases_free(kb);
	return rc;
}
