/*
 * aarch64_facts.c - what one aarch64 instruction does, as the analyses over a
 * function's branches (scan/reach.c, predict/import_time.c) see it:
 * struct cp_insn_facts (arch/code.h).
 *
 * One instruction says little on aarch64: an address takes ADRP and an
 * ADD or LDR, so a load of a PC-relative word is not one fact here. What
 * is reported is what the word alone proves (ADR/ADRP's address, a
 * literal load, constants, copies, spills), and everything else writes.
 */
#include "arch/aarch64/aarch64.h"

#include <string.h>

static void flow_kind(const cs_insn *in, struct cp_insn_facts *f)
{
	const cs_arm64 *a = &in->detail->arm64;

	switch (in->id) {
	case ARM64_INS_RET: f->flow = CP_FLOW_RET; break;
	case ARM64_INS_HLT: f->flow = CP_FLOW_HALT; break;
	case ARM64_INS_BRK: f->flow = CP_FLOW_TRAP; break;
	case ARM64_INS_BL: case ARM64_INS_BLR: f->flow = CP_FLOW_CALL; break;
	case ARM64_INS_BR: f->flow = CP_FLOW_JUMP; break;
	case ARM64_INS_B: f->flow = a->cc == ARM64_CC_INVALID ? CP_FLOW_JUMP : CP_FLOW_COND; break;
	case ARM64_INS_CBZ: case ARM64_INS_CBNZ: case ARM64_INS_TBZ: case ARM64_INS_TBNZ:
		f->flow = CP_FLOW_COND;
		break;
	default: break;
	}
}

/* The condition a conditional branch takes: cbz/cbnz on the register
 * itself, b.cond after a compare (the unsigned lo, hs, ls, hi and the
 * signed lt, ge, le, gt orderings alike). */
static enum cp_cond cond_of(const cs_insn *in)
{
	if (in->id == ARM64_INS_CBZ)
		return CP_COND_EQ;
	if (in->id == ARM64_INS_CBNZ)
		return CP_COND_NE;
	if (in->id != ARM64_INS_B)
		return CP_COND_OTHER;
	switch (in->detail->arm64.cc) {
	case ARM64_CC_EQ: return CP_COND_EQ;
	case ARM64_CC_NE: return CP_COND_NE;
	case ARM64_CC_LO: case ARM64_CC_LT: return CP_COND_LT;
	case ARM64_CC_HS: case ARM64_CC_GE: return CP_COND_GE;
	case ARM64_CC_LS: case ARM64_CC_LE: return CP_COND_LE;
	case ARM64_CC_HI: case ARM64_CC_GT: return CP_COND_GT;
	default: return CP_COND_OTHER;
	}
}

static void flow(const cs_insn *in, struct cp_insn_facts *f)
{
	flow_kind(in, f);
	f->cond = f->flow == CP_FLOW_COND ? cond_of(in) : CP_COND_OTHER;
	if (f->flow == CP_FLOW_JUMP || f->flow == CP_FLOW_COND || f->flow == CP_FLOW_CALL)
		f->direct = cp_a64_direct_target(in, &f->target);
}

/* Compares write only the flags (capstone 4 lists their register operand
 * as written too). */
static bool writes_flags_only(unsigned id)
{
	return id == ARM64_INS_CMP || id == ARM64_INS_CMN || id == ARM64_INS_TST || id == ARM64_INS_CCMP ||
	       id == ARM64_INS_CCMN;
}

uint32_t cp_a64_writes(csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd, nwr, i;
	uint32_t w = 0;

	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return ~0u;
	for (i = 0; i < nwr && !writes_flags_only(in->id); i++) {
		int k = cp_a64_reg((arm64_reg)wr[i]);

		if (k >= 0)
			w |= 1u << k;
	}
	for (i = 0; i < in->detail->arm64.op_count; i++) {
		const cs_arm64_op *op = &in->detail->arm64.operands[i];

		if (op->type == ARM64_OP_MEM && in->detail->arm64.writeback && cp_a64_reg(op->mem.base) >= 0)
			w |= 1u << cp_a64_reg(op->mem.base);
	}
	if (in->id == ARM64_INS_BL || in->id == ARM64_INS_BLR)
		w |= 1u << A64_LR;
	return w;
}

static void writes(csh h, const cs_insn *in, struct cp_insn_facts *f)
{
	f->writes = cp_a64_writes(h, in);
	f->regs_known = f->writes != ~0u;
	f->moves_sp = (f->writes >> A64_SP) & 1;
}

static bool is_store(unsigned id)
{
	return id == ARM64_INS_STR || id == ARM64_INS_STP || id == ARM64_INS_STUR || id == ARM64_INS_STRB ||
	       id == ARM64_INS_STRH || id == ARM64_INS_STURB || id == ARM64_INS_STURH;
}

/* What it does to [sp + d]: spills and reloads of an x register, other
 * writes (pairs, narrower stores, vector stores), and addresses taken. */
static void stack(const cs_insn *in, struct cp_stack_facts *o)
{
	const cs_arm64 *a = &in->detail->arm64;
	const cs_arm64_op *m = a->op_count >= 2 ? &a->operands[a->op_count - 1] : NULL;
	bool single = a->op_count == 2 && a->operands[0].type == ARM64_OP_REG && cp_a64_is_x(a->operands[0].reg);

	if (in->id == ARM64_INS_ADD && a->op_count == 3 && a->operands[1].type == ARM64_OP_REG &&
	    a->operands[1].reg == ARM64_REG_SP && a->operands[2].type == ARM64_OP_IMM) {
		o->addr_taken = true;
		o->disp = (int32_t)a->operands[2].imm;
		return;
	}
	if (in->id == ARM64_INS_MOV && a->op_count == 2 && a->operands[1].type == ARM64_OP_REG &&
	    a->operands[1].reg == ARM64_REG_SP) {
		o->addr_taken = true; /* mov x0, sp is add x0, sp, #0 */
		o->disp = 0;
		return;
	}
	if (!m || m->type != ARM64_OP_MEM || m->mem.base != ARM64_REG_SP)
		return;
	if (a->writeback || m->mem.index != ARM64_REG_INVALID) {
		o->write = is_store(in->id);
		o->disp = INT32_MIN;
		return;
	}
	if (in->id == ARM64_INS_STR && single) {
		o->spill_src = (int8_t)cp_a64_reg(a->operands[0].reg);
		o->spill_disp = m->mem.disp;
	} else if (in->id == ARM64_INS_LDR && single) {
		o->fill_dst = (int8_t)cp_a64_reg(a->operands[0].reg);
		o->fill_disp = m->mem.disp;
	} else if (is_store(in->id)) {
		o->write = true;
		o->disp = m->mem.disp;
		o->size = in->id == ARM64_INS_STP ? 16 : 8; /* the widest it may be */
	}
}


/* Copies between x registers, ADR/ADRP's address, literal loads, loads
 * from a register plus an offset, and cbz/cbnz's register. */
static void moves(const cs_insn *in, struct cp_insn_facts *f)
{
	const cs_arm64 *a = &in->detail->arm64;
	const cs_arm64_op *d = &a->operands[0], *s = &a->operands[1];
	uint64_t t;

	if (a->op_count < 1 || d->type != ARM64_OP_REG)
		return;
	if ((in->id == ARM64_INS_CBZ || in->id == ARM64_INS_CBNZ) && cp_a64_is_x(d->reg)) {
		f->test_reg = (int8_t)cp_a64_reg(d->reg);
	} else if ((in->id == ARM64_INS_ADR || in->id == ARM64_INS_ADRP) && cp_a64_pc_target(in, &t)) {
		f->addr_reg = (int8_t)cp_a64_reg(d->reg);
		f->addr_val = t;
	} else if (in->id == ARM64_INS_LDR && cp_a64_is_x(d->reg) && cp_a64_pc_target(in, &t)) {
		f->load_reg = (int8_t)cp_a64_reg(d->reg);
		f->load_addr = t;
	} else if ((in->id == ARM64_INS_LDR || in->id == ARM64_INS_LDUR) && a->op_count == 2 && !a->writeback &&
		   cp_a64_is_x(d->reg) && s->type == ARM64_OP_MEM && s->mem.index == ARM64_REG_INVALID &&
		   s->mem.base != ARM64_REG_SP && cp_a64_reg(s->mem.base) >= 0) {
		f->based_dst = (int8_t)cp_a64_reg(d->reg);
		f->based_base = (int8_t)cp_a64_reg(s->mem.base);
		f->based_disp = s->mem.disp;
	} else if (in->id == ARM64_INS_MOV && a->op_count == 2 && cp_a64_is_x(d->reg) && s->type == ARM64_OP_REG &&
		   cp_a64_is_x(s->reg)) {
		f->copy_dst = (int8_t)cp_a64_reg(d->reg);
		f->copy_src = (int8_t)cp_a64_reg(s->reg);
	}
}

void cp_a64_insn_flow(const cp_dis *d, struct cp_insn_facts *f)
{
	const cs_insn *in = a64_dis(d)->insn;

	cp_insn_facts_none(f, in->address, (uint8_t)in->size);
	f->nop = in->id == ARM64_INS_NOP;
	flow(in, f);
}

void cp_a64_insn_facts(const cp_dis *d, struct cp_insn_facts *f)
{
	const cs_insn *in = a64_dis(d)->insn;

	cp_a64_insn_flow(d, f);
	writes(a64_dis(d)->handle, in, f);
	stack(in, &f->stack);
	if (!cp_a64_constant(in, &f->imm_reg, &f->imm))
		f->imm_reg = -1;
	moves(in, f);
}
