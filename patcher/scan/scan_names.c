/*
 * scan_names.c - `from P import N` where P.N is a mapped module.
 *
 * `from cuda import cuda` leaves only the names "cuda" and "cuda" in the
 * binary, neither of which names a layout; the pair does. The module's
 * Python-level names are its string table (0.29 and 3.1: pointer and length
 * entries behind relocations; 3.0: built in code from literals; 3.2+: the
 * blob's str entries). A mapped module P.N whose parts are both names, and
 * which is not itself a name (then it is an import of its own), is reported.
 * When P and N are the same string (`from cuda import cuda`), the name alone
 * also fits `import cuda.x` (which binds "cuda"): that case is reported only
 * when no name and no other from-import begins with "P.", and a module doing
 * `from cuda import cuda, cudart` shows only the second.
 */
#include "scan/scan.h"
#include "cython/cython.h"
#include "util/error.h"
#include "arch/frame.h"
#include "util/names.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

struct pyname {
	const char *value;  /* borrowed: file bytes or blob data, NUL-free */
	size_t len;
	struct cp_loc loc;
	struct cp_site site;
	uint64_t slot;      /* where its string object lives, or 0 */
	long index;         /* its place among the indexed strings, or -1 */
};

struct indexed {
	const char *v;      /* borrowed, NUL-free */
	size_t len;
	uint64_t at;        /* 3.1: the table entry */
};

struct names {
	struct pyname *v;
	size_t n, cap;
	/* 3.1 and 3.2+: every string by its index (its object is at
	 * base + 8 * index), the function that makes them, and the bases it
	 * could store them from (made when first needed) */
	struct indexed *idx;
	size_t nidx, capidx;
	uint64_t func;
	uint64_t *bases;
	size_t nbases;
	bool have_bases;
	bool imports_read;  /* cp_scan_import_names ran, with status st */
	cp_status st;
	cp_error *err;
};

static int push(struct names *ns, const char *v, size_t len, const struct cp_loc *loc,
		const struct cp_site *site)
{
	if (!cp_is_dotted_name(v, len))
		return 0;
	if (CP_GROW(ns->v, ns->cap, ns->n + 1))
		return -1;
	ns->v[ns->n].value = v;
	ns->v[ns->n].len = len;
	ns->v[ns->n].loc = *loc;
	ns->v[ns->n].site = *site;
	ns->v[ns->n].slot = 0;
	ns->v[ns->n].index = -1;
	ns->n++;
	return 0;
}

static int literal_name(cp_scan *s, struct names *ns, uint64_t va, const struct cp_site *site)
{
	const struct cp_section *sec = cp_image_section_at(s->img, va);
	const char *p = cp_image_cstring(s->img, va, 4096);
	struct cp_loc loc = { -1, NULL, va, 0, 0 };

	if (!p || !sec || !cp_section_is_rodata(sec))
		return 0;
	loc.section = sec->name;
	loc.offset = sec->offset + (va - sec->addr);
	loc.length = strlen(p);
	return push(ns, p, loc.length, &loc, site);
}

/* 0.29's entry {&__pyx_n_s_x, "x", n, ...}: the slot's relocation is the
 * one right before the string's (3.1's entries have no slot: 0). */
static uint64_t table_slot(const cp_scan *s, size_t i)
{
	const struct cp_reloc *r = &s->img->rel[i];
	size_t k;

	for (k = i ? i - 1 : 0; k <= i + 1 && k < s->img->nrel; k++)
		if (k != i && s->img->rel[k].offset == r->offset - 8 && s->img->rel[k].kind == CP_RELOC_RELATIVE &&
		    cp_scan_is_data_slot(s, (uint64_t)s->img->rel[k].addend))
			return (uint64_t)s->img->rel[k].addend;
	return 0;
}

static int by_at(const void *a, const void *b)
{
	const struct indexed *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* 3.1: the table is the longest run of entries one stride apart whose
 * first is referenced by code; each name in it gets its index. (Other
 * relocations can look like an entry: a pointer to a string followed by
 * its length plus one.) */
static int index_table(cp_scan *s, struct names *ns)
{
	size_t i, j, k, first, best = 0, bestlen = 0;
	uint64_t stride = 0;

	if (ns->nidx >= 2)
		qsort(ns->idx, ns->nidx, sizeof(*ns->idx), by_at);
	for (i = 0; i + 1 < ns->nidx; i = j) {
		uint64_t d = ns->idx[i + 1].at - ns->idx[i].at;

		for (j = i + 1; j < ns->nidx && ns->idx[j].at - ns->idx[j - 1].at == d; j++)
			;
		if (d && d <= 64 && j - i > bestlen && cp_scan_xrefs_to(s, ns->idx[i].at, &first)) {
			best = i;
			bestlen = j - i;
			stride = d;
		}
	}
	if (!bestlen) {
		ns->nidx = 0;
		return 0;
	}
	memmove(ns->idx, ns->idx + best, bestlen * sizeof(*ns->idx));
	ns->nidx = bestlen;
	cp_scan_xrefs_to(s, ns->idx[0].at, &first);
	ns->func = s->xrefs[first].addr;
	for (k = 0; k < ns->n; k++)
		if (ns->v[k].site.kind == CP_SITE_TABLE && ns->v[k].site.addr >= ns->idx[0].at &&
		    ns->v[k].site.addr <= ns->idx[ns->nidx - 1].at && (ns->v[k].site.addr - ns->idx[0].at) % stride == 0)
			ns->v[k].index = (long)((ns->v[k].site.addr - ns->idx[0].at) / stride);
	return 0;
}

/* 0.29 and 3.1: table entries (pointer, then the length with the NUL). */
static int table_names(cp_scan *s, struct names *ns)
{
	size_t i;

	for (i = 0; i < s->img->nrel; i++) {
		const struct cp_reloc *r = &s->img->rel[i];
		const char *p;
		struct cp_site site;

		memset(&site, 0, sizeof(site));
		if (r->kind != CP_RELOC_RELATIVE || !(p = cp_image_cstring(s->img, (uint64_t)r->addend, 4096)) ||
		    !cp_scan_table_length(s, s->img, r->offset, strlen(p), &site.len_addr))
			continue;
		site.kind = CP_SITE_TABLE;
		site.addr = r->offset;
		site.detail = r->type;
		if (literal_name(s, ns, (uint64_t)r->addend, &site))
			return -1;
		if (ns->n && ns->v[ns->n - 1].site.addr == r->offset)
			ns->v[ns->n - 1].slot = table_slot(s, i);
		if (cp_cython_is(s, 3, 1)) {
			if (CP_GROW(ns->idx, ns->capidx, ns->nidx + 1))
				return -1;
			ns->idx[ns->nidx].v = p;
			ns->idx[ns->nidx].len = strlen(p);
			ns->idx[ns->nidx++].at = r->offset;
		}
	}
	return cp_cython_is(s, 3, 1) ? index_table(s, ns) : 0;
}

/* 3.0 builds each entry {&__pyx_n_s_x, "x", n, ...} on the stack of the
 * function that makes the strings: the slot is the address stored in the 8
 * bytes before the string's, last before it. */
struct code_frames {
	uint64_t func;
	struct cp_frame f;
	bool have;
};

/* The store of the slot in the table entry whose string astore i stores
 * (the 8 bytes before it): the last one before it, or, when the compiler
 * stored the pair the other way round (GCC for aarch64 schedules the
 * entry's stp and str freely), the first one after it while the string's
 * cell is not stored again; (size_t)-1 when none. */
static size_t entry_slot(const struct cp_frame *f, size_t i)
{
	int64_t off = f->astores[i].off;
	size_t k;

	for (k = i; k-- > 0;)
		if (f->astores[k].off == off - 8)
			return k;
	for (k = i + 1; k < f->nastores && f->astores[k].off != off; k++)
		if (f->astores[k].off == off - 8)
			return k;
	return (size_t)-1;
}

static uint64_t code_slot(cp_scan *s, struct code_frames *cf, uint64_t insn, uint64_t va)
{
	uint64_t start, end, slot = 0;
	size_t i, k;

	if (!cp_image_function(s->img, insn, &start, &end))
		return 0;
	if (!cf->have || cf->func != start) {
		cp_error err;

		if (cf->have)
			cp_frame_free(&cf->f);
		cf->have = false;
		if (cp_scan_frame(s, start, end, &cf->f, &err))
			return 0;
		cf->have = true;
		cf->func = start;
	}
	for (i = 0; i < cf->f.nastores; i++) {
		const struct cp_frame_astore *a = &cf->f.astores[i];

		if (a->va != va)
			continue;
		k = entry_slot(&cf->f, i);
		if (k == (size_t)-1 || !cp_scan_is_data_slot(s, cf->f.astores[k].va) ||
		    (slot && slot != cf->f.astores[k].va))
			return 0; /* none, or two that disagree */
		slot = cf->f.astores[k].va;
	}
	return slot;
}

/* 3.0 builds its table in code: every literal code loads is a candidate. */
static int code_names(cp_scan *s, struct names *ns)
{
	size_t i;

	for (i = 0; i < s->nxrefs; i++) {
		struct cp_site site;

		if (i && s->xrefs[i].target == s->xrefs[i - 1].target)
			continue;
		cp_scan_code_site(s->xrefs[i].addr, &site);
		if (literal_name(s, ns, s->xrefs[i].target, &site))
			return -1;
	}
	return 0;
}

static int blob_names(cp_scan *s, struct names *ns)
{
	size_t b, k;

	if (s->nblobs == 1) {
		const struct cp_blob *bl = &s->blobs[0];

		ns->func = bl->func;
		for (k = 0; k < bl->nentries; k++) {
			if (CP_GROW(ns->idx, ns->capidx, ns->nidx + 1))
				return -1;
			/* bytes entries have objects too, but no import passes one */
			ns->idx[ns->nidx].v = k < bl->nstr ? (const char *)bl->data + bl->entry[k].offset : "";
			ns->idx[ns->nidx].len = k < bl->nstr ? bl->entry[k].length : 0;
			ns->idx[ns->nidx++].at = 0;
		}
	}
	for (b = 0; b < s->nblobs; b++) {
		const struct cp_blob *bl = &s->blobs[b];

		for (k = 0; k < bl->nstr; k++) {
			const struct cp_blob_entry *e = &bl->entry[k];
			struct cp_loc loc = { (int)b, bl->section, 0, e->offset, e->length };
			struct cp_site site;

			memset(&site, 0, sizeof(site));
			site.kind = CP_SITE_INDEX;
			site.addr = e->cell_insn;
			site.detail = (uint32_t)k;
			if (push(ns, (const char *)bl->data + e->offset, e->length, &loc, &site))
				return -1;
			if (s->nblobs == 1 && ns->n && ns->v[ns->n - 1].loc.offset == e->offset &&
			    ns->v[ns->n - 1].loc.blob == (int)b)
				ns->v[ns->n - 1].index = (long)k;
		}
	}
	return 0;
}

static const struct pyname *find(const struct names *ns, const char *v, size_t len)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		if (ns->v[i].len == len && !memcmp(ns->v[i].value, v, len))
			return &ns->v[i];
	return NULL;
}

/* Some name, or some reported from-import, begins with "pkg.". */
static bool prefix_used(const cp_scan *s, const struct names *ns, const char *pkg, size_t len)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		if (ns->v[i].len > len && ns->v[i].value[len] == '.' && !memcmp(ns->v[i].value, pkg, len))
			return true;
	for (i = 0; i < s->nrefs; i++)
		if (s->refs[i].kind == CP_K_FROMIMPORT && strlen(s->refs[i].package) == len &&
		    !memcmp(s->refs[i].package, pkg, len))
			return true;
	return false;
}

/* Whether base puts every slot an import loads on a string that is a
 * dotted name (what an import passes). */
static bool base_explains(const cp_scan *s, const struct names *ns, uint64_t base)
{
	size_t i;

	for (i = 0; i < s->nimport_slots; i++) {
		uint64_t sl = s->import_slots[i], k;

		if (sl < base || (sl - base) % 8)
			return false;
		k = (sl - base) / 8;
		if (k >= ns->nidx || !cp_is_dotted_name(ns->idx[k].v, ns->idx[k].len))
			return false;
	}
	return true;
}

/*
 * 3.1 and 3.2+: string i's object is at base + 8 * i, from a base the
 * function that makes the strings takes or stores through (lea rax,
 * [rip + x]; lea rbp, [rax - 0x98]; mov [rbp], rax), which must put every
 * import's slot on a dotted name. When no such base does, every base that
 * does could be the table's; P may be imported when one of them puts an
 * import's slot on P, or none is found.
 */
/* The addresses the function that makes the strings takes or stores
 * through: where the table can begin. */
static void code_bases(cp_scan *s, struct names *ns)
{
	uint64_t start, end;
	struct cp_frame f;
	cp_error err;
	size_t i, n = 0;

	ns->have_bases = true;
	if (!cp_image_function(s->img, ns->func, &start, &end) || cp_scan_frame(s, start, end, &f, &err))
		return;
	for (i = 0; i < s->nxrefs; i++)
		n += s->xrefs[i].addr >= start && s->xrefs[i].addr < end;
	ns->bases = malloc((n + f.naddrs + 1) * sizeof(*ns->bases));
	for (i = 0; ns->bases && i < s->nxrefs; i++)
		if (s->xrefs[i].addr >= start && s->xrefs[i].addr < end && cp_scan_is_data_slot(s, s->xrefs[i].target))
			ns->bases[ns->nbases++] = s->xrefs[i].target;
	for (i = 0; ns->bases && i < f.naddrs; i++)
		if (cp_scan_is_data_slot(s, f.addrs[i]))
			ns->bases[ns->nbases++] = f.addrs[i];
	cp_frame_free(&f);
}

/* Whether a base the code uses explains every import: then those decide. */
static bool code_base_decides(cp_scan *s, struct names *ns, long index, bool *hit)
{
	bool found = false;
	size_t i;

	if (!ns->have_bases)
		code_bases(s, ns);
	*hit = false;
	for (i = 0; i < ns->nbases; i++) {
		if (!base_explains(s, ns, ns->bases[i]))
			continue;
		found = true;
		*hit = *hit || cp_scan_is_import_slot(s, ns->bases[i] + 8 * (uint64_t)index);
	}
	return found;
}

/* 3.1 and 3.2+: the import slots string `index` may be at, base + 8 *
 * index for each base that puts every import's slot on a dotted name (a
 * base the code uses when one does, else any the first import's slot
 * allows), passed to fn; false when no base does. */
static bool indexed_import_slots(cp_scan *s, struct names *ns, long index,
				 void (*fn)(void *ctx, uint64_t slot), void *ctx)
{
	bool found = false, hit;
	size_t k;

	if (index < 0 || (size_t)index >= ns->nidx)
		return false;
	if (code_base_decides(s, ns, index, &hit)) {
		for (k = 0; k < ns->nbases; k++)
			if (base_explains(s, ns, ns->bases[k]) &&
			    cp_scan_is_import_slot(s, ns->bases[k] + 8 * (uint64_t)index))
				fn(ctx, ns->bases[k] + 8 * (uint64_t)index);
		return true;
	}
	for (k = 0; k < ns->nidx; k++) {
		uint64_t base, sl0 = s->import_slots[0];

		if (sl0 < 8 * k || !cp_is_dotted_name(ns->idx[k].v, ns->idx[k].len))
			continue;
		base = sl0 - 8 * k;
		if (!base_explains(s, ns, base))
			continue;
		found = true;
		if (cp_scan_is_import_slot(s, base + 8 * (uint64_t)index))
			fn(ctx, base + 8 * (uint64_t)index);
	}
	return found;
}

static void count_slot(void *ctx, uint64_t slot)
{
	(void)slot;
	++*(size_t *)ctx;
}

static bool indexed_may_import(cp_scan *s, struct names *ns, long index)
{
	size_t n = 0;

	return !indexed_import_slots(s, ns, index, count_slot, &n) || n;
}

static void read_imports(cp_scan *s, struct names *ns)
{
	if (!ns->imports_read) {
		ns->imports_read = true;
		ns->st = cp_scan_import_names(s, ns->err);
	}
}

/*
 * Whether the module may import P by a Python-level import: no import at
 * all passes a name by slot, or the slot of every string object "P" is
 * known and no import loads its name from it, nor names P by C string; else
 * it may. The slot is read for 0.29 (table entries) and 3.0 (built in
 * code), and found from the indexes for 3.1 (table) and 3.2+ (blob).
 */
static bool may_import(cp_scan *s, struct names *ns, struct code_frames *cf, const struct pyname *p)
{
	size_t i;

	/* read only when a pair of names needs it: a code walk or two */
	read_imports(s, ns);
	if (ns->st)
		return true;
	if (s->import_names_unknown[0] || cp_scan_imports_cstring(s, p->value, p->len))
		return true;
	if (!s->nimport_slots)
		return false;
	for (i = 0; i < ns->n; i++) {
		struct pyname *q = &ns->v[i];

		if (q->len != p->len || memcmp(q->value, p->value, p->len))
			continue;
		if (!q->slot && cp_cython_is(s, 3, 0) && q->site.kind == CP_SITE_CODE)
			q->slot = code_slot(s, cf, q->site.addr, q->loc.vaddr);
		if (q->slot ? cp_scan_is_import_slot(s, q->slot) : indexed_may_import(s, ns, q->index))
			return true;
	}
	return false;
}

static bool add_pyslot(struct cp_ref *r, uint64_t slot)
{
	size_t i;
	uint64_t *v;

	for (i = 0; i < r->npyslots; i++)
		if (r->pyslots[i] == slot)
			return true;
	v = realloc(r->pyslots, (r->npyslots + 1) * sizeof(*v));
	if (!v)
		return false;
	r->pyslots = v;
	r->pyslots[r->npyslots++] = slot;
	return true;
}

struct slot_sink {
	struct cp_ref *r;
	bool oom;
};

static void sink_slot(void *ctx, uint64_t slot)
{
	struct slot_sink *k = ctx;

	k->oom = k->oom || !add_pyslot(k->r, slot);
}

/* The slots the module's imports load the package of a Python-level
 * import reference from: every string object with its text whose slot is
 * known, among the slots imports load (r->pyslots_known stays false when
 * some slot or some import's name cannot be told). */
static cp_status ref_pyslots(cp_scan *s, struct names *ns, struct code_frames *cf, struct cp_ref *r,
			     cp_error *err)
{
	const char *v = r->kind == CP_K_FROMIMPORT ? r->package : r->value;
	size_t i, len = strlen(v);
	struct slot_sink sink = { r, false };
	bool known = true;

	read_imports(s, ns);
	if (ns->st || s->import_names_unknown[0] || cp_scan_imports_cstring(s, v, len) || !s->nimport_slots)
		return ns->st;
	for (i = 0; known && i < ns->n; i++) {
		struct pyname *q = &ns->v[i];

		if (q->len != len || memcmp(q->value, v, len))
			continue;
		if (!q->slot && cp_cython_is(s, 3, 0) && q->site.kind == CP_SITE_CODE)
			q->slot = code_slot(s, cf, q->site.addr, q->loc.vaddr);
		if (q->slot && cp_scan_is_import_slot(s, q->slot))
			sink.oom = sink.oom || !add_pyslot(r, q->slot);
		else if (!q->slot)
			known = indexed_import_slots(s, ns, q->index, sink_slot, &sink);
	}
	if (sink.oom)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	r->pyslots_known = known;
	return CP_OK;
}

static cp_status not_imported(cp_scan *s, const struct pyname *p, cp_error *err)
{
	size_t i;
	char **v;

	for (i = 0; i < s->nnot_imported; i++)
		if (strlen(s->not_imported[i]) == p->len && !memcmp(s->not_imported[i], p->value, p->len))
			return CP_OK;
	v = realloc(s->not_imported, (s->nnot_imported + 1) * sizeof(*v));
	if (!v)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	s->not_imported = v;
	if (!(v[s->nnot_imported] = cp_strndup(p->value, p->len)))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	s->nnot_imported++;
	return CP_OK;
}

static cp_status report(cp_scan *s, struct names *ns, struct code_frames *cf, const char *m, int layout,
			bool same, cp_error *err)
{
	const char *dot = strrchr(m, '.');
	const struct pyname *pkg, *name;
	struct cp_ref *r;

	if (!dot || find(ns, m, strlen(m)) || !(pkg = find(ns, m, (size_t)(dot - m))) ||
	    !(name = find(ns, dot + 1, strlen(dot + 1))))
		return CP_OK;
	if ((pkg == name) != same || (same && prefix_used(s, ns, pkg->value, pkg->len)))
		return CP_OK;
	if (!may_import(s, ns, cf, pkg))
		return ns->st ? ns->st : not_imported(s, pkg, err);
	if (ns->st)
		return ns->st;
	r = cp_scan_add_ref(s, CP_K_FROMIMPORT, err);
	if (!r)
		return err->code;
	r->layout = layout;
	r->module = strdup(m);
	r->value = strdup(m);
	r->name = cp_strndup(name->value, name->len);
	r->package = cp_strndup(pkg->value, pkg->len);
	r->loc = name->loc;
	r->package_loc = pkg->loc;
	r->same_string = pkg == name;
	if (!r->module || !r->value || !r->name || !r->package)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	if (cp_ref_add_site(r, &name->site, err))
		return err->code;
	return cp_ref_add_site(r, &pkg->site, err);
}

cp_status cp_scan_from_imports(cp_scan *s, cp_error *err)
{
	struct names ns;
	struct code_frames cf;
	cp_status st = CP_OK;
	size_t i;
	int k, rc, pass;

	memset(&ns, 0, sizeof(ns));
	ns.err = err;
	if (cp_cython_at_least(s, 3, 2))
		rc = blob_names(s, &ns);
	else if (cp_cython_is(s, 3, 0))
		rc = code_names(s, &ns);
	else
		rc = table_names(s, &ns);
	if (rc) {
		free(ns.v);
		free(ns.idx);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	s->pynames = calloc(ns.n ? ns.n : 1, sizeof(char *));
	for (i = 0; s->pynames && i < ns.n; i++)
		if ((s->pynames[s->npynames] = cp_strndup(ns.v[i].value, ns.v[i].len)) != NULL)
			s->npynames++;
	if (!s->pynames) {
		free(ns.v);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	}
	memset(&cf, 0, sizeof(cf));
	for (pass = 0; pass < 2; pass++)
		for (i = 0; !st && i < s->rules->nmod; i++)
			for (k = 0; !st && k < 2; k++)
				st = report(s, &ns, &cf, s->rules->mod[i].name[k], s->rules->mod[i].layout[k],
					    pass == 1, err);
	for (i = 0; !st && i < s->nrefs; i++)
		if (s->refs[i].kind == CP_K_FROMIMPORT || s->refs[i].kind == CP_K_UNMAPPED ||
		    (s->refs[i].kind == CP_K_PYIMPORT && s->refs[i].module))
			st = ref_pyslots(s, &ns, &cf, &s->refs[i], err);
	if (cf.have)
		cp_frame_free(&cf.f);
	free(ns.v);
	free(ns.idx);
	free(ns.bases);
	return st;
}

bool cp_scan_from_candidate(const cp_scan *s, const char *module, size_t *pkglen)
{
	const char *dot = strrchr(module, '.');

	size_t i;

	if (!dot || !cp_scan_has_pyname(s, module, (size_t)(dot - module)) ||
	    !cp_scan_has_pyname(s, dot + 1, strlen(dot + 1)))
		return false;
	for (i = 0; i < s->nnot_imported; i++)
		if (strlen(s->not_imported[i]) == (size_t)(dot - module) &&
		    !memcmp(s->not_imported[i], module, (size_t)(dot - module)))
			return false;
	*pkglen = (size_t)(dot - module);
	return true;
}

bool cp_scan_has_pyname(const cp_scan *s, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < s->npynames; i++)
		if (strlen(s->pynames[i]) == len && !memcmp(s->pynames[i], name, len))
			return true;
	return false;
}
