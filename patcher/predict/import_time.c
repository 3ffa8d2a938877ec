/*
 * import_time.c - whether a Python-level import runs when the module is
 * imported (see import_time.h).
 *
 * The exec function is decoded from its entry along every direct edge, its
 * .cold parts included (jumps to them are followed; a fallthrough never
 * leaves the function it starts in). Calls return, except to functions that
 * never do. The graph is one node per instruction.
 */
#include "predict/import_time.h"
#include "arch/code.h"

#include <assert.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define MAX_NODES (1u << 21)
#define MAX_CALLEE_INSNS (1u << 20)

enum { J_NONE, J_EQ, J_NE };

struct node {
	uint64_t addr;
	uint64_t tgt[2];      /* successors' addresses: fallthrough, jump; 0 none */
	uint32_t succ[2];     /* the same as node indexes, or NONE */
	uint32_t fall_from;   /* the node that falls through into this one */
	uint64_t call_target; /* direct calls */
	uint64_t arg0_addr;   /* the first argument register set to a PC-relative address: it */
	uint32_t writes;      /* registers written (bit per register) */
	int8_t copy_dst, copy_src, test_reg;
	uint8_t jcc;          /* J_EQ, J_NE: a branch on equal, not equal */
	bool call, store;     /* store: a call of PyDict_SetItem */
};

struct cp_import_time {
	const cp_image *img;
	char modname[128];
	cp_dis dis;
	struct node *n;
	size_t nn, capn;
	uint32_t *map;        /* open addressing: node index by address */
	size_t capmap;
	uint32_t *pred, *pred_at; /* predecessors, CSR */
	uint8_t *mark;        /* bit 1: reaches a store; 2, 4: BFS scratch */
	uint32_t *queue;
	uint64_t *callees;    /* function starts the exec function calls, transitively */
	size_t ncallees, capcallees;
	const char *qual;     /* the module's qualified name, from "init <qual>" */
	bool found, gave_up;
};

/* Functions that never return: a call of one ends its path. */
static const char *const noreturn[] = {
	"__stack_chk_fail", "abort", "exit", "_exit", "__assert_fail", "__cxa_throw", "__cxa_rethrow",
	"_Unwind_Resume", "__cxa_call_terminate", "_ZSt9terminatev", "Py_FatalError", "_Py_FatalErrorFunc",
	"__fortify_fail", "__chk_fail",
};

static bool is_noreturn(const char *name)
{
	size_t i;

	if (!name)
		return false;
	if (!strncmp(name, "_ZSt", 4) && strstr(name, "__throw_"))
		return true;
	for (i = 0; i < sizeof(noreturn) / sizeof(noreturn[0]); i++)
		if (!strcmp(name, noreturn[i]))
			return true;
	return false;
}

static size_t hash(uint64_t a, size_t cap)
{
	return (size_t)((a * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static uint32_t lookup(const cp_import_time *t, uint64_t addr)
{
	size_t h;

	if (!t->capmap)
		return NONE;
	for (h = hash(addr, t->capmap); t->map[h] != NONE; h = (h + 1) & (t->capmap - 1))
		if (t->n[t->map[h]].addr == addr)
			return t->map[h];
	return NONE;
}

static int map_grow(cp_import_time *t)
{
	size_t cap = t->capmap ? 2 * t->capmap : 1024, i, h;
	uint32_t *m = malloc(cap * sizeof(*m));

	if (!m)
		return -1;
	memset(m, 0xff, cap * sizeof(*m));
	for (i = 0; i < t->nn; i++) {
		for (h = hash(t->n[i].addr, cap); m[h] != NONE; h = (h + 1) & (cap - 1))
			;
		m[h] = (uint32_t)i;
	}
	free(t->map);
	t->map = m;
	t->capmap = cap;
	return 0;
}

/* A call: where it goes, and whether it returns or stores. */
static void classify_call(cp_import_time *t, const struct cp_insn_facts *f, struct node *o)
{
	const char *name = cp_insn_callee(t->img, f);

	o->call = true;
	o->writes = ~0u;
	if (f->direct)
		o->call_target = f->target;
	if (is_noreturn(name))
		o->tgt[0] = 0;
	o->store = name && (!strcmp(name, "PyDict_SetItem") || !strcmp(name, "PyDict_SetItemString"));
}

/* The facts of one instruction the analysis uses. */
static void classify(cp_import_time *t, const struct cp_insn_facts *f, struct node *o)
{
	uint64_t fall = f->addr + f->size, start, end;

	o->copy_dst = o->copy_src = o->test_reg = -1;
	o->tgt[0] = fall;
	if (cp_image_function(t->img, f->addr, &start, &end) && fall >= end)
		o->tgt[0] = 0; /* nothing falls into the next function */
	o->writes = f->writes;
	switch (f->flow) {
	case CP_FLOW_RET: case CP_FLOW_HALT: case CP_FLOW_TRAP:
		o->tgt[0] = 0;
		return;
	case CP_FLOW_JUMP:
		o->tgt[0] = 0;
		if (f->direct && cp_image_plt_name(t->img, f->target))
			return; /* a tail call of an imported function */
		if (f->direct)
			o->tgt[1] = f->target;
		else
			t->gave_up = true; /* a jump table or a tail call through a pointer */
		return;
	case CP_FLOW_CALL:
		classify_call(t, f, o);
		return;
	case CP_FLOW_COND:
		if (f->direct)
			o->tgt[1] = f->target;
		o->jcc = f->cond == CP_COND_EQ ? J_EQ : f->cond == CP_COND_NE ? J_NE : J_NONE;
		return;
	default:
		break;
	}
	if (f->addr_reg >= 0 && f->addr_reg == cp_arg_reg(t->img, 0))
		o->arg0_addr = f->addr_val;
	o->copy_dst = f->copy_dst;
	o->copy_src = f->copy_src;
	o->test_reg = f->test_reg;
}

static cp_status add_node(cp_import_time *t, uint64_t addr, uint32_t from, cp_error *err)
{
	struct cp_insn_facts f;
	struct node *o;
	size_t h;

	if (!cp_dis_at(&t->dis, t->img, addr)) {
		t->gave_up = true; /* a jump out of the code, or not code */
		return CP_OK;
	}
	if (t->nn >= MAX_NODES) {
		t->gave_up = true;
		return CP_OK;
	}
	if (CP_GROW(t->n, t->capn, t->nn + 1) || ((t->nn + 1) * 2 > t->capmap && map_grow(t)))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", t->img->path);
	o = &t->n[t->nn];
	memset(o, 0, sizeof(*o));
	o->addr = addr;
	o->succ[0] = o->succ[1] = NONE;
	o->fall_from = from;
	cp_insn_facts(&t->dis, &f);
	classify(t, &f, o);
	for (h = hash(addr, t->capmap); t->map[h] != NONE; h = (h + 1) & (t->capmap - 1))
		;
	t->map[h] = (uint32_t)t->nn++;
	return CP_OK;
}

/* Decodes every instruction the exec function reaches from entry. */
static cp_status build(cp_import_time *t, uint64_t entry, cp_error *err)
{
	uint64_t *work = NULL;
	uint32_t *work_from = NULL;
	size_t nw = 0, capw = 0, capf = 0;
	cp_status st = CP_OK;
	size_t i;
	int k;

	if (CP_GROW(work, capw, 1) || CP_GROW(work_from, capf, 1)) {
		free(work);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", t->img->path);
	}
	work[nw] = entry;
	work_from[nw++] = NONE;
	while (!st && nw && !t->gave_up) {
		uint64_t a = work[--nw];
		uint32_t from = work_from[nw], idx = lookup(t, a);

		if (idx != NONE)
			continue;
		st = add_node(t, a, from, err);
		if (st || t->gave_up)
			break;
		for (k = 0; k < 2; k++) {
			uint64_t to = t->n[t->nn - 1].tgt[k];

			if (!to || lookup(t, to) != NONE)
				continue;
			if (CP_GROW(work, capw, nw + 1) || CP_GROW(work_from, capf, nw + 1)) {
				st = cp_fail(err, CP_E_INTERNAL, "%s: out of memory", t->img->path);
				break;
			}
			work[nw] = to;
			work_from[nw++] = k == 0 ? (uint32_t)(t->nn - 1) : NONE;
		}
	}
	free(work);
	free(work_from);
	for (i = 0; !st && i < t->nn; i++)
		for (k = 0; k < 2; k++)
			if (t->n[i].tgt[k]) {
				t->n[i].succ[k] = lookup(t, t->n[i].tgt[k]);
				if (k == 0 && t->n[i].succ[0] != NONE)
					t->n[t->n[i].succ[0]].fall_from = (uint32_t)i;
			}
	return st;
}

/* The C string a call passes as its first argument, when a PC-relative
 * address is put in its register in the straight code right before it. */
static const char *arg0_string(const cp_import_time *t, uint32_t call)
{
	uint32_t i = t->n[call].fall_from;
	int steps;

	for (steps = 0; i != NONE && steps < 8; steps++, i = t->n[i].fall_from) {
		if (t->n[i].arg0_addr)
			return cp_image_cstring(t->img, t->n[i].arg0_addr, 512);
		if (t->n[i].call || (t->n[i].writes & (1u << cp_arg_reg(t->img, 0))))
			return NULL;
	}
	return NULL;
}

/* The module's error exit passes "init <qualified name>" to the traceback
 * helper: the qualified name, which its except clauses pass. */
static void find_qual(cp_import_time *t)
{
	size_t i, ml = strlen(t->modname);

	for (i = 0; i < t->nn && !t->qual; i++) {
		const char *s = t->n[i].call ? arg0_string(t, (uint32_t)i) : NULL;
		size_t l = s ? strlen(s) : 0;

		if (s && !strncmp(s, "init ", 5) && l >= 5 + ml && !strcmp(s + l - ml, t->modname) &&
		    (l == 5 + ml || s[l - ml - 1] == '.'))
			t->qual = s + 5;
	}
}

/* Predecessor lists (CSR), and which nodes still reach a store (mark
 * bit 1). */
static cp_status analyse(cp_import_time *t, cp_error *err)
{
	uint32_t *fill = calloc(t->nn + 1, sizeof(*fill));
	size_t i, nq = 0;
	int k;

	t->pred_at = calloc(t->nn + 1, sizeof(*t->pred_at));
	t->pred = malloc((2 * t->nn + 1) * sizeof(*t->pred));
	t->mark = calloc(t->nn + 1, 1);
	t->queue = malloc((t->nn + 1) * sizeof(*t->queue));
	if (!fill || !t->pred_at || !t->pred || !t->mark || !t->queue) {
		free(fill);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", t->img->path);
	}
	for (i = 0; i < t->nn; i++)
		for (k = 0; k < 2; k++)
			if (t->n[i].succ[k] != NONE)
				t->pred_at[t->n[i].succ[k] + 1]++;
	for (i = 0; i < t->nn; i++)
		t->pred_at[i + 1] += t->pred_at[i];
	for (i = 0; i < t->nn; i++)
		for (k = 0; k < 2; k++) {
			uint32_t v = t->n[i].succ[k];

			if (v != NONE)
				t->pred[t->pred_at[v] + fill[v]++] = (uint32_t)i;
		}
	free(fill);
	for (i = 0; i < t->nn; i++)
		if (t->n[i].store) {
			t->mark[i] |= 1;
			t->queue[nq++] = (uint32_t)i;
		}
	while (nq) {
		uint32_t v = t->queue[--nq], p;

		for (p = t->pred_at[v]; p < t->pred_at[v + 1]; p++)
			if (!(t->mark[t->pred[p]] & 1)) {
				t->mark[t->pred[p]] |= 1;
				t->queue[nq++] = t->pred[p];
			}
	}
	find_qual(t);
	return CP_OK;
}

/* Marks with bit every node reachable from `from` (not from `from` itself
 * unless a path returns to it), never entering block[0] or block[1]; stops
 * at nodes for which stop() holds (marked, not followed). */
static void reach(cp_import_time *t, uint32_t from, const uint32_t block[2], uint8_t bit,
		  bool (*stop)(const cp_import_time *t, uint32_t v))
{
	size_t nq = 0, i;
	int k;

	for (i = 0; i < t->nn; i++)
		t->mark[i] &= (uint8_t)~bit;
	t->queue[nq++] = from;
	while (nq) {
		uint32_t v = t->queue[--nq];

		if (v != from && stop && stop(t, v))
			continue;
		for (k = 0; k < 2; k++) {
			uint32_t w = t->n[v].succ[k];

			if (w == NONE || w == block[0] || w == block[1] || (t->mark[w] & bit))
				continue;
			t->mark[w] |= bit;
			t->queue[nq++] = w;
		}
	}
}

/* The traceback of the module's error exit ("init <qual>"): a path that
 * meets it does not go on to an except clause. */
static bool is_error_exit(const cp_import_time *t, uint32_t v)
{
	const char *s = t->n[v].call ? arg0_string(t, v) : NULL;

	return s && !strncmp(s, "init ", 5) && !strcmp(s + 5, t->qual);
}

#define MAX_NULL 8

/* Where control goes when the call at node c returns NULL: the result, or
 * a copy of it, tested and branched on within a few instructions, on each
 * path through branches on other values (an inlined helper may test its
 * own arguments first). Paths that call, store the result away or run long
 * are dropped. */
static size_t null_branches(const cp_import_time *t, uint32_t c, uint32_t out[MAX_NULL])
{
	struct { uint32_t v; uint32_t held; int steps; } stack[16];
	size_t ns = 0, n = 0;

	stack[ns].v = t->n[c].succ[0];
	stack[ns].held = 1u << t->img->arch->ret_reg;
	stack[ns++].steps = 0;
	while (ns && n < MAX_NULL) {
		uint32_t v = stack[--ns].v;
		uint32_t held = stack[ns].held;
		int steps = stack[ns].steps;
		const struct node *o;

		if (v == NONE || steps >= 16)
			continue;
		o = &t->n[v];
		if (o->call || !(o->tgt[0] || o->tgt[1]))
			continue;
		if (o->test_reg >= 0 && (held & (1u << o->test_reg))) {
			const struct node *j = o->succ[0] != NONE ? &t->n[o->succ[0]] : NULL;
			uint32_t to = !j || j->jcc == J_NONE ? NONE : j->jcc == J_EQ ? j->succ[1] : j->succ[0];

			if (to != NONE)
				out[n++] = to;
			continue;
		}
		if (o->copy_dst >= 0 && o->copy_src >= 0 && (held & (1u << o->copy_src)))
			held |= 1u << o->copy_dst;
		else
			held &= ~o->writes;
		if (!held)
			continue;
		if (o->tgt[1] && ns < 15) {
			stack[ns].v = o->succ[1];
			stack[ns].held = held;
			stack[ns++].steps = steps + 1;
		}
		if (o->tgt[0] && ns < 16) {
			stack[ns].v = o->succ[0];
			stack[ns].held = held;
			stack[ns++].steps = steps + 1;
		}
	}
	return n;
}

static const uint32_t no_block[2] = { NONE, NONE };

/* On a NULL branch, an except clause's traceback is reached. */
static bool handled(cp_import_time *t, uint32_t c)
{
	uint32_t nb[MAX_NULL];
	size_t n = null_branches(t, c, nb), i, k;

	for (k = 0; t->qual && k < n; k++) {
		reach(t, nb[k], no_block, 2, is_error_exit);
		t->mark[nb[k]] |= 2;
		for (i = 0; i < t->nn; i++) {
			const char *s;

			if (!(t->mark[i] & 2) || !t->n[i].call || is_error_exit(t, (uint32_t)i))
				continue;
			s = arg0_string(t, (uint32_t)i);
			if (s && !strcmp(s, t->qual))
				return true;
		}
	}
	return false;
}

/* The store nearest after c (breadth first): where the statement keeps
 * what it imported. */
static uint32_t next_store(cp_import_time *t, uint32_t c)
{
	size_t head = 0, tail = 0, i;
	int k;

	for (i = 0; i < t->nn; i++)
		t->mark[i] &= (uint8_t)~2;
	t->queue[tail++] = c;
	t->mark[c] |= 2;
	while (head < tail) {
		uint32_t v = t->queue[head++];

		if (v != c && t->n[v].store)
			return v;
		for (k = 0; k < 2; k++) {
			uint32_t w = t->n[v].succ[k];

			if (w != NONE && !(t->mark[w] & 2)) {
				t->mark[w] |= 2;
				t->queue[tail++] = w;
			}
		}
	}
	return NONE;
}

/* Normal flow passes the whole statement by: without passing c or the
 * store after it, it reaches code that also follows that store (an import
 * helper's own fast path, taken when sys.modules has the module, rejoins
 * before the store). */
static bool conditional(cp_import_time *t, uint32_t c)
{
	uint32_t block[2] = { c, next_store(t, c) };
	size_t i;

	if (c == 0 || block[1] == NONE)
		return false;
	reach(t, 0, block, 2, NULL);
	t->mark[0] |= 2;
	reach(t, block[1], no_block, 4, NULL);
	for (i = 0; i < t->nn; i++)
		if ((t->mark[i] & 7) == 7 && i != c && i != block[1])
			return true;
	return false;
}

static bool is_callee(const cp_import_time *t, uint64_t start)
{
	size_t i;

	for (i = 0; i < t->ncallees; i++)
		if (t->callees[i] == start)
			return true;
	return false;
}

/* Every local function the exec function calls directly, and those they
 * call, decoded linearly: their imports may run at import time. */
static cp_status find_callees(cp_import_time *t, cp_error *err)
{
	size_t i, done, budget = MAX_CALLEE_INSNS;
	uint64_t start, end;

	for (i = 0; i < t->nn; i++)
		if (t->n[i].call && t->n[i].call_target && !cp_image_plt_name(t->img, t->n[i].call_target) &&
		    cp_image_function(t->img, t->n[i].call_target, &start, &end) && !is_callee(t, start)) {
			if (CP_GROW(t->callees, t->capcallees, t->ncallees + 1))
				return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", t->img->path);
			t->callees[t->ncallees++] = start;
		}
	for (done = 0; done < t->ncallees && budget; done++) {
		const struct cp_section *s;
		const uint8_t *code;
		uint64_t a;
		size_t size;

		if (!cp_image_function(t->img, t->callees[done], &start, &end) ||
		    !(s = cp_image_section_at(t->img, start)) || end > s->addr + s->size ||
		    !(code = cp_image_va_bytes(t->img, start, end - start)))
			continue;
		a = start;
		size = (size_t)(end - start);
		while (budget-- && size && cp_dis_next(&t->dis, &code, &size, &a)) {
			struct cp_insn_facts f;
			uint64_t to, s0, e0;

			cp_insn_flow(&t->dis, &f);
			if (f.flow != CP_FLOW_CALL || !f.direct)
				continue;
			to = f.target;
			if (cp_image_plt_name(t->img, to) || !cp_image_function(t->img, to, &s0, &e0) ||
			    is_callee(t, s0))
				continue;
			if (CP_GROW(t->callees, t->capcallees, t->ncallees + 1))
				return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", t->img->path);
			t->callees[t->ncallees++] = s0;
		}
	}
	if (done < t->ncallees)
		t->gave_up = true;
	return CP_OK;
}

/* A pointer stored at va: the address its relative relocation (RELA or
 * RELR) puts there, else the word itself; 0 when unreadable. */
static uint64_t pointer_at(const cp_image *img, uint64_t va)
{
	const uint8_t *b = cp_image_va_bytes(img, va, 8);
	uint64_t v = cp_image_relative_at(img, va);

	if (!v && b)
		memcpy(&v, b, 8); /* both machines are little-endian */
	return v;
}

/* PyInit_<name>'s call (or tail jump) PyModuleDef_Init(&def): def. */
struct def_find {
	uint64_t def;
	bool several;
};

static void def_call(void *ctx, const struct cp_call *c)
{
	struct def_find *d = ctx;

	if (!c->name || strcmp(c->name, "PyModuleDef_Init"))
		return;
	if (c->arg[0].kind != CP_V_ADDR || (d->def && d->def != c->arg[0].v))
		d->several = true;
	else
		d->def = c->arg[0].v;
}

/* A multi-phase module's exec function, without its symbol: PyInit_<name>
 * (at init) returns PyModuleDef_Init(&def), and def's m_slots holds it,
 * the one Py_mod_exec (2) slot. def is a 64-bit struct PyModuleDef: m_name
 * after the 40-byte PyModuleDef_Base (56 in a free-threaded build), then
 * m_doc, m_size, m_methods, m_slots; the layout that fits is the one whose
 * m_name is the module's. Any doubt (another exec slot, a slot that is no
 * function start, more than one def) gives 0. */
static uint64_t exec_from_slots(const cp_import_time *t, uint64_t init)
{
	static const unsigned base_size[] = { 40, 56 };
	struct def_find d = { 0, false };
	struct cp_code_visitor v;
	cp_error err;
	uint64_t start, end, slots = 0, exec = 0, s0, e0;
	size_t ml = strlen(t->modname), i;

	memset(&v, 0, sizeof(v));
	v.on_call = def_call;
	v.ctx = &d;
	if (!cp_image_function(t->img, init, &start, &end) || start != init ||
	    cp_code_walk(t->img, start, end, &v, &err) || d.several || !d.def)
		return 0;
	for (i = 0; !slots && i < sizeof(base_size) / sizeof(base_size[0]); i++) {
		const char *name = cp_image_cstring(t->img, pointer_at(t->img, d.def + base_size[i]), 512);
		size_t l = name ? strlen(name) : 0;

		if (name && l >= ml && !strcmp(name + l - ml, t->modname) && (l == ml || name[l - ml - 1] == '.'))
			slots = pointer_at(t->img, d.def + base_size[i] + 32);
	}
	for (i = 0; slots && i < 16; i++) {
		const uint8_t *b = cp_image_va_bytes(t->img, slots + 16 * i, 4);
		int32_t id;
		uint64_t fn;

		if (!b)
			return 0;
		memcpy(&id, b, 4);
		if (id == 0)
			return exec;
		fn = pointer_at(t->img, slots + 16 * i + 8);
		if (id == 2 && (exec || !cp_image_function(t->img, fn, &s0, &e0) || s0 != fn))
			return 0;
		if (id == 2)
			exec = fn;
	}
	return 0; /* no end of the slots seen */
}

/* __pyx_pymod_exec_<name> (C, or mangled by C++: _ZL<n>__pyx_pymod_exec_<name>P7_object),
 * else PyInit_<name> when it does not hand over to multi-phase init, else
 * (stripped) the exec slot of the module's definition. */
static uint64_t exec_entry(const cp_import_time *t)
{
	char want[160];
	size_t i, wl;
	const struct cp_symbol *init;

	wl = (size_t)snprintf(want, sizeof(want), "__pyx_pymod_exec_%s", t->modname);
	for (i = 0; i < t->img->nsym; i++) {
		const struct cp_symbol *s = &t->img->sym[i];
		const char *p = s->name ? strstr(s->name, want) : NULL;

		if (p && s->defined && s->type == STT_FUNC && (p[wl] == '\0' || !strcmp(p + wl, "P7_object")))
			return s->value;
	}
	snprintf(want, sizeof(want), "PyInit_%s", t->modname);
	init = cp_image_symbol(t->img, want);
	if (!init || !init->defined)
		return 0;
	for (i = 0; i < t->img->nsym; i++)
		if (t->img->sym[i].name && !strcmp(t->img->sym[i].name, "PyModuleDef_Init"))
			return exec_from_slots(t, init->value); /* multi-phase, its exec function unnamed */
	return init->value;
}

cp_status cp_import_time_open(const cp_image *img, const char *modname, cp_import_time **out, cp_error *err)
{
	cp_import_time *t = calloc(1, sizeof(*t));
	uint64_t entry;
	cp_status st;

	*out = NULL;
	if (!t)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	t->img = img;
	snprintf(t->modname, sizeof(t->modname), "%s", modname);
	st = cp_dis_open(&t->dis, img, err);
	if (st) {
		free(t);
		return st;
	}
	entry = exec_entry(t);
	if (entry) {
		t->found = true;
		st = build(t, entry, err);
		if (!st && !t->gave_up)
			st = analyse(t, err);
		if (!st && !t->gave_up)
			st = find_callees(t, err);
	}
	if (st) {
		cp_import_time_close(t);
		return st;
	}
	*out = t;
	return CP_OK;
}

void cp_import_time_close(cp_import_time *t)
{
	if (!t)
		return;
	cp_dis_close(&t->dis);
	free(t->n);
	free(t->map);
	free(t->pred);
	free(t->pred_at);
	free(t->mark);
	free(t->queue);
	free(t->callees);
	free(t);
}

cp_status cp_import_time_of(cp_import_time *t, uint64_t call, enum cp_when *out, cp_error *err)
{
	uint32_t c;
	uint64_t start, end;

	(void)err;
	*out = CP_WHEN_AT_IMPORT;
	if (!t->found || t->gave_up)
		return CP_OK;
	c = lookup(t, call);
	if (c == NONE) {
		/* (a call in no known function proves nothing) */
		if (cp_image_function(t->img, call, &start, &end) && !is_callee(t, start))
			*out = CP_WHEN_IN_FUNCTION;
		return CP_OK;
	}
	assert(t->n[c].call);
	if (handled(t, c))
		*out = CP_WHEN_HANDLED;
	else if (conditional(t, c))
		*out = CP_WHEN_CONDITIONAL;
	return CP_OK;
}

const char *cp_when_text(enum cp_when w)
{
	switch (w) {
	case CP_WHEN_IN_FUNCTION: return "in a function";
	case CP_WHEN_CONDITIONAL: return "under a condition";
	case CP_WHEN_HANDLED: return "under an exception handler";
	default: return NULL;
	}
}
