/*
 * scan_code.c - the code walk and the relocation pass of a scan.
 *
 * The walk keeps three things: every RIP-relative lea into data (the sites
 * that a string can have in code), the calls that import code makes, and
 * for each PyImport_ImportModule call the data words loaded after it (Cython
 * 3.2+ fetches its import-signature constant from the string table there).
 */
#include "scan/scan.h"
#include "cython/cython.h"
#include "util/error.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BLOCK_LOADS 4 /* the constant is loaded right after the import */
#define MAX_PENDING 64

struct walk_ctx {
	cp_scan *s;
	bool oom;
	struct cp_import_block *block; /* open block, or NULL */
	/* whether the walk's position is reached from the open block's import
	 * with no call on the way (see advance) */
	bool clean;
	uint64_t last_break, func_end;
	uint64_t pending[MAX_PENDING]; /* targets of forward jumps from clean code */
	size_t npending;
};

/*
 * Cython 3.2+ loads the import-signature constant right after the import,
 * before any other call: `__pyx_import_signature = __Pyx_PyBytes_AsString(
 * constant)` follows `PyImport_ImportModule("M")` and its error check. Code
 * laid out after an import is not always that: other paths land there
 * (cuda-bindings 13.5.0's nvvm has its export function's body, which loads
 * the module's own export list, right after the failure path of `import
 * builtins`; in its _internal.utils the export code follows the type
 * imports' calls). So a load is clean when some path from the import
 * reaches it by falling through and forward jumps, with no call, jmp or
 * ret before it; the walk goes in address order, so the code from the
 * target of a jump made from clean code is clean again up to the next call,
 * jmp or ret.
 */
static void advance(struct walk_ctx *c, uint64_t addr)
{
	size_t i, k = 0;

	for (i = 0; i < c->npending; i++) {
		if (c->pending[i] > addr)
			c->pending[k++] = c->pending[i];
		else if (c->pending[i] > c->last_break)
			c->clean = true;
	}
	c->npending = k;
}

static void stop(struct walk_ctx *c, uint64_t addr)
{
	c->clean = false;
	c->last_break = addr;
}

static bool is_data(const cp_image *img, uint64_t va)
{
	const struct cp_section *sec = cp_image_section_at(img, va);

	return sec && !(sec->flags & SHF_EXECINSTR);
}

static void on_ref(void *ctx, const struct cp_code_ref *r)
{
	struct walk_ctx *c = ctx;
	cp_scan *s = c->s;
	const struct cp_section *sec;
	struct cp_import_block *b = c->block;

	if (r->base) {
		if (CP_GROW(s->derived, s->capderived, s->nderived + 1)) {
			c->oom = true;
			return;
		}
		s->derived[s->nderived].addr = r->addr;
		s->derived[s->nderived].base = r->base;
		s->derived[s->nderived++].target = r->target;
	}
	if (r->kind == CP_REF_LEA) {
		if (!is_data(s->img, r->target))
			return;
		if (CP_GROW(s->xrefs, s->capxrefs, s->nxrefs + 1)) {
			c->oom = true;
			return;
		}
		s->xrefs[s->nxrefs].target = r->target;
		s->xrefs[s->nxrefs].addr = r->addr;
		s->nxrefs++;
		return;
	}
	if (r->kind != CP_REF_LOAD || !b || b->nloads >= MAX_BLOCK_LOADS)
		return;
	advance(c, r->addr);
	sec = cp_image_section_at(s->img, r->target);
	if (!sec || !cp_section_is_writable(sec) || cp_image_got_name(s->img, r->target))
		return;
	if (CP_GROW(b->loads, b->caploads, b->nloads + 1)) {
		c->oom = true;
		return;
	}
	b->loads[b->nloads].target = r->target;
	b->loads[b->nloads].clean = c->clean && r->addr < c->func_end;
	b->loads[b->nloads++].at = r->addr;
}

static bool wanted_call(const struct cp_call *call)
{
	static const char *const names[] = {
		"PyImport_ImportModule", "PyDict_GetItemString", "PyCapsule_IsValid",
		"PyObject_GetAttrString", "PyUnicode_DecodeUTF8", NULL
	};
	int i, addrs = 0;

	for (i = 0; call->name && names[i]; i++)
		if (strcmp(call->name, names[i]) == 0)
			return true;
	if (cp_scan_is_import_call(call->name))
		return true;
	for (i = 0; i < 6; i++)
		addrs += call->arg[i].kind == CP_V_ADDR;
	return addrs >= 2;
}

/* The module an import call names: its first argument's string, read
 * from s's image (NULL when the walk did not know it). */
static const char *module_named(const cp_scan *s, const struct cp_val *arg0)
{
	return arg0->kind == CP_V_ADDR ? cp_image_cstring(s->img, arg0->v, 4096) : NULL;
}

static void open_block(struct walk_ctx *c, const struct cp_call *call)
{
	cp_scan *s = c->s;
	struct cp_import_block *b;
	const char *m = module_named(s, &call->arg[0]);
	uint64_t start;

	if (CP_GROW(s->blocks, s->capblocks, s->nblocks + 1)) {
		c->oom = true;
		return;
	}
	b = &s->blocks[s->nblocks];
	memset(b, 0, sizeof(*b));
	b->call = call->addr;
	if (m && !(b->module = strdup(m))) {
		c->oom = true;
		return;
	}
	s->nblocks++;
	c->block = b;
	c->clean = cp_image_function(s->img, call->addr, &start, &c->func_end);
	c->last_break = call->addr;
	c->npending = 0;
}

static void on_jump(void *ctx, uint64_t addr, uint64_t target)
{
	struct walk_ctx *c = ctx;

	advance(c, addr);
	if (c->block && c->clean && target > addr && c->npending < MAX_PENDING)
		c->pending[c->npending++] = target;
}

static void on_end(void *ctx, uint64_t addr)
{
	struct walk_ctx *c = ctx;

	advance(c, addr);
	stop(c, addr);
}

static void on_call(void *ctx, const struct cp_call *call)
{
	struct walk_ctx *c = ctx;
	cp_scan *s = c->s;
	struct cp_scan_call *k;

	advance(c, call->addr);
	stop(c, call->addr);
	if (!wanted_call(call))
		return;
	if (CP_GROW(s->calls, s->capcalls, s->ncalls + 1)) {
		c->oom = true;
		return;
	}
	k = &s->calls[s->ncalls++];
	k->addr = call->addr;
	k->name = call->name;
	memcpy(k->arg, call->arg, sizeof(k->arg));
	if (call->name && strcmp(call->name, "PyImport_ImportModule") == 0)
		open_block(c, call);
}

static int by_target(const void *a, const void *b)
{
	const struct cp_xref *x = a, *y = b;

	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

cp_status cp_scan_code(cp_scan *s, cp_error *err)
{
	struct walk_ctx c;
	struct cp_code_visitor v = { on_ref, on_call, &c, on_jump, on_end };
	cp_status st;

	memset(&c, 0, sizeof(c));
	c.s = s;
	st = cp_code_walk(s->img, 0, 0, &v, err);
	if (st)
		return st;
	if (c.oom)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	if (s->nxrefs)
		qsort(s->xrefs, s->nxrefs, sizeof(*s->xrefs), by_target);
	return CP_OK;
}

static void *copy_of(const void *src, size_t n, size_t size)
{
	void *p = n ? malloc(n * size) : NULL;

	if (p)
		memcpy(p, src, n * size);
	return p;
}

/* Block b of `from` again: its loads as they were, its module's name as
 * s's image now holds it (the one thing the walk's findings read from
 * data, and what an edit changes). */
static bool copy_block(cp_scan *s, const struct cp_import_block *b)
{
	struct cp_import_block *c = &s->blocks[s->nblocks];
	const char *m = NULL;
	size_t k;

	memset(c, 0, sizeof(*c));
	c->call = b->call;
	for (k = 0; k < s->ncalls && !m; k++)
		if (s->calls[k].addr == b->call)
			m = module_named(s, &s->calls[k].arg[0]);
	if ((m && !(c->module = strdup(m))) || (b->nloads && !(c->loads = copy_of(b->loads, b->nloads,
										       sizeof(*b->loads)))))
		return false;
	c->nloads = c->caploads = b->nloads;
	s->nblocks++;
	return true;
}

cp_status cp_scan_code_from(cp_scan *s, const cp_scan *from, cp_error *err)
{
	size_t i;

	s->xrefs = copy_of(from->xrefs, from->nxrefs, sizeof(*from->xrefs));
	s->derived = copy_of(from->derived, from->nderived, sizeof(*from->derived));
	s->calls = copy_of(from->calls, from->ncalls, sizeof(*from->calls));
	s->blocks = from->nblocks ? calloc(from->nblocks, sizeof(*s->blocks)) : NULL;
	if ((from->nxrefs && !s->xrefs) || (from->nderived && !s->derived) || (from->ncalls && !s->calls) ||
	    (from->nblocks && !s->blocks))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	s->nxrefs = s->capxrefs = from->nxrefs;
	s->nderived = s->capderived = from->nderived;
	s->ncalls = s->capcalls = from->ncalls;
	s->capblocks = from->nblocks;
	for (i = 0; i < from->nblocks; i++)
		if (!copy_block(s, &from->blocks[i]))
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	return CP_OK;
}

size_t cp_scan_xrefs_to(const cp_scan *s, uint64_t va, size_t *first)
{
	size_t lo = 0, hi = s->nxrefs, n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->xrefs[mid].target < va)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (n = 0; lo + n < s->nxrefs && s->xrefs[lo + n].target == va; n++)
		;
	return n;
}

void cp_scan_code_site(cp_scan *s, uint64_t addr, struct cp_site *site)
{
	memset(site, 0, sizeof(*site));
	site->kind = CP_SITE_CODE;
	site->addr = addr;
	cp_dis_describe(&s->dis, s->img, addr, site->text, sizeof(site->text));
}

unsigned cp_scan_table_length(const cp_scan *s, const cp_image *img, uint64_t where, uint64_t len,
			      uint64_t *at)
{
	const uint8_t *p = cp_image_va_bytes(img, where + 8, 8);
	uint64_t q;
	uint16_t h;

	if (!p)
		return 0;
	memcpy(&q, p, 8);
	memcpy(&h, p, 2);
	*at = where + 8;
	if (q == len + 1)
		return 8;
	if (cp_cython_is(s, 3, 1) && h == len + 1)
		return 2;
	return 0;
}

/* Attaches relocation sites to the strings they point at. */
cp_status cp_scan_relocs(cp_scan *s, cp_error *err)
{
	size_t i, j;

	for (i = 0; i < s->img->nrel; i++) {
		const struct cp_reloc *r = &s->img->rel[i];

		if (r->kind != CP_RELOC_RELATIVE)
			continue;
		for (j = 0; j < s->nstrs; j++) {
			struct cp_string *str = &s->strs[j];
			struct cp_site site;

			if ((uint64_t)r->addend != str->va)
				continue;
			memset(&site, 0, sizeof(site));
			site.addr = r->offset;
			if (!cp_scan_table_length(s, s->img, r->offset, str->len, &site.len_addr))
				site.len_addr = 0;
			site.kind = site.len_addr ? CP_SITE_TABLE : CP_SITE_RELOC;
			snprintf(site.text, sizeof(site.text), "%s at %#llx%s", s->img->arch->reloc_name(r->type),
				 (unsigned long long)r->offset,
				 site.len_addr ? " (string table entry, length follows)" : "");
			if (CP_GROW(str->sites, str->capsites, str->nsites + 1))
				return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
			str->sites[str->nsites++] = site;
		}
	}
	for (j = 0; j < s->nstrs; j++) {
		struct cp_string *str = &s->strs[j];
		size_t first, n = cp_scan_xrefs_to(s, str->va, &first);

		for (i = 0; i < n; i++) {
			struct cp_site site;

			cp_scan_code_site(s, s->xrefs[first + i].addr, &site);
			if (CP_GROW(str->sites, str->capsites, str->nsites + 1))
				return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
			str->sites[str->nsites++] = site;
		}
	}
	return CP_OK;
}

bool cp_scan_is_data_slot(const cp_scan *s, uint64_t va)
{
	const struct cp_section *sec = cp_image_section_at(s->img, va);

	return sec && cp_section_is_writable(sec) && !cp_section_is_code(sec);
}
