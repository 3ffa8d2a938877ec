/*
 * target.c - x86-64 as a struct cp_arch (see arch/arch.h): the table the
 * rest of cypatch reads this instruction set through.
 */
#include "arch/arch.h"
#include "arch/x86_64/encode.h"
#include <elf.h>

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

const struct cp_arch cp_arch_x86_64 = {
	.name = "x86-64",
	.e_machine = EM_X86_64,
	.reloc_relative = R_X86_64_RELATIVE,
	.reloc_kind = reloc_kind,
	.reloc_name = reloc_name,
	.pcrel_size = CP_X86_64_PCREL_SIZE,
	.pcrel_put = cp_x86_64_pcrel_put,
	.field_put = cp_x86_64_field_put,
	.branch_rewrite = cp_x86_64_branch_rewrite,
	.thunk_size = CP_X86_64_THUNK_SIZE,
	.thunk = cp_x86_64_thunk,
	.stub = &cp_stub_x86_64,
};
