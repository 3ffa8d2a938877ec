/*
 * reach.c - backward reaching values over a function's branches (see
 * reach.h).
 *
 * The function is decoded linearly (GCC and clang keep no data in .text),
 * each instruction read as the facts of arch/code.h, and only as far as a
 * question needs: up to the instruction asked about, and on to the source
 * of any jump the search follows back (a module's init function is half a
 * megabyte, and its imports are asked about near the start). A state is
 * "the value of location r right before instruction i" (a register, or a
 * stack slot); its predecessors are the instruction before i, unless that
 * one ends its block (a jump, a return, a halt), and every direct jump to
 * i. A jump to i from outside the function (a .cold part; a tail call,
 * unless i is the function's first instruction, which one enters as a call
 * does), a block nothing is seen to reach (a jump table's target; but
 * padding nops after a return are no path at all), or a write to r other
 * than a load of a PC-relative address, a constant or a copy of another
 * register makes the answer unknown.
 */
#include "scan/reach.h"
#include "arch/code.h"
#include "util/sort.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STATES (1u << 20) /* work per question, beyond which it is unknown */

struct insn {
	uint64_t addr;
	uint32_t writes;   /* registers it writes (bit per register) */
	int8_t load_reg;   /* a whole register loaded from [pc + x]: it, else -1 */
	int8_t copy_dst, copy_src; /* a whole register copied, else -1 */
	int8_t imm_reg;    /* a register set to a constant: it, else -1 */
	uint64_t imm;
	bool ends;         /* a jump, return or halt: no fallthrough */
	bool nop;          /* alignment padding, when nothing jumps to it */
	bool moves_sp;     /* writes the stack pointer (push, pop, sub, ...) */
	int8_t spill_src;  /* a whole register stored to [sp + spill_disp], else -1 */
	int8_t fill_dst;   /* a whole register loaded from [sp + fill_disp], else -1 */
	int32_t spill_disp, fill_disp;
	bool stack_write;  /* another write to [sp + stack_disp, + stack_size) */
	bool stack_lea;    /* the address sp + stack_disp is taken */
	int32_t stack_disp;
	uint8_t stack_size;
	uint64_t load_addr;
};

#define NREG CP_MAX_REGS
#define NLOC (NREG + 16)   /* per instruction: the registers, then 16 stack slots */
_Static_assert(NLOC <= 64, "a location's bit in seen");

struct cp_reach {
	const cp_image *img;
	const struct cp_jump *jumps;
	size_t njumps;
	cp_dis dis;
	uint64_t start, end;  /* the function being decoded */
	struct insn *in;      /* its first n instructions */
	size_t n, cap;
	const uint8_t *code;  /* where decoding goes on: the bytes left, */
	size_t left;
	uint64_t next;        /* and their address */
	bool oom;
	uint64_t *seen;       /* per decoded instruction (nseen), a bit per location:
			       * the states the question asked has reached */
	size_t nseen, capseen;
	size_t *touched;      /* the instructions with a bit set, cleared when the
			       * next question starts (a function may be half a
			       * million states, a question a few hundred) */
	size_t ntouched, captouched;
	int32_t slot_disp[NLOC - NREG]; /* the stack slots of the question asked */
	size_t nslots;
	size_t *stack;
	size_t nstack, capstack;
};

cp_status cp_reach_open(const cp_image *img, const struct cp_jump *jumps, size_t njumps, cp_reach **out,
			cp_error *err)
{
	cp_reach *r = calloc(1, sizeof(*r));
	cp_status st;

	if (!r)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	st = cp_dis_open(&r->dis, img, err);
	if (st) {
		free(r);
		return st;
	}
	r->img = img;
	r->jumps = jumps;
	r->njumps = njumps;
	*out = r;
	return CP_OK;
}

void cp_reach_close(cp_reach *r)
{
	if (!r)
		return;
	cp_dis_close(&r->dis);
	free(r->in);
	free(r->seen);
	free(r->touched);
	free(r->stack);
	free(r);
}

/* The facts of one instruction the analysis uses. */
static void classify(const struct cp_arch *arch, const struct cp_insn_facts *f, struct insn *o)
{
	memset(o, 0, sizeof(*o));
	o->addr = f->addr;
	o->load_reg = o->copy_dst = o->copy_src = o->imm_reg = o->spill_src = o->fill_dst = -1;
	o->nop = f->nop;
	o->ends = f->flow == CP_FLOW_JUMP || f->flow == CP_FLOW_RET || f->flow == CP_FLOW_HALT;
	if (f->flow == CP_FLOW_CALL) {
		o->writes = arch->caller_saved;
		return;
	}
	o->writes = f->writes;
	if (!f->regs_known)
		return;
	o->moves_sp = f->moves_sp;
	o->spill_src = f->stack.spill_src;
	o->fill_dst = f->stack.fill_dst;
	o->spill_disp = f->stack.spill_disp;
	o->fill_disp = f->stack.fill_disp;
	o->stack_write = f->stack.write;
	o->stack_lea = f->stack.addr_taken;
	o->stack_disp = f->stack.disp;
	o->stack_size = f->stack.size;
	o->imm_reg = f->imm_reg;
	o->imm = f->imm;
	o->load_reg = f->load_reg;
	o->load_addr = f->load_addr;
	o->copy_dst = f->copy_dst;
	o->copy_src = f->copy_src;
}

/* Starts on the function [start, end) unless it is the one begun last. */
static void begin(cp_reach *r, uint64_t start, uint64_t end)
{
	const struct cp_section *s = cp_image_section_at(r->img, start);

	if (r->start == start && r->end == end && (r->n || r->left))
		return;
	r->n = r->nseen = r->ntouched = 0;
	r->left = 0;
	r->start = start;
	r->end = end;
	r->next = start;
	if (!s || !cp_section_is_code(s) || end <= start || end - start > s->size - (start - s->addr))
		return;
	r->code = cp_image_bytes(r->img, s->offset + (start - s->addr), end - start);
	r->left = r->code ? end - start : 0;
}

/* Decodes on until every instruction that starts at or before addr is
 * decoded; false when out of memory. */
static bool decode_to(cp_reach *r, uint64_t addr)
{
	struct cp_insn_facts f;

	while (r->left > 0 && r->next <= addr) {
		struct insn *o;

		if (CP_GROW(r->in, r->cap, r->n + 1)) {
			r->oom = true;
			return false;
		}
		o = &r->in[r->n++];
		if (!cp_dis_next(&r->dis, &r->code, &r->left, &r->next)) {
			/* not code: nothing falls through it, nothing is known past it */
			memset(o, 0, sizeof(*o));
			o->addr = r->next;
			o->writes = ~0u;
			o->load_reg = o->copy_dst = o->copy_src = o->imm_reg = o->spill_src = o->fill_dst = -1;
			o->moves_sp = true;
			o->ends = true;
			r->code++;
			r->left--;
			r->next++;
			continue;
		}
		cp_insn_facts(&r->dis, &f);
		classify(r->img->arch, &f, o);
	}
	return true;
}

/* The states of every decoded instruction, the new ones not seen. */
static bool grow_seen(cp_reach *r)
{
	if (r->nseen == r->n)
		return true;
	if (CP_GROW(r->seen, r->capseen, r->n)) {
		r->oom = true;
		return false;
	}
	memset(r->seen + r->nseen, 0, (r->n - r->nseen) * sizeof(*r->seen));
	r->nseen = r->n;
	return true;
}

/* A question of its own: nothing seen. */
static void forget_seen(cp_reach *r)
{
	size_t i;

	for (i = 0; i < r->ntouched; i++)
		r->seen[r->touched[i]] = 0;
	r->ntouched = 0;
}

/* The decoded instruction at addr (decoding on to it), or -1. */
static long index_of(cp_reach *r, uint64_t addr)
{
	size_t i;

	if (!decode_to(r, addr) || !grow_seen(r))
		return -1;
	i = cp_first_key_at_least(r->in, r->n, sizeof(*r->in), offsetof(struct insn, addr), addr);
	return i < r->n && r->in[i].addr == addr ? (long)i : -1;
}

/* Merges one path's answer into *acc; false once they disagree. */
static bool merge(struct cp_reach_val *acc, bool *any, enum cp_reach_kind k, uint64_t v)
{
	if (k == CP_REACH_UNKNOWN)
		return false;
	if (*any && (acc->kind != k || acc->v != v))
		return false;
	*any = true;
	acc->kind = k;
	acc->v = v;
	return true;
}

static bool push(cp_reach *r, size_t idx, int reg)
{
	size_t s = idx * NLOC + (size_t)reg;
	uint64_t bit = 1ull << reg;

	if (r->seen[idx] & bit)
		return true;
	if (!r->seen[idx] && CP_GROW(r->touched, r->captouched, r->ntouched + 1)) {
		r->oom = true;
		return false;
	}
	if (!r->seen[idx])
		r->touched[r->ntouched++] = idx;
	r->seen[idx] |= bit;
	if (CP_GROW(r->stack, r->capstack, r->nstack + 1)) {
		r->oom = true;
		return false;
	}
	r->stack[r->nstack++] = s;
	return true;
}

/* The jumps to addr: [*first, *first + n) of r->jumps. */
static size_t jumps_to(const cp_reach *r, uint64_t addr, size_t *first)
{
	return cp_records_with_key(r->jumps, r->njumps, sizeof(*r->jumps), offsetof(struct cp_jump, to), addr, first);
}

/* The location (NREG + i) of stack slot [sp + d] in this question, or -1
 * when its address is taken somewhere in the function (a call may write
 * it then) or the question has too many slots. */
static int slot_of(cp_reach *r, int32_t d)
{
	size_t i;

	for (i = 0; i < r->nslots; i++)
		if (r->slot_disp[i] == d)
			return (int)(NREG + i);
	if (!decode_to(r, UINT64_MAX) || !grow_seen(r))
		return -1;
	for (i = 0; i < r->n; i++)
		if (r->in[i].stack_lea && r->in[i].stack_disp <= d && (int64_t)d - r->in[i].stack_disp < 64)
			return -1;
	if (r->nslots == NLOC - NREG)
		return -1;
	r->slot_disp[r->nslots] = d;
	return (int)(NREG + r->nslots++);
}

/* The stack slot loc (NREG + i) right before instruction p + 1. */
static bool step_slot(cp_reach *r, size_t idx, int loc)
{
	const struct insn *p = &r->in[idx - 1];
	int32_t d = r->slot_disp[loc - NREG];

	if (p->moves_sp)
		return false;
	if (p->spill_src >= 0 && p->spill_disp == d)
		return push(r, idx - 1, p->spill_src);
	if (p->stack_write && (p->stack_disp == INT32_MIN ||
			       ((int64_t)p->stack_disp < (int64_t)d + 8 && (int64_t)d < (int64_t)p->stack_disp + p->stack_size)))
		return false;
	if (p->spill_src >= 0 && p->spill_disp < d + 8 && d < p->spill_disp + 8)
		return false; /* a spill that overlaps it */
	return push(r, idx - 1, loc);
}

/* One state's predecessors; false when the answer is unknown. */
static bool step(cp_reach *r, size_t idx, int reg, struct cp_reach_val *acc, bool *any)
{
	size_t first, nj, k;
	bool reached = false;
	int a;

	nj = jumps_to(r, r->in[idx].addr, &first);
	for (k = first; k < first + nj; k++) {
		long j = r->jumps[k].from >= r->start && r->jumps[k].from < r->end ? index_of(r, r->jumps[k].from) : -1;

		if (j < 0 && idx == 0 && reg < NREG)
			continue; /* a tail call: it enters with its arguments as a call does */
		if (j < 0)
			return false; /* from outside the function */
		if (!push(r, (size_t)j, reg))
			return false;
		reached = true;
	}
	if (idx == 0) {
		const struct cp_arch *arch = r->img->arch;

		for (a = 0; a < (int)arch->nargs && arch->arg_regs[a] != reg; a++)
			;
		return a < (int)arch->nargs && merge(acc, any, CP_REACH_ARG, (uint64_t)a);
	}
	if (r->in[idx - 1].ends)
		return reached || r->in[idx].nop; /* padding after a return: no path */
	if (reg >= NREG)
		return step_slot(r, idx, reg);
	{
		const struct insn p = r->in[idx - 1]; /* a copy: slot_of may decode on */
		int sl;

		if (!(p.writes >> reg & 1))
			return push(r, idx - 1, reg);
		if (p.load_reg == reg)
			return merge(acc, any, CP_REACH_SLOT, p.load_addr);
		if (p.imm_reg == reg)
			return merge(acc, any, CP_REACH_IMM, p.imm);
		if (p.copy_dst == reg && p.copy_src >= 0)
			return push(r, idx - 1, p.copy_src);
		if (p.fill_dst == reg && (sl = slot_of(r, p.fill_disp)) >= 0)
			return push(r, idx - 1, sl);
		return false;
	}
}

cp_status cp_reach_value(cp_reach *r, uint64_t at, int reg, struct cp_reach_val *out, cp_error *err)
{
	uint64_t start, end;
	struct cp_reach_val acc = { CP_REACH_UNKNOWN, 0 };
	bool any = false, ok = true;
	size_t states = 0;
	long i;

	out->kind = CP_REACH_UNKNOWN;
	out->v = 0;
	if (reg < 0 || reg >= NREG || !cp_image_function(r->img, at, &start, &end))
		return CP_OK;
	begin(r, start, end);
	forget_seen(r);
	r->oom = false;
	i = index_of(r, at);
	if (r->oom)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", r->img->path);
	if (i < 0)
		return CP_OK;
	r->nslots = 0;
	r->nstack = 0;
	ok = push(r, (size_t)i, reg);
	while (ok && r->nstack) {
		size_t s = r->stack[--r->nstack];

		ok = ++states < MAX_STATES && step(r, s / NLOC, (int)(s % NLOC), &acc, &any);
	}
	if (r->oom)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", r->img->path);
	if (ok && any)
		*out = acc;
	return CP_OK;
}
