/*
 * aarch64_decode.c - capstone as aarch64's cp_dis (see arch/code.h): opening it,
 * decoding, and the questions asked about the instruction decoded last.
 *
 * Every instruction is one 4-byte word; an operand's field is a bit field
 * inside it, so where a field sits is answered as "the word" (offset 0,
 * size 4) and the arch's encoders take the whole word.
 */
#include "arch/aarch64/aarch64.h"
#include "arch/aarch64/encode.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>

const int8_t cp_a64_arg_regs[A64_NARGS] = { 0, 1, 2, 3, 4, 5, 6, 7 };

cp_status cp_a64_dis_open(cp_dis *d, cp_error *err)
{
	struct a64_dis *x = calloc(1, sizeof(*x));

	d->impl = NULL;
	if (!x)
		return cp_fail(err, CP_E_INTERNAL, "capstone: out of memory");
	if (cs_open(CS_ARCH_ARM64, CS_MODE_LITTLE_ENDIAN, &x->handle) != CS_ERR_OK) {
		free(x);
		return cp_fail(err, CP_E_INTERNAL, "capstone: cannot open an aarch64 handle");
	}
	cs_option(x->handle, CS_OPT_DETAIL, CS_OPT_ON);
	x->insn = cs_malloc(x->handle);
	if (!x->insn) {
		cs_close(&x->handle);
		free(x);
		return cp_fail(err, CP_E_INTERNAL, "capstone: out of memory");
	}
	d->impl = x;
	return CP_OK;
}

void cp_a64_dis_close(cp_dis *d)
{
	struct a64_dis *x = d->impl;

	if (!x)
		return;
	cs_free(x->insn, 1);
	cs_close(&x->handle);
	free(x);
	d->impl = NULL;
}

/* Instructions sit on 4-byte boundaries: a misaligned address is no code. */
bool cp_a64_dis_next(cp_dis *d, const uint8_t **code, size_t *size, uint64_t *addr)
{
	if (*addr % A64_INSN)
		return false;
	return cs_disasm_iter(a64_dis(d)->handle, code, size, addr, a64_dis(d)->insn);
}

int cp_a64_reg(arm64_reg r)
{
	if (r >= ARM64_REG_X0 && r <= ARM64_REG_X28)
		return (int)(r - ARM64_REG_X0);
	if (r >= ARM64_REG_W0 && r <= ARM64_REG_W30)
		return (int)(r - ARM64_REG_W0);
	if (r == ARM64_REG_X29)
		return A64_FP;
	if (r == ARM64_REG_X30)
		return A64_LR;
	if (r == ARM64_REG_SP || r == ARM64_REG_WSP)
		return A64_SP;
	return -1;
}

bool cp_a64_is_x(arm64_reg r)
{
	return (r >= ARM64_REG_X0 && r <= ARM64_REG_X28) || r == ARM64_REG_X29 || r == ARM64_REG_X30 ||
	       r == ARM64_REG_SP;
}

bool cp_a64_pc_target(const cs_insn *in, uint64_t *target)
{
	const cs_arm64 *a = &in->detail->arm64;

	if (a->op_count != 2 || a->operands[1].type != ARM64_OP_IMM)
		return false;
	if (in->id != ARM64_INS_ADRP && in->id != ARM64_INS_ADR &&
	    !((in->id == ARM64_INS_LDR || in->id == ARM64_INS_LDRSW) && a->operands[0].type == ARM64_OP_REG))
		return false;
	*target = (uint64_t)a->operands[1].imm;
	return true;
}

bool cp_a64_direct_target(const cs_insn *in, uint64_t *target)
{
	const cs_arm64 *a = &in->detail->arm64;
	unsigned at;

	switch (in->id) {
	case ARM64_INS_B: case ARM64_INS_BL: at = 0; break;
	case ARM64_INS_CBZ: case ARM64_INS_CBNZ: at = 1; break;
	case ARM64_INS_TBZ: case ARM64_INS_TBNZ: at = 2; break;
	default: return false;
	}
	if (a->op_count != at + 1 || a->operands[at].type != ARM64_OP_IMM)
		return false;
	*target = (uint64_t)a->operands[at].imm;
	return true;
}

void cp_a64_describe(const cs_insn *in, char *buf, size_t n)
{
	size_t m = strlen(in->mnemonic), k = strlen(in->op_str);

	if (n == 0)
		return;
	if (m >= n)
		m = n - 1;
	memcpy(buf, in->mnemonic, m);
	buf[m] = '\0';
	if (m + 1 >= n)
		return;
	if (k > n - m - 2)
		k = n - m - 2;
	buf[m] = ' ';
	memcpy(buf + m + 1, in->op_str, k);
	buf[m + 1 + k] = '\0';
}

void cp_a64_insn_describe(const cp_dis *d, char *buf, size_t n)
{
	cp_a64_describe(a64_dis(d)->insn, buf, n);
}

bool cp_a64_insn_pcrel(const cp_dis *d, uint8_t *disp_off, uint8_t *size, uint64_t *target)
{
	if (!cp_a64_pc_target(a64_dis(d)->insn, target))
		return false;
	*disp_off = 0;
	*size = A64_INSN;
	return true;
}

/* movz, movn, mov #imm, mov of the zero register: the value the whole x
 * register gets (aarch64.h). */
bool cp_a64_constant(const cs_insn *in, int8_t *reg, uint64_t *out)
{
	const cs_arm64 *a = &in->detail->arm64;
	const cs_arm64_op *d = &a->operands[0], *s = &a->operands[1];
	uint64_t v;

	if (a->op_count != 2 || d->type != ARM64_OP_REG || cp_a64_reg(d->reg) < 0 || cp_a64_reg(d->reg) == A64_SP)
		return false;
	if ((in->id == ARM64_INS_MOVZ || in->id == ARM64_INS_MOV) && s->type == ARM64_OP_IMM)
		v = s->shift.type == ARM64_SFT_LSL ? (uint64_t)s->imm << s->shift.value : (uint64_t)s->imm;
	else if (in->id == ARM64_INS_MOVN && s->type == ARM64_OP_IMM)
		v = ~(s->shift.type == ARM64_SFT_LSL ? (uint64_t)s->imm << s->shift.value : (uint64_t)s->imm);
	else if (in->id == ARM64_INS_MOV && s->type == ARM64_OP_REG &&
		 (s->reg == ARM64_REG_XZR || s->reg == ARM64_REG_WZR))
		v = 0;
	else
		return false;
	if (!cp_a64_is_x(d->reg))
		v &= 0xffffffffull; /* a w write clears the upper half */
	*reg = (int8_t)cp_a64_reg(d->reg);
	*out = v;
	return true;
}

/* The forms cp_a64_standalone rewrites: whether it takes the word (to
 * its own address, always in reach). */
bool cp_a64_insn_completes(const cp_dis *d)
{
	const cs_insn *in = a64_dis(d)->insn;
	uint32_t w, out;

	if (in->size != A64_INSN)
		return false;
	w = (uint32_t)in->bytes[0] | (uint32_t)in->bytes[1] << 8 | (uint32_t)in->bytes[2] << 16 |
	    (uint32_t)in->bytes[3] << 24;
	return cp_a64_standalone(w, in->address, in->address, &out);
}

bool cp_a64_insn_reaches(const cp_dis *d, uint64_t *target)
{
	const cs_insn *in = a64_dis(d)->insn;

	return cp_a64_direct_target(in, target) || cp_a64_pc_target(in, target);
}

bool cp_a64_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr)
{
	uint64_t start, end, target;
	unsigned i;

	if (!cp_image_function(img, addr, &start, &end) || start != addr)
		return false;
	for (i = 0; i < 256 && addr < end && cp_dis_at(d, img, addr); i++, addr += A64_INSN) {
		const cs_insn *in = a64_dis(d)->insn;
		bool call = in->id == ARM64_INS_BL || in->id == ARM64_INS_BLR;
		bool jmp = (in->id == ARM64_INS_B && in->detail->arm64.cc == ARM64_CC_INVALID) ||
			   in->id == ARM64_INS_BR;

		if (!call && !jmp)
			continue;
		if (!cp_a64_direct_target(in, &target))
			return false; /* through a register */
		if ((call || target < start || target >= end) && !cp_is_noreturn_name(cp_image_plt_name(img, target)))
			return false;
	}
	return addr >= end;
}

/* MOVZ/MOVN/MOV's value, as the register gets it (MOVN's inverted, a W
 * register's zero-extended: what a store of it writes); MOVK's imm16
 * shifted into place; ADD/SUB/CMP/CMN's imm12 (shifted by its LSL #12).
 * The word holds the field. */
bool cp_a64_insn_immediate(const cp_dis *d, uint8_t *imm_off, uint8_t *imm_size, int64_t *value)
{
	const cs_insn *in = a64_dis(d)->insn;
	const cs_arm64 *a = &in->detail->arm64;
	const cs_arm64_op *op;

	switch (in->id) {
	case ARM64_INS_MOVZ: case ARM64_INS_MOVK: case ARM64_INS_MOVN: case ARM64_INS_MOV:
	case ARM64_INS_ADD: case ARM64_INS_SUB: case ARM64_INS_CMP: case ARM64_INS_CMN:
		break;
	default:
		return false;
	}
	if (a->op_count < 2 || a->operands[a->op_count - 1].type != ARM64_OP_IMM)
		return false;
	op = &a->operands[a->op_count - 1];
	*value = op->shift.type == ARM64_SFT_LSL ? (int64_t)((uint64_t)op->imm << op->shift.value) : op->imm;
	if (in->id == ARM64_INS_MOVZ || in->id == ARM64_INS_MOVN || in->id == ARM64_INS_MOV) {
		int8_t reg;
		uint64_t v;

		if (!cp_a64_constant(in, &reg, &v))
			return false;
		*value = (int64_t)v;
	}
	*imm_off = 0;
	*imm_size = A64_INSN;
	return true;
}

bool cp_a64_insn_is_cmp_reg_imm(const cp_dis *d)
{
	const cs_insn *in = a64_dis(d)->insn;
	const cs_arm64 *a = &in->detail->arm64;
	int r;

	if (in->id != ARM64_INS_CMP || a->op_count != 2 || a->operands[0].type != ARM64_OP_REG ||
	    a->operands[1].type != ARM64_OP_IMM)
		return false;
	r = cp_a64_reg(a->operands[0].reg);
	return r >= 0 && r != A64_SP && r != A64_FP;
}

/* The width of its first (register) operand: 8 for x, 4 for w. */
unsigned cp_a64_insn_operand_size(const cp_dis *d)
{
	const cs_arm64 *a = &a64_dis(d)->insn->detail->arm64;

	if (a->op_count == 0 || a->operands[0].type != ARM64_OP_REG)
		return 0;
	return cp_a64_is_x(a->operands[0].reg) ? 8 : cp_a64_reg(a->operands[0].reg) >= 0 ? 4 : 0;
}

bool cp_a64_insn_displacement(const cp_dis *d, uint8_t *disp_off, uint8_t *disp_size, int64_t *value)
{
	const cs_arm64 *a = &a64_dis(d)->insn->detail->arm64;
	int i;

	for (i = 0; i < a->op_count; i++)
		if (a->operands[i].type == ARM64_OP_MEM && a->operands[i].mem.base != ARM64_REG_INVALID &&
		    a->operands[i].mem.index == ARM64_REG_INVALID) {
			*disp_off = 0;
			*disp_size = A64_INSN;
			*value = a->operands[i].mem.disp;
			return true;
		}
	return false;
}

unsigned cp_a64_insn_size(const cp_dis *d)
{
	return a64_dis(d)->insn->size;
}
