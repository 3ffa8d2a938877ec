/*
 * check_releases.c - `cypatch check --release SPEC`: the prediction of
 * check under every release of the knowledge base that SPEC names and that
 * ships for the consumer's Python, and, for a wheel, where its own
 * cuda-python / cuda-bindings requirement lies against those verdicts.
 */
#include "common.h"
#include "predict/requirement.h"
#include "releases/releases.h"
#include "wheel/wheel_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct table {
	const cp_releases *kb;
	size_t *rels, nrels;        /* checked */
	size_t *skipped, nskipped;  /* named, but not shipped for the consumer's Python */
	unsigned minor;
	bool abi3;
};

/* The releases the specs name, split by whether they ship for path's Python. */
static int pick_releases(struct table *t, const char *path, const char *const *specs, size_t nspecs)
{
	bool *pick = calloc(t->kb->nrel, sizeof(bool)), known = cp_consumer_python(path, &t->minor, &t->abi3);
	cp_error err = { CP_OK, "" };
	size_t i;

	t->rels = calloc(t->kb->nrel, sizeof(size_t));
	t->skipped = calloc(t->kb->nrel, sizeof(size_t));
	if (!pick || !t->rels || !t->skipped) {
		free(pick);
		fprintf(stderr, "cypatch: out of memory\n");
		return CP_E_INTERNAL;
	}
	for (i = 0; i < nspecs; i++)
		if (cp_releases_pick(t->kb, "--release", specs[i], pick, &err)) {
			free(pick);
			return cli_usage_error("check", "%s", err.msg);
		}
	for (i = 0; i < t->kb->nrel; i++) {
		if (!pick[i])
			continue;
		if (!known || cp_releases_ships_for(t->kb, i, t->minor, t->abi3))
			t->rels[t->nrels++] = i;
		else
			t->skipped[t->nskipped++] = i;
	}
	free(pick);
	return 0;
}

static json_t *release_names(const json_t *cells, const struct cp_requirement *req, const char *extra,
			     bool admitted, bool binds)
{
	json_t *out = json_array(), *c;
	size_t i;

	json_array_foreach(cells, i, c) {
		const char *dist = json_string_value(json_object_get(c, "distribution"));
		const char *ver = json_string_value(json_object_get(c, "version"));

		if (cp_requirement_admits(req, extra, dist, ver) == admitted &&
		    json_is_true(json_object_get(c, "ok")) == binds)
			json_array_append_new(out, json_sprintf("%s %s", dist, ver));
	}
	return out;
}

/* One way to install the wheel (no extra, or one of its extras): the
 * lines that apply, the releases they admit where the wheel fails, and
 * those they forbid where it binds. */
static json_t *install_group(const json_t *cells, const struct cp_requirement *req, const char *extra)
{
	json_t *lines = json_array();
	size_t i;

	for (i = 0; i < req->n; i++)
		if (!req->extra[i][0] || !strcmp(req->extra[i], extra))
			json_array_append_new(lines, json_string(req->line[i]));
	return json_pack("{s:s, s:o, s:o, s:o}", "extra", extra, "lines", lines, "admits_failing",
			 release_names(cells, req, extra, true, false), "forbids_binding",
			 release_names(cells, req, extra, false, true));
}

/* The wheel's requirement against the verdicts, for each way to install
 * it: without extras (where some line needs none, or no line names an
 * extra), and with each extra a line names. */
static int add_requirement(json_t *doc, const char *path)
{
	struct cp_requirement req;
	cp_error err = { CP_OK, "" };
	json_t *groups = json_array(), *cells = json_object_get(doc, "releases");
	bool plain;
	size_t i, k;

	if (cp_requirement_of_wheel(path, &req, &err)) {
		json_decref(groups);
		return cli_error(&err);
	}
	for (i = 0, plain = !req.n; i < req.n && !plain; i++)
		plain = !req.extra[i][0];
	if (plain)
		json_array_append_new(groups, install_group(cells, &req, ""));
	for (i = 0; i < req.n; i++) {
		for (k = 0; k < i && strcmp(req.extra[k], req.extra[i]); k++)
			;
		if (req.extra[i][0] && k == i)
			json_array_append_new(groups, install_group(cells, &req, req.extra[i]));
	}
	json_object_set_new(doc, "requirement", groups);
	return 0;
}

static void add_skipped(json_t *doc, const struct table *t)
{
	json_t *sk = json_array();
	size_t i;

	for (i = 0; i < t->nskipped; i++) {
		const struct cp_release *r = &t->kb->rel[t->skipped[i]];

		json_array_append_new(sk, json_pack("{s:s, s:s, s:s}", "distribution", r->dist, "version", r->version,
						    "requires_python", r->requires_python));
	}
	json_object_set_new(doc, "not_shipped", sk);
}

/* A release's cell: "binds", or the first failure of each failing
 * extension; what the stub stands in for there. */
static void print_cell(const json_t *c)
{
	json_t *e, *s;
	size_t i, j;

	printf("  %-13s %-13s %s\n", json_string_value(json_object_get(c, "distribution")),
	       json_string_value(json_object_get(c, "version")), json_is_true(json_object_get(c, "ok")) ? "binds" : "FAILS");
	json_array_foreach(json_object_get(c, "extensions"), i, e) {
		json_t *f = json_array_get(json_object_get(e, "failures"), 0);

		if (f)
			printf("      %s: %s\n", json_string_value(json_object_get(e, "file")), json_string_value(f));
		json_array_foreach(json_object_get(e, "stood_in"), j, s)
			printf("      %s: stood in for: %s\n", json_string_value(json_object_get(e, "file")),
			       json_string_value(s));
	}
}

static bool named(const json_t *names, const char *dist, const char *ver)
{
	json_t *v;
	size_t i, n = strlen(dist);

	json_array_foreach(names, i, v) {
		const char *s = json_string_value(v);

		if (!strncmp(s, dist, n) && s[n] == ' ' && !strcmp(s + n + 1, ver))
			return true;
	}
	return false;
}

/* The releases of names, as runs of consecutive releases of one
 * distribution in the table's order ("cuda-bindings 13.0.0 to 13.5.0"). */
static void print_runs(const char *head, const json_t *cells, const json_t *names, const char *tail)
{
	const char *first = NULL, *last = NULL, *dist = NULL;
	json_t *c;
	size_t i, runs = 0;

	if (!json_array_size(names))
		return;
	printf("  %s", head);
	for (i = 0; i <= json_array_size(cells); i++) {
		const char *d = NULL, *v = NULL;
		bool in = false;

		if ((c = json_array_get(cells, i)) != NULL) {
			d = json_string_value(json_object_get(c, "distribution"));
			v = json_string_value(json_object_get(c, "version"));
			in = named(names, d, v);
		}
		if (first && (!in || strcmp(d, dist))) {
			printf("%s %s %s", runs++ ? "," : "", dist, first);
			if (last != first)
				printf(" to %s", last);
			first = NULL;
		}
		if (in && !first)
			first = v, dist = d;
		if (in)
			last = v;
	}
	printf("%s\n", tail);
}

static void print_table(const char *path, const json_t *doc, const struct table *t)
{
	json_t *c, *req = json_object_get(doc, "requirement"), *v, *g, *cells = json_object_get(doc, "releases");
	size_t i, fails = 0;

	printf("%s, against the releases cypatch knows (listed %s):\n", path,
	       json_string_value(json_object_get(doc, "date")));
	json_array_foreach(cells, i, c) {
		print_cell(c);
		fails += !json_is_true(json_object_get(c, "ok"));
	}
	for (i = 0; i < t->nskipped; i++)
		printf("  %-13s %-13s no wheel for CPython 3.%u (Requires-Python %s)\n", t->kb->rel[t->skipped[i]].dist,
		       t->kb->rel[t->skipped[i]].version, t->minor, t->kb->rel[t->skipped[i]].requires_python);
	json_array_foreach(req, i, g) {
		const char *extra = json_string_value(json_object_get(g, "extra"));
		size_t k;

		printf("Requires-Dist%s%s%s:", extra[0] ? " [" : "", extra, extra[0] ? "]" : "");
		json_array_foreach(json_object_get(g, "lines"), k, v)
			printf("%s%s", k ? "; " : " ", json_string_value(v));
		printf("%s\n", json_array_size(json_object_get(g, "lines")) ? "" : " none of cuda-python or cuda-bindings");
		print_runs("floor too low: it admits", cells, json_object_get(g, "admits_failing"),
			   ", where the wheel fails");
		print_runs("it forbids", cells, json_object_get(g, "forbids_binding"), ", where the wheel binds");
	}
	if (fails)
		printf("FAILS under %zu of %zu releases\n", fails, t->nrels);
	else
		printf("binds under all %zu releases\n", t->nrels);
}

int check_releases(const char *path, const char *const *specs, size_t nspecs, const cp_rules *rules, int json)
{
	struct table t;
	cp_error err = { CP_OK, "" };
	json_t *doc = NULL;
	bool ok = false;
	int rc;

	memset(&t, 0, sizeof(t));
	if (cli_load_releases((cp_releases **)&t.kb, &err))
		return cli_error(&err);
	rc = pick_releases(&t, path, specs, nspecs);
	if (!rc && !t.nrels)
		rc = cli_usage_error("check", "no release that --release names ships for '%s'", path);
	if (!rc && cp_predict_releases(path, NULL, rules, t.kb, t.rels, t.nrels, &doc, &ok, &err))
		rc = cli_error(&err);
	if (!rc && cp_wheel_name_is(path))
		rc = add_requirement(doc, path);
	if (!rc) {
		add_skipped(doc, &t);
		if (json)
			rc = cli_print_json(doc);
		else
			print_table(path, doc, &t);
	}
	json_decref(doc);
	cp_releases_free((cp_releases *)t.kb);
	free(t.rels);
	free(t.skipped);
	return rc ? rc : ok ? 0 : CP_E_FAILED;
}
