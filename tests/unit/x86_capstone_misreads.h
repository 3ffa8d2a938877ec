/*
 * x86_capstone_misreads.h - where capstone 4 misreads what an x86-64
 * instruction writes, for the capstone references (x86_frame_capstone.c,
 * x86_facts_capstone.c): corrected there so that the references say what
 * the instructions do, and the Zydis code is held to that.
 *
 * Its tables have test writing its operands (and cdq and cqo rax), and miss
 * what a few stores write: the memory of movq, movups, movhps, movlps,
 * movhpd, movlpd, setcc and cmpxchg, and cmpxchg's rax.
 */
#ifndef CP_TEST_X86_CAPSTONE_MISREADS_H
#define CP_TEST_X86_CAPSTONE_MISREADS_H

#include "arch/x86_64/x86_64.h"

/* Whether operand k is written: the corrections, else its operand access. */
static inline bool ref_op_written(const cs_insn *in, int k)
{
	const cs_x86 *x = &in->detail->x86;

	switch (in->id) {
	case X86_INS_TEST:
		return false;
	case X86_INS_MOVQ: case X86_INS_MOVUPS: case X86_INS_MOVHPS: case X86_INS_MOVLPS: case X86_INS_MOVHPD:
	case X86_INS_MOVLPD: case X86_INS_CMPXCHG:
		return k == 0 || (x->operands[k].access & CS_AC_WRITE);
	default:
		if (in->id >= X86_INS_SETAE && in->id <= X86_INS_SETS)
			return k == 0;
		return x->operands[k].access & CS_AC_WRITE;
	}
}

/* The general registers written (a bit per register, R_RAX...), from
 * those cs_regs_access names. */
static inline uint32_t ref_regs_written(const cs_insn *in, uint32_t named)
{
	switch (in->id) {
	case X86_INS_TEST:
		return 0;
	case X86_INS_CDQ: case X86_INS_CQO:
		return 1u << R_RDX;
	case X86_INS_CMPXCHG:
		return named | 1u << R_RAX;
	default:
		return named;
	}
}

#endif
