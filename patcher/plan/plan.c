/*
 * plan.c - from a scan to the edits that retarget it (see plan.h).
 *
 * Every pointer to a rewritten string is found anew here (code operands,
 * relocations), not taken from the scan's site lists, so that a string that
 * moves leaves nothing pointing at its old place.
 */
#include "plan/plan.h"
#include "cython/cython.h"
#include "util/error.h"
#include "plan/plan_internal.h"
#include "arch/frame.h"

#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAME 4096

/* Points every relative relocation of `from` at `to` (addend and word). */
static cp_status redirect_relocs(struct planner *pl, uint64_t from, uint64_t to, const char *what)
{
	const struct cp_reloc_at *rel;
	size_t i, n = cp_plan_relocs_to(pl, from, &rel);
	cp_status st;

	for (i = 0; i < n; i++) {
		const struct cp_reloc *r = &pl->img->rel[rel[i].i];
		uint64_t off;

		if (r->entry_off) {
			st = cp_plan_add_edit(pl, CP_EDIT_ADDEND, r->entry_off + offsetof(Elf64_Rela, r_addend), &to,
					      8, r->offset, to, what);
			if (st)
				return st;
		}
		if (cp_plan_file_off(pl, r->offset, 8, &off)) {
			st = cp_plan_add_edit(pl, CP_EDIT_WORD, off, &to, 8, r->offset, to, what);
			if (st)
				return st;
		}
	}
	return CP_OK;
}

static cp_status redirect_code(struct planner *pl, uint64_t from, uint64_t span, uint64_t to, const char *what)
{
	size_t first, n = cp_scan_xrefs_to(pl->scan, from, &first), i;
	cp_status st;

	for (i = 0; i < n; i++) {
		st = cp_plan_redirect_code(pl, pl->scan->xrefs[first + i].addr, from, span, to, what);
		if (st)
			return st;
	}
	return CP_OK;
}

/* Stored lengths of the string (Cython's string-table entries keep one
 * after the pointer: cp_scan_table_length). */
static cp_status update_lengths(struct planner *pl, uint64_t va, uint64_t oldlen, uint64_t newlen,
				const char *what)
{
	const struct cp_reloc_at *rel;
	size_t i, n = cp_plan_relocs_to(pl, va, &rel);
	cp_status st;

	for (i = 0; i < n; i++) {
		const struct cp_reloc *r = &pl->img->rel[rel[i].i];
		uint64_t at, off, v = newlen + 1;
		unsigned width;

		if (!(width = cp_scan_table_length(pl->scan, pl->img, r->offset, oldlen, &at)) ||
		    !cp_plan_file_off(pl, at, width, &off))
			continue;
		st = cp_plan_add_edit(pl, CP_EDIT_LENGTH, off, &v, width, at, 0, what);
		if (st)
			return st;
	}
	return CP_OK;
}

/* Where the NUL-free bytes that run into va begin (va when the byte
 * before it is a NUL): the earliest address a string running into the one
 * at va can start at, in its section, at most MAX_NAME - 1 bytes back. */
static uint64_t run_start(const cp_image *img, uint64_t va)
{
	const struct cp_section *sec = cp_image_section_at(img, va);
	uint64_t lo, k;
	const uint8_t *p;

	if (!sec)
		return va;
	lo = va - sec->addr < MAX_NAME - 1 ? sec->addr : va - (MAX_NAME - 1);
	k = va - lo;
	if (!(p = cp_image_va_bytes(img, lo, k)))
		return va;
	while (k > 0 && p[k - 1])
		k--;
	return lo + k;
}

/* Whether the string's bytes serve only it: no pointer into its middle
 * (a merged tail) and no referenced string running into it (it is the
 * merged tail of another). */
static bool owns_bytes(const struct planner *pl, uint64_t va, uint64_t len)
{
	uint64_t from = run_start(pl->img, va);

	return !cp_plan_pointed_into(pl, va + 1, va + len) && (from == va || !cp_plan_pointed_into(pl, from, va - 1));
}

static bool already(struct planner *pl, uint64_t va)
{
	return cp_key_index_find(&pl->done_index, pl->done, sizeof(*pl->done), 0, va) != 0;
}

/* Rewrites the literal at va (oldlen bytes and its NUL) to `text`. */
static cp_status rewrite_literal(struct planner *pl, uint64_t va, uint64_t oldlen, const char *text,
				 const char *kind)
{
	size_t newlen = strlen(text);
	char what[200];
	uint64_t off, to;
	uint8_t buf[256];
	cp_status st;

	if (already(pl, va))
		return CP_OK;
	if (CP_GROW(pl->done, pl->capdone, pl->ndone + 1))
		return cp_plan_oom(pl);
	pl->done[pl->ndone] = va;
	if (!cp_key_index_add(&pl->done_index, pl->done, sizeof(*pl->done), 0, pl->ndone + 1))
		return cp_plan_oom(pl);
	pl->ndone++;
	if (!cp_plan_file_off(pl, va, oldlen + 1, &off))
		return cp_fail(pl->err, CP_E_INPUT, "%s: the string at %#llx lies outside the file",
			       pl->img->path, (unsigned long long)va);
	pl->p->nchanged++;
	if (newlen <= oldlen && oldlen <= sizeof(buf) && owns_bytes(pl, va, oldlen)) {
		snprintf(what, sizeof(what), "%s \"%.60s\" -> \"%.60s\" in place", kind,
			 (const char *)pl->img->data + off, text);
		memset(buf, 0, sizeof(buf));
		memcpy(buf, text, newlen);
		st = cp_plan_add_edit(pl, CP_EDIT_STRING, off, buf, (uint32_t)oldlen, va, 0, what);
		return st ? st : update_lengths(pl, va, oldlen, newlen, what);
	}
	snprintf(what, sizeof(what), "%s \"%.60s\" -> \"%.60s\" moved", kind,
		 (const char *)pl->img->data + off, text);
	to = cp_plan_append(pl, text, newlen + 1, 1, what);
	if (!to)
		return cp_plan_oom(pl);
	st = redirect_code(pl, va, oldlen + 1, to, what);
	if (!st)
		st = redirect_relocs(pl, va, to, what);
	if (!st)
		st = update_lengths(pl, va, oldlen, newlen, what);
	return st;
}

/* --- references --------------------------------------------------------- */

static const char *literal_text(const struct planner *pl, const struct cp_loc *loc)
{
	return cp_image_cstring(pl->img, loc->vaddr, MAX_NAME);
}

/*
 * Cython 3.0 builds its string table in code, on the stack:
 * {PyObject **p; const char *s; Py_ssize_t n; ...} per entry, and makes the
 * constants that are not interned (kp_u: "see cuda.ccuda", and "cuda.cuda"
 * as a value) with PyUnicode_FromStringAndSize(s, n - 1); interned names
 * are read with strlen. A string that changes length needs its n changed
 * too, or CPython reads the old number of bytes ('cuda.bindi'). The frame
 * evaluator runs the function that loads the string's address and finds
 * where that address was stored (cp_frame_astore) and the instruction that
 * made the 8 bytes after it. That n is changed when it is the immediate of
 * an instruction that no other entry's n comes from (at -O3 GCC also keeps
 * a length in a register stored into several entries: then, and wherever
 * the n is not found, the string is left to the fallback stub).
 */
struct code_lengths {
	uint64_t func;
	struct cp_frame f;
	bool have;
};

/* The frame of the function holding code site `site` (cl keeps the last
 * one evaluated); *found false when the site is no code site of a known
 * function. */
static cp_status site_frame(struct planner *pl, struct code_lengths *cl, const struct cp_site *site, bool *found)
{
	uint64_t start, end;
	cp_status st;

	*found = site->kind == CP_SITE_CODE && cp_image_function(pl->img, site->addr, &start, &end);
	if (!*found || (cl->have && cl->func == start))
		return CP_OK;
	if (cl->have)
		cp_frame_free(&cl->f);
	cl->have = false;
	st = cp_frame_eval(pl->img, start, end, &cl->f, pl->err);
	if (st)
		return st;
	cl->have = true;
	cl->func = start;
	return CP_OK;
}

/* Whether code stores r's address as a string-table entry: clang merges
 * Cython 3.0's __pyx_k_ array with an identical literal, so the name an
 * import is given can be a Python string's text too (random consumer seed
 * 1173: the str constant 'cuda.bindings.cynvrtc' read 'cuda.cnvrtc' and
 * ten NULs). */
static cp_status table_entry_in_code(struct planner *pl, struct code_lengths *cl, const struct cp_ref *r,
				     bool *yes)
{
	size_t i, k;
	bool found;
	cp_status st = CP_OK;

	*yes = false;
	for (i = 0; !st && !*yes && i < r->nsites; i++) {
		st = site_frame(pl, cl, &r->sites[i], &found);
		for (k = 0; !st && found && k < cl->f.nastores && !*yes; k++)
			*yes = cl->f.astores[k].va == r->loc.vaddr;
	}
	return st;
}

static cp_status code_length_sites(struct planner *pl, struct code_lengths *cl, const struct cp_ref *r,
				   uint64_t oldlen, uint64_t *sites, size_t max, size_t *nsites, bool *ok)
{
	size_t i, k, m;
	bool found;

	*nsites = 0;
	*ok = false;
	for (i = 0; i < r->nsites; i++) {
		cp_status st = site_frame(pl, cl, &r->sites[i], &found);

		if (st || !found)
			return st;
		for (k = 0; k < cl->f.nastores; k++) {
			const struct cp_frame_astore *a = &cl->f.astores[k];
			uint8_t off, size;
			int64_t v;

			if (a->va != r->loc.vaddr)
				continue;
			if (!a->next_known || a->next != oldlen + 1 ||
			    !cp_dis_immediate(&pl->dis, pl->img, a->next_insn, &off, &size, &v) ||
			    (uint64_t)v != oldlen + 1)
				return CP_OK;
			for (m = 0; m < cl->f.nastores; m++)
				if (m != k && cl->f.astores[m].next_insn == a->next_insn)
					return CP_OK; /* shared with another entry */
			for (m = 0; m < *nsites && sites[m] != a->next_insn; m++)
				;
			if (m == *nsites) {
				if (*nsites == max)
					return CP_OK;
				sites[(*nsites)++] = a->next_insn;
			}
		}
	}
	*ok = *nsites > 0;
	return CP_OK;
}

static cp_status patch_code_length(struct planner *pl, uint64_t insn, uint64_t oldn, uint64_t newn,
				   const char *text)
{
	uint8_t off, size, bytes[8];
	int64_t v;
	uint64_t foff;
	char what[120];

	if (!cp_dis_immediate(&pl->dis, pl->img, insn, &off, &size, &v) || (uint64_t)v != oldn ||
	    (size != 1 && size != 4) || !cp_plan_field(pl, insn, off, size, (int64_t)newn, bytes, &foff))
		return cp_fail(pl->err, CP_E_INPUT, "%s: the string table length at %#llx cannot hold %llu",
			       pl->img->path, (unsigned long long)insn, (unsigned long long)newn);
	snprintf(what, sizeof(what), "string table length of \"%.60s\": %llu -> %llu", text,
		 (unsigned long long)oldn, (unsigned long long)newn);
	return cp_plan_add_edit(pl, CP_EDIT_IMM, foff, bytes, size, insn, 0, what);
}

static cp_status plan_literal(struct planner *pl, const struct cp_ref *r)
{
	const char *old = literal_text(pl, &r->loc);
	char text[MAX_NAME];
	uint64_t sites[8];
	size_t nsites = 0, i;
	bool in_code = cp_cython_is(pl->scan, 3, 0) &&
		       (r->kind == CP_K_PYIMPORT || r->kind == CP_K_STRING);
	int n;
	cp_status st;

	if (!old)
		return CP_OK;
	n = cp_plan_map_text(pl, old, strlen(old), text, sizeof(text), NULL);
	if (n < 0)
		return cp_fail(pl->err, CP_E_INPUT, "%s: the string at %#llx is too long to rewrite",
			       pl->img->path, (unsigned long long)r->loc.vaddr);
	if (n == 0)
		return CP_OK;
	/* dead bytes (a name moved by an earlier run, unused text) stay as they
	 * are, so that a second run has nothing to do */
	if (!cp_ref_is_live(r))
		return CP_OK;
	if (strlen(text) != strlen(old) && cp_cython_is(pl->scan, 3, 0) &&
	    !pl->code_lengths && !(pl->code_lengths = calloc(1, sizeof(*pl->code_lengths))))
		return cp_plan_oom(pl);
	if (strlen(text) != strlen(old) && cp_cython_is(pl->scan, 3, 0) && !in_code) {
		st = table_entry_in_code(pl, pl->code_lengths, r, &in_code);
		if (st)
			return st;
	}
	if (strlen(text) != strlen(old) && in_code) {
		bool ok;

		st = code_length_sites(pl, pl->code_lengths, r, strlen(old), sites, sizeof(sites) / sizeof(sites[0]),
				       &nsites, &ok);
		if (st)
			return st;
		if (!ok)
			return (pl->inexpressible = true),
			       cp_fail(pl->err, CP_E_INPUT, "%s: the Python string \"%.60s\" changes length, and "
				       "Cython %s keeps its length in code that builds the string table, where "
				       "cypatch did not find it as an immediate of its own; strings alone cannot "
				       "retarget it (%s site at %#llx)",
				       pl->img->path, old, pl->scan->cython, cp_site_kind_name(r->sites[0].kind),
				       (unsigned long long)r->sites[0].addr);
	}
	for (i = 0; i < nsites; i++) {
		st = patch_code_length(pl, sites[i], strlen(old) + 1, strlen(text) + 1, text);
		if (st)
			return st;
	}
	return rewrite_literal(pl, r->loc.vaddr, strlen(old), text, cp_ref_kind_name(r->kind));
}

/* from P import N, with P.N mapped to T: P becomes T's parent, N its leaf. */
static cp_status plan_from_import(struct planner *pl, const struct cp_ref *r)
{
	const char *t = cp_rules_map(pl->rules, r->module, pl->p->target);
	const char *dot = t ? strrchr(t, '.') : NULL;
	char parent[512];

	if (!dot)
		return cp_fail(pl->err, CP_E_INPUT, "%s: from %s import %s: %s has no name in layout %s",
			       pl->img->path, r->package, r->name, r->module,
			       pl->rules->layout[pl->p->target]);
	if (r->same_string && (pl->inexpressible = true))
		return cp_fail(pl->err, CP_E_INPUT,
			       "%s: from %s import %s: one string serves as package and name, and %s "
			       "needs two different ones (%s); strings alone cannot express it",
			       pl->img->path, r->package, r->name, t, cp_site_kind_name(r->sites[0].kind));
	/* The name's string object is also every other use of that text in
	 * the module: a str constant "driver" is the same object as the name
	 * of `from cuda.bindings import driver` (Cython interns both), so a
	 * renamed leaf would change the constant too (random consumer seed
	 * 706: 'driver' read 'cuda' after -t legacy). Which uses are names
	 * cannot be told from the strings; the stub imports it instead. */
	if (strcmp(dot + 1, r->name) != 0 && (pl->inexpressible = true))
		return cp_fail(pl->err, CP_E_INPUT,
			       "%s: from %s import %s (%s site at %#llx): renaming %s to %s would change every "
			       "other use of the string \"%s\" too; strings alone cannot express it",
			       pl->img->path, r->package, r->name, cp_site_kind_name(r->sites[0].kind),
			       (unsigned long long)r->sites[0].addr, r->name, dot + 1, r->name);
	snprintf(parent, sizeof(parent), "%.*s", (int)(dot - t), t);
	if (r->loc.blob >= 0 || r->package_loc.blob >= 0)
		return cp_plan_blob_from_import(pl, r, parent, dot + 1);
	if (strcmp(parent, r->package) != 0) {
		cp_status st = rewrite_literal(pl, r->package_loc.vaddr, strlen(r->package), parent,
					       "fromimport package");
		if (st)
			return st;
	}
	return CP_OK;
}

static size_t components(const char *m)
{
	size_t n = 1;

	for (; *m; m++)
		n += *m == '.';
	return n;
}

/*
 * `import a.b.c` binds "a" and reaches the module through attributes b and
 * c (Cython 3.2+ also unrolls `import a.b.c as x` that way): the names "b"
 * and "c" are among the module's Python-level names. When the target has a
 * different number of components, no rewrite of strings can make that chain
 * of attribute lookups reach it.
 */
static cp_status check_attribute_chain(struct planner *pl, const struct cp_ref *r)
{
	const char *t = r->module ? cp_rules_map(pl->rules, r->module, pl->p->target) : NULL;
	const char *c, *dot;

	if (r->kind != CP_K_PYIMPORT || !t || components(t) == components(r->module))
		return CP_OK;
	for (c = strchr(r->module, '.'); c; c = dot) {
		dot = strchr(c + 1, '.');
		if (!cp_scan_has_pyname(pl->scan, c + 1, dot ? (size_t)(dot - c - 1) : strlen(c + 1)))
			return CP_OK;
	}
	pl->inexpressible = true;
	return cp_fail(pl->err, CP_E_INPUT,
		       "%s: import %s reaches the module through the attributes of its package "
		       "(Python-level names %s); %s has %zu components instead of %zu, which strings "
		       "alone cannot express (%s site at %#llx)",
		       pl->img->path, r->module, strchr(r->module, '.') + 1, t, components(t),
		       components(r->module), r->nsites ? cp_site_kind_name(r->sites[0].kind) : "no",
		       (unsigned long long)(r->nsites ? r->sites[0].addr : 0));
}

static cp_status plan_ref(struct planner *pl, const struct cp_ref *r)
{
	cp_status st;

	if (r->layout < 0 || r->layout == pl->p->target)
		return CP_OK;
	if (r->kind == CP_K_FROMIMPORT)
		return plan_from_import(pl, r);
	st = check_attribute_chain(pl, r);
	if (st)
		return st;
	if (r->loc.blob >= 0)
		return cp_plan_blob_ref(pl, r);
	switch (r->kind) {
	case CP_K_FUNCTION:
	case CP_K_VARIABLE:
	case CP_K_TYPE:
		return CP_OK; /* names do not move; their module and signature refs do */
	default:
		return plan_literal(pl, r);
	}
}

/*
 * The names fit `from P import N` for a module of another layout, but the
 * scan did not report it (one string for P and N beside a name that begins
 * with "P.", or "P.N" a name itself): whether the module makes that import
 * cannot be told from the strings, and leaving it would fail at import
 * (`cannot import name cuda`). The stub decides at import time.
 */
static cp_status unreported_from_imports(struct planner *pl)
{
	const cp_rules *r = pl->rules;
	size_t i, j, len;
	int k;

	for (i = 0; i < r->nmod; i++)
		for (k = 0; k < 2; k++) {
			const char *m = r->mod[i].name[k];
			bool reported = false;

			if (r->mod[i].layout[k] == pl->p->target || !cp_scan_from_candidate(pl->scan, m, &len))
				continue;
			for (j = 0; j < pl->scan->nrefs && !reported; j++)
				reported = pl->scan->refs[j].kind == CP_K_FROMIMPORT && !strcmp(pl->scan->refs[j].module, m);
			if (reported)
				continue;
			pl->inexpressible = true;
			return cp_fail(pl->err, CP_E_INPUT, "%s: the module's names fit `from %.*s import %s`, which "
				       "cannot be told from other uses of those names; strings alone cannot retarget it",
				       pl->img->path, (int)len, m, m + len + 1);
		}
	return CP_OK;
}

cp_status cp_plan_refuse_unmapped(const cp_image *img, const cp_scan *scan, int target, cp_error *err)
{
	const cp_rules *r = scan->rules;
	size_t i;

	for (i = 0; i < scan->nrefs; i++) {
		const struct cp_ref *u = &scan->refs[i];
		int other = target >= 0 ? target : !u->layout;

		if (u->kind != CP_K_UNMAPPED || !cp_ref_may_import(u) || u->layout == other ||
		    (size_t)other >= r->nlayout)
			continue;
		return cp_fail(err, CP_E_INPUT, "%s: imports %s, which the %s layout does not have%s", img->path,
			       u->value, r->layout[other],
			       target >= 0 ? "" : ", and --target-layout fallback must serve it too");
	}
	return CP_OK;
}

cp_status cp_plan_make(const cp_image *img, const cp_scan *scan, int target,
		       struct cp_plan *plan, cp_error *err)
{
	struct planner pl;
	cp_status st;
	size_t i;

	cp_plan_start(&pl, img, scan, plan, target, err);
	/* names the scan could not see would be left behind */
	if (scan->incomplete[0])
		return cp_fail(err, CP_E_INPUT, "%s: %s", img->path, scan->incomplete);
	st = cp_plan_refuse_unmapped(img, scan, target, err);
	if (st)
		return st;
	st = cp_dis_open(&pl.dis, img, err);
	if (st)
		return st;
	st = cp_plan_index_pointers(&pl);
	if (!st)
		st = cp_plan_make_forms(&pl);
	if (!st)
		st = unreported_from_imports(&pl);
	if (!st)
		st = cp_plan_blob_begin(&pl);
	/* from-imports first: they claim the package and name strings that
	 * other references share */
	for (i = 0; !st && i < scan->nrefs; i++)
		if (scan->refs[i].kind == CP_K_FROMIMPORT)
			st = plan_ref(&pl, &scan->refs[i]);
	for (i = 0; !st && i < scan->nrefs; i++) {
		if (scan->refs[i].kind != CP_K_FROMIMPORT)
			st = plan_ref(&pl, &scan->refs[i]);
	}
	if (!st)
		st = cp_plan_blob_end(&pl);
	if (!st)
		st = cp_plan_check_derived(&pl);
	if (!st)
		st = cp_plan_place(&pl);
	if (!st)
		st = cp_plan_check_overlaps(&pl);
	cp_dis_close(&pl.dis);
	cp_plan_blob_free(&pl);
	if (pl.code_lengths && pl.code_lengths->have)
		cp_frame_free(&pl.code_lengths->f);
	free(pl.code_lengths);
	cp_plan_free_forms(&pl);
	cp_plan_free_pointers(&pl);
	free(pl.done);
	cp_key_index_free(&pl.done_index);
	free(pl.pending);
	if (st) {
		cp_plan_free(plan);
		plan->inexpressible = pl.inexpressible;
	}
	return st;
}

