/*
 * x86_facts_capstone.c - the reference for x86-64's instruction facts: the
 * capstone reading (capstone's detail and cs_regs_access) that
 * patcher/arch/x86_64/x86_64_facts.c (Zydis) replaced, kept as it was but for its
 * entry and where capstone 4 misreads an instruction
 * (x86_capstone_misreads.h), so
 * that facts_reference.c can prove the two give the same facts for every
 * instruction of every module.
 */
#include "arch/x86_64/x86_64.h"
#include "x86_capstone_misreads.h"

#include <string.h>

static bool is_jcc(unsigned id)
{
	return id >= X86_INS_JAE && id <= X86_INS_JS && id != X86_INS_JMP;
}

/* How control leaves the instruction, and where a direct branch goes. */
static enum cp_cond cond_of(unsigned id)
{
	switch (id) {
	case X86_INS_JE: return CP_COND_EQ;
	case X86_INS_JNE: return CP_COND_NE;
	case X86_INS_JB: case X86_INS_JL: return CP_COND_LT;
	case X86_INS_JAE: case X86_INS_JGE: return CP_COND_GE;
	case X86_INS_JBE: case X86_INS_JLE: return CP_COND_LE;
	case X86_INS_JA: case X86_INS_JG: return CP_COND_GT;
	default: return CP_COND_OTHER;
	}
}

static void flow(const cs_insn *in, struct cp_insn_facts *f)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *op = &x->operands[0];

	switch (in->id) {
	case X86_INS_RET: f->flow = CP_FLOW_RET; break;
	case X86_INS_UD2: case X86_INS_HLT: f->flow = CP_FLOW_HALT; break;
	case X86_INS_INT3: f->flow = CP_FLOW_TRAP; break;
	case X86_INS_JMP: f->flow = CP_FLOW_JUMP; break;
	case X86_INS_CALL: f->flow = CP_FLOW_CALL; break;
	default:
		if (is_jcc(in->id) || in->id == X86_INS_JRCXZ || in->id == X86_INS_JECXZ || in->id == X86_INS_LOOP)
			f->flow = CP_FLOW_COND;
		break;
	}
	f->cond = cond_of(in->id);
	if (f->flow != CP_FLOW_JUMP && f->flow != CP_FLOW_COND && f->flow != CP_FLOW_CALL)
		return;
	if (x->op_count == 1 && op->type == X86_OP_IMM) {
		f->direct = true;
		f->target = (uint64_t)op->imm;
	} else if (f->flow == CP_FLOW_CALL && x->op_count == 1 && op->type == X86_OP_MEM &&
		   op->mem.base == X86_REG_RIP) {
		f->via_slot = true; /* -fno-plt: call [rip + GOT slot] */
		f->slot = cp_x86_rip_addr(in, &op->mem);
	}
}

/* The registers it writes (capstone's list, folded to 64-bit registers). */
static void writes(csh h, const cs_insn *in, struct cp_insn_facts *f)
{
	cs_regs rd, wr;
	uint8_t nrd, nwr, i;

	f->writes = ~0u;
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return;
	f->regs_known = true;
	f->writes = 0;
	for (i = 0; i < nwr; i++) {
		int k = cp_reg64((x86_reg)wr[i]);

		if (k >= 0)
			f->writes |= 1u << k;
	}
	f->writes = ref_regs_written(in, f->writes);
	f->moves_sp = (f->writes >> R_RSP) & 1;
}

/* What it does to [rsp + d]: spills and reloads of a 64-bit register,
 * other writes, and addresses taken. */
static void stack(const cs_insn *in, struct cp_stack_facts *o)
{
	const cs_x86 *x = &in->detail->x86;
	uint8_t i;

	for (i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type != X86_OP_MEM || op->mem.base != X86_REG_RSP || op->mem.segment != X86_REG_INVALID)
			continue;
		if (op->mem.index != X86_REG_INVALID || op->mem.disp < INT32_MIN || op->mem.disp > INT32_MAX) {
			o->write = true; /* anywhere in the frame */
			o->disp = INT32_MIN;
			continue;
		}
		if (in->id == X86_INS_LEA) {
			o->addr_taken = true;
			o->disp = (int32_t)op->mem.disp;
		} else if (in->id == X86_INS_MOV && i == 0 && op->size == 8 && x->operands[1].type == X86_OP_REG &&
			   x->operands[1].size == 8) {
			o->spill_src = (int8_t)cp_reg64(x->operands[1].reg);
			o->spill_disp = (int32_t)op->mem.disp;
		} else if (in->id == X86_INS_MOV && i == 1 && op->size == 8 && x->operands[0].type == X86_OP_REG &&
			   x->operands[0].size == 8) {
			o->fill_dst = (int8_t)cp_reg64(x->operands[0].reg);
			o->fill_disp = (int32_t)op->mem.disp;
		} else if (ref_op_written(in, i)) {
			o->write = true;
			o->disp = (int32_t)op->mem.disp;
			o->size = op->size;
		}
	}
}

/* mov r, imm and xor r, r (a 32-bit write clears the upper half). */
static void constant(const cs_insn *in, struct cp_insn_facts *f)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *d = &x->operands[0], *s = &x->operands[1];

	if (x->op_count != 2 || d->type != X86_OP_REG || d->size < 4)
		return;
	if (in->id == X86_INS_MOV && s->type == X86_OP_IMM)
		f->imm = (uint64_t)s->imm;
	else if (in->id == X86_INS_XOR && s->type == X86_OP_REG && s->reg == d->reg)
		f->imm = 0;
	else
		return;
	f->imm_reg = (int8_t)cp_reg64(d->reg);
	if (d->size == 4)
		f->imm &= 0xffffffffull;
}

/* Moves between whole registers, loads of rip-relative words, lea of a
 * rip-relative address, and test r, r. */
static void moves(const cs_insn *in, struct cp_insn_facts *f)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *d = &x->operands[0], *s = &x->operands[1];

	if (x->op_count != 2 || d->type != X86_OP_REG)
		return;
	if (in->id == X86_INS_LEA && s->mem.base == X86_REG_RIP && s->mem.index == X86_REG_INVALID) {
		f->addr_reg = (int8_t)cp_reg64(d->reg);
		f->addr_val = cp_x86_rip_addr(in, &s->mem);
	} else if (in->id == X86_INS_MOV && d->size == 8 && s->type == X86_OP_MEM && s->mem.base == X86_REG_RIP &&
		   s->mem.index == X86_REG_INVALID && s->mem.segment == X86_REG_INVALID) {
		f->load_reg = (int8_t)cp_reg64(d->reg);
		f->load_addr = cp_x86_rip_addr(in, &s->mem);
	} else if (in->id == X86_INS_MOV && d->size == 8 && s->type == X86_OP_REG && s->size == 8) {
		f->copy_dst = (int8_t)cp_reg64(d->reg);
		f->copy_src = (int8_t)cp_reg64(s->reg);
	} else if (in->id == X86_INS_TEST && d->size == 8 && s->type == X86_OP_REG && s->reg == d->reg) {
		f->test_reg = (int8_t)cp_reg64(d->reg);
	}
}

void ref_x86_insn_flow(const cs_insn *in, struct cp_insn_facts *f)
{
	cp_insn_facts_none(f, in->address, (uint8_t)in->size);
	f->nop = in->id == X86_INS_NOP;
	flow(in, f);
}

void ref_x86_insn_facts(csh h, const cs_insn *in, struct cp_insn_facts *f)
{
	ref_x86_insn_flow(in, f);
	writes(h, in, f);
	stack(in, &f->stack);
	constant(in, f);
	moves(in, f);
}
