/*
 * aarch64_frame_eval.c - aarch64's abstract frame evaluator (see arch/frame.h).
 *
 * The same model as x86-64's: values carry known-bit masks, the frame is
 * bytes below the entry stack pointer with where each came from, the walk
 * is linear and, after a return or an unconditional branch, sp goes back
 * to the depth the prologue set up. What differs is how aarch64 builds
 * data: addresses take ADRP and an ADD, stores come in pairs (stp), the
 * stack pointer moves with write-back addressing, constants are made by
 * MOVZ/MOVK, and templates are copied through q registers or memcpy.
 * Cython 3.0's string table ({slot, string, length, ...} entries stored by
 * stp) and Cython 3.2+'s length index (read by ldr w, [xN, wI, sxtw #2])
 * are what the scan reads back.
 */
#include "arch/aarch64/aarch64.h"
#include "arch/aarch64/walk_ops.h"
#include "arch/frame_build.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>


enum { K_BITS, K_FRAME, K_ADDR };

struct aval {
	uint8_t kind;
	uint64_t v;
	uint64_t known;  /* K_BITS: the known bits of v */
	uint64_t origin; /* the instruction that set it */
	uint64_t imm;    /* the instruction whose immediate is this value, or 0 */
	uint8_t scale;   /* unknown bits shifted left: an index times this
			  * (sbfiz x1, x23, #2, #32 before ldrb w0, [x27, x1]) */
	bool indexed;    /* K_ADDR: v plus an unknown index (add x1, x24, x23,
			  * lsl #3: x86-64's [base + index * 8] made apart) */
	uint64_t va;     /* K_BITS: the read-only data it was loaded from as it
			  * is (ldp x4, x5, [x24, #112] of a template), or 0;
			  * only reg_load sets it, reg_write clears it */
	uint64_t slot;   /* the 8 bytes at this address, loaded whole (a GOT
			  * slot for a call through blr, -fno-plt), or 0; as va */
};

struct vreg {
	uint8_t v[16], known[16];
};

struct eval {
	const cp_image *img;
	struct cp_frame *f;
	struct aval reg[A64_NREG]; /* x0..x30, sp */
	struct vreg vr[32];
	int64_t body;              /* sp after the prologue */
	bool body_set, oom;
	bool ended;                /* the last instruction did not fall through */
	const struct a64_entry *blk; /* the function's blocks, with the walk's entry states */
	size_t nblk;
	const cs_insn *in;
};

static const struct aval unknown = { K_BITS, 0, 0, 0, 0, 0, false, 0, 0 };

static struct aval bits(uint64_t v, uint64_t known)
{
	struct aval a = { K_BITS, v & known, known, 0, 0, 0, false, 0, 0 };

	return a;
}

static uint64_t size_mask(unsigned size)
{
	return size >= 8 ? ~0ull : ((1ull << (size * 8)) - 1);
}

static bool frame_index(int64_t off, unsigned len, size_t *idx)
{
	return cp_frame_index(off, len, idx);
}

static void mem_write_bytes(struct eval *e, int64_t off, const uint8_t *v, const uint8_t *k, unsigned len,
			    uint64_t va, uint64_t insn)
{
	cp_frame_put(e->f, off, v, k, len, va, insn ? insn : e->in ? e->in->address : 0);
	cp_frame_snap_fill(e->f, off, len);
}

/* A register's value stored: its cells point at the instruction that made
 * the value (a mov of an immediate), so that the planner finds the field. */
static void mem_write(struct eval *e, int64_t off, unsigned size, struct aval a)
{
	uint8_t v[8], k[8];
	unsigned i;

	if (a.kind != K_BITS)
		a = unknown;
	for (i = 0; i < size && i < 8; i++) {
		v[i] = (uint8_t)(a.v >> (8 * i));
		k[i] = (uint8_t)(a.known >> (8 * i));
	}
	mem_write_bytes(e, off, v, k, size > 8 ? 8 : size, a.va, a.imm ? a.imm : a.origin);
}

static void mem_forget(struct eval *e, int64_t off, unsigned size)
{
	static const uint8_t zero[32];

	mem_write_bytes(e, off, zero, zero, size > 32 ? 32 : size, 0, 0);
}

static struct aval mem_read(struct eval *e, int64_t off, unsigned size)
{
	uint64_t v, k;

	return cp_frame_get(e->f, off, size, &v, &k) ? bits(v, k) : unknown;
}

/* Copies len bytes of the file at va into the frame (template copies). */
static void mem_copy_in(struct eval *e, int64_t off, uint64_t va, uint64_t len)
{
	cp_frame_copy_in(e->f, e->img, off, va, len, e->in ? e->in->address : 0);
	cp_frame_snap_fill(e->f, off, len);
}

static void mem_fill(struct eval *e, int64_t off, uint8_t byte, uint64_t len)
{
	cp_frame_fill(e->f, off, byte, len, e->in ? e->in->address : 0);
	cp_frame_snap_fill(e->f, off, len);
}

/* --- registers ------------------------------------------------------- */

static int vreg_index(arm64_reg r)
{
	if (r >= ARM64_REG_Q0 && r <= ARM64_REG_Q31)
		return (int)(r - ARM64_REG_Q0);
	if (r >= ARM64_REG_D0 && r <= ARM64_REG_D31)
		return (int)(r - ARM64_REG_D0);
	if (r >= ARM64_REG_V0 && r <= ARM64_REG_V31)
		return (int)(r - ARM64_REG_V0);
	return -1;
}

/* The bytes a register operand holds: 8 for x, 4 for w, 16 for q, 8 for d. */
static unsigned reg_size(arm64_reg r)
{
	if (cp_a64_is_x(r) || r == ARM64_REG_XZR || (r >= ARM64_REG_D0 && r <= ARM64_REG_D31))
		return 8;
	if (r >= ARM64_REG_Q0 && r <= ARM64_REG_Q31)
		return 16;
	return 4;
}

static struct aval reg_read(struct eval *e, arm64_reg r)
{
	struct aval a;
	int k = cp_a64_reg(r);

	if (r == ARM64_REG_XZR || r == ARM64_REG_WZR)
		return bits(0, ~0ull);
	if (k < 0)
		return unknown;
	a = e->reg[k];
	if (reg_size(r) == 4) {
		if (a.kind != K_BITS)
			return unknown;
		a.v &= 0xffffffffull;
		a.known &= 0xffffffffull;
	}
	return a;
}

/* A w write clears the upper half; the stack pointer keeps K_FRAME. */
static void reg_write(struct eval *e, arm64_reg r, struct aval a)
{
	int k = cp_a64_reg(r);

	if (k < 0)
		return;
	if (reg_size(r) == 4) {
		if (a.kind != K_BITS)
			a = unknown;
		a.v &= 0xffffffffull;
		a.known |= 0xffffffff00000000ull;
	}
	if (!a.origin && e->in)
		a.origin = e->in->address;
	a.va = a.slot = 0;
	e->reg[k] = a;
}

/* A register loaded from the address at (8 bytes whole: slot), from
 * read-only data as the file holds it (va), or from neither (0). */
static void reg_load(struct eval *e, arm64_reg r, struct aval a, uint64_t va, uint64_t slot)
{
	int k = cp_a64_reg(r);

	reg_write(e, r, a);
	if (k >= 0) {
		e->reg[k].va = va;
		e->reg[k].slot = slot;
	}
}

/* --- what the scan reads back ----------------------------------------- */

static bool grow_failed(struct eval *e, bool failed)
{
	if (failed)
		e->oom = true;
	return failed;
}

static void note_addr(struct eval *e, uint64_t va)
{
	if (!cp_frame_note_addr(e->f, va))
		e->oom = true;
}

/* An address in read-only data completed (adr, or add to an adrp page):
 * what x86-64's rip-relative lea is. */
static void note_lea(struct eval *e, uint64_t va)
{
	const struct cp_section *s = cp_image_section_at(e->img, va);
	struct cp_frame *f = e->f;

	note_addr(e, va);
	if (!s || !cp_section_is_rodata(s))
		return;
	if (grow_failed(e, CP_GROW(f->leas, f->capleas, f->nleas + 1) ||
			       CP_GROW(f->lea_insn, f->capleainsn, f->nleas + 1)))
		return;
	f->leas[f->nleas] = va;
	f->lea_insn[f->nleas++] = e->in->address;
}

static void note_astore(struct eval *e, int64_t off, uint64_t va)
{
	if (!cp_frame_note_astore(e->f, off, va, e->in->address))
		e->oom = true;
}



static void snapshot(struct eval *e, int64_t base)
{
	if (!cp_frame_snapshot(e->f, base))
		e->oom = true;
}

/* Every immediate (non-negative), those of compares apart, and the known
 * values compared from registers. */
static void record_imms(struct eval *e, const cs_arm64 *a)
{
	struct cp_frame *f = e->f;
	bool cmp = e->in->id == ARM64_INS_CMP;
	int i;

	for (i = 0; i < a->op_count; i++) {
		const cs_arm64_op *op = &a->operands[i];
		uint64_t v;

		if (op->type != ARM64_OP_IMM || op->imm < 0 || cp_a64_direct_target(e->in, &v))
			continue;
		v = op->shift.type == ARM64_SFT_LSL ? (uint64_t)op->imm << op->shift.value : (uint64_t)op->imm;
		if (grow_failed(e, CP_GROW(f->imms, f->capimms, f->nimms + 1) ||
				       CP_GROW(f->cmps, f->capcmps, f->ncmps + 1)))
			return;
		f->imms[f->nimms++] = v;
		if (cmp)
			f->cmps[f->ncmps++] = v;
	}
	for (i = 0; cmp && i < a->op_count; i++) {
		struct aval x;

		if (a->operands[i].type != ARM64_OP_REG)
			continue;
		x = reg_read(e, a->operands[i].reg);
		if (x.kind == K_BITS && x.known == size_mask(reg_size(a->operands[i].reg)) &&
		    !grow_failed(e, CP_GROW(f->cmpvals, f->capcmpvals, f->ncmpvals + 1)))
			f->cmpvals[f->ncmpvals++] = x.v;
	}
}

/* --- memory operands ---------------------------------------------------- */

/* Where a load or store goes: its memory operand's address (base + disp,
 * or the base alone after a post-index), and the base's write-back. */
struct access {
	int mem;              /* the operand index */
	int nregs;            /* registers transferred (1, or 2 for pairs) */
	unsigned width;       /* bytes per register */
	struct aval at;       /* the first byte's address */
	bool wb;
	int64_t wb_delta;     /* what the base register becomes: base + delta */
	bool indexed;
};

static unsigned access_width(unsigned id, arm64_reg r)
{
	switch (id) {
	case ARM64_INS_STRB: case ARM64_INS_LDRB: case ARM64_INS_STURB: case ARM64_INS_LDURB:
	case ARM64_INS_LDRSB: case ARM64_INS_LDURSB:
		return 1;
	case ARM64_INS_STRH: case ARM64_INS_LDRH: case ARM64_INS_STURH: case ARM64_INS_LDURH:
	case ARM64_INS_LDRSH: case ARM64_INS_LDURSH:
		return 2;
	case ARM64_INS_LDRSW: case ARM64_INS_LDURSW: case ARM64_INS_LDPSW:
		return 4;
	default:
		return reg_size(r);
	}
}

static struct aval offset(struct aval b, int64_t d)
{
	if (b.kind == K_BITS && b.known != ~0ull)
		return unknown;
	b.v += (uint64_t)d;
	b.origin = 0;
	b.imm = 0;
	return b;
}

static bool find_access(struct eval *e, const cs_arm64 *a, struct access *x)
{
	const cs_arm64_op *m;
	struct aval base;

	memset(x, 0, sizeof(*x));
	for (x->mem = 0; x->mem < a->op_count && a->operands[x->mem].type != ARM64_OP_MEM; x->mem++)
		;
	if (x->mem == 0 || x->mem >= a->op_count)
		return false;
	m = &a->operands[x->mem];
	x->nregs = x->mem;
	x->width = access_width(e->in->id, a->operands[0].reg);
	base = reg_read(e, m->mem.base);
	x->indexed = m->mem.index != ARM64_REG_INVALID;
	x->wb = a->writeback;
	if (x->wb && x->mem + 1 < a->op_count && a->operands[x->mem + 1].type == ARM64_OP_IMM) {
		x->at = base; /* post-index: [base], #imm */
		x->wb_delta = a->operands[x->mem + 1].imm;
	} else {
		x->at = offset(base, m->mem.disp);
		x->wb_delta = m->mem.disp;
	}
	if (x->indexed)
		x->at = unknown;
	return true;
}

static void write_back(struct eval *e, const cs_arm64 *a, const struct access *x)
{
	const cs_arm64_op *m = &a->operands[x->mem];

	if (x->wb)
		reg_write(e, m->mem.base, offset(reg_read(e, m->mem.base), x->wb_delta));
}

/* ldr w, [xB, wI, sxtw #2] with xB in the frame: the decode loop reading
 * the length index. */
static void record_indexed_load(struct eval *e, const cs_arm64 *a, const struct access *x)
{
	const cs_arm64_op *m = &a->operands[x->mem];
	struct aval base = reg_read(e, m->mem.base);
	struct cp_frame *f = e->f;
	struct cp_frame_load *l;

	if (!x->indexed || base.kind != K_FRAME || grow_failed(e, CP_GROW(f->loads, f->caploads, f->nloads + 1)))
		return;
	l = &f->loads[f->nloads++];
	l->insn = e->in->address;
	l->base = (int64_t)base.v + m->mem.disp;
	l->scale = (uint8_t)(1u << (m->shift.type ? m->shift.value : 0));
	if (reg_read(e, m->mem.index).scale > 1)
		l->scale = (uint8_t)(l->scale * reg_read(e, m->mem.index).scale);
	l->width = (uint8_t)x->width;
	if (l->scale == 4)
		snapshot(e, l->base);
}

/* A vector register's 16 bytes stored to the frame. */
static void store_vreg(struct eval *e, int64_t off, arm64_reg r, unsigned width)
{
	int k = vreg_index(r);

	if (k < 0 || width > 16) {
		mem_forget(e, off, width);
		return;
	}
	mem_write_bytes(e, off, e->vr[k].v, e->vr[k].known, width, 0, 0);
}

static void store_one(struct eval *e, int64_t off, arm64_reg r, unsigned width)
{
	struct aval v;

	if (vreg_index(r) >= 0) {
		store_vreg(e, off, r, width);
		return;
	}
	v = reg_read(e, r);
	if (v.kind == K_ADDR && width == 8) {
		note_astore(e, off, v.v);
		mem_forget(e, off, 8);
		return;
	}
	mem_write(e, off, width, v);
}

static void do_store(struct eval *e, const cs_arm64 *a)
{
	struct access x;
	int i;

	if (!find_access(e, a, &x))
		return;
	if (x.at.kind == K_ADDR && x.width == 8)
		note_addr(e, x.at.v); /* a store through an address register */
	for (i = 0; i < x.nregs && x.at.kind == K_FRAME; i++)
		store_one(e, (int64_t)x.at.v + i * (int64_t)x.width, a->operands[i].reg, x.width);
	write_back(e, a, &x);
}

/* The file's bytes at va when they are read-only data, else NULL. */
static const uint8_t *rodata(const struct eval *e, uint64_t va, unsigned len)
{
	const struct cp_section *s = cp_image_section_at(e->img, va);

	return s && cp_section_is_rodata(s) ? cp_image_va_bytes(e->img, va, len) : NULL;
}

static void load_vreg(struct eval *e, arm64_reg r, const struct aval *at, int64_t off, unsigned width)
{
	int k = vreg_index(r);
	const uint8_t *p = at->kind == K_ADDR && !at->indexed ? rodata(e, at->v + (uint64_t)off, width) : NULL;
	size_t idx;

	if (k < 0)
		return;
	memset(&e->vr[k], 0, sizeof(e->vr[k]));
	if (p) {
		memcpy(e->vr[k].v, p, width);
		memset(e->vr[k].known, 0xff, width);
	} else if (at->kind == K_FRAME && frame_index((int64_t)at->v + off, width, &idx)) {
		memcpy(e->vr[k].v, e->f->val + idx, width);
		memcpy(e->vr[k].known, e->f->known + idx, width);
	}
}

static void load_one(struct eval *e, arm64_reg r, const struct aval *at, int64_t off, unsigned width)
{
	const uint8_t *p;
	uint64_t v = 0;

	if (vreg_index(r) >= 0) {
		load_vreg(e, r, at, off, width);
		return;
	}
	if (at->kind == K_FRAME) {
		reg_write(e, r, mem_read(e, (int64_t)at->v + off, width));
		return;
	}
	p = at->kind == K_ADDR && !at->indexed && width <= 8 ? rodata(e, at->v + (uint64_t)off, width) : NULL;
	if (p)
		memcpy(&v, p, width);
	reg_load(e, r, p ? bits(v, size_mask(width)) : unknown, p ? at->v + (uint64_t)off : 0,
		 at->kind == K_ADDR && !at->indexed && width == 8 ? at->v + (uint64_t)off : 0);
}

static void do_load(struct eval *e, const cs_arm64 *a)
{
	struct access x;
	uint64_t lit;
	int i;

	if (cp_a64_pc_target(e->in, &lit)) {
		struct aval at = { K_ADDR, lit, 0, 0, 0, 0, false, 0, 0 };

		load_one(e, a->operands[0].reg, &at, 0, access_width(e->in->id, a->operands[0].reg));
		return;
	}
	if (!find_access(e, a, &x))
		return;
	record_indexed_load(e, a, &x);
	for (i = 0; i < x.nregs; i++)
		load_one(e, a->operands[i].reg, &x.at, i * (int64_t)x.width, x.width);
	if (e->in->id == ARM64_INS_LDRSW || e->in->id == ARM64_INS_LDRSB || e->in->id == ARM64_INS_LDRSH)
		reg_write(e, a->operands[0].reg, unknown); /* sign extension: not followed */
	write_back(e, a, &x);
}

/* --- arithmetic --------------------------------------------------------- */

static struct aval operand(struct eval *e, const cs_arm64_op *op)
{
	struct aval a;

	if (op->type == ARM64_OP_REG)
		return reg_read(e, op->reg);
	if (op->type != ARM64_OP_IMM)
		return unknown;
	a = bits(op->shift.type == ARM64_SFT_LSL ? (uint64_t)op->imm << op->shift.value : (uint64_t)op->imm,
		 ~0ull);
	a.imm = e->in->address;
	return a;
}

static struct aval logic(unsigned id, struct aval a, struct aval b)
{
	uint64_t v, k;

	if (a.kind != K_BITS || b.kind != K_BITS)
		return unknown;
	cp_bits_logic(id == ARM64_INS_AND ? CP_BIT_AND : id == ARM64_INS_ORR ? CP_BIT_OR : CP_BIT_XOR, a.v, a.known, b.v, b.known,
		      &v, &k);
	return bits(v, k);
}

/* add/sub: an address or frame offset moved by a constant, or two known
 * values; sp moves with the frame. */
static struct aval arith(unsigned id, struct aval a, struct aval b)
{
	bool sub = id == ARM64_INS_SUB;

	if (b.kind == K_BITS && b.known == ~0ull && a.kind != K_BITS)
		return offset(a, sub ? -(int64_t)b.v : (int64_t)b.v);
	if (!sub && a.kind == K_BITS && a.known == ~0ull && b.kind != K_BITS)
		return offset(b, (int64_t)a.v);
	if (!sub && a.kind == K_ADDR && b.kind == K_BITS) {
		a.indexed = true; /* base + an index the code computes */
		a.origin = a.imm = 0;
		return a;
	}
	if (a.kind != K_BITS || b.kind != K_BITS || a.known != ~0ull || b.known != ~0ull)
		return unknown;
	return bits(sub ? a.v - b.v : a.v + b.v, ~0ull);
}

static void do_arith(struct eval *e, const cs_arm64 *a, unsigned id)
{
	struct aval x, y, r;

	if (a->op_count != 3 || a->update_flags) {
		reg_write(e, a->operands[0].reg, unknown);
		return;
	}
	x = operand(e, &a->operands[1]);
	y = operand(e, &a->operands[2]);
	r = id == ARM64_INS_ADD || id == ARM64_INS_SUB ? arith(id, x, y) : logic(id, x, y);
	if (r.kind == K_ADDR && x.kind == K_ADDR && !r.indexed)
		note_lea(e, r.v);
	r.imm = 0;
	reg_write(e, a->operands[0].reg, r);
}

static uint64_t field_mask(unsigned width)
{
	return width >= 64 ? ~0ull : (1ull << width) - 1;
}

/* bfi, ubfiz, ubfx, lsl and lsr by an immediate, with known bits. */
static void do_bitfield(struct eval *e, const cs_arm64 *a, unsigned id)
{
	struct aval d = reg_read(e, a->operands[0].reg), n = reg_read(e, a->operands[1].reg), r;
	unsigned lsb = (unsigned)a->operands[2].imm, w = a->op_count > 3 ? (unsigned)a->operands[3].imm : 0;
	uint64_t m = field_mask(w);

	if (n.kind != K_BITS || lsb >= 64 || (id == ARM64_INS_BFI && d.kind != K_BITS)) {
		reg_write(e, a->operands[0].reg, unknown);
		return;
	}
	if (n.known != ~0ull && (id == ARM64_INS_SBFIZ || id == ARM64_INS_UBFIZ || id == ARM64_INS_LSL) && lsb < 8) {
		r = unknown;
		r.scale = (uint8_t)(1u << lsb); /* an index scaled for the load after */
		reg_write(e, a->operands[0].reg, r);
		return;
	}
	switch (id) {
	case ARM64_INS_BFI:
		r = bits((d.v & ~(m << lsb)) | ((n.v & m) << lsb), (d.known & ~(m << lsb)) | ((n.known & m) << lsb));
		break;
	case ARM64_INS_UBFIZ: case ARM64_INS_SBFIZ:
		if (id == ARM64_INS_SBFIZ && w < 64 && (n.known >> (w - 1)) & (n.v >> (w - 1)) & 1) {
			r = unknown; /* a negative field: not followed */
			break;
		}
		r = bits((n.v & m) << lsb, ~(m << lsb) | ((n.known & m) << lsb));
		break;
	case ARM64_INS_UBFX:
		r = bits((n.v >> lsb) & m, ~m | ((n.known >> lsb) & m));
		break;
	case ARM64_INS_LSL:
		r = bits(n.v << lsb, (n.known << lsb) | field_mask(lsb));
		break;
	default: /* LSR */
		r = bits(n.v >> lsb, (n.known >> lsb) | ~(~0ull >> lsb));
		break;
	}
	if ((id == ARM64_INS_SBFIZ || id == ARM64_INS_UBFIZ || id == ARM64_INS_LSL) && lsb < 8)
		r.scale = (uint8_t)(1u << lsb); /* an index scaled for the load after */
	reg_write(e, a->operands[0].reg, r);
}

/* mov (register or immediate), movz, movn, movk. */
static void do_mov(struct eval *e, const cs_arm64 *a, unsigned id)
{
	struct aval d, v;
	unsigned sh;

	if (a->op_count != 2)
		return;
	if (id != ARM64_INS_MOVK) {
		v = operand(e, &a->operands[1]);
		if (id == ARM64_INS_MOVN && v.kind == K_BITS)
			v.v = ~v.v;
		/* mov x27, x2: the same value, loaded from where x2 was */
		if (a->operands[1].type == ARM64_OP_REG && reg_size(a->operands[0].reg) == 8)
			reg_load(e, a->operands[0].reg, v, v.va, v.slot);
		else
			reg_write(e, a->operands[0].reg, v);
		return;
	}
	d = reg_read(e, a->operands[0].reg);
	sh = a->operands[1].shift.type == ARM64_SFT_LSL ? a->operands[1].shift.value : 0;
	if (d.kind != K_BITS || sh > 48) {
		reg_write(e, a->operands[0].reg, unknown);
		return;
	}
	d.v = (d.v & ~(0xffffull << sh)) | (((uint64_t)a->operands[1].imm & 0xffff) << sh);
	d.known |= 0xffffull << sh;
	d.origin = e->in->address;
	d.imm = e->in->address;
	reg_write(e, a->operands[0].reg, d);
}

/* --- calls and control ------------------------------------------------ */

static void note_arglen(struct eval *e, const char *name)
{
	const struct aval *ptr = &e->reg[0], *len = &e->reg[1];
	struct cp_frame *f = e->f;
	bool is_bytes = !strcmp(name, "PyBytes_FromStringAndSize");

	if (!is_bytes && strcmp(name, "PyUnicode_DecodeUTF8"))
		return;
	if (len->kind != K_BITS || len->known != ~0ull ||
	    (ptr->kind == K_BITS && ptr->known == ~0ull && ptr->v == 0))
		return; /* unknown, or an allocation PyBytes_FromStringAndSize(NULL, n) */
	if (grow_failed(e, CP_GROW(f->arglens, f->caparglens, f->narglens + 1)))
		return;
	f->arglens[f->narglens].insn = e->in->address;
	f->arglens[f->narglens].len = len->v;
	f->arglens[f->narglens].set = len->imm ? len->imm : len->origin;
	f->arglens[f->narglens].ptr_set = ptr->origin;
	f->arglens[f->narglens].is_bytes = is_bytes;
	f->narglens++;
}

static void note_call(struct eval *e, uint64_t target, const char *name)
{
	struct cp_frame *f = e->f;
	struct cp_frame_call *c;
	int i;

	if (grow_failed(e, CP_GROW(f->calls, f->capcalls, f->ncalls + 1)))
		return;
	c = &f->calls[f->ncalls++];
	memset(c, 0, sizeof(*c));
	c->insn = e->in->address;
	c->target = target;
	c->name = name;
	for (i = 0; i < A64_NARGS; i++) {
		const struct aval *a = &e->reg[cp_a64_arg_regs[i]];

		if (a->kind != K_BITS || a->known != ~0ull)
			continue;
		c->known |= (uint8_t)(1u << i);
		c->arg[i] = a->v;
		c->arg_imm[i] = a->imm;
	}
}

static void clobber_call(struct eval *e)
{
	int r;

	for (r = 0; r <= A64_X18; r++)
		e->reg[r] = unknown;
	e->reg[A64_LR] = unknown;
	memset(e->vr, 0, sizeof(e->vr));
}

/* memcpy / memset filling the frame; constant string lengths. */
static void do_call(struct eval *e)
{
	const struct aval *x0 = &e->reg[0], *x1 = &e->reg[1], *x2 = &e->reg[2];
	uint64_t target = 0;
	const char *name = NULL;

	if (cp_a64_direct_target(e->in, &target))
		name = cp_image_plt_name(e->img, target);
	else if (e->in->detail->arm64.op_count == 1 && cp_a64_reg(e->in->detail->arm64.operands[0].reg) >= 0 &&
		 e->reg[cp_a64_reg(e->in->detail->arm64.operands[0].reg)].slot)
		name = cp_image_got_name(e->img, e->reg[cp_a64_reg(e->in->detail->arm64.operands[0].reg)].slot); /* -fno-plt */
	note_call(e, target, name);
	if (name)
		note_arglen(e, name);
	cp_frame_resolve_astores(e->f);
	if (name && x0->kind == K_FRAME && x2->kind == K_BITS && x2->known == ~0ull) {
		if ((!strcmp(name, "memcpy") || !strcmp(name, "memmove")) && x1->kind == K_ADDR && !x1->indexed)
			mem_copy_in(e, (int64_t)x0->v, x1->v, x2->v);
		else if (!strcmp(name, "memset") && x1->kind == K_BITS && (x1->known & 0xff) == 0xff)
			mem_fill(e, (int64_t)x0->v, (uint8_t)x1->v, x2->v);
	}
	clobber_call(e);
}

/* After a return or an unconditional branch: sp goes back to the body's
 * depth; callee-saved registers that point into the frame stay (GCC keeps
 * a stack array's address in one for the whole function: the length index
 * read in a loop laid out after its jump); nothing else is known until the
 * next block's start takes what the code walk knows there (entry). */
static void end_block(struct eval *e)
{
	int i;

	for (i = 0; i < A64_SP; i++)
		if (i < A64_X19 || i > A64_FP || e->reg[i].kind != K_FRAME)
			e->reg[i] = unknown;
	memset(e->vr, 0, sizeof(e->vr));
	if (e->body_set) {
		e->reg[A64_SP].kind = K_FRAME;
		e->reg[A64_SP].v = (uint64_t)e->body;
	}
	e->ended = true;
}

/* The start of a block laid out after an end: the addresses and constants
 * every way into it agrees on (the code walk's data flow), where linear
 * reading knows nothing (GCC lays a loop out after unrelated code that
 * reuses its registers). */
static void enter_block(struct eval *e, const struct a64_entry *b)
{
	int r;

	for (r = 0; r < A64_SP; r++) {
		const struct cp_val *v = &b->reg[r];

		if (e->reg[r].kind == K_FRAME)
			continue;
		if (v->kind == CP_V_ADDR)
			e->reg[r] = (struct aval){ K_ADDR, v->v, 0, v->origin, 0, 0, false, 0, 0 };
		else if (v->kind == CP_V_IMM)
			e->reg[r] = (struct aval){ K_BITS, v->v, ~0ull, v->origin, v->origin, 0, false, 0, 0 };
		else if (v->kind == CP_V_LOAD) /* what blr calls (-fno-plt) */
			e->reg[r] = (struct aval){ K_BITS, 0, 0, v->origin, 0, 0, false, 0, v->v };
	}
}

/* The prologue is over at the first instruction that neither moves sp
 * nor saves registers below it. */
static void note_body(struct eval *e, const cs_insn *in)
{
	const cs_arm64 *a = &in->detail->arm64;
	bool prologue = (in->id == ARM64_INS_SUB || in->id == ARM64_INS_STP || in->id == ARM64_INS_STR) &&
			(a->writeback || (a->op_count >= 1 && a->operands[0].type == ARM64_OP_REG &&
					  a->operands[0].reg == ARM64_REG_SP));

	if (!e->body_set && !prologue && e->reg[A64_SP].kind == K_FRAME) {
		e->body = (int64_t)e->reg[A64_SP].v;
		e->body_set = true;
	}
}

static void forget_written(struct eval *e, csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0, i;

	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return;
	for (i = 0; i < nwr; i++) {
		int r = cp_a64_reg((arm64_reg)wr[i]), v = vreg_index((arm64_reg)wr[i]);

		if (r >= 0 && r != A64_SP && in->id != ARM64_INS_CMP && in->id != ARM64_INS_CMN &&
		    in->id != ARM64_INS_TST)
			e->reg[r] = unknown;
		if (v >= 0)
			memset(&e->vr[v], 0, sizeof(e->vr[v]));
	}
}

static bool is_store(unsigned id)
{
	switch (id) {
	case ARM64_INS_STR: case ARM64_INS_STP: case ARM64_INS_STUR: case ARM64_INS_STRB: case ARM64_INS_STRH:
	case ARM64_INS_STURB: case ARM64_INS_STURH: case ARM64_INS_STNP:
		return true;
	default:
		return false;
	}
}

static bool is_load(unsigned id)
{
	switch (id) {
	case ARM64_INS_LDR: case ARM64_INS_LDP: case ARM64_INS_LDUR: case ARM64_INS_LDRB: case ARM64_INS_LDRH:
	case ARM64_INS_LDRSW: case ARM64_INS_LDRSB: case ARM64_INS_LDRSH: case ARM64_INS_LDURB:
	case ARM64_INS_LDURH: case ARM64_INS_LDPSW: case ARM64_INS_LDURSW: case ARM64_INS_LDNP:
		return true;
	default:
		return false;
	}
}

static bool step_data(struct eval *e, const cs_insn *in, const cs_arm64 *a)
{
	uint64_t t;

	switch (in->id) {
	case ARM64_INS_ADRP: case ARM64_INS_ADR:
		if (!cp_a64_pc_target(in, &t))
			return false;
		reg_write(e, a->operands[0].reg, (struct aval){ K_ADDR, t, 0, in->address, 0, 0, false, 0, 0 });
		if (in->id == ARM64_INS_ADR)
			note_lea(e, t);
		return true;
	case ARM64_INS_MOV: case ARM64_INS_MOVZ: case ARM64_INS_MOVN: case ARM64_INS_MOVK:
		do_mov(e, a, in->id);
		return true;
	case ARM64_INS_ADD: case ARM64_INS_SUB: case ARM64_INS_AND: case ARM64_INS_ORR: case ARM64_INS_EOR:
		do_arith(e, a, in->id);
		return true;
	case ARM64_INS_BFI: case ARM64_INS_UBFIZ: case ARM64_INS_SBFIZ: case ARM64_INS_UBFX: case ARM64_INS_LSL:
	case ARM64_INS_LSR:
		if (a->op_count < 3 || a->operands[2].type != ARM64_OP_IMM)
			return false;
		do_bitfield(e, a, in->id);
		return true;
	default:
		if (is_store(in->id))
			do_store(e, a);
		else if (is_load(in->id))
			do_load(e, a);
		else
			return false;
		return true;
	}
}

static void step(struct eval *e, csh h, const cs_insn *in)
{
	const cs_arm64 *a = &in->detail->arm64;

	e->in = in;
	record_imms(e, a);
	note_body(e, in);
	if (in->id == ARM64_INS_BL || in->id == ARM64_INS_BLR) {
		do_call(e);
		return;
	}
	if (in->id == ARM64_INS_RET || in->id == ARM64_INS_BR || in->id == ARM64_INS_BRK ||
	    in->id == ARM64_INS_HLT || (in->id == ARM64_INS_B && a->cc == ARM64_CC_INVALID)) {
		end_block(e);
		return;
	}
	if (!step_data(e, in, a))
		forget_written(e, h, in);
}



static void run(struct eval *e, cp_dis *d, const uint8_t *code, size_t size, uint64_t addr)
{
	size_t k = 0;

	while (size >= A64_INSN && !e->oom) {
		while (k < e->nblk && e->blk[k].addr < addr)
			k++;
		if (e->ended && k < e->nblk && e->blk[k].addr == addr)
			enter_block(e, &e->blk[k]);
		e->ended = false;
		if (!cs_disasm_iter(a64_dis(d)->handle, &code, &size, &addr, a64_dis(d)->insn)) {
			code += A64_INSN;
			size -= A64_INSN;
			addr += A64_INSN;
			end_block(e);
			continue;
		}
		step(e, a64_dis(d)->handle, a64_dis(d)->insn);
	}
}

static cp_status evaluate(struct eval *e, cp_dis *d, const uint8_t *code, uint64_t start, uint64_t end,
			  bool seed_args, cp_error *err)
{
	struct a64_entry *blk = NULL;
	size_t nblk = 0;
	cp_status st = cp_a64_entry_states(e->img, d, start, end, &blk, &nblk, err);
	int i;

	if (st)
		return st;
	e->blk = blk;
	e->nblk = nblk;
	e->reg[A64_SP].kind = K_FRAME;
	for (i = 0; seed_args && i < A64_NARGS; i++)
		e->reg[cp_a64_arg_regs[i]] = bits(CP_FRAME_ARG(i), ~0ull);
	run(e, d, code, end - start, start);
	free(blk);
	if (!e->oom)
		cp_frame_resolve_astores(e->f);
	return e->oom ? cp_fail(err, CP_E_INTERNAL, "%s: out of memory", e->img->path) : CP_OK;
}

cp_status cp_a64_frame_eval(const cp_image *img, uint64_t start, uint64_t end, bool seed_args,
			    struct cp_frame *f, cp_error *err)
{
	const struct cp_section *s = cp_image_section_at(img, start);
	const uint8_t *code;
	struct eval e;
	cp_dis d = { NULL, NULL }; /* the evaluator decodes through capstone itself */
	cp_status st;

	memset(f, 0, sizeof(*f));
	if (!s || end <= start || start % A64_INSN || end - start > s->size - (start - s->addr))
		return CP_OK;
	code = cp_image_bytes(img, s->offset + (start - s->addr), end - start);
	if (!code)
		return CP_OK;
	if (!cp_frame_build_alloc(f))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	if ((st = cp_dis_open(&d, img, err)))
		return st;
	memset(&e, 0, sizeof(e));
	e.img = img;
	e.f = f;
	st = evaluate(&e, &d, code, start, end, seed_args, err);
	cp_dis_close(&d);
	if (st)
		return st;
	cp_frame_unique(f->imms, &f->nimms);
	cp_frame_unique(f->cmps, &f->ncmps);
	return CP_OK;
}
