/*
 * requirement.c - a wheel's requirement of cuda-python and cuda-bindings
 * (requirement.h), read with the PEP 508 parser and judged by PEP 440.
 */
#include "predict/requirement.h"
#include "releases/pep440.h"
#include "releases/releases.h"
#include "repair/pep508.h"
#include "util/error.h"
#include "wheel/wheel.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The extra a marker m[0, n) asks for (`extra == "cu13"`, either quote),
 * into out; "" when it names none. */
static void marker_extra(const char *m, size_t n, char *out, size_t outn)
{
	size_t i, k;

	out[0] = '\0';
	for (i = 0; i + 5 <= n; i++) {
		if (memcmp(m + i, "extra", 5))
			continue;
		for (k = i + 5; k < n && m[k] == ' '; k++)
			;
		if (k + 2 > n || memcmp(m + k, "==", 2))
			continue;
		for (k += 2; k < n && m[k] == ' '; k++)
			;
		if (k < n && (m[k] == '"' || m[k] == '\'')) {
			const char *q = memchr(m + k + 1, m[k], n - k - 1);

			if (q && (size_t)(q - (m + k + 1)) < outn)
				snprintf(out, outn, "%.*s", (int)(q - (m + k + 1)), m + k + 1);
			return;
		}
	}
}

/* One Requires-Dist value v[0, n): kept in req when it names ours. */
static cp_status add_line(const char *v, size_t n, struct cp_requirement *req, const char *where, cp_error *err)
{
	struct cp_pep508 r;
	bool python;
	size_t k, w = 0;
	char *specs;

	if (!cp_pep508_parse(v, n, &r))
		return cp_fail(err, CP_E_INPUT, "%s: Requires-Dist: %.*s: not a requirement PEP 508 allows", where,
			       (int)(n < 200 ? n : 200), v);
	if (!cp_releases_dist(v + r.name.start, r.name.end - r.name.start, &python))
		return CP_OK;
	if (req->n == CP_REQUIREMENT_MAX || n >= sizeof(req->line[0]))
		return cp_fail(err, CP_E_INPUT, "%s: more cuda-python requirements than cypatch reads", where);
	snprintf(req->line[req->n], sizeof(req->line[0]), "%.*s", (int)n, v);
	req->python[req->n] = python;
	if (r.marker < n)
		marker_extra(v + r.marker, n - r.marker, req->extra[req->n], sizeof(req->extra[0]));
	specs = req->specs[req->n];
	for (k = 0; k < r.nspecs; k++)
		w += (size_t)snprintf(specs + w, sizeof(req->specs[0]) - w, "%s%.*s", k ? "," : "",
				      (int)(r.specs[k].end - r.specs[k].start), v + r.specs[k].start);
	req->n++;
	return CP_OK;
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

bool cp_requires_dist_next(const char *meta, size_t len, size_t *pos, struct cp_requires_dist *r)
{
	static const char key[] = "Requires-Dist:";

	while (*pos < len && meta[*pos] != '\n' && meta[*pos] != '\r') {
		const char *p = meta + *pos, *eol = memchr(p, '\n', len - *pos);
		size_t stop = eol ? (size_t)(eol - meta) : len;

		*pos = eol ? stop + 1 : len;
		if (stop - (size_t)(p - meta) <= sizeof(key) - 1 || strncasecmp(p, key, sizeof(key) - 1))
			continue;
		r->value = (size_t)(p - meta) + sizeof(key) - 1;
		while (r->value < stop && meta[r->value] == ' ')
			r->value++;
		r->end = stop - (stop > r->value && meta[stop - 1] == '\r');
		for (r->namelen = 0; r->value + r->namelen < r->end && name_char(meta[r->value + r->namelen]); r->namelen++)
			;
		r->ours = cp_releases_dist(meta + r->value, r->namelen, &r->python);
		return true;
	}
	return false;
}

static cp_status parse_metadata(const char *meta, size_t len, struct cp_requirement *req, const char *where,
				cp_error *err)
{
	struct cp_requires_dist r;
	size_t pos = 0;
	cp_status st = CP_OK;

	while (!st && cp_requires_dist_next(meta, len, &pos, &r))
		st = add_line(meta + r.value, r.end - r.value, req, where, err);
	return st;
}

cp_status cp_requirement_of_wheel(const char *path, struct cp_requirement *req, cp_error *err)
{
	struct cp_wheel *w = NULL;
	uint8_t *meta = NULL;
	char where[4400];
	size_t len, at;
	cp_status st = cp_wheel_open(path, &w, err);

	memset(req, 0, sizeof(*req));
	if (!st)
		st = cp_wheel_read_metadata(w, &at, &meta, &len, where, sizeof(where), err);
	if (!st)
		st = parse_metadata((const char *)meta, len, req, where, err);
	free(meta);
	cp_wheel_close(w);
	return st;
}

bool cp_requirement_admits(const struct cp_requirement *req, const char *extra, const char *dist,
			   const char *version)
{
	bool bindings = !strcmp(dist, "cuda-bindings");
	size_t i;

	for (i = 0; i < req->n; i++) {
		if (req->extra[i][0] && strcmp(req->extra[i], extra))
			continue;
		if (!req->python[i] && !bindings)
			return false;
		if (cp_pep440_satisfies(req->specs[i], strlen(req->specs[i]), version) != 1)
			return false;
	}
	return true;
}
