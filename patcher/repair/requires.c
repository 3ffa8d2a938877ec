/*
 * requires.c - widening the cuda-python requirement (see requires.h).
 */
#include "repair/requires.h"
#include "repair/pep508.h"
#include "releases/releases.h"
#include "util/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BINDINGS_FIRST "12.6.1" /* rules/cuda-python.rules: bindings = cuda-python >= 12.6.1 */

/* a < b, comparing the numeric components of two versions. */
static bool older(const char *a, const char *b)
{
	while (*a || *b) {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);

		if (x != y)
			return x < y;
		if (*a != '.' || *b != '.')
			return *b == '.' && *a != '.';
		a++, b++;
	}
	return false;
}

/* Keeps one specifier (">=12.6.2", "<13.0a0") or not, for the layout. */
static bool keep(const char *spec, const char *layout)
{
	while (isspace((unsigned char)*spec))
		spec++;
	if (!strncmp(spec, ">", 1) || !strncmp(spec, "~=", 2) || !strncmp(spec, "==", 2))
		return false;
	if (!strcmp(layout, "bindings") && *spec == '<')
		return !older(spec + (spec[1] == '=' ? 2 : 1), BINDINGS_FIRST);
	return true;
}

/* One Requires-Dist value r (parsed from v) rewritten into o: the name
 * and extras, the specifiers kept for the layout (and bindings' floor),
 * the marker as it was. */
static size_t rewrite(const char *v, size_t n, const struct cp_pep508 *r, const char *layout, bool python, char *o)
{
	size_t w = 0, k;
	bool first = true;

	w += (size_t)sprintf(o, "%.*s%.*s", (int)(r->name.end - r->name.start), v + r->name.start,
			     (int)(r->extras.end - r->extras.start), v + r->extras.start);
	if (!strcmp(layout, "bindings") && python) {
		w += (size_t)sprintf(o + w, ">=%s", BINDINGS_FIRST);
		first = false;
	}
	for (k = 0; k < r->nspecs; k++) {
		char spec[128];
		size_t len = r->specs[k].end - r->specs[k].start;

		if (len >= sizeof(spec))
			len = sizeof(spec) - 1;
		snprintf(spec, sizeof(spec), "%.*s", (int)len, v + r->specs[k].start);
		if (keep(spec, layout)) {
			w += (size_t)sprintf(o + w, "%s%s", first ? "" : ",", spec);
			first = false;
		}
	}
	if (r->marker < n)
		w += (size_t)sprintf(o + w, " %.*s", (int)(n - r->marker), v + r->marker);
	return w;
}

cp_status cp_relax_requires(const char *meta, size_t len, const char *layout, const char *where, char **out,
			    size_t *outlen, bool *changed, cp_error *err)
{
	static const char key[] = "Requires-Dist:";
	const char *p = meta, *end = meta + len;
	char *o = malloc(2 * len + 64);
	size_t w = 0;

	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *stop = eol ? eol : end, *v, *name;
		bool python;
		size_t n;

		if (p[0] == '\n' || (p[0] == '\r' && p + 1 < end && p[1] == '\n')) { /* the body */
			memcpy(o + w, p, (size_t)(end - p));
			w += (size_t)(end - p);
			break;
		}
		v = p + sizeof(key) - 1;
		while (v < stop && *v == ' ')
			v++;
		for (name = v, n = 0; name + n < stop && (isalnum((unsigned char)name[n]) || strchr("-_.", name[n])); n++)
			;
		if ((size_t)(stop - p) > sizeof(key) - 1 && !strncasecmp(p, key, sizeof(key) - 1) && cp_releases_dist(name, n, &python)) {
			size_t vlen = (size_t)(stop - v) - (stop > v && stop[-1] == '\r'), made;
			struct cp_pep508 r;

			if (!cp_pep508_parse(v, vlen, &r) || r.url || r.name.end - r.name.start != n) {
				free(o);
				return cp_fail(err, CP_E_INPUT, "%s: Requires-Dist: %.*s: %s", where, (int)(vlen < 200 ? vlen : 200),
					       v, r.url ? "a URL, which --relax-requires cannot widen"
							: "not a requirement PEP 508 allows, which --relax-requires cannot rewrite");
			}
			memcpy(o + w, p, (size_t)(v - p));
			w += (size_t)(v - p);
			made = rewrite(v, vlen, &r, layout, python, o + w);
			if (!cp_pep508_parse(o + w, made, &r)) { /* what pip reads back */
				free(o);
				return cp_fail(err, CP_E_INTERNAL, "%s: Requires-Dist: %.*s: the widened line is not "
					       "PEP 508", where, (int)(vlen < 200 ? vlen : 200), v);
			}
			w += made;
			if (stop[-1] == '\r')
				o[w++] = '\r';
		} else {
			memcpy(o + w, p, (size_t)(stop - p));
			w += (size_t)(stop - p);
		}
		if (eol)
			o[w++] = '\n';
		p = eol ? eol + 1 : end;
	}
	*out = o;
	*outlen = w;
	*changed = w != len || memcmp(o, meta, len) != 0;
	return CP_OK;
}
