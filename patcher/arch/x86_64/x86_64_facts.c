/*
 * x86_64_facts.c - what one x86-64 instruction does, as the analyses over a
 * function's branches (scan/reach.c, predict/import_time.c) see it:
 * struct cp_insn_facts (arch/code.h), read from Zydis's operands.
 *
 * It reads what the capstone reading before it read (kept as
 * tests/unit/x86_facts_capstone.c); tests/unit/facts_reference.c proves the
 * two give the same facts for every instruction of every corpus and real
 * module, but where capstone 4 misreads one (named there).
 */
#include "arch/x86_64/zydis.h"

#include <string.h>

/* The conditional branches: jcc, jecxz, jrcxz, loop (not loope/loopne,
 * which no analysis has needed). */
static bool is_cond(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JCXZ: case ZYDIS_MNEMONIC_JECXZ:
	case ZYDIS_MNEMONIC_JL: case ZYDIS_MNEMONIC_JLE: case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNBE:
	case ZYDIS_MNEMONIC_JNL: case ZYDIS_MNEMONIC_JNLE: case ZYDIS_MNEMONIC_JNO: case ZYDIS_MNEMONIC_JNP:
	case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_JNZ: case ZYDIS_MNEMONIC_JO: case ZYDIS_MNEMONIC_JP:
	case ZYDIS_MNEMONIC_JRCXZ: case ZYDIS_MNEMONIC_JS: case ZYDIS_MNEMONIC_JZ: case ZYDIS_MNEMONIC_LOOP:
		return true;
	default:
		return false;
	}
}

/* jz/jnz, and the orderings of unsigned (jb, jnb, jbe, jnbe) and signed
 * (jl, jnl, jle, jnle) compares. */
static enum cp_cond cond_of(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_JZ: return CP_COND_EQ;
	case ZYDIS_MNEMONIC_JNZ: return CP_COND_NE;
	case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JL: return CP_COND_LT;
	case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNL: return CP_COND_GE;
	case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JLE: return CP_COND_LE;
	case ZYDIS_MNEMONIC_JNBE: case ZYDIS_MNEMONIC_JNLE: return CP_COND_GT;
	default: return CP_COND_OTHER;
	}
}

/* How control leaves the instruction, and where a direct branch goes. */
static void flow(const struct zin *z, struct cp_insn_facts *f)
{
	const ZydisDecodedOperand *op = &z->op[0];

	switch (z->in.mnemonic) {
	case ZYDIS_MNEMONIC_RET: f->flow = CP_FLOW_RET; break;
	case ZYDIS_MNEMONIC_UD2: case ZYDIS_MNEMONIC_HLT: f->flow = CP_FLOW_HALT; break;
	case ZYDIS_MNEMONIC_INT3: f->flow = CP_FLOW_TRAP; break;
	case ZYDIS_MNEMONIC_JMP: f->flow = CP_FLOW_JUMP; break;
	case ZYDIS_MNEMONIC_CALL: f->flow = CP_FLOW_CALL; break;
	default:
		if (is_cond(z->in.mnemonic))
			f->flow = CP_FLOW_COND;
		break;
	}
	f->cond = cond_of(z->in.mnemonic);
	if (f->flow != CP_FLOW_JUMP && f->flow != CP_FLOW_COND && f->flow != CP_FLOW_CALL)
		return;
	if (z->in.operand_count_visible == 1 && op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		f->direct = true;
		f->target = cp_zimm(z, op);
	} else if (f->flow == CP_FLOW_CALL && z->in.operand_count_visible == 1 && cp_zrip(op)) {
		f->via_slot = true; /* -fno-plt: call [rip + GOT slot] */
		f->slot = cp_zrip_addr(z, op);
	}
}

/* The registers it writes, every operand's, the implied ones too, folded
 * to 64-bit registers. */
static void writes(const struct zin *z, struct cp_insn_facts *f)
{
	uint8_t i;

	f->regs_known = true;
	f->writes = 0;
	for (i = 0; i < z->in.operand_count; i++) {
		int k = cp_zwritten(&z->op[i]);

		if (k >= 0)
			f->writes |= 1u << k;
	}
	f->moves_sp = (f->writes >> R_RSP) & 1;
}

/* A whole (64-bit) register operand's number, or -1. */
static int whole_reg(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_REGISTER && op->size == 64 ? cp_zreg64(op->reg.value) : -1;
}

/* Whether operand i of the instruction is [rsp + disp] with no segment
 * prefix. */
static bool rsp_operand(const struct zin *z, int i)
{
	return z->op[i].type == ZYDIS_OPERAND_TYPE_MEMORY && z->op[i].mem.base == ZYDIS_REGISTER_RSP &&
	       !(z->in.attributes & ZYDIS_ATTRIB_HAS_SEGMENT);
}

/* What it does to [rsp + d]: spills and reloads of a 64-bit register,
 * other writes, and addresses taken. */
static void stack(const struct zin *z, struct cp_stack_facts *o)
{
	bool mov = z->in.mnemonic == ZYDIS_MNEMONIC_MOV && z->in.operand_count_visible == 2;
	int i;

	for (i = 0; i < z->in.operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &z->op[i];
		int64_t disp;

		if (!rsp_operand(z, i))
			continue;
		disp = op->mem.disp.value;
		if (op->mem.index != ZYDIS_REGISTER_NONE || disp < INT32_MIN || disp > INT32_MAX) {
			o->write = true; /* anywhere in the frame */
			o->disp = INT32_MIN;
		} else if (z->in.mnemonic == ZYDIS_MNEMONIC_LEA) {
			o->addr_taken = true;
			o->disp = (int32_t)disp;
		} else if (mov && i == 0 && op->size == 64 && whole_reg(&z->op[1]) >= 0) {
			o->spill_src = (int8_t)whole_reg(&z->op[1]);
			o->spill_disp = (int32_t)disp;
		} else if (mov && i == 1 && op->size == 64 && whole_reg(&z->op[0]) >= 0) {
			o->fill_dst = (int8_t)whole_reg(&z->op[0]);
			o->fill_disp = (int32_t)disp;
		} else if (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) {
			o->write = true;
			o->disp = (int32_t)disp;
			o->size = (uint8_t)(op->size / 8);
		}
	}
}

/* mov r, imm and xor r, r (a 32-bit write clears the upper half). As
 * before, mov r64, imm64 (capstone's movabs) is not read. */
static void constant(const struct zin *z, struct cp_insn_facts *f)
{
	const ZydisDecodedOperand *d = &z->op[0], *s = &z->op[1];

	if (z->in.operand_count_visible != 2 || d->type != ZYDIS_OPERAND_TYPE_REGISTER || d->size < 32)
		return;
	if (z->in.mnemonic == ZYDIS_MNEMONIC_MOV && s->type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	    z->in.raw.imm[0].size < 64)
		f->imm = s->imm.value.u;
	else if (z->in.mnemonic == ZYDIS_MNEMONIC_XOR && s->type == ZYDIS_OPERAND_TYPE_REGISTER &&
		 s->reg.value == d->reg.value)
		f->imm = 0;
	else
		return;
	f->imm_reg = (int8_t)cp_zreg64(d->reg.value);
	if (d->size == 32)
		f->imm &= 0xffffffffull;
}

/* Moves between whole registers, loads of rip-relative words and of words
 * at a register plus a displacement, lea of a rip-relative address, and
 * test r, r. */
static void moves(const struct zin *z, struct cp_insn_facts *f)
{
	const ZydisDecodedOperand *d = &z->op[0], *s = &z->op[1];
	ZydisMnemonic m = z->in.mnemonic;

	if (z->in.operand_count_visible != 2 || d->type != ZYDIS_OPERAND_TYPE_REGISTER)
		return;
	if (m == ZYDIS_MNEMONIC_LEA && cp_zrip(s)) {
		f->addr_reg = (int8_t)cp_zreg64(d->reg.value);
		f->addr_val = cp_zrip_addr(z, s);
	} else if (m == ZYDIS_MNEMONIC_MOV && d->size == 64 && cp_zrip(s) &&
		   !(z->in.attributes & ZYDIS_ATTRIB_HAS_SEGMENT)) {
		f->load_reg = (int8_t)cp_zreg64(d->reg.value);
		f->load_addr = cp_zrip_addr(z, s);
	} else if (m == ZYDIS_MNEMONIC_MOV && d->size == 64 && s->type == ZYDIS_OPERAND_TYPE_MEMORY &&
		   s->mem.index == ZYDIS_REGISTER_NONE && cp_zreg64(s->mem.base) >= 0 &&
		   s->mem.base != ZYDIS_REGISTER_RSP && !(z->in.attributes & ZYDIS_ATTRIB_HAS_SEGMENT)) {
		f->based_dst = (int8_t)cp_zreg64(d->reg.value);
		f->based_base = (int8_t)cp_zreg64(s->mem.base);
		f->based_disp = s->mem.disp.value;
	} else if (m == ZYDIS_MNEMONIC_MOV && whole_reg(d) >= 0 && whole_reg(s) >= 0) {
		f->copy_dst = (int8_t)whole_reg(d);
		f->copy_src = (int8_t)whole_reg(s);
	} else if (m == ZYDIS_MNEMONIC_TEST && whole_reg(d) >= 0 && s->type == ZYDIS_OPERAND_TYPE_REGISTER &&
		   s->reg.value == d->reg.value) {
		f->test_reg = (int8_t)whole_reg(d);
	}
}

void cp_x86_insn_flow(const cp_dis *d, struct cp_insn_facts *f)
{
	const struct zin *z = &x86_dis(d)->z;

	cp_insn_facts_none(f, z->addr, z->in.length);
	f->nop = z->in.mnemonic == ZYDIS_MNEMONIC_NOP;
	flow(z, f);
}

void cp_x86_insn_facts(const cp_dis *d, struct cp_insn_facts *f)
{
	const struct zin *z = &x86_dis(d)->z;

	cp_x86_insn_flow(d, f);
	writes(z, f);
	stack(z, &f->stack);
	constant(z, f);
	moves(z, f);
}
