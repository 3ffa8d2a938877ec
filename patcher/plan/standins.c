/*
 * standins.c - what the fallback stub stands in for under
 * --tolerate-missing (docs/tolerate.md): each cimported function that a
 * release of the requested range lacks, and each cimported module a release
 * lacks whole, judged from the knowledge base (releases/releases.h).
 *
 * A function is stood in for by code that returns the error of its return
 * type ([errors] in the rules); one whose type has none is refused, as is
 * a missing module the extension takes types or variables from, or one it
 * may import at Python level: an empty module there would fail later, not
 * at import.
 */
#include "plan/plan.h"
#include "predict/exports.h"
#include "releases/releases.h"
#include "rules/rules.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>

struct judge {
	const char *path;
	const cp_scan *scan;
	const cp_rules *rules;
	const cp_releases *kb;
	struct cp_standins *out;
	cp_error *err;
};

/* The release name "cuda-bindings 13.0.0", for messages. */
static const char *rel_name(const cp_releases *kb, size_t rel, char *buf, size_t n)
{
	snprintf(buf, n, "%s %s", kb->rel[rel].dist, kb->rel[rel].version);
	return buf;
}

static bool has(const char *const *v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return true;
	return false;
}

/* Adds s to the set v (n strings), once. */
static cp_status add(const char ***v, size_t *n, const char *s, cp_error *err)
{
	const char **grown;

	if (has(*v, *n, s))
		return CP_OK;
	grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	*v = grown;
	(*v)[(*n)++] = s;
	return CP_OK;
}

static cp_status add_type(struct cp_standins *out, const struct cp_error_value *t, cp_error *err)
{
	const struct cp_error_value **grown;
	size_t i;

	for (i = 0; i < out->nret; i++)
		if (out->ret[i] == t)
			return CP_OK;
	grown = realloc(out->ret, (out->nret + 1) * sizeof(*out->ret));
	if (!grown)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	out->ret = grown;
	out->ret[out->nret++] = t;
	return CP_OK;
}

/* The name module m has in release rel: itself, else its counterpart in
 * the other layout (the stub imports either); NULL when neither ships. */
static const char *shipped_as(const cp_releases *kb, const cp_rules *rules, size_t rel, const char *m)
{
	int lay = cp_rules_module_layout(rules, m);
	const char *other = lay >= 0 ? cp_rules_map(rules, m, !lay) : NULL;

	if (cp_releases_module(kb, rel, m) != CP_RELMOD_ABSENT)
		return m;
	if (other && cp_releases_module(kb, rel, other) != CP_RELMOD_ABSENT)
		return other;
	return NULL;
}

/* Whether the scan takes anything but functions from module m, or may
 * import it at Python level (its name a Python string constant, or a
 * Python-level import of it reported). */
static const char *not_standable(const cp_scan *s, const char *m)
{
	size_t i;

	for (i = 0; i < s->nrefs; i++) {
		const struct cp_ref *r = &s->refs[i];

		if (!cp_ref_is_live(r) || !r->module || strcmp(r->module, m))
			continue;
		if (r->kind == CP_K_TYPE || r->kind == CP_K_VARIABLE)
			return r->kind == CP_K_TYPE ? "a type" : "a variable";
		if (r->kind == CP_K_PYIMPORT || r->kind == CP_K_FROMIMPORT ||
		    (r->kind == CP_K_UNMAPPED && r->loc.blob >= 0))
			return "a Python-level import";
	}
	return NULL;
}

/* The function f (of module f->module), missing in release rel: listed,
 * when its return type has an error value. */
static cp_status stand_in_function(const struct judge *j, size_t rel, const struct cp_ref *f)
{
	const struct cp_error_value *t = cp_rules_error_type(j->rules, f->signature);
	char name[128];

	if (f->kind == CP_K_VARIABLE)
		return cp_fail(j->err, CP_E_INPUT, "%s: cannot stand in for the variable %s.%s, which %s lacks",
			       j->path, f->module, f->name, rel_name(j->kb, rel, name, sizeof(name)));
	if (!t)
		return cp_fail(j->err, CP_E_INPUT, "%s: cannot stand in for %s.%s, which %s lacks: its signature "
			       "(%s) returns no type the rules' [errors] name", j->path, f->module, f->name,
			       rel_name(j->kb, rel, name, sizeof(name)), f->signature);
	return add(&j->out->func, &j->out->nfunc, f->name, j->err) || add_type(j->out, t, j->err);
}

/* Module m (cimported) under release rel: stood in for whole when absent,
 * else each of its functions that rel lacks. */
static cp_status judge_module(const struct judge *j, size_t rel, const char *m)
{
	const cp_scan *s = j->scan;
	const char *as = shipped_as(j->kb, j->rules, rel, m), *why;
	struct cp_exports ex;
	cp_status st = CP_OK;
	char name[128];
	size_t i;

	if (!as && (why = not_standable(s, m)))
		return cp_fail(j->err, CP_E_INPUT, "%s: cannot stand in for the module %s, which %s lacks: the "
			       "extension takes %s from it", j->path, m, rel_name(j->kb, rel, name, sizeof(name)), why);
	if (!as)
		st = add(&j->out->module, &j->out->nmodule, m, j->err);
	memset(&ex, 0, sizeof(ex));
	if (!st && as)
		st = cp_exports_of_release(j->kb, rel, as, &ex, j->err);
	for (i = 0; !st && i < s->nrefs; i++) {
		const struct cp_ref *f = &s->refs[i];

		if ((f->kind == CP_K_FUNCTION || f->kind == CP_K_VARIABLE) && cp_ref_is_live(f) && f->module &&
		    !strcmp(f->module, m) && (!as || !cp_exports_find(&ex, f->name)))
			st = stand_in_function(j, rel, f);
	}
	cp_exports_free(&ex);
	return st;
}

/* Whether ref r names a module the extension imports for its capsules. */
static bool cimported(const struct cp_ref *r)
{
	return cp_ref_is_live(r) &&
	       (r->kind == CP_K_CIMPORT || (r->kind == CP_K_UNMAPPED && cp_ref_may_import(r) && r->loc.blob < 0));
}

cp_status cp_plan_standins(const cp_image *img, const cp_scan *s, const cp_releases *kb, const bool *pick,
			   struct cp_standins *out, cp_error *err)
{
	struct judge j = { img->path, s, s->rules, kb, out, err };
	cp_status st = CP_OK;
	size_t rel, i;

	memset(out, 0, sizeof(*out));
	for (rel = 0; !st && rel < kb->nrel; rel++)
		for (i = 0; pick[rel] && !st && i < s->nrefs; i++)
			if (cimported(&s->refs[i]))
				st = judge_module(&j, rel, s->refs[i].value);
	if (st)
		cp_standins_free(out);
	return st;
}

void cp_standins_free(struct cp_standins *s)
{
	free(s->func);
	free(s->module);
	free(s->ret);
	memset(s, 0, sizeof(*s));
}
