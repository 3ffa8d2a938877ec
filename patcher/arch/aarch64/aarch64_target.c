/*
 * aarch64_target.c - aarch64 (little-endian, LP64, AAPCS64) as a struct cp_arch
 * (see arch/arch.h): the table the rest of cypatch reads this instruction
 * set through, reading and writing (pcrel_put re-aims an adrp/add pair or
 * a literal load at moved bytes).
 */
#include "arch/aarch64/aarch64.h"
#include "arch/aarch64/encode.h"
#include <elf.h>

_Static_assert(A64_NARGS <= CP_MAX_ARGS, "struct cp_call holds every argument register");

static enum cp_reloc_kind reloc_kind(uint32_t type)
{
	switch (type) {
	case R_AARCH64_RELATIVE: return CP_RELOC_RELATIVE;
	case R_AARCH64_JUMP_SLOT: return CP_RELOC_JUMP_SLOT;
	case R_AARCH64_GLOB_DAT: return CP_RELOC_GLOB_DAT;
	default: return CP_RELOC_OTHER;
	}
}

static const char *reloc_name(uint32_t type)
{
	switch (type) {
	case R_AARCH64_RELATIVE: return "R_AARCH64_RELATIVE";
	case R_AARCH64_JUMP_SLOT: return "R_AARCH64_JUMP_SLOT";
	case R_AARCH64_GLOB_DAT: return "R_AARCH64_GLOB_DAT";
	case R_AARCH64_ABS64: return "R_AARCH64_ABS64";
	case R_AARCH64_TLSDESC: return "R_AARCH64_TLSDESC";
	default: return "R_AARCH64_?";
	}
}

static int64_t sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* A PLT entry's jump through its GOT slot: adrp x16, page; ldr x17,
 * [x16, #off] (then add x16, x16, #off; br x17). */
static bool plt_jump(const uint8_t *d, size_t n, uint64_t addr, uint64_t *slot, unsigned *len)
{
	uint32_t adrp, ldr;
	uint64_t imm;

	if (n < 8 || addr % 4)
		return false;
	adrp = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
	ldr = (uint32_t)d[4] | (uint32_t)d[5] << 8 | (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
	if ((adrp & 0x9f000000u) != 0x90000000u || (ldr & 0xffc00000u) != 0xf9400000u ||
	    ((ldr >> 5) & 31) != (adrp & 31))
		return false;
	imm = ((uint64_t)(adrp >> 5) & 0x7ffff) << 2 | ((adrp >> 29) & 3);
	*slot = (addr & ~(uint64_t)0xfff) + (uint64_t)(sext(imm, 21) * 4096) + ((ldr >> 10) & 0xfff) * 8;
	*len = 8;
	return true;
}

const struct cp_arch cp_arch_aarch64 = {
	.name = "aarch64",
	.e_machine = EM_AARCH64,
	.reloc_relative = R_AARCH64_RELATIVE,
	.reloc_kind = reloc_kind,
	.reloc_name = reloc_name,
	.plt_step = 4,
	.plt_jump = plt_jump,

	.triplet = "aarch64-linux-gnu",
	.user_va_bits = 48,      /* 4 KiB pages, 4 levels: the distributions' kernels */
	.max_insn = A64_INSN,
	.arg_regs = cp_a64_arg_regs,
	.nargs = A64_NARGS,
	.ret_reg = A64_X0,
	/* AAPCS64: x0-x18 and the link register */
	.caller_saved = 0x7ffffu | 1u << A64_LR,
	.dis_open = cp_a64_dis_open,
	.dis_close = cp_a64_dis_close,
	.dis_next = cp_a64_dis_next,
	.insn_pcrel = cp_a64_insn_pcrel,
	.insn_reaches = cp_a64_insn_reaches,
	.insn_immediate = cp_a64_insn_immediate,
	.insn_is_cmp_reg_imm = cp_a64_insn_is_cmp_reg_imm,
	.insn_operand_size = cp_a64_insn_operand_size,
	.insn_displacement = cp_a64_insn_displacement,
	.insn_size = cp_a64_insn_size,
	.insn_describe = cp_a64_insn_describe,
	.insn_facts = cp_a64_insn_facts,
	.insn_flow = cp_a64_insn_flow,
	.calls_nothing = cp_a64_calls_nothing,
	.code_walk = cp_a64_code_walk,
	.frame_eval = cp_a64_frame_eval,

	.pcrel_size = CP_A64_PCREL_SIZE,
	.pcrel_put = cp_a64_pcrel_put,
	.reach = "one instruction (ADR and LDR: 1 MiB; B and BL: 128 MiB)",
	.insn_completes = cp_a64_insn_completes,
	.field_put = cp_a64_field_put,
	.branch_rewrite = cp_a64_branch_rewrite,
	.load_rewrite = cp_a64_load_rewrite,
	.thunk_size = CP_A64_THUNK_SIZE,
	.thunk = cp_a64_thunk,
	.standin = cp_a64_standin,
	.stub = &cp_stub_aarch64,
};
