/*
 * scan_result.c - a scan's findings as the passes add them: references and
 * their sites, notes, and the lookups every pass shares (the strings found,
 * the blobs). The passes (scan_*.c) call down to this file, never to scan.c,
 * which runs them.
 */
#include "scan/scan.h"
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cp_ref_is_live(const struct cp_ref *r)
{
	return r->nsites > 0 || r->loc.blob >= 0;
}

struct cp_string *cp_scan_string_at(cp_scan *s, uint64_t va)
{
	size_t i;

	for (i = 0; i < s->nstrs; i++)
		if (s->strs[i].va == va)
			return &s->strs[i];
	return NULL;
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
		"signature", "string", "fromimport"
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

cp_status cp_ref_add_site(struct cp_ref *r, const struct cp_site *site, cp_error *err)
{
	size_t i;

	for (i = 0; i < r->nsites; i++)
		if (r->sites[i].kind == site->kind && r->sites[i].addr == site->addr)
			return CP_OK;
	if (CP_GROW(r->sites, r->capsites, r->nsites + 1))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	r->sites[r->nsites++] = *site;
	return CP_OK;
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

