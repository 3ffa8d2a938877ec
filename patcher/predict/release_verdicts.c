/*
 * release_verdicts.c - whether a wheel or extension binds under each
 * release of the knowledge base that ships for its CPython: check
 * --release all's verdicts, as data (what repair writes Requires-Dist from),
 * and whether a patch with --tolerate-missing holds over its range.
 */
#include "cypatch.h"
#include "releases/releases.h"
#include "util/error.h"
#include "wheel/wheel_name.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The releases that ship for the CPython name says, into rels. */
static size_t shipping(const cp_releases *kb, const char *name, size_t *rels)
{
	unsigned minor;
	bool abi3, known = cp_consumer_python(name, &minor, &abi3);
	size_t i, n = 0;

	for (i = 0; i < kb->nrel; i++)
		if (!known || cp_releases_ships_for(kb, i, minor, abi3))
			rels[n++] = i;
	return n;
}

cp_status cp_release_verdicts(const char *path, const char *as, const cp_rules *rules, const cp_releases *kb,
			      struct cp_release_verdict **v, size_t *n, cp_error *err)
{
	size_t *rels = calloc(kb->nrel ? kb->nrel : 1, sizeof(size_t)), nrels, i;
	json_t *doc = NULL;
	bool ok;
	cp_status st;

	*v = NULL;
	*n = 0;
	if (!rels)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	nrels = shipping(kb, as ? as : path, rels);
	st = cp_predict_releases(path, as, rules, kb, rels, nrels, &doc, &ok, err);
	if (!st && !(*v = calloc(nrels ? nrels : 1, sizeof(**v))))
		st = cp_fail(err, CP_E_INTERNAL, "out of memory");
	for (i = 0; !st && i < nrels; i++) {
		json_t *cell = json_array_get(json_object_get(doc, "releases"), i);

		(*v)[i].dist = kb->rel[rels[i]].dist;
		(*v)[i].version = kb->rel[rels[i]].version;
		(*v)[i].binds = json_is_true(json_object_get(cell, "ok"));
	}
	*n = st ? 0 : nrels;
	json_decref(doc);
	free(rels);
	return st;
}

/* The first failure of a release's cell of check --release (of path). */
static cp_status first_failure(const json_t *cell, const char *path, const char *as, const char *spec,
			       const struct cp_release *r, cp_error *err)
{
	json_t *e, *f;
	size_t i;

	json_array_foreach(json_object_get(cell, "extensions"), i, e) {
		const char *file = json_string_value(json_object_get(e, "file"));

		if ((f = json_array_get(json_object_get(e, "failures"), 0)))
			return cp_fail(err, CP_E_INPUT, "%s: --tolerate-missing '%s': under %s %s, %s%sstill fails, "
				       "where no stand-in serves: %s", as, spec, r->dist, r->version,
				       strcmp(file, path) ? file : "", strcmp(file, path) ? " " : "it ",
				       json_string_value(f));
	}
	return cp_fail(err, CP_E_INPUT, "%s: --tolerate-missing '%s': it still fails under %s %s", as, spec, r->dist,
		       r->version);
}

cp_status cp_tolerance_holds(const char *path, const char *as, const cp_rules *rules, const cp_releases *kb,
			     const char *spec, cp_error *err)
{
	size_t *rels = calloc(kb->nrel + 1, sizeof(size_t)), nrels = 0, n, i;
	bool *pick = calloc(kb->nrel + 1, sizeof(bool)), ok = true;
	json_t *doc = NULL;
	cp_status st = rels && pick ? CP_OK : cp_fail(err, CP_E_INTERNAL, "out of memory");

	if (!st)
		st = cp_releases_pick(kb, "--tolerate-missing", spec, pick, err);
	n = st ? 0 : shipping(kb, as, rels);
	for (i = 0; i < n; i++)
		if (pick[rels[i]])
			rels[nrels++] = rels[i];
	if (!st && nrels)
		st = cp_predict_releases(path, as, rules, kb, rels, nrels, &doc, &ok, err);
	for (i = 0; !st && !ok && i < nrels; i++) {
		json_t *cell = json_array_get(json_object_get(doc, "releases"), i);

		if (!json_is_true(json_object_get(cell, "ok")))
			st = first_failure(cell, path, as, spec, &kb->rel[rels[i]], err);
	}
	json_decref(doc);
	free(rels);
	free(pick);
	return st;
}
