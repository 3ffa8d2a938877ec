/*
 * releases.c - reads rules/releases.txt (releases.h): one release, module
 * or capsule per line, each item with the ranges of releases that have it.
 */
#include "releases/releases.h"
#include "releases/pep440.h"
#include "util/error.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first n space-separated words of *line, each cut off with a NUL;
 * *line then points at the rest (the signature of a capsule line). */
static bool words(char **line, char **w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char *end = strchr(*line, ' ');

		w[i] = *line;
		if (!end && i + 1 < n)
			return false;
		if (end)
			*end = '\0';
		*line = end ? end + 1 : *line + strlen(*line);
		if (!w[i][0])
			return false;
	}
	return true;
}

bool cp_releases_dist(const char *name, size_t n, bool *python)
{
	char norm[32];
	size_t i;

	if (n >= sizeof(norm))
		return false;
	for (i = 0; i < n; i++)
		norm[i] = name[i] == '_' || name[i] == '.' ? '-' : (char)tolower((unsigned char)name[i]);
	norm[n] = '\0';
	*python = !strcmp(norm, "cuda-python");
	return *python || !strcmp(norm, "cuda-bindings");
}

bool cp_releases_select(const cp_releases *r, const char *spec, bool *pick)
{
	size_t n = 0, i;
	bool python;

	while (isalnum((unsigned char)spec[n]) || spec[n] == '-' || spec[n] == '_' || spec[n] == '.')
		n++;
	if (!strcmp(spec, "all")) {
		for (i = 0; i < r->nrel; i++)
			pick[i] = true;
		return true;
	}
	if (!cp_releases_dist(spec, n, &python))
		return false;
	for (i = 0; i < r->nrel; i++) {
		int ok = cp_pep440_satisfies(spec + n, strlen(spec + n), r->rel[i].version);

		if (ok < 0)
			return false;
		pick[i] = pick[i] || (ok && !strcmp(r->rel[i].dist, python ? "cuda-python" : "cuda-bindings"));
	}
	return true;
}

cp_status cp_releases_pick(const cp_releases *r, const char *option, const char *spec, bool *pick, cp_error *err)
{
	if (cp_releases_select(r, spec, pick))
		return CP_OK;
	return cp_fail(err, CP_E_USAGE, "%s wants 'all' or cuda-python/cuda-bindings with PEP 440 specifiers, not '%s'",
		       option, spec);
}

bool cp_releases_ships_for(const cp_releases *r, size_t rel, unsigned minor, bool abi3)
{
	const char *rp = r->rel[rel].requires_python;
	char v[16];
	unsigned m;

	if (!strcmp(rp, "any"))
		return true;
	for (m = minor; m <= (abi3 ? 99u : minor); m++) {
		snprintf(v, sizeof(v), "3.%u", m);
		if (cp_pep440_satisfies(rp, strlen(rp), v) == 1)
			return true;
	}
	return false;
}

long cp_releases_find(const cp_releases *r, const char *dist, const char *version)
{
	size_t i;

	for (i = 0; i < r->nrel; i++)
		if (!strcmp(r->rel[i].dist, dist) && !strcmp(r->rel[i].version, version))
			return (long)i;
	return -1;
}

enum cp_release_module cp_releases_module(const cp_releases *r, size_t rel, const char *name)
{
	size_t i, n = strlen(name);
	bool dir = false;

	for (i = 0; i < r->nitem; i++) {
		const struct cp_release_item *it = &r->item[i];

		if ((it->kind != CP_REL_EXTENSION && it->kind != CP_REL_PYTHON) || strncmp(it->module, name, n) ||
		    (it->module[n] != '\0' && it->module[n] != '.') || !cp_releases_has(r, i, rel))
			continue;
		if (it->module[n] == '.')
			dir = true;
		else
			return it->kind == CP_REL_EXTENSION ? CP_RELMOD_EXTENSION : CP_RELMOD_PYTHON;
	}
	return dir ? CP_RELMOD_DIRECTORY : CP_RELMOD_ABSENT;
}

/* The last release of dist at or after index i (its releases are listed
 * together). */
static size_t last_of(const cp_releases *r, size_t i)
{
	while (i + 1 < r->nrel && !strcmp(r->rel[i + 1].dist, r->rel[i].dist))
		i++;
	return i;
}

/* Sets the bits of "DIST:FIRST-LAST[,...]" in set; false when a range
 * names a release the file does not list, or runs backwards. */
static bool parse_ranges(const cp_releases *r, char *text, uint64_t *set)
{
	char *save = NULL, *one;

	for (one = strtok_r(text, ",", &save); one; one = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(one, ':'), *dash;
		long first, last;

		if (!colon || !(dash = strchr(colon + 1, '-')))
			return false;
		*colon = *dash = '\0';
		first = cp_releases_find(r, one, colon + 1);
		if (first < 0)
			return false;
		last = dash[1] ? cp_releases_find(r, one, dash + 1) : (long)last_of(r, (size_t)first);
		if (last < first)
			return false;
		for (; first <= last; first++)
			set[first / 64] |= UINT64_C(1) << (first % 64);
	}
	return true;
}

bool cp_releases_has(const cp_releases *r, size_t i, size_t rel)
{
	assert(i < r->nitem && rel < r->nrel);
	return (r->sets[i * r->words + rel / 64] >> (rel % 64)) & 1;
}

static bool add_release(cp_releases *r, char *line)
{
	char *w[3];

	if (r->nitem || !words(&line, w, 3) || *line || cp_releases_find(r, w[0], w[1]) >= 0)
		return false;  /* every release comes before the items, once */
	assert(r->nrel < r->cap);
	r->rel[r->nrel++] = (struct cp_release){ w[0], w[1], w[2] };
	return true;
}

/* A module line ("NAME KIND RANGES") or a capsule line ("MODULE NAME
 * RANGES SIGNATURE"), with the releases' sets grown for it. */
static bool add_item(cp_releases *r, enum cp_release_kind kind, char *line)
{
	char *w[3];
	bool module = kind == CP_REL_EXTENSION;

	if (!r->nrel || !words(&line, w, 3) || (module && *line) || (!module && !*line))
		return false;
	if (module && strcmp(w[1], "extension") && strcmp(w[1], "python"))
		return false;
	if (!r->sets) {  /* the first item: the releases are known */
		r->words = (r->nrel + 63) / 64;
		if (!(r->sets = calloc(r->cap * r->words, sizeof(*r->sets))))
			return false;
	}
	assert(r->nitem < r->cap);
	if (module)
		r->item[r->nitem] = (struct cp_release_item){
			!strcmp(w[1], "extension") ? CP_REL_EXTENSION : CP_REL_PYTHON, w[0], NULL, NULL };
	else
		r->item[r->nitem] = (struct cp_release_item){ kind, w[0], w[1], line };
	if (!parse_ranges(r, w[2], r->sets + r->nitem * r->words))
		return false;
	r->nitem++;
	return true;
}

static bool parse_line(cp_releases *r, char *line)
{
	static const struct { const char *word; size_t len; } kw[] = {
		{ "date ", 5 }, { "release ", 8 }, { "module ", 7 }, { "function ", 9 }, { "variable ", 9 },
	};

	if (!line[0] || line[0] == '#')
		return true;
	if (!strncmp(line, kw[0].word, kw[0].len) && !r->date) {
		r->date = line + kw[0].len;
		return !strchr(r->date, ' ');
	}
	if (!strncmp(line, kw[1].word, kw[1].len))
		return add_release(r, line + kw[1].len);
	if (!strncmp(line, kw[2].word, kw[2].len))
		return add_item(r, CP_REL_EXTENSION, line + kw[2].len);
	if (!strncmp(line, kw[3].word, kw[3].len))
		return add_item(r, CP_REL_FUNCTION, line + kw[3].len);
	if (!strncmp(line, kw[4].word, kw[4].len))
		return add_item(r, CP_REL_VARIABLE, line + kw[4].len);
	return false;
}

static size_t count_lines(const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t n = 1;

	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		n++;
		p++;
	}
	return n;
}

cp_status cp_releases_parse(const char *text, size_t len, cp_releases **out, cp_error *err)
{
	cp_releases *r = calloc(1, sizeof(*r));
	char *line, *next;
	size_t n = 1;

	*out = NULL;
	if (r) /* a bound on the releases and the items: one per line */
		r->cap = count_lines(text, len);
	if (!r || !(r->text = malloc(len + 1)) || !(r->rel = calloc(r->cap, sizeof(*r->rel))) ||
	    !(r->item = calloc(r->cap, sizeof(*r->item)))) {
		cp_releases_free(r);
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	memcpy(r->text, text, len);
	r->text[len] = '\0';
	for (line = r->text; *line; line = next, n++) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (!parse_line(r, line)) {
			cp_releases_free(r);
			return cp_fail(err, CP_E_INTERNAL, "releases: line %zu cannot be read", n);
		}
	}
	if (!r->date || !r->nrel) {
		cp_releases_free(r);
		return cp_fail(err, CP_E_INTERNAL, "releases: no date or no release listed");
	}
	*out = r;
	return CP_OK;
}

void cp_releases_free(cp_releases *r)
{
	if (!r)
		return;
	free(r->sets);
	free(r->item);
	free(r->rel);
	free(r->text);
	free(r);
}
