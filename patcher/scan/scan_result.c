/*
 * scan_result.c - a scan's findings as the passes add them: references and
 * their sites, notes, and the lookups every pass shares (the strings found,
 * the blobs). The passes (scan_*.c) call down to this file, never to scan.c,
 * which runs them.
 */
#include "scan/scan.h"
#include "util/error.h"
#include "util/key_index.h"

#include <assert.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cp_ref_is_live(const struct cp_ref *r)
{
	return r->nsites > 0 || r->loc.blob >= 0;
}

bool cp_ref_may_import(const struct cp_ref *r)
{
	return !r->pyslots_known || r->npyslots > 0;
}

struct cp_string *cp_scan_string_at(const cp_scan *s, uint64_t va)
{
	size_t k = cp_key_index_find(&s->str_index, s->strs, sizeof(*s->strs), offsetof(struct cp_string, va), va);

	return k ? &s->strs[k - 1] : NULL;
}

struct cp_string *cp_scan_add_string(cp_scan *s, uint64_t va, cp_error *err)
{
	struct cp_string *str;

	assert(!cp_scan_string_at(s, va));
	if (CP_GROW(s->strs, s->capstrs, s->nstrs + 1)) {
		cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
		return NULL;
	}
	str = &s->strs[s->nstrs];
	memset(str, 0, sizeof(*str));
	str->va = va;
	if (!cp_key_index_add(&s->str_index, s->strs, sizeof(*s->strs), offsetof(struct cp_string, va),
			      s->nstrs + 1)) {
		cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
		return NULL;
	}
	s->nstrs++;
	return str;
}

char *cp_strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

const char *cp_ref_kind_name(enum cp_ref_kind k)
{
	static const char *const names[] = {
		"cimport", "function", "variable", "type", "pyimport", "filename",
		"signature", "string", "fromimport", "unmapped"
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *cp_site_kind_name(enum cp_site_kind k)
{
	static const char *const names[] = { "code", "reloc", "table", "index" };

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

struct cp_ref *cp_scan_add_ref(cp_scan *s, enum cp_ref_kind kind, cp_error *err)
{
	struct cp_ref *r;

	if (CP_GROW(s->refs, s->caprefs, s->nrefs + 1)) {
		cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
		return NULL;
	}
	r = &s->refs[s->nrefs++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->loc.blob = -1;
	r->size = -1;
	return r;
}

#define FEW_SITES 32 /* below this, a site is looked for by a plain search */

static bool same_site(const struct cp_site *a, const struct cp_site *b)
{
	return a->kind == b->kind && a->addr == b->addr;
}

static size_t site_hash(const struct cp_site *x, size_t mask)
{
	return (size_t)((x->addr * 0x9e3779b97f4a7c15ull) >> 32 ^ (uint64_t)x->kind) & mask;
}

/* Where site is in the open-addressed table of site indices + 1, or the
 * empty slot where it goes. */
static size_t site_slot(const struct cp_ref *r, const size_t *table, size_t mask, const struct cp_site *site)
{
	size_t h = site_hash(site, mask);

	while (table[h] && !same_site(&r->sites[table[h] - 1], site))
		h = (h + 1) & mask;
	return h;
}

/* Sites appended in order, each unless r has it already: in time linear
 * in the sites (a string's code sites run to tens of thousands: Cython's
 * filename, in every function's error path). */
cp_status cp_ref_add_sites(struct cp_ref *r, const struct cp_site *sites, size_t n, cp_error *err)
{
	size_t i, k, mask = 1, *table = NULL;

	if (CP_GROW(r->sites, r->capsites, r->nsites + n))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (r->nsites + n > FEW_SITES) {
		while (mask < 2 * (r->nsites + n))
			mask <<= 1;
		if (!(table = calloc(mask--, sizeof(*table))))
			return cp_fail(err, CP_E_INTERNAL, "out of memory");
		for (k = 0; k < r->nsites; k++)
			table[site_slot(r, table, mask, &r->sites[k])] = k + 1;
	}
	for (i = 0; i < n; i++) {
		size_t h = 0;

		if (table)
			k = table[h = site_slot(r, table, mask, &sites[i])] ? 0 : r->nsites;
		else
			for (k = 0; k < r->nsites && !same_site(&r->sites[k], &sites[i]); k++)
				;
		if (k < r->nsites)
			continue;
		r->sites[r->nsites++] = sites[i];
		if (table)
			table[h] = r->nsites;
	}
	free(table);
	return CP_OK;
}

cp_status cp_ref_add_site(struct cp_ref *r, const struct cp_site *site, cp_error *err)
{
	return cp_ref_add_sites(r, site, 1, err);
}

cp_status cp_scan_note(cp_scan *s, cp_error *err, const char *fmt, ...)
{
	char buf[512], *copy;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	copy = strdup(buf);
	if (!copy || CP_GROW(s->notes, s->capnotes, s->nnotes + 1)) {
		free(copy);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	s->notes[s->nnotes++] = copy;
	return CP_OK;
}

bool cp_in_blob(const cp_scan *s, uint64_t va, uint64_t len)
{
	size_t i;

	for (i = 0; i < s->nblobs; i++)
		if (va >= s->blobs[i].vaddr && va + len <= s->blobs[i].vaddr + s->blobs[i].stored_length)
			return true;
	return false;
}


bool cp_scan_stands_in(const cp_scan *s, const char *name, bool module)
{
	size_t i;

	for (i = 0; i < s->nstandin; i++)
		if (s->standin[i].module == module && !strcmp(s->standin[i].name, name))
			return true;
	return false;
}
