/*
 * zydis.h - what the files of arch/x86_64/ that read Zydis's operands
 * share (x86_64_walk.c, x86_64_frame_eval.c, x86_64_facts.c): the questions they all ask of an
 * instruction (struct zin, x86_64.h), asked one way.
 */
#ifndef CP_ARCH_X86_64_ZYDIS_H
#define CP_ARCH_X86_64_ZYDIS_H

#include "arch/x86_64/x86_64.h"

/* A general register's number (R_RAX...) whatever its width, or -1. Zydis
 * numbers each width's registers in encoding order (both passes meet a
 * register operand in most instructions: arithmetic, not a class lookup). */
_Static_assert(ZYDIS_REGISTER_R15B - ZYDIS_REGISTER_AL == 19 && ZYDIS_REGISTER_R15W - ZYDIS_REGISTER_AX == 15 &&
		       ZYDIS_REGISTER_R15D - ZYDIS_REGISTER_EAX == 15 && ZYDIS_REGISTER_R15 - ZYDIS_REGISTER_RAX == 15,
	       "Zydis's general registers are not in encoding order");
static inline int cp_zreg64(ZydisRegister r)
{
	if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15)
		return (int)(r - ZYDIS_REGISTER_RAX);
	if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D)
		return (int)(r - ZYDIS_REGISTER_EAX);
	if (r >= ZYDIS_REGISTER_AX && r <= ZYDIS_REGISTER_R15W)
		return (int)(r - ZYDIS_REGISTER_AX);
	if (r >= ZYDIS_REGISTER_AL && r <= ZYDIS_REGISTER_BL)
		return (int)(r - ZYDIS_REGISTER_AL);
	if (r >= ZYDIS_REGISTER_AH && r <= ZYDIS_REGISTER_BH) /* ah..bh: rax..rbx */
		return (int)(r - ZYDIS_REGISTER_AH);
	if (r >= ZYDIS_REGISTER_SPL && r <= ZYDIS_REGISTER_R15B) /* spl, bpl, sil, dil, r8b..r15b */
		return (int)(r - ZYDIS_REGISTER_SPL) + R_RSP;
	return -1;
}

/* The instruction at code (n bytes, at addr) with all its operands, the
 * hidden ones too; false when it does not decode. Not
 * ZydisDecoderDecodeFull, which clears every operand slot first: nothing
 * reads the slots past the instruction's. */
static inline bool cp_zdecode(const ZydisDecoder *dec, const uint8_t *code, size_t n, uint64_t addr, struct zin *z)
{
	ZydisDecoderContext ctx;

	z->addr = addr;
	return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, &ctx, code, n, &z->in)) &&
	       ZYAN_SUCCESS(ZydisDecoderDecodeOperands(dec, &ctx, &z->in, z->op, z->in.operand_count));
}

static inline uint64_t cp_znext(const struct zin *z)
{
	return z->addr + z->in.length;
}

/* A memory operand of the form [rip + disp]. */
static inline bool cp_zrip(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.base == ZYDIS_REGISTER_RIP &&
	       op->mem.index == ZYDIS_REGISTER_NONE;
}

/* The address a memory operand [rip + disp] of the instruction names. */
static inline uint64_t cp_zrip_addr(const struct zin *z, const ZydisDecodedOperand *op)
{
	return cp_znext(z) + (uint64_t)op->mem.disp.value;
}

/* Its explicit operand of the form [rip + disp]: the address, and which. */
static inline bool cp_zrip_target(const struct zin *z, uint64_t *target, int *opi)
{
	int i;

	for (i = 0; i < z->in.operand_count_visible; i++)
		if (cp_zrip(&z->op[i])) {
			*target = cp_zrip_addr(z, &z->op[i]);
			*opi = i;
			return true;
		}
	return false;
}

/* An immediate operand's value: a relative one as the address it names. */
static inline uint64_t cp_zimm(const struct zin *z, const ZydisDecodedOperand *op)
{
	return op->imm.is_relative ? cp_znext(z) + op->imm.value.u : op->imm.value.u;
}

/* A register the operand writes: a register written, or the rsi or rdi a
 * string instruction (movs, cmps, stos...) steps, which Zydis gives as
 * the base of an implied memory operand; else -1. */
static inline int cp_zwritten(const ZydisDecodedOperand *op)
{
	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
		return op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE ? cp_zreg64(op->reg.value) : -1;
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
	    (op->mem.base == ZYDIS_REGISTER_RSI || op->mem.base == ZYDIS_REGISTER_RDI))
		return cp_zreg64(op->mem.base);
	return -1;
}

#endif
