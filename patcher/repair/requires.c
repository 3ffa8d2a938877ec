/*
 * requires.c - the cuda-python / cuda-bindings requirement made true (see
 * requires.h): each such Requires-Dist line rewritten from check's
 * verdicts under every release cypatch knows.
 */
#include "repair/requires.h"
#include "predict/requirement.h"
#include "repair/pep508.h"
#include "releases/pep440.h"
#include "releases/releases.h"
#include "util/error.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VERSION 32 /* a release's version, as the knowledge base spells it */

/* One line's view of the releases: the CUDA majors it admitted as written,
 * and whether it admits cuda-python releases (a cuda-bindings line admits
 * none). */
struct view {
	const struct cp_release_verdict *v;
	size_t n;
	uint64_t majors; /* bit m: CUDA major m */
	bool python;
};

static unsigned major_of(const char *version)
{
	unsigned long m = strtoul(version, NULL, 10);

	return m < 64 ? (unsigned)m : 63;
}

static bool in_view(const struct view *w, const struct cp_release_verdict *x)
{
	return (w->majors >> major_of(x->version) & 1) && (w->python || !strcmp(x->dist, "cuda-bindings"));
}

static int vcmp(const char *a, const char *b)
{
	bool ok;

	return cp_pep440_compare(a, b, &ok);
}

/* The majors of the releases the line's own specifiers admit. */
static uint64_t own_majors(const struct cp_release_verdict *v, size_t n, bool python, const char *specs)
{
	uint64_t m = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if ((python || !strcmp(v[i].dist, "cuda-bindings")) &&
		    cp_pep440_satisfies(specs, strlen(specs), v[i].version) == 1)
			m |= 1ull << major_of(v[i].version);
	return m;
}

/* Whether a cuda-python release with modules binds in the line's majors:
 * then only a line naming cuda-python can admit it. */
static bool python_binds(const struct view *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (w->v[i].binds && !strcmp(w->v[i].dist, "cuda-python") && (w->majors >> major_of(w->v[i].version) & 1))
			return true;
	return false;
}

/* Whether every release of this version in the view binds. */
static bool version_binds(const struct view *w, const char *version)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (in_view(w, &w->v[i]) && !strcmp(w->v[i].version, version) && !w->v[i].binds)
			return false;
	return true;
}

/* Whether release i's version was met before it in the view. */
static bool seen_version(const struct view *w, size_t i)
{
	size_t k;

	for (k = 0; k < i; k++)
		if (in_view(w, &w->v[k]) && !strcmp(w->v[k].version, w->v[i].version))
			return true;
	return false;
}

/* The oldest release of the view that binds, or NULL. */
static const char *floor_of(const struct view *w)
{
	const char *floor = NULL;
	size_t i;

	for (i = 0; i < w->n; i++)
		if (in_view(w, &w->v[i]) && version_binds(w, w->v[i].version) &&
		    (!floor || vcmp(w->v[i].version, floor) < 0))
			floor = w->v[i].version;
	return floor;
}

/* The specifiers admitting exactly the releases of the view that bind,
 * written at o (room for 32 + n * (MAX_VERSION + 3) bytes). */
static size_t true_specs(const struct view *w, const char *floor, char *o)
{
	unsigned top = 63;
	size_t i, k = 0;

	while (!(w->majors >> top & 1))
		top--;
	k += (size_t)sprintf(o, ">=%s,<%u", floor, top + 1);
	for (i = 0; i < w->n; i++)
		if (in_view(w, &w->v[i]) && vcmp(w->v[i].version, floor) > 0 && !version_binds(w, w->v[i].version) &&
		    !seen_version(w, i))
			k += (size_t)sprintf(o + k, ",!=%s", w->v[i].version);
	return k;
}

/* The line's own specifiers joined by ",". */
static void own_specs(const char *v, const struct cp_pep508 *r, char *buf, size_t n)
{
	size_t k, w = 0;

	buf[0] = '\0';
	for (k = 0; k < r->nspecs && w < n; k++)
		w += (size_t)snprintf(buf + w, n - w, "%s%.*s", k ? "," : "", (int)(r->specs[k].end - r->specs[k].start),
				      v + r->specs[k].start);
}

/* Value v[0, vlen) of a line naming cuda-python (python) or cuda-bindings,
 * rewritten at o; 0 when no release of the majors it admits binds. */
static size_t rewrite_line(const char *v, size_t vlen, const struct cp_pep508 *r, bool python,
			   const struct cp_release_verdict *ver, size_t n, char *o)
{
	char specs[2048];
	struct view w = { ver, n, 0, python };
	const char *floor;
	size_t k;

	own_specs(v, r, specs, sizeof(specs));
	w.majors = own_majors(ver, n, python, specs);
	w.python = python || python_binds(&w);
	floor = w.majors ? floor_of(&w) : NULL;
	if (!floor)
		return 0;
	if (w.python && !python)
		k = (size_t)sprintf(o, "cuda-python"); /* extras are cuda-bindings' own */
	else
		k = (size_t)sprintf(o, "%.*s%.*s", (int)(r->name.end - r->name.start), v + r->name.start,
				    (int)(r->extras.end - r->extras.start), v + r->extras.start);
	k += true_specs(&w, floor, o + k);
	if (r->marker < vlen)
		k += (size_t)sprintf(o + k, " %.*s", (int)(vlen - r->marker), v + r->marker);
	return k;
}

static cp_status bad_line(const char *where, const char *v, size_t vlen, const char *why, cp_error *err)
{
	return cp_fail(err, CP_E_INPUT, "%s: Requires-Dist: %.*s: %s", where, (int)(vlen < 200 ? vlen : 200), v, why);
}

/* The value v[0, vlen) of one line of ours written at o + *w: rewritten,
 * or as it is (*kept counts it) where no release it admits binds. */
static cp_status one_value(const char *v, size_t vlen, size_t namelen, bool python,
			   const struct cp_release_verdict *ver, size_t n, const char *where, char *o, size_t *w,
			   size_t *kept, cp_error *err)
{
	struct cp_pep508 r;
	size_t made;

	if (!cp_pep508_parse(v, vlen, &r) || r.url || r.name.end - r.name.start != namelen)
		return bad_line(where, v, vlen, r.url ? "a URL, which cypatch cannot rewrite" :
				"not a requirement PEP 508 allows, which cypatch cannot rewrite", err);
	made = rewrite_line(v, vlen, &r, python, ver, n, o + *w);
	if (!made) { /* a wheel of releases newer than the base, or of none: kept */
		memcpy(o + *w, v, vlen);
		*w += vlen;
		(*kept)++;
		return CP_OK;
	}
	if (!cp_pep508_parse(o + *w, made, &r)) /* what pip reads back */
		return cp_fail(err, CP_E_INTERNAL, "%s: Requires-Dist: %.*s: the line written is not PEP 508", where,
			       (int)(vlen < 200 ? vlen : 200), v);
	*w += made;
	return CP_OK;
}

cp_status cp_requires_rewrite(const char *meta, size_t len, const struct cp_release_verdict *v, size_t n,
			      const char *where, char **out, size_t *outlen, bool *changed, size_t *kept, cp_error *err)
{
	struct cp_requires_dist r;
	size_t w = 0, cap = 0, from = 0, pos = 0, i;
	char *o = NULL;
	cp_status st = CP_OK;

	*kept = 0;
	for (i = 0; i < n; i++)
		assert(strlen(v[i].version) < MAX_VERSION);
	/* the bytes between our values are copied as they are */
	while (!st && cp_requires_dist_next(meta, len, &pos, &r)) {
		if (!r.ours)
			continue;
		if (CP_GROW(o, cap, w + (r.end - from) + 64 + n * (MAX_VERSION + 3))) {
			st = cp_fail(err, CP_E_INTERNAL, "out of memory");
			break;
		}
		memcpy(o + w, meta + from, r.value - from);
		w += r.value - from;
		st = one_value(meta + r.value, r.end - r.value, r.namelen, r.python, v, n, where, o, &w, kept, err);
		from = r.end;
	}
	if (!st && CP_GROW(o, cap, w + (len - from) + 1))
		st = cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (st) {
		free(o);
		return st;
	}
	memcpy(o + w, meta + from, len - from);
	w += len - from;
	*out = o;
	*outlen = w;
	*changed = w != len || memcmp(o, meta, len) != 0;
	return CP_OK;
}
