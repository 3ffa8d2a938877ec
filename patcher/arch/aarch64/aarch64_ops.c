/*
 * aarch64_ops.c - aarch64 instructions as the code walk's ops (see walk_ops.h),
 * and the branch targets entered from other functions.
 */
#include "arch/aarch64/walk_ops.h"
#include "util/sort.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>

static int xreg(const cs_arm64_op *op)
{
	return op->type == ARM64_OP_REG && cp_a64_is_x(op->reg) ? cp_a64_reg(op->reg) : -1;
}

static uint64_t imm_of(const cs_arm64_op *op)
{
	return op->shift.type == ARM64_SFT_LSL ? (uint64_t)op->imm << op->shift.value : (uint64_t)op->imm;
}

static bool is_load(unsigned id)
{
	switch (id) {
	case ARM64_INS_LDR: case ARM64_INS_LDP: case ARM64_INS_LDUR: case ARM64_INS_LDRB: case ARM64_INS_LDRH:
	case ARM64_INS_LDRSW: case ARM64_INS_LDRSB: case ARM64_INS_LDRSH: case ARM64_INS_LDURB:
	case ARM64_INS_LDURH: case ARM64_INS_LDPSW: case ARM64_INS_LDURSW:
		return true;
	default:
		return false;
	}
}

/* Branches and ends. */
static bool control(const cs_insn *in, struct a64_op *o)
{
	const cs_arm64 *a = &in->detail->arm64;
	int r = a->op_count == 1 ? xreg(&a->operands[0]) : -1;

	o->direct = cp_a64_direct_target(in, &o->target);
	switch (in->id) {
	case ARM64_INS_BL: case ARM64_INS_BLR:
		o->kind = A64_OP_CALL;
		o->src = (int8_t)r;
		o->writes = 0x7ffffu | 1u << A64_LR;
		return true;
	case ARM64_INS_BR:
		o->kind = A64_OP_JUMP;
		o->src = (int8_t)r;
		o->branches = o->ends = true;
		return true;
	case ARM64_INS_B:
		o->kind = a->cc == ARM64_CC_INVALID ? A64_OP_JUMP : A64_OP_COND;
		o->branches = true;
		o->ends = a->cc == ARM64_CC_INVALID;
		return true;
	case ARM64_INS_CBZ: case ARM64_INS_CBNZ: case ARM64_INS_TBZ: case ARM64_INS_TBNZ:
		o->kind = A64_OP_COND;
		o->branches = true;
		return true;
	case ARM64_INS_RET: case ARM64_INS_BRK: case ARM64_INS_HLT:
		o->kind = A64_OP_END;
		o->ends = true;
		return true;
	default:
		o->direct = false;
		return false;
	}
}

/* adr, adrp, literal loads, add/sub of an immediate. */
static bool address(const cs_insn *in, struct a64_op *o)
{
	const cs_arm64 *a = &in->detail->arm64;
	uint64_t t;

	if (cp_a64_pc_target(in, &t)) {
		o->kind = in->id == ARM64_INS_ADRP ? A64_OP_ADRP : in->id == ARM64_INS_ADR ? A64_OP_ADR : A64_OP_LDR_LIT;
		o->dst = (int8_t)cp_a64_reg(a->operands[0].reg);
		o->wide = in->id == ARM64_INS_LDR && xreg(&a->operands[0]) >= 0;
		o->v = t;
		return o->dst >= 0;
	}
	if ((in->id != ARM64_INS_ADD && in->id != ARM64_INS_SUB) || a->op_count != 3 || a->update_flags ||
	    a->operands[2].type != ARM64_OP_IMM || xreg(&a->operands[0]) < 0 || xreg(&a->operands[1]) < 0 ||
	    xreg(&a->operands[1]) == A64_SP)
		return false;
	o->kind = A64_OP_ADDI;
	o->dst = (int8_t)xreg(&a->operands[0]);
	o->src = (int8_t)xreg(&a->operands[1]);
	o->v = in->id == ARM64_INS_ADD ? imm_of(&a->operands[2]) : (uint64_t)0 - imm_of(&a->operands[2]);
	return true;
}

/* A load or store based on a register other than sp, with no index and
 * no write-back. */
static bool memory(const cs_insn *in, struct a64_op *o)
{
	const cs_arm64 *a = &in->detail->arm64;
	const cs_arm64_op *m = a->op_count >= 2 ? &a->operands[a->op_count - 1] : NULL;
	int b = m && m->type == ARM64_OP_MEM ? cp_a64_reg(m->mem.base) : -1;

	if (b < 0 || b == A64_SP || m->mem.index != ARM64_REG_INVALID || a->writeback)
		return false;
	o->kind = A64_OP_MEM;
	o->src = (int8_t)b;
	o->v = (uint64_t)(int64_t)m->mem.disp;
	o->load = is_load(in->id);
	o->dst = (int8_t)xreg(&a->operands[0]);
	o->wide = in->id == ARM64_INS_LDR && a->op_count == 2 && o->dst >= 0;
	return true;
}

/* mov between x registers, constants, movk. */
static bool moves(const cs_insn *in, struct a64_op *o)
{
	const cs_arm64 *a = &in->detail->arm64;
	int8_t r;
	uint64_t v;

	if (in->id == ARM64_INS_MOV && a->op_count == 2 && xreg(&a->operands[0]) >= 0 &&
	    xreg(&a->operands[0]) != A64_SP && xreg(&a->operands[1]) >= 0 && xreg(&a->operands[1]) != A64_SP) {
		o->kind = A64_OP_MOVR;
		o->dst = (int8_t)xreg(&a->operands[0]);
		o->src = (int8_t)xreg(&a->operands[1]);
		return true;
	}
	if (cp_a64_constant(in, &r, &v)) {
		o->kind = A64_OP_CONST;
		o->dst = r;
		o->v = v;
		return true;
	}
	if (in->id != ARM64_INS_MOVK || a->op_count != 2 || a->operands[1].type != ARM64_OP_IMM ||
	    cp_a64_reg(a->operands[0].reg) < 0 || cp_a64_reg(a->operands[0].reg) == A64_SP)
		return false;
	o->kind = A64_OP_MOVK;
	o->dst = (int8_t)cp_a64_reg(a->operands[0].reg);
	o->wide = cp_a64_is_x(a->operands[0].reg);
	o->shift = a->operands[1].shift.type == ARM64_SFT_LSL ? (uint8_t)a->operands[1].shift.value : 0;
	o->v = (uint64_t)a->operands[1].imm & 0xffff;
	return true;
}

static void op_of(csh h, const cs_insn *in, struct a64_op *o)
{
	memset(o, 0, sizeof(*o));
	o->addr = in->address;
	o->dst = o->src = -1;
	o->writes = cp_a64_writes(h, in);
	if (control(in, o) || address(in, o) || memory(in, o) || moves(in, o))
		return;
	o->kind = A64_OP_OTHER;
}

static void bad_op(struct a64_op *o, uint64_t addr)
{
	memset(o, 0, sizeof(*o));
	o->addr = addr;
	o->dst = o->src = -1;
	o->kind = A64_OP_END;
	o->writes = ~0u;
	o->ends = true;
}

cp_status cp_a64_decode_ops(const cp_image *img, cp_dis *d, uint64_t start, uint64_t end, struct a64_op **ops,
			    size_t *n, cp_error *err)
{
	const struct cp_section *s = cp_image_section_at(img, start);
	const uint8_t *code = s ? cp_image_va_bytes(img, start, end - start) : NULL;
	size_t i, count = (size_t)((end - start) / A64_INSN);

	*n = 0;
	*ops = NULL;
	if (!code || !count)
		return CP_OK;
	*ops = calloc(count, sizeof(**ops));
	if (!*ops)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < count; i++) {
		struct a64_op *o = &(*ops)[i];

		if (!cp_dis_bytes(d, code + i * A64_INSN, A64_INSN, start + i * A64_INSN)) {
			bad_op(o, start + i * A64_INSN);
			continue;
		}
		op_of(a64_dis(d)->handle, a64_dis(d)->insn, o);
		o->target_in = o->direct && o->target >= start && o->target < start + count * A64_INSN &&
			       o->target % A64_INSN == 0;
		o->target_idx = o->target_in ? (size_t)((o->target - start) / A64_INSN) : 0;
	}
	*n = count;
	return CP_OK;
}

static cp_status section_targets(const cp_image *img, cp_dis *d, uint64_t start, uint64_t end,
				 struct a64_targets *t, size_t *cap, cp_error *err)
{
	uint64_t addr = (start + A64_INSN - 1) & ~(uint64_t)(A64_INSN - 1), target;
	const uint8_t *code;

	for (; addr + A64_INSN <= end; addr += A64_INSN) {
		code = cp_image_va_bytes(img, addr, A64_INSN);
		if (!code || !cp_dis_bytes(d, code, A64_INSN, addr))
			continue;
		if (a64_dis(d)->insn->id == ARM64_INS_BL || !cp_a64_direct_target(a64_dis(d)->insn, &target) ||
		    cp_image_func_after(img, target) == cp_image_func_after(img, addr))
			continue;
		if (CP_GROW(t->addr, *cap, t->n + 1))
			return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
		t->addr[t->n++] = target;
	}
	return CP_OK;
}

cp_status cp_a64_external_targets(const cp_image *img, cp_dis *d, struct a64_targets *t, cp_error *err)
{
	uint64_t a, b;
	size_t i, cap = 0;
	cp_status st = CP_OK;

	memset(t, 0, sizeof(*t));
	for (i = 0; !st && i < img->nsec; i++)
		if (cp_walk_span(&img->sec[i], 0, 0, &a, &b))
			st = section_targets(img, d, a, b, t, &cap, err);
	if (t->n)
		qsort(t->addr, t->n, sizeof(*t->addr), cp_cmp_u64);
	return st;
}

bool cp_a64_targets_has(const struct a64_targets *t, uint64_t addr)
{
	return t->n && bsearch(&addr, t->addr, t->n, sizeof(*t->addr), cp_cmp_u64);
}
