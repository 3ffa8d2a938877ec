/*
 * x86_64_target.c - x86-64 as a struct cp_arch (see arch/arch.h): the table the
 * rest of cypatch reads this instruction set through.
 */
#include "arch/x86_64/x86_64.h"
#include "arch/x86_64/encode.h"
#include <elf.h>
#include <string.h>

_Static_assert(X86_64_NARGS <= CP_MAX_ARGS, "struct cp_call holds every argument register");

static enum cp_reloc_kind reloc_kind(uint32_t type)
{
	switch (type) {
	case R_X86_64_RELATIVE: return CP_RELOC_RELATIVE;
	case R_X86_64_JUMP_SLOT: return CP_RELOC_JUMP_SLOT;
	case R_X86_64_GLOB_DAT: return CP_RELOC_GLOB_DAT;
	default: return CP_RELOC_OTHER;
	}
}

static const char *reloc_name(uint32_t type)
{
	switch (type) {
	case R_X86_64_RELATIVE: return "R_X86_64_RELATIVE";
	case R_X86_64_JUMP_SLOT: return "R_X86_64_JUMP_SLOT";
	case R_X86_64_GLOB_DAT: return "R_X86_64_GLOB_DAT";
	default: return "R_X86_64_?";
	}
}

/* PLT entries jump through their GOT slot with `ff 25 disp32` (lazy .plt,
 * .plt.sec after endbr64 and bnd prefix, .plt.got). */
static bool plt_jump(const uint8_t *d, size_t n, uint64_t addr, uint64_t *slot, unsigned *len)
{
	int32_t disp;

	if (n < 6 || d[0] != 0xff || d[1] != 0x25)
		return false;
	memcpy(&disp, d + 2, 4);
	*slot = addr + 6 + (uint64_t)(int64_t)disp;
	*len = 6;
	return true;
}

const struct cp_arch cp_arch_x86_64 = {
	.name = "x86-64",
	.e_machine = EM_X86_64,
	.reloc_relative = R_X86_64_RELATIVE,
	.reloc_kind = reloc_kind,
	.reloc_name = reloc_name,
	.plt_step = 1,
	.plt_jump = plt_jump,

	.triplet = "x86_64-linux-gnu",
	.user_va_bits = 47,      /* 4-level paging */
	.max_insn = 16,
	.arg_regs = cp_x86_64_arg_regs,
	.nargs = X86_64_NARGS,
	.ret_reg = R_RAX,
	/* System V: rax, rcx, rdx, rsi, rdi, r8-r11 */
	.caller_saved = 1u << R_RAX | 1u << R_RCX | 1u << R_RDX | 1u << R_RSI | 1u << R_RDI | 1u << R_R8 |
			1u << R_R9 | 1u << R_R10 | 1u << R_R11,
	.dis_open = cp_x86_dis_open,
	.dis_close = cp_x86_dis_close,
	.dis_next = cp_x86_dis_next,
	.insn_pcrel = cp_x86_insn_pcrel,
	.insn_reaches = cp_x86_insn_reaches,
	.insn_immediate = cp_x86_insn_immediate,
	.insn_is_cmp_reg_imm = cp_x86_insn_is_cmp_reg_imm,
	.insn_operand_size = cp_x86_insn_operand_size,
	.insn_displacement = cp_x86_insn_displacement,
	.insn_size = cp_x86_insn_size,
	.insn_describe = cp_x86_insn_describe,
	.insn_facts = cp_x86_insn_facts,
	.insn_flow = cp_x86_insn_flow,
	.calls_nothing = cp_x86_calls_nothing,
	.code_walk = cp_x86_code_walk,
	.walk_local = true,
	.frame_eval = cp_x86_frame_eval,

	.pcrel_size = CP_X86_64_PCREL_SIZE,
	.reach = "a 32-bit displacement",
	.pcrel_put = cp_x86_64_pcrel_put,
	.field_put = cp_x86_64_field_put,
	.branch_rewrite = cp_x86_64_branch_rewrite,
	.thunk_size = CP_X86_64_THUNK_SIZE,
	.thunk = cp_x86_64_thunk,
	.standin = cp_x86_64_standin,
	.stub = &cp_stub_x86_64,
};
