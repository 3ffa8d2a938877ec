/*
 * aarch64_walk.c - aarch64's code walk and its register tracker (see arch/code.h).
 *
 * An address takes two instructions here: ADRP puts a 4 KiB page in a
 * register and an ADD, SUB or a load/store offset completes it, often much
 * later, from a callee-saved register kept for the whole function, or from
 * a neighbour's address (Cython 3.0's string table: adrp x26; add x26, x26,
 * #0xf20; ... sub x18, x26, #0xd0). A linear walk that guesses which value
 * a register holds after a branch invents addresses here, so values are
 * followed over each function's branches instead: a register is known at a
 * block's start only when every way into the block agrees (a forward data
 * flow to a fixed point). A block entered from outside the function (a
 * .cold part jumping back) or from nowhere the walk sees (a jump table)
 * starts with nothing known. The references and calls are then reported
 * once, in address order, with the full targets.
 */
#include "arch/aarch64/aarch64.h"
#include "arch/aarch64/walk_ops.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>

struct state {
	struct cp_val reg[A64_NREG];
};

struct func {
	const cp_image *img;
	const struct cp_code_visitor *v; /* NULL while solving */
	const struct a64_op *op;
	size_t n;
	size_t *block;          /* block starts (op indices), sorted */
	size_t nblock;
	struct state *in;       /* each block's entry state */
	bool *seen, *queued;
	size_t *work;
	size_t nwork;
};

static void emit_ref(struct func *f, const struct a64_op *o, uint64_t target,
		     enum cp_insn_ref_kind kind, uint64_t base)
{
	struct cp_code_ref r;

	if (!f->v || !f->v->on_ref)
		return;
	memset(&r, 0, sizeof(r));
	r.addr = o->addr;
	r.size = A64_INSN;
	r.target = target;
	r.kind = kind;
	r.base = base;
	f->v->on_ref(f->v->ctx, &r);
}

/* A branch's target and the name it reaches: direct, or through a
 * register loaded from a GOT slot (-fno-plt: adrp x16; ldr x16, [x16,
 * #off]; blr x16). */
static const char *branch_name(const struct func *f, const struct state *s, const struct a64_op *o)
{
	if (o->direct)
		return cp_callee_name(f->img, o->target);
	if (o->src >= 0 && s->reg[o->src].kind == CP_V_LOAD)
		return cp_image_got_name(f->img, s->reg[o->src].v);
	return NULL;
}

static void emit_call(struct func *f, const struct state *s, const struct a64_op *o, const char *name)
{
	struct cp_call c;
	int i;

	if (!f->v || !f->v->on_call)
		return;
	c.addr = o->addr;
	c.target = o->direct ? o->target : 0;
	c.name = name;
	memset(c.arg, 0, sizeof(c.arg));
	for (i = 0; i < A64_NARGS; i++)
		c.arg[i] = s->reg[cp_a64_arg_regs[i]];
	f->v->on_call(f->v->ctx, &c);
}

static void set(struct state *s, int r, uint8_t kind, uint64_t v, uint64_t origin)
{
	if (r < 0 || r >= A64_SP)
		return;
	s->reg[r].kind = kind;
	s->reg[r].v = v;
	s->reg[r].origin = origin;
}

static void clear(struct state *s, uint32_t writes)
{
	int r;

	for (r = 0; r < A64_NREG; r++)
		if ((writes >> r) & 1)
			s->reg[r].kind = CP_V_UNKNOWN;
}

/* adr, adrp, add/sub of an address, loads and stores based on one. */
static void apply_addr(struct func *f, struct state *s, const struct a64_op *o)
{
	const struct cp_val *b = o->src >= 0 ? &s->reg[o->src] : NULL;
	uint64_t t;

	switch (o->kind) {
	case A64_OP_ADRP:
		set(s, o->dst, CP_V_ADDR, o->v, o->addr);
		return;
	case A64_OP_ADR:
		emit_ref(f, o, o->v, CP_REF_LEA, 0);
		set(s, o->dst, CP_V_ADDR, o->v, o->addr);
		return;
	case A64_OP_LDR_LIT:
		emit_ref(f, o, o->v, CP_REF_LOAD, 0);
		clear(s, o->writes);
		if (o->wide)
			set(s, o->dst, CP_V_LOAD, o->v, o->addr);
		return;
	case A64_OP_ADDI:
		if (b->kind != CP_V_ADDR) {
			clear(s, o->writes);
			return;
		}
		t = b->v + o->v;
		emit_ref(f, o, t, CP_REF_LEA, b->origin);
		set(s, o->dst, CP_V_ADDR, t, o->addr);
		return;
	default: /* A64_OP_MEM */
		t = b && b->kind == CP_V_ADDR ? b->v + o->v : 0;
		clear(s, o->writes);
		if (!t)
			return;
		emit_ref(f, o, t, o->load ? CP_REF_LOAD : CP_REF_STORE, b->origin);
		if (o->load && o->wide && o->dst >= 0)
			set(s, o->dst, CP_V_LOAD, t, o->addr);
		return;
	}
}

/* One instruction's effect on the registers; reported when f->v is set. */
static void apply(struct func *f, struct state *s, const struct a64_op *o)
{
	switch (o->kind) {
	case A64_OP_CALL:
		emit_call(f, s, o, branch_name(f, s, o));
		clear(s, o->writes);
		return;
	case A64_OP_JUMP: {
		const char *name = branch_name(f, s, o);

		/* a jump to an imported function is a tail call */
		if (name && (!o->direct || cp_image_plt_name(f->img, o->target)))
			emit_call(f, s, o, name);
		return;
	}
	case A64_OP_MOVR:
		s->reg[o->dst] = s->reg[o->src];
		return;
	case A64_OP_CONST:
		set(s, o->dst, CP_V_IMM, o->v, o->addr);
		return;
	case A64_OP_MOVK:
		if (s->reg[o->dst].kind != CP_V_IMM) {
			clear(s, o->writes);
			return;
		}
		s->reg[o->dst].v = (s->reg[o->dst].v & ~(0xffffull << o->shift)) | (o->v << o->shift);
		if (!o->wide)
			s->reg[o->dst].v &= 0xffffffffull;
		s->reg[o->dst].origin = o->addr;
		return;
	case A64_OP_ADRP: case A64_OP_ADR: case A64_OP_LDR_LIT: case A64_OP_ADDI: case A64_OP_MEM:
		apply_addr(f, s, o);
		return;
	default:
		clear(s, o->writes);
		return;
	}
}

/* The meet of two ways in: what both agree on. */
static bool meet(struct state *acc, const struct state *s)
{
	bool changed = false;
	int r;

	for (r = 0; r < A64_NREG; r++) {
		struct cp_val *a = &acc->reg[r];
		const struct cp_val *b = &s->reg[r];

		if (a->kind == CP_V_UNKNOWN)
			continue;
		if (a->kind != b->kind || a->v != b->v) {
			a->kind = CP_V_UNKNOWN;
			changed = true;
		} else if (b->origin < a->origin) {
			a->origin = b->origin; /* either made it; one answer */
		}
	}
	return changed;
}

static size_t block_of(const struct func *f, size_t i)
{
	size_t lo = 0, hi = f->nblock;

	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->block[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void flow_into(struct func *f, size_t b, const struct state *s)
{
	bool changed;

	if (!f->seen[b]) {
		f->in[b] = *s;
		f->seen[b] = true;
		changed = true;
	} else {
		changed = meet(&f->in[b], s);
	}
	if (changed && !f->queued[b]) {
		f->queued[b] = true;
		f->work[f->nwork++] = b;
	}
}

/* Runs block b from its entry state: while solving, passes the state on
 * to its successors inside the function; once solved, reports. */
static void run_block(struct func *f, size_t b)
{
	size_t i = f->block[b], end = b + 1 < f->nblock ? f->block[b + 1] : f->n;
	struct state s = f->in[b];

	for (; i < end; i++) {
		const struct a64_op *o = &f->op[i];

		if (f->v && f->v->on_jump && o->branches && o->direct)
			f->v->on_jump(f->v->ctx, o->addr, o->target);
		apply(f, &s, o);
		if (f->v) {
			if (o->ends && f->v->on_end)
				f->v->on_end(f->v->ctx, o->addr);
			continue;
		}
		if (o->branches && o->direct && o->target_in)
			flow_into(f, block_of(f, o->target_idx), &s);
		if (o->ends)
			return;
	}
	if (!f->v && b + 1 < f->nblock)
		flow_into(f, b + 1, &s);
}

/* The fixed point: from the function's entry, blocks entered from outside
 * and blocks nothing seen reaches, each with nothing known. */
static void solve(struct func *f, const bool *external)
{
	static const struct state unknown;
	size_t b, next = 0;

	for (b = 0; b < f->nblock; b++)
		if (b == 0 || external[b])
			flow_into(f, b, &unknown);
	for (;;) {
		while (f->nwork) {
			b = f->work[--f->nwork];
			f->queued[b] = false;
			run_block(f, b);
		}
		while (next < f->nblock && f->seen[next])
			next++;
		if (next == f->nblock)
			return;
		flow_into(f, next, &unknown);
	}
}

static bool is_leader_after(const struct a64_op *o)
{
	return o->branches || o->ends;
}

/* Block starts: the first instruction, every instruction after a branch
 * or an end, every branch target inside the function. */
enum { LEAD = 1, LEAD_EXTERNAL = 2 };

static cp_status find_blocks(struct func *f, const struct a64_targets *ext, bool **external)
{
	uint8_t *lead = calloc(f->n + 1, 1);
	size_t i, k = 0;

	if (!lead)
		return CP_E_INTERNAL;
	lead[0] = LEAD;
	for (i = 0; i < f->n; i++) {
		if (is_leader_after(&f->op[i]))
			lead[i + 1] |= LEAD;
		if (f->op[i].branches && f->op[i].direct && f->op[i].target_in)
			lead[f->op[i].target_idx] |= LEAD;
		if (cp_a64_targets_has(ext, f->op[i].addr))
			lead[i] |= LEAD | LEAD_EXTERNAL;
	}
	for (i = 0; i < f->n; i++)
		f->nblock += lead[i] != 0;
	f->block = malloc(f->nblock * sizeof(*f->block));
	*external = calloc(f->nblock, 1);
	if (!f->block || !*external) {
		free(lead);
		return CP_E_INTERNAL;
	}
	for (i = 0; i < f->n; i++)
		if (lead[i]) {
			(*external)[k] = (lead[i] & LEAD_EXTERNAL) != 0;
			f->block[k++] = i;
		}
	free(lead);
	return CP_OK;
}

static void func_free(struct func *f, bool *external)
{
	free(f->block);
	free(f->in);
	free(f->seen);
	free(f->queued);
	free(f->work);
	free(external);
}

static cp_status func_solve(struct func *f, const struct a64_targets *ext, bool **external)
{
	if (find_blocks(f, ext, external) ||
	    !(f->in = calloc(f->nblock, sizeof(*f->in))) || !(f->seen = calloc(f->nblock, 1)) ||
	    !(f->queued = calloc(f->nblock, 1)) || !(f->work = calloc(f->nblock, sizeof(*f->work))))
		return CP_E_INTERNAL;
	solve(f, *external);
	return CP_OK;
}

/* Solves and reports the function whose ops are ops[0, n). */
static cp_status walk_func(const cp_image *img, const struct a64_op *ops, size_t n,
			   const struct a64_targets *ext, const struct cp_code_visitor *v, cp_error *err)
{
	struct func f;
	bool *external = NULL;
	size_t b;

	memset(&f, 0, sizeof(f));
	f.img = img;
	f.op = ops;
	f.n = n;
	if (!n)
		return CP_OK;
	if (func_solve(&f, ext, &external)) {
		func_free(&f, external);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	}
	f.v = v;
	for (b = 0; b < f.nblock; b++)
		run_block(&f, b);
	func_free(&f, external);
	return CP_OK;
}

cp_status cp_a64_entry_states(const cp_image *img, cp_dis *d, uint64_t start, uint64_t end,
			      struct a64_entry **out, size_t *nout, cp_error *err)
{
	static const struct a64_targets none = { NULL, 0 };
	struct a64_op *ops = NULL;
	struct func f;
	bool *external = NULL;
	size_t n, b;
	cp_status st = cp_a64_decode_ops(img, d, start, end, &ops, &n, err);

	*out = NULL;
	*nout = 0;
	memset(&f, 0, sizeof(f));
	f.img = img;
	f.op = ops;
	f.n = n;
	if (st || !n) {
		free(ops);
		return st;
	}
	if (func_solve(&f, &none, &external) || !(*out = calloc(f.nblock, sizeof(**out)))) {
		func_free(&f, external);
		free(ops);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	}
	for (b = 0; b < f.nblock; b++) {
		(*out)[b].addr = ops[f.block[b]].addr;
		memcpy((*out)[b].reg, f.in[b].reg, sizeof((*out)[b].reg));
	}
	*nout = f.nblock;
	func_free(&f, external);
	free(ops);
	return CP_OK;
}

/* The end of the function that holds addr: the next start, or end. */
static uint64_t func_end(const cp_image *img, uint64_t addr, uint64_t end)
{
	size_t next = cp_image_func_after(img, addr);

	return next < img->nfunc && img->func[next] < end ? img->func[next] : end;
}

static cp_status walk_range(const cp_image *img, cp_dis *d, const struct a64_targets *ext, uint64_t start,
			    uint64_t end, const struct cp_code_visitor *v, cp_error *err)
{
	struct a64_op *ops = NULL;
	size_t n;
	cp_status st = CP_OK;
	uint64_t a, b;

	for (a = start; !st && a < end; a = b) {
		b = func_end(img, a, end);
		st = cp_a64_decode_ops(img, d, a, b, &ops, &n, err);
		if (!st)
			st = walk_func(img, ops, n, ext, v, err);
		free(ops);
		ops = NULL;
	}
	return st;
}

cp_status cp_a64_code_walk(const cp_image *img, uint64_t start, uint64_t end, const struct cp_code_visitor *v,
			   cp_error *err)
{
	struct a64_targets ext = { NULL, 0 };
	cp_dis d = { NULL, NULL };
	size_t i;
	cp_status st = cp_dis_open(&d, img, err);

	if (!st)
		st = cp_a64_external_targets(img, &d, &ext, err);
	for (i = 0; !st && i < img->nsec; i++) {
		uint64_t a, b;

		if (!cp_walk_span(&img->sec[i], start, end, &a, &b))
			continue;
		a = (a + A64_INSN - 1) & ~(uint64_t)(A64_INSN - 1); /* instructions are 4-aligned */
		if (a < b)
			st = walk_range(img, &d, &ext, a, b, v, err);
	}
	free(ext.addr);
	cp_dis_close(&d);
	return st;
}
