/*
 * scan_code.c - the code walk and the relocation pass of a scan.
 *
 * The walk keeps what every later pass needs, so that the code is read
 * once: every RIP-relative lea into data (the sites that a string can have
 * in code), the calls that import code makes, for each
 * PyImport_ImportModule call the data words loaded after it (Cython 3.2+
 * fetches its import-signature constant from the string table there),
 * every direct jump (reach.h's predecessors), every use of an imported
 * function (the fallback plan's sites) and every use of a function's start
 * (the import-name pass's forwarders).
 */
#include "scan/scan_walk.h"
#include "cython/cython.h"
#include "util/big_array.h"
#include "util/error.h"
#include "util/sort.h"

#include <assert.h>
#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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
static void advance(struct cp_walk *c, uint64_t addr)
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

static void stop(struct cp_walk *c, uint64_t addr)
{
	c->clean = false;
	c->last_break = addr;
}

void cp_walk_state(const struct cp_walk *w, struct cp_walk_state *st)
{
	memset(st, 0, sizeof(*st));
	/* with no block open, or a full one, nothing else is read before the
	 * next import sets it all */
	if (!w->block || w->block->nloads >= CP_MAX_BLOCK_LOADS)
		return;
	st->block = w->block->call;
	st->nloads = w->block->nloads;
	st->clean = w->clean;
	st->last_break = w->last_break;
	st->func_end = w->func_end;
	st->npending = w->npending;
	if (w->npending <= CP_WALK_PENDING)
		memcpy(st->pending, w->pending, w->npending * sizeof(*w->pending));
}

bool cp_walk_state_equal(const struct cp_walk_state *a, const struct cp_walk_state *b)
{
	return a->block == b->block && a->nloads == b->nloads && a->clean == b->clean &&
	       a->last_break == b->last_break && a->func_end == b->func_end && a->npending == b->npending &&
	       a->npending <= CP_WALK_PENDING && !memcmp(a->pending, b->pending, a->npending * sizeof(*a->pending));
}

bool cp_walk_meets(const struct cp_walk *w, const struct cp_walk_point *p, uint64_t addr,
		   const struct cp_code_state *regs)
{
	struct cp_walk_state now;

	if (p->addr != addr || memcmp(regs, &p->regs, sizeof(*regs)))
		return false;
	cp_walk_state(w, &now);
	return cp_walk_state_equal(&now, &p->at.state);
}

void cp_walk_resume(struct cp_walk *w, const struct cp_walk_state *st)
{
	size_t i;

	w->block = NULL;
	for (i = w->s->nblocks; st->block && i-- > 0 && !w->block;)
		if (w->s->blocks[i].call == st->block)
			w->block = &w->s->blocks[i];
	assert(!st->block || (w->block && w->block->nloads == st->nloads));
	assert(st->npending <= CP_WALK_PENDING);
	w->clean = st->clean;
	w->last_break = st->last_break;
	w->func_end = st->func_end;
	w->npending = st->npending;
	memcpy(w->pending, st->pending, st->npending * sizeof(*st->pending));
}

void cp_walk_at(const struct cp_walk *w, struct cp_walk_at *at)
{
	const cp_scan *s = w->s;

	at->ncalls = s->ncalls;
	at->nuses = s->nuses;
	at->nfuses = s->nfuses;
	at->nderived = s->nderived;
	at->nblocks = s->nblocks;
	cp_walk_state(w, &at->state);
}

static void record_mark(struct cp_walk *w, struct cp_walk_mark *m)
{
	cp_walk_at(w, &m->at);
}

/* Before anything at addr: the units entered on the way get the state. */
static void enter_to(struct cp_walk *w, uint64_t addr)
{
	while (w->marking && w->next_mark < w->s->nmarks && w->s->marks[w->next_mark].start <= addr)
		record_mark(w, &w->s->marks[w->next_mark++]);
}

void cp_walk_enter_unit(struct cp_walk *w, size_t k)
{
	while (w->marking && w->next_mark <= k && w->next_mark < w->s->nmarks)
		record_mark(w, &w->s->marks[w->next_mark++]);
}

static bool is_data(const cp_image *img, uint64_t va)
{
	const struct cp_section *sec = cp_image_section_at(img, va);

	return sec && !(sec->flags & SHF_EXECINSTR);
}

static void add_use(struct cp_walk *c, uint64_t addr, const char *name, uint64_t slot,
		    enum cp_insn_ref_kind ref)
{
	cp_scan *s = c->s;

	if (CP_BIG_GROW(s->uses, s->capuses, s->nuses + 1)) {
		c->oom = true;
		return;
	}
	s->uses[s->nuses].addr = addr;
	s->uses[s->nuses].name = name;
	s->uses[s->nuses].slot = slot;
	s->uses[s->nuses++].ref = ref;
}

/* Whether va is a function's start. Most targets (a jump's) lie inside
 * the function looked up last: [near_lo, near_hi) between two starts. */
static bool is_func_start(struct cp_walk *c, const cp_image *img, uint64_t va)
{
	size_t i;

	if (va > c->near_lo && va < c->near_hi)
		return false;
	i = cp_image_func_after(img, va);
	c->near_lo = i > 0 ? img->func[i - 1] : 0;
	c->near_hi = i < img->nfunc ? img->func[i] : UINT64_MAX;
	return i > 0 && img->func[i - 1] == va;
}

static void add_func_use(struct cp_walk *c, uint64_t addr, uint64_t target, enum cp_func_use_kind kind,
			 const struct cp_val *arg)
{
	cp_scan *s = c->s;
	struct cp_func_use *u;

	if (!is_func_start(c, s->img, target))
		return;
	if (CP_BIG_GROW(s->fuses, s->capfuses, s->nfuses + 1)) {
		c->oom = true;
		return;
	}
	u = &s->fuses[s->nfuses++];
	memset(u, 0, sizeof(*u));
	u->addr = addr;
	u->target = target;
	u->kind = kind;
	if (arg)
		memcpy(u->arg, arg, sizeof(u->arg));
}

static void on_ref(void *ctx, const struct cp_code_ref *r)
{
	struct cp_walk *c = ctx;
	cp_scan *s = c->s;
	const struct cp_section *sec;
	struct cp_import_block *b;

	enter_to(c, r->addr);
	b = c->block;

	if (cp_image_got_name(s->img, r->target))
		add_use(c, r->addr, NULL, r->target, r->kind);
	add_func_use(c, r->addr, r->target, CP_FUSE_REF, NULL);

	if (r->base) {
		if (CP_BIG_GROW(s->derived, s->capderived, s->nderived + 1)) {
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
		if (CP_BIG_GROW(s->xrefs, s->capxrefs, s->nxrefs + 1)) {
			c->oom = true;
			return;
		}
		s->xrefs[s->nxrefs].target = r->target;
		s->xrefs[s->nxrefs].addr = r->addr;
		s->nxrefs++;
		return;
	}
	if (r->kind != CP_REF_LOAD || !b || b->nloads >= CP_MAX_BLOCK_LOADS)
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

	/* all of them are CPython's: most calls (C++ code's) are not */
	if (call->name && call->name[0] == 'P' && call->name[1] == 'y') {
		for (i = 0; names[i]; i++)
			if (strcmp(call->name, names[i]) == 0)
				return true;
		if (cp_scan_is_import_call(call->name))
			return true;
	}
	for (i = 0; i < CP_MAX_ARGS; i++)
		addrs += call->arg[i].kind == CP_V_ADDR;
	return addrs >= 2;
}

/* The module an import call names: its first argument's string, read
 * from s's image (NULL when the walk did not know it). */
static const char *module_named(const cp_scan *s, const struct cp_val *arg0)
{
	return arg0->kind == CP_V_ADDR ? cp_image_cstring(s->img, arg0->v, 4096) : NULL;
}

static void open_block(struct cp_walk *c, const struct cp_call *call)
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
	if (call->arg[0].kind == CP_V_ADDR) {
		b->name_va = call->arg[0].v;
		b->name_origin = call->arg[0].origin;
	}
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
	struct cp_walk *c = ctx;
	cp_scan *s = c->s;

	enter_to(c, addr);

	if (CP_BIG_GROW(s->jumps, s->capjumps, s->njumps + 1)) {
		c->oom = true;
		return;
	}
	s->jumps[s->njumps].from = addr;
	s->jumps[s->njumps++].to = target;
	add_func_use(c, addr, target, CP_FUSE_JUMP, NULL);
	advance(c, addr);
	if (c->block && c->clean && target > addr && c->npending < CP_MAX_PENDING)
		c->pending[c->npending++] = target;
}

static void on_end(void *ctx, uint64_t addr)
{
	struct cp_walk *c = ctx;

	enter_to(c, addr);

	advance(c, addr);
	stop(c, addr);
}

static void on_call(void *ctx, const struct cp_call *call)
{
	struct cp_walk *c = ctx;
	cp_scan *s = c->s;
	struct cp_scan_call *k;

	enter_to(c, call->addr);
	advance(c, call->addr);
	stop(c, call->addr);
	if (call->name)
		add_use(c, call->addr, call->name, 0, CP_REF_OTHER);
	add_func_use(c, call->addr, call->target, CP_FUSE_CALL, call->arg);
	if (!wanted_call(call))
		return;
	if (CP_BIG_GROW(s->calls, s->capcalls, s->ncalls + 1)) {
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

const struct cp_walk_order cp_walk_xref_order = { sizeof(struct cp_xref), offsetof(struct cp_xref, target),
						 offsetof(struct cp_xref, addr) };
const struct cp_walk_order cp_walk_jump_order = { sizeof(struct cp_jump), offsetof(struct cp_jump, to),
						 offsetof(struct cp_jump, from) };

/* The walk at a cut: a point recorded. */
static bool on_cut(void *ctx, uint64_t addr, const struct cp_code_state *regs)
{
	struct cp_walk *w = ctx;
	cp_scan *s = w->s;
	struct cp_walk_point *p;

	enter_to(w, addr);
	if (CP_GROW(s->points, s->cappoints, s->npoints + 1)) {
		w->oom = true;
		return false;
	}
	p = &s->points[s->npoints++];
	p->addr = addr;
	cp_walk_at(w, &p->at);
	p->regs = *regs;
	return false;
}

void cp_walk_start(struct cp_walk *w, cp_scan *s, bool marking, struct cp_code_visitor *v)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->marking = marking && s->marks;
	memset(v, 0, sizeof(*v));
	v->on_ref = on_ref;
	v->on_call = on_call;
	v->ctx = w;
	v->on_jump = on_jump;
	v->on_end = on_end;
	if (w->marking && s->ncuts) {
		v->cuts = s->cuts;
		v->ncuts = s->ncuts;
		v->on_cut = on_cut;
	}
}

static bool add_unit(cp_scan *s, size_t *cap, uint64_t start, uint64_t end)
{
	/* one more than the units: the end */
	if (CP_GROW(s->marks, *cap, s->nmarks + 2))
		return false;
	memset(&s->marks[s->nmarks], 0, sizeof(*s->marks));
	s->marks[s->nmarks].start = start;
	s->marks[s->nmarks++].end = end;
	return true;
}

static void drop_units(cp_scan *s)
{
	free(s->marks);
	s->marks = NULL;
	s->nmarks = 0;
	free(s->cuts);
	s->cuts = NULL;
	s->ncuts = 0;
}

/* The cuts of the units of 2 * CP_WALK_CUT bytes or more. */
static bool add_cuts(cp_scan *s)
{
	size_t k, cap = 0;
	uint64_t a;

	for (k = 0; k < s->nmarks; k++) {
		if (s->marks[k].end - s->marks[k].start < 2 * CP_WALK_CUT)
			continue;
		for (a = s->marks[k].start + CP_WALK_CUT; a < s->marks[k].end; a += CP_WALK_CUT) {
			if (CP_GROW(s->cuts, cap, s->ncuts + 1))
				return false;
			s->cuts[s->ncuts++] = a;
		}
	}
	return true;
}

bool cp_walk_units(cp_scan *s, const cp_image *img)
{
	size_t i, k, cap = 0;
	uint64_t a, b, last = 0;
	bool ok = true;

	for (i = 0; ok && i < img->nsec; i++) {
		if (!cp_walk_span(&img->sec[i], 0, 0, &a, &b))
			continue;
		if (a < last) {
			drop_units(s); /* the walk's order is not the addresses' */
			return true;
		}
		last = b;
		for (k = cp_image_func_after(img, a); ok && a < b; k++) {
			uint64_t end = k < img->nfunc && img->func[k] < b ? img->func[k] : b;

			if (end > a)
				ok = add_unit(s, &cap, a, end);
			a = end;
		}
	}
	if (ok && s->marks && (ok = add_unit(s, &cap, UINT64_MAX, UINT64_MAX)))
		s->nmarks--; /* the end is marks[nmarks] */
	if (ok && s->marks)
		ok = add_cuts(s);
	if (!ok)
		drop_units(s);
	return ok;
}

cp_status cp_walk_end(struct cp_walk *w, bool sorted, cp_error *err)
{
	cp_scan *s = w->s;

	if (w->marking) {
		while (w->next_mark < s->nmarks)
			record_mark(w, &s->marks[w->next_mark++]);
		record_mark(w, &s->marks[s->nmarks]);
	}
	if (w->oom)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	if (!sorted && !cp_walk_sort_found(s))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	return CP_OK;
}

static uint64_t field(const void *rec, size_t at)
{
	uint64_t v;

	memcpy(&v, (const char *)rec + at, sizeof(v));
	return v;
}

int cp_walk_order_cmp(const struct cp_walk_order *o, const void *a, const void *b)
{
	uint64_t x = field(a, o->key_at), y = field(b, o->key_at);

	if (x == y) {
		x = field(a, o->addr_at);
		y = field(b, o->addr_at);
	}
	return x < y ? -1 : x > y;
}

static bool in_order(const void *base, size_t n, const struct cp_walk_order *o)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (cp_walk_order_cmp(o, (const char *)base + (i - 1) * o->size, (const char *)base + i * o->size) > 0)
			return false;
	return true;
}

bool cp_walk_sort(void *base, size_t n, const struct cp_walk_order *o)
{
	/* stable: by the address, then by the key (a run's, sorted on its
	 * thread, is in order already) */
	return in_order(base, n, o) ||
	       (cp_sort_by_key(base, n, o->size, o->addr_at) && cp_sort_by_key(base, n, o->size, o->key_at));
}

bool cp_walk_sort_found(cp_scan *s)
{
	return cp_walk_sort(s->xrefs, s->nxrefs, &cp_walk_xref_order) &&
	       cp_walk_sort(s->jumps, s->njumps, &cp_walk_jump_order);
}

cp_status cp_scan_code_one(cp_scan *s, cp_error *err)
{
	struct cp_walk w;
	struct cp_code_visitor v;
	cp_status st;

	cp_walk_start(&w, s, true, &v);
	st = cp_code_walk(s->img, 0, 0, &v, err);
	return st ? st : cp_walk_end(&w, false, err);
}

void cp_scan_free_walk(cp_scan *s)
{
	size_t i;

	for (i = 0; i < s->nblocks; i++) {
		free(s->blocks[i].module);
		free(s->blocks[i].loads);
	}
	free(s->blocks);
	CP_BIG_FREE(s->calls, s->capcalls);
	CP_BIG_FREE(s->xrefs, s->capxrefs);
	CP_BIG_FREE(s->derived, s->capderived);
	CP_BIG_FREE(s->jumps, s->capjumps);
	CP_BIG_FREE(s->uses, s->capuses);
	CP_BIG_FREE(s->fuses, s->capfuses);
	free(s->marks);
	free(s->cuts);
	free(s->points);
	/* cp_scan_free frees it once more: nothing is left to free twice */
	s->blocks = NULL;
	s->nblocks = 0;
	s->calls = NULL;
	s->xrefs = NULL;
	s->derived = NULL;
	s->jumps = NULL;
	s->uses = NULL;
	s->fuses = NULL;
	s->marks = NULL;
	s->cuts = NULL;
	s->points = NULL;
	s->ncalls = s->capcalls = s->nxrefs = s->capxrefs = s->nderived = s->capderived = 0;
	s->njumps = s->capjumps = s->nuses = s->capuses = s->nfuses = s->capfuses = 0;
}

bool cp_walk_copy_block(cp_scan *s, const struct cp_import_block *b, uint64_t from, uint64_t to)
{
	struct cp_import_block *c;
	const char *m = NULL;
	size_t k;

	if (CP_GROW(s->blocks, s->capblocks, s->nblocks + 1))
		return false;
	c = &s->blocks[s->nblocks];
	memset(c, 0, sizeof(*c));
	c->call = b->call;
	for (k = s->ncalls; k-- > 0 && !m;)
		if (s->calls[k].addr == b->call)
			m = module_named(s, &s->calls[k].arg[0]);
	if (m && !(c->module = strdup(m)))
		return false;
	s->nblocks++;
	for (k = 0; k < b->nloads; k++) {
		if (b->loads[k].at < from || b->loads[k].at >= to)
			continue;
		if (CP_GROW(c->loads, c->caploads, c->nloads + 1))
			return false;
		c->loads[c->nloads++] = b->loads[k];
	}
	return true;
}

static bool append(void **dst, size_t *n, size_t *cap, const void *src, size_t from, size_t to, size_t size)
{
	size_t k = to - from;

	if (!k)
		return true;
	if (cp_big_grow(dst, cap, *n + k, size))
		return false;
	memcpy((char *)*dst + *n * size, (const char *)src + from * size, k * size);
	*n += k;
	return true;
}

/* The block of from's that was open at `at` (call at->state.block). */
static const struct cp_import_block *open_block_of(const cp_scan *from, const struct cp_walk_at *at)
{
	size_t i;

	for (i = at->nblocks; at->state.block && i-- > 0;)
		if (from->blocks[i].call == at->state.block)
			return &from->blocks[i];
	return NULL;
}

/* from's findings between two places of its walk, a and b, the code in
 * [lo, hi) between them: w's scan gets them, and w stands where from's
 * walk stood at b. */
static bool take_between(struct cp_walk *w, const cp_scan *from, const struct cp_walk_at *a,
			 const struct cp_walk_at *b, uint64_t lo, uint64_t hi)
{
	cp_scan *s = w->s;
	const struct cp_import_block *open = open_block_of(from, a);
	size_t i;

	if (!append((void **)&s->calls, &s->ncalls, &s->capcalls, from->calls, a->ncalls, b->ncalls,
		    sizeof(*s->calls)) ||
	    !append((void **)&s->uses, &s->nuses, &s->capuses, from->uses, a->nuses, b->nuses, sizeof(*s->uses)) ||
	    !append((void **)&s->fuses, &s->nfuses, &s->capfuses, from->fuses, a->nfuses, b->nfuses,
		    sizeof(*s->fuses)) ||
	    !append((void **)&s->derived, &s->nderived, &s->capderived, from->derived, a->nderived, b->nderived,
		    sizeof(*s->derived)))
		return false;
	/* the loads the code adds to the block open as it starts */
	for (i = 0; open && w->block && i < open->nloads; i++) {
		if (open->loads[i].at < lo || open->loads[i].at >= hi)
			continue;
		if (CP_GROW(w->block->loads, w->block->caploads, w->block->nloads + 1))
			return false;
		w->block->loads[w->block->nloads++] = open->loads[i];
	}
	for (i = a->nblocks; i < b->nblocks; i++)
		if (!cp_walk_copy_block(s, &from->blocks[i], lo, hi))
			return false;
	cp_walk_resume(w, &b->state);
	return true;
}

/* from's points in [lo, hi), their findings counted as w's scan counts
 * them (base: w's place where from's walk stood at `at`). */
static bool take_points(struct cp_walk *w, const cp_scan *from, const struct cp_walk_at *at,
			const struct cp_walk_at *base, uint64_t lo, uint64_t hi)
{
	cp_scan *s = w->s;
	size_t i = cp_first_key_at_least(from->points, from->npoints, sizeof(*from->points),
					 offsetof(struct cp_walk_point, addr), lo);

	for (; i < from->npoints && from->points[i].addr < hi; i++) {
		struct cp_walk_point p = from->points[i];

		p.at.ncalls = p.at.ncalls - at->ncalls + base->ncalls;
		p.at.nuses = p.at.nuses - at->nuses + base->nuses;
		p.at.nfuses = p.at.nfuses - at->nfuses + base->nfuses;
		p.at.nderived = p.at.nderived - at->nderived + base->nderived;
		p.at.nblocks = p.at.nblocks - at->nblocks + base->nblocks;
		if (CP_GROW(s->points, s->cappoints, s->npoints + 1))
			return false;
		s->points[s->npoints++] = p;
	}
	return true;
}

bool cp_walk_take_units(struct cp_walk *w, const cp_scan *from, size_t k, size_t end)
{
	const struct cp_walk_mark *m = &from->marks[k], *last = &from->marks[end - 1];
	struct cp_walk_at base;

	assert(k < end && end <= from->nmarks);
	cp_walk_at(w, &base);
	/* a walk that records points takes the units' (scan_threads.c) */
	return take_between(w, from, &m->at, &last[1].at, m->start, last->end) &&
	       (!w->marking || take_points(w, from, &m->at, &base, m->start, last->end));
}

bool cp_walk_take_upto(struct cp_walk *w, const cp_scan *from, size_t k, const struct cp_walk_point *p)
{
	return take_between(w, from, &from->marks[k].at, &p->at, from->marks[k].start, p->addr);
}

bool cp_walk_take_rest(struct cp_walk *w, const cp_scan *from, size_t k, const struct cp_walk_point *p)
{
	return take_between(w, from, &p->at, &from->marks[k + 1].at, p->addr, from->marks[k].end);
}

size_t cp_scan_xrefs_to(const cp_scan *s, uint64_t va, size_t *first)
{
	return cp_records_with_key(s->xrefs, s->nxrefs, sizeof(*s->xrefs), offsetof(struct cp_xref, target), va, first);
}

void cp_scan_code_site(uint64_t addr, struct cp_site *site)
{
	memset(site, 0, sizeof(*site));
	site->kind = CP_SITE_CODE;
	site->addr = addr;
}

/* What a report says of a site: a code site's instruction, decoded. */
static void describe_site(cp_dis *d, const cp_image *img, const struct cp_site *t, char *text, size_t n)
{
	text[0] = '\0';
	switch (t->kind) {
	case CP_SITE_CODE:
		cp_dis_describe(d, img, t->addr, text, n);
		break;
	case CP_SITE_RELOC:
		snprintf(text, n, "%s at %#llx", img->arch->reloc_name(t->detail), (unsigned long long)t->addr);
		break;
	case CP_SITE_TABLE:
		snprintf(text, n, "%s at %#llx (string table entry, length follows)",
			 img->arch->reloc_name(t->detail), (unsigned long long)t->addr);
		break;
	case CP_SITE_INDEX:
		if (!t->bits)
			snprintf(text, n, "length index entry %u", t->detail);
		else
			snprintf(text, n, "length index entry %u (%u-bit field, %s)", t->detail, t->bits,
				 t->len_addr ? "copied from a .rodata template" : "an immediate in code");
		break;
	}
}

cp_status cp_scan_describe_sites(cp_scan *s, const cp_image *img, cp_error *err)
{
	cp_dis d = { NULL, NULL };
	cp_status st = cp_dis_open(&d, img, err);
	size_t i, k;

	for (i = 0; !st && i < s->nrefs; i++) {
		struct cp_ref *r = &s->refs[i];

		free(r->site_text);
		r->site_text = r->nsites ? malloc(r->nsites * sizeof(*r->site_text)) : NULL;
		if (r->nsites && !r->site_text)
			st = cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
		for (k = 0; !st && k < r->nsites; k++)
			describe_site(&d, img, &r->sites[k], r->site_text[k], sizeof(r->site_text[k]));
	}
	cp_dis_close(&d);
	return st;
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

/* A string's address and index, to look strings up by address. */
struct str_at {
	uint64_t va;
	size_t i;
};

static int by_va(const void *a, const void *b)
{
	const struct str_at *x = a, *y = b;

	if (x->va != y->va)
		return x->va < y->va ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The strings at exactly va: [*first, *first + n) of idx (sorted by_va). */
static size_t strings_at(const struct str_at *idx, size_t nidx, uint64_t va, size_t *first)
{
	return cp_records_with_key(idx, nidx, sizeof(*idx), offsetof(struct str_at, va), va, first);
}

static cp_status add_reloc_site(cp_scan *s, struct cp_string *str, const struct cp_reloc *r, cp_error *err)
{
	struct cp_site site;

	memset(&site, 0, sizeof(site));
	site.addr = r->offset;
	if (!cp_scan_table_length(s, s->img, r->offset, str->len, &site.len_addr))
		site.len_addr = 0;
	site.kind = site.len_addr ? CP_SITE_TABLE : CP_SITE_RELOC;
	site.detail = r->type;
	if (CP_GROW(str->sites, str->capsites, str->nsites + 1))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	str->sites[str->nsites++] = site;
	return CP_OK;
}

/* Attaches relocation sites, then code sites, to the strings they point
 * at (each string's sites in relocation order: a lookup by address). */
cp_status cp_scan_relocs(cp_scan *s, cp_error *err)
{
	struct str_at *idx = s->nstrs ? malloc(s->nstrs * sizeof(*idx)) : NULL;
	size_t i, j, first, n;
	cp_status st = CP_OK;

	if (s->nstrs && !idx)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	for (j = 0; j < s->nstrs; j++) {
		idx[j].va = s->strs[j].va;
		idx[j].i = j;
	}
	if (s->nstrs)
		qsort(idx, s->nstrs, sizeof(*idx), by_va);
	for (i = 0; !st && i < s->img->nrel; i++) {
		const struct cp_reloc *r = &s->img->rel[i];

		if (r->kind != CP_RELOC_RELATIVE)
			continue;
		n = strings_at(idx, s->nstrs, (uint64_t)r->addend, &first);
		for (j = 0; !st && j < n; j++)
			st = add_reloc_site(s, &s->strs[idx[first + j].i], r, err);
	}
	free(idx);
	for (j = 0; !st && j < s->nstrs; j++) {
		struct cp_string *str = &s->strs[j];

		n = cp_scan_xrefs_to(s, str->va, &first);
		for (i = 0; i < n; i++) {
			struct cp_site site;

			cp_scan_code_site(s->xrefs[first + i].addr, &site);
			if (CP_GROW(str->sites, str->capsites, str->nsites + 1))
				return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
			str->sites[str->nsites++] = site;
		}
	}
	return st;
}

bool cp_scan_is_data_slot(const cp_scan *s, uint64_t va)
{
	const struct cp_section *sec = cp_image_section_at(s->img, va);

	return sec && cp_section_is_writable(sec) && !cp_section_is_code(sec);
}
