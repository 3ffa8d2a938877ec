/*
 * x86_64_encode.c - writing x86-64 code (see arch/arch.h, "Writing code"): rel32
 * and disp32 fields, little-endian immediates and displacements, direct
 * call/jmp rel32 in place of the forms a linker emits for a call, and the
 * fallback stub's thunks (lea of the context into an argument register,
 * jmp to the stub's entry, int3 padding).
 */
#include "arch/x86_64/encode.h"
#include "arch/x86_64/x86_64.h"

#include <string.h>

#define OP_CALL_REL32 0xe8
#define OP_JMP_REL32 0xe9
#define OP_GROUP5 0xff   /* with ModRM 0x15: call [rip + disp32]; 0x25: jmp */
#define MODRM_CALL_RIP 0x15
#define MODRM_JMP_RIP 0x25
#define PREFIX_BND 0xf2
#define PREFIX_ADDR32 0x67
#define OP_NOP 0x90
#define OP_INT3 0xcc
#define OP_LEA 0x8d
#define OP_MOV_EAX_IMM32 0xb8
#define OP_RET 0xc3
#define REX_W 0x48
#define REX_R 0x04
#define LEA_SIZE 7  /* REX.W 8d ModRM disp32 */
#define JMP_SIZE 5  /* e9 rel32 */


/* rel32 and disp32 count from the end of the instruction. */
bool cp_x86_64_pcrel_put(uint8_t *field, uint64_t insn, unsigned insn_size, uint64_t target)
{
	int64_t disp = (int64_t)(target - (insn + insn_size));
	int32_t d32 = (int32_t)disp;

	if (disp != d32)
		return false;
	memcpy(field, &d32, 4);
	return true;
}

bool cp_x86_64_field_put(uint8_t *field, unsigned size, int64_t value)
{
	int8_t v8 = (int8_t)value;
	int16_t v16 = (int16_t)value;
	int32_t v32 = (int32_t)value;

	switch (size) {
	case 1:
		if (value != v8)
			return false;
		memcpy(field, &v8, 1);
		return true;
	case 2:
		if (value != v16)
			return false;
		memcpy(field, &v16, 2);
		return true;
	case 4:
		if (value != v32)
			return false;
		memcpy(field, &v32, 4);
		return true;
	case 8:
		memcpy(field, &value, 8);
		return true;
	default:
		return false;
	}
}

/* call/jmp rel32 keep their opcode (and a bnd prefix); call and jmp
 * through a GOT slot become what ld relaxes them to: addr32 call rel32,
 * jmp rel32; nop (whose rel32 counts from the nop). */
bool cp_x86_64_branch_rewrite(const uint8_t *b, unsigned len, uint8_t *out, uint8_t *field_at,
			      uint8_t *branch_size)
{
	*branch_size = (uint8_t)len;
	if (len == 5 && (b[0] == OP_CALL_REL32 || b[0] == OP_JMP_REL32)) {
		out[0] = b[0];
		*field_at = 1;
	} else if (len == 6 && b[0] == PREFIX_BND && (b[1] == OP_CALL_REL32 || b[1] == OP_JMP_REL32)) {
		out[0] = b[0];
		out[1] = b[1];
		*field_at = 2;
	} else if (len == 6 && b[0] == OP_GROUP5 && b[1] == MODRM_CALL_RIP) {
		out[0] = PREFIX_ADDR32;
		out[1] = OP_CALL_REL32;
		*field_at = 2;
	} else if (len == 6 && b[0] == OP_GROUP5 && b[1] == MODRM_JMP_RIP) {
		out[0] = OP_JMP_REL32;
		out[5] = OP_NOP;
		*field_at = 1;
		*branch_size = JMP_SIZE;
	} else {
		return false;
	}
	memset(out + *field_at, 0, 4);
	return true;
}

/* lea <argument register>, [rip + ctx]; jmp entry; int3 up to 16 bytes. */
bool cp_x86_64_thunk(uint8_t *out, uint64_t at, unsigned arg, uint64_t ctx, uint64_t entry,
		     uint64_t *jump)
{
	uint8_t reg;

	/* the argument registers' numbers are the encoding's (ModRM.reg, with
	 * REX.R above 7): x86_64.h numbers R_RAX to R_R15 as the encoding does */
	_Static_assert(R_RDI == 7 && R_RSI == 6 && R_R8 == 8 && R_R9 == 9, "register numbers are the encoding's");
	if (arg >= X86_64_NARGS)
		return false;
	reg = (uint8_t)cp_x86_64_arg_regs[arg];
	out[0] = REX_W | (reg > 7 ? REX_R : 0);
	out[1] = OP_LEA;
	out[2] = (uint8_t)((reg & 7) << 3 | 5); /* mod 00, r/m 101: [rip + disp32] */
	out[LEA_SIZE] = OP_JMP_REL32;
	memset(out + LEA_SIZE + JMP_SIZE, OP_INT3, CP_X86_64_THUNK_SIZE - LEA_SIZE - JMP_SIZE);
	*jump = at + LEA_SIZE;
	return cp_x86_64_pcrel_put(out + 3, at, LEA_SIZE, ctx) &&
	       cp_x86_64_pcrel_put(out + LEA_SIZE + 1, *jump, JMP_SIZE, entry);
}

/* mov eax, value; ret; int3 up to 16 bytes. */
bool cp_x86_64_standin(uint8_t *out, long value)
{
	int32_t v = (int32_t)value;

	if (value < INT32_MIN || value > INT32_MAX)
		return false;
	memset(out, OP_INT3, CP_X86_64_THUNK_SIZE);
	out[0] = OP_MOV_EAX_IMM32;
	memcpy(out + 1, &v, 4);
	out[5] = OP_RET;
	return true;
}
