/*
 * x86_64_decode.c - x86-64's cp_dis (see arch/code.h): opening it, decoding (Zydis),
 * and the questions asked about the instruction decoded last, about its
 * fields and text (capstone, which decodes it again when first asked).
 */
#include "arch/x86_64/zydis.h"
#include "util/error.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const int8_t cp_x86_64_arg_regs[X86_64_NARGS] = { R_RDI, R_RSI, R_RDX, R_RCX, R_R8, R_R9 };

cp_status cp_x86_dis_open(cp_dis *d, cp_error *err)
{
	struct x86_dis *x = calloc(1, sizeof(*x));

	d->impl = NULL;
	if (!x)
		return cp_fail(err, CP_E_INTERNAL, "capstone: out of memory");
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&x->dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
		free(x);
		return cp_fail(err, CP_E_INTERNAL, "the x86-64 decoder did not start");
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &x->handle) != CS_ERR_OK) {
		free(x);
		return cp_fail(err, CP_E_INTERNAL, "capstone: cannot open an x86-64 handle");
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

void cp_x86_dis_close(cp_dis *d)
{
	struct x86_dis *x = d->impl;

	if (!x)
		return;
	cs_free(x->insn, 1);
	cs_close(&x->handle);
	free(x);
	d->impl = NULL;
}

bool cp_x86_dis_next(cp_dis *d, const uint8_t **code, size_t *size, uint64_t *addr)
{
	struct x86_dis *x = x86_dis(d);
	uint8_t n;

	if (!cp_zdecode(&x->dec, *code, *size, *addr, &x->z))
		return false;
	n = x->z.in.length;
	assert(n <= sizeof(x->bytes) && n <= *size);
	memcpy(x->bytes, *code, n);
	x->cs = CS_NOT_YET;
	*code += n;
	*size -= n;
	*addr += n;
	return true;
}

/* capstone's reading of the instruction decoded last, or NULL where it
 * reads the bytes as no instruction or as one of another length. */
static const cs_insn *cs_of(const cp_dis *d)
{
	struct x86_dis *x = x86_dis(d);

	if (x->cs == CS_NOT_YET) {
		const uint8_t *p = x->bytes;
		size_t n = x->z.in.length;
		uint64_t a = x->z.addr;

		x->cs = cs_disasm_iter(x->handle, &p, &n, &a, x->insn) && x->insn->size == x->z.in.length ? CS_SAME
													  : CS_OTHER;
	}
	return x->cs == CS_SAME ? x->insn : NULL;
}

int cp_reg64(x86_reg r)
{
	switch (r) {
	case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX: case X86_REG_AL: case X86_REG_AH: return R_RAX;
	case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: case X86_REG_CH: return R_RCX;
	case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: case X86_REG_DH: return R_RDX;
	case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX: case X86_REG_BL: case X86_REG_BH: return R_RBX;
	case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL: return R_RSP;
	case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP: case X86_REG_BPL: return R_RBP;
	case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL: return R_RSI;
	case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL: return R_RDI;
	case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: return R_R8;
	case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: return R_R9;
	case X86_REG_R10: case X86_REG_R10D: case X86_REG_R10W: case X86_REG_R10B: return R_R10;
	case X86_REG_R11: case X86_REG_R11D: case X86_REG_R11W: case X86_REG_R11B: return R_R11;
	case X86_REG_R12: case X86_REG_R12D: case X86_REG_R12W: case X86_REG_R12B: return R_R12;
	case X86_REG_R13: case X86_REG_R13D: case X86_REG_R13W: case X86_REG_R13B: return R_R13;
	case X86_REG_R14: case X86_REG_R14D: case X86_REG_R14W: case X86_REG_R14B: return R_R14;
	case X86_REG_R15: case X86_REG_R15D: case X86_REG_R15W: case X86_REG_R15B: return R_R15;
	default: return -1;
	}
}

bool cp_x86_rip_target(const cs_insn *in, uint64_t *target, int *opi)
{
	const cs_x86 *x = &in->detail->x86;
	int i;

	for (i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP &&
		    op->mem.index == X86_REG_INVALID) {
			*target = cp_x86_rip_addr(in, &op->mem);
			*opi = i;
			return true;
		}
	}
	return false;
}

void cp_x86_describe(const cs_insn *in, char *buf, size_t n)
{
	size_t m = strlen(in->mnemonic);

	if (n == 0)
		return;
	if (m >= n)
		m = n - 1;
	memcpy(buf, in->mnemonic, m);
	buf[m] = '\0';
	if (m + 1 < n) {
		size_t k = strlen(in->op_str);

		/* memcpy, not strncpy: GCC -O3 rejects the truncation (-Werror) */
		if (k > n - m - 2)
			k = n - m - 2;
		buf[m] = ' ';
		memcpy(buf + m + 1, in->op_str, k);
		buf[m + 1 + k] = '\0';
	}
}

void cp_x86_insn_describe(const cp_dis *d, char *buf, size_t n)
{
	const cs_insn *in = cs_of(d);

	if (in)
		cp_x86_describe(in, buf, n);
	else if (n)
		snprintf(buf, n, "(an instruction capstone reads otherwise)");
}

/* Only a disp32 is rewritten in place. */
bool cp_x86_insn_pcrel(const cp_dis *d, uint8_t *disp_off, uint8_t *size, uint64_t *target)
{
	const cs_insn *in = cs_of(d);
	int opi;

	if (!in || !cp_x86_rip_target(in, target, &opi) || !in->detail->x86.encoding.disp_offset ||
	    in->detail->x86.encoding.disp_size != 4)
		return false;
	*disp_off = in->detail->x86.encoding.disp_offset;
	*size = (uint8_t)in->size;
	return true;
}

bool cp_x86_insn_reaches(const cp_dis *d, uint64_t *target)
{
	const cs_insn *in = cs_of(d);
	const cs_x86 *x;
	int opi;

	if (!in)
		return false;
	x = &in->detail->x86;
	if ((in->id == X86_INS_CALL || in->id == X86_INS_JMP) && x->op_count == 1 &&
	    x->operands[0].type == X86_OP_IMM) {
		*target = (uint64_t)x->operands[0].imm;
		return true;
	}
	return cp_x86_rip_target(in, target, &opi);
}

bool cp_x86_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr)
{
	uint64_t start, end, target;
	unsigned i;

	if (!cp_image_function(img, addr, &start, &end) || start != addr)
		return false;
	for (i = 0; i < 256 && addr < end && cp_dis_at(d, img, addr); i++) {
		const cs_insn *in = cs_of(d);
		bool call, jmp;

		if (!in)
			return false;
		call = cs_insn_group(x86_dis(d)->handle, in, CS_GRP_CALL);
		jmp = in->id == X86_INS_JMP;
		if (call || jmp) {
			if (!cp_dis_reaches(d, img, addr, &target))
				return false; /* through a register */
			if ((call || target < start || target >= end) && !cp_is_noreturn_name(cp_image_plt_name(img, target)))
				return false;
		}
		addr += in->size;
	}
	return addr >= end;
}

bool cp_x86_insn_immediate(const cp_dis *d, uint8_t *imm_off, uint8_t *imm_size, int64_t *value)
{
	const cs_insn *in = cs_of(d);
	const cs_x86 *x = in ? &in->detail->x86 : NULL;
	int i;

	if (!x || !x->encoding.imm_offset || !x->encoding.imm_size)
		return false;
	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_IMM) {
			*imm_off = x->encoding.imm_offset;
			*imm_size = x->encoding.imm_size;
			*value = x->operands[i].imm;
			return true;
		}
	return false;
}

bool cp_x86_insn_is_cmp_reg_imm(const cp_dis *d)
{
	const cs_insn *in = cs_of(d);
	const cs_x86 *x;
	int r;

	if (!in || in->id != X86_INS_CMP)
		return false;
	x = &in->detail->x86;
	if (x->op_count != 2 || x->operands[0].type != X86_OP_REG || x->operands[1].type != X86_OP_IMM)
		return false;
	/* rbp is a register like the others in code built without a frame
	 * pointer: GCC -O2 counts Cython's decode loops in it */
	r = cp_reg64(x->operands[0].reg);
	return r >= 0 && r != R_RSP;
}

unsigned cp_x86_insn_operand_size(const cp_dis *d)
{
	const cs_insn *in = cs_of(d);

	return !in || in->detail->x86.op_count == 0 ? 0 : in->detail->x86.operands[0].size;
}

bool cp_x86_insn_displacement(const cp_dis *d, uint8_t *disp_off, uint8_t *disp_size, int64_t *value)
{
	const cs_insn *in = cs_of(d);
	const cs_x86 *x = in ? &in->detail->x86 : NULL;
	int i;

	if (!x || !x->encoding.disp_offset || !x->encoding.disp_size)
		return false;
	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base != X86_REG_RIP &&
		    (x->operands[i].mem.base != X86_REG_INVALID || x->operands[i].mem.index != X86_REG_INVALID)) {
			*disp_off = x->encoding.disp_offset;
			*disp_size = x->encoding.disp_size;
			*value = x->operands[i].mem.disp;
			return true;
		}
	return false;
}

unsigned cp_x86_insn_size(const cp_dis *d)
{
	return x86_dis(d)->z.in.length;
}
