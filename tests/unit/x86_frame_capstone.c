/*
 * x86_frame_capstone.c - the reference for x86-64's frame evaluator: the
 * capstone evaluator that patcher/arch/x86_64/x86_64_frame_eval.c (Zydis)
 * replaced, kept as it was but for its entry's name and where capstone 4
 * misreads an instruction (x86_capstone_misreads.h; SSE2's movsd was
 * taken for the string instruction), so that frame_reference.c can prove the two make
 * the same frames on every module.
 */
#include "arch/x86_64/x86_64.h"
#include "x86_capstone_misreads.h"
#include "arch/frame_build.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define NREG 16
#define RSP 4
#define RBP 5

enum { K_BITS, K_FRAME, K_ADDR };

struct aval {
	uint8_t kind;
	uint64_t v;
	uint64_t known; /* K_BITS: the known bits of v */
	uint64_t origin; /* instruction that set a register, for immediates */
	uint64_t imm;    /* the instruction whose immediate is this value
			  * (mov reg, imm; then register copies), or 0 */
};

struct xmm {
	uint8_t v[16], known[16];
	uint64_t addr[2]; /* a lea's address in a half, or 0 */
};

struct eval {
	const cp_image *img;
	struct cp_frame *f;
	struct aval reg[NREG];
	struct xmm xmm[16];
	int64_t body; /* rsp offset after the prologue */
	bool body_set, body_from_sub;
	bool oom;
	const cs_insn *in;
};

static const struct aval unknown = { K_BITS, 0, 0, 0, 0 };

static struct aval bits(uint64_t v, uint64_t known)
{
	struct aval a = { K_BITS, v & known, known, 0, 0 };

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

static struct aval mem_read(struct eval *e, int64_t off, unsigned size)
{
	uint64_t v, k;

	return cp_frame_get(e->f, off, size, &v, &k) ? bits(v, k) : unknown;
}

static void mem_write_bytes(struct eval *e, int64_t off, const uint8_t *v, const uint8_t *k,
			    unsigned len, uint64_t va, uint64_t insn)
{
	cp_frame_put(e->f, off, v, k, len, va, insn ? insn : e->in ? e->in->address : 0);
}

static void mem_write(struct eval *e, int64_t off, unsigned size, struct aval a, int imm_off)
{
	uint8_t v[8], k[8];
	unsigned i;

	if (a.kind != K_BITS)
		a = unknown;
	for (i = 0; i < size && i < 8; i++) {
		v[i] = (uint8_t)(a.v >> (8 * i));
		k[i] = (uint8_t)(a.known >> (8 * i));
	}
	/* a register's value keeps the instruction that made it (the `or eax,
	 * imm` of a bit-field store), so the cell points at its immediate */
	mem_write_bytes(e, off, v, k, size, 0, imm_off ? 0 : a.origin);
}

static void mem_forget(struct eval *e, int64_t off, unsigned size)
{
	static const uint8_t zero[32];

	mem_write_bytes(e, off, zero, zero, size > 32 ? 32 : size, 0, 0);
}

/* Copies len bytes of the file at va into the frame (template copies). */
static void mem_copy_in(struct eval *e, int64_t off, uint64_t va, uint64_t len)
{
	cp_frame_copy_in(e->f, e->img, off, va, len, e->in ? e->in->address : 0);
}

static void mem_fill(struct eval *e, int64_t off, uint8_t byte, uint64_t len)
{
	cp_frame_fill(e->f, off, byte, len, e->in ? e->in->address : 0);
}

static bool is_high8(x86_reg r)
{
	return r == X86_REG_AH || r == X86_REG_BH || r == X86_REG_CH || r == X86_REG_DH;
}

static struct aval reg_read(struct eval *e, x86_reg r, unsigned size)
{
	int i = cp_reg64(r);
	struct aval a;

	if (i < 0)
		return unknown;
	a = e->reg[i];
	if (size == 8)
		return a;
	if (a.kind != K_BITS)
		return unknown;
	if (is_high8(r))
		return bits((a.v >> 8) & 0xff, (a.known >> 8) & 0xff);
	{
		struct aval r = bits(a.v & size_mask(size), a.known & size_mask(size));

		r.origin = a.origin;
		r.imm = size == 4 ? a.imm : 0;
		return r;
	}
}

static void reg_write(struct eval *e, x86_reg r, unsigned size, struct aval a)
{
	int i = cp_reg64(r);
	struct aval *d;

	if (i < 0)
		return;
	d = &e->reg[i];
	if (is_high8(r)) {
		if (a.kind != K_BITS)
			a = unknown;
		if (d->kind != K_BITS)
			*d = unknown;
		d->v = (d->v & ~0xff00ull) | ((a.v & 0xff) << 8);
		d->known = (d->known & ~0xff00ull) | ((a.known & 0xff) << 8);
		d->v &= d->known;
		d->imm = 0;
		d->origin = e->in ? e->in->address : 0;
		return;
	}
	a.origin = e->in ? e->in->address : 0;
	if (size == 8) {
		*d = a;
		return;
	}
	if (a.kind != K_BITS)
		a = unknown;
	if (size == 4) {
		*d = bits(a.v & 0xffffffffull, (a.known & 0xffffffffull) | 0xffffffff00000000ull);
		d->origin = a.origin;
		d->imm = a.imm;
		return;
	}
	if (d->kind != K_BITS)
		*d = unknown;
	d->v = (d->v & ~size_mask(size)) | (a.v & size_mask(size));
	d->known = (d->known & ~size_mask(size)) | (a.known & size_mask(size));
	d->v &= d->known;
	d->imm = 0;
	/* the last instruction to set part of it (`or al, 0xb3` after a load
	 * of the word): where an immediate of the value is */
	d->origin = a.origin;
}

/* A memory operand's frame offset, when its base is the frame and it has no
 * index register. */
static bool frame_addr(struct eval *e, const x86_op_mem *m, int64_t *off)
{
	int b = cp_reg64(m->base);

	if (b < 0 || m->index != X86_REG_INVALID || e->reg[b].kind != K_FRAME)
		return false;
	*off = (int64_t)e->reg[b].v + m->disp;
	return true;
}

static void snap_fill(struct eval *e, int64_t off, size_t len);
static void note_astore(struct eval *e, int64_t off, uint64_t va);

static struct aval read_op(struct eval *e, const cs_x86_op *op)
{
	int64_t off;

	switch (op->type) {
	case X86_OP_IMM:
		return bits((uint64_t)op->imm, size_mask(op->size));
	case X86_OP_REG:
		return reg_read(e, op->reg, op->size);
	case X86_OP_MEM:
		if (op->mem.base == X86_REG_RIP && op->mem.index == X86_REG_INVALID) {
			uint64_t va = cp_x86_rip_addr(e->in, &op->mem), v = 0;
			const uint8_t *p = cp_image_va_bytes(e->img, va, op->size);
			const struct cp_section *s = cp_image_section_at(e->img, va);

			if (!p || !s || !cp_section_is_rodata(s) || op->size > 8)
				return unknown;
			memcpy(&v, p, op->size);
			return bits(v, size_mask(op->size));
		}
		if (frame_addr(e, &op->mem, &off)) {
			snap_fill(e, off, op->size);
			return mem_read(e, off, op->size);
		}
		return unknown;
	default:
		return unknown;
	}
}

static void write_op(struct eval *e, const cs_x86_op *op, struct aval a, int imm_off)
{
	int64_t off;

	if (op->type == X86_OP_REG)
		reg_write(e, op->reg, op->size, a);
	else if (op->type == X86_OP_MEM && frame_addr(e, &op->mem, &off))
		mem_write(e, off, op->size, a, imm_off);
}

static struct aval logic(unsigned id, struct aval a, struct aval b)
{
	uint64_t v, k;

	if (a.kind != K_BITS || b.kind != K_BITS)
		return unknown;
	cp_bits_logic(id == X86_INS_AND ? CP_BIT_AND : id == X86_INS_OR ? CP_BIT_OR : CP_BIT_XOR, a.v, a.known, b.v, b.known,
		      &v, &k);
	return bits(v, k);
}

static struct aval arith(unsigned id, struct aval a, struct aval b, unsigned size)
{
	int64_t d;

	if (b.kind != K_BITS || b.known != size_mask(size))
		return unknown;
	d = id == X86_INS_ADD ? (int64_t)b.v : -(int64_t)b.v;
	if (size < 8 && (b.v >> (size * 8 - 1)) & 1)
		d = id == X86_INS_ADD ? (int64_t)(b.v | ~size_mask(size)) : -(int64_t)(b.v | ~size_mask(size));
	if (a.kind == K_FRAME || a.kind == K_ADDR) {
		a.v += (uint64_t)d;
		return size == 8 ? a : unknown;
	}
	if (a.known != size_mask(size))
		return unknown;
	return bits((a.v + (uint64_t)d) & size_mask(size), size_mask(size));
}

/* Offset of the immediate inside the instruction, for patchable stores. */
static int imm_offset(const cs_insn *in)
{
	return in->detail->x86.encoding.imm_offset;
}

static void note_addr(struct eval *e, uint64_t va)
{
	if (!cp_frame_note_addr(e->f, va))
		e->oom = true;
}

static void note_addr_store(struct eval *e, const x86_op_mem *m)
{
	int b = cp_reg64(m->base);

	if (b >= 0 && e->reg[b].kind == K_ADDR)
		note_addr(e, e->reg[b].v + (uint64_t)m->disp);
}

static void do_mov(struct eval *e, const cs_x86 *x, unsigned id)
{
	struct aval a;
	int io = 0;

	if (x->op_count != 2)
		return;
	a = read_op(e, &x->operands[1]);
	if (x->operands[1].type == X86_OP_IMM)
		io = imm_offset(e->in);
	if (id == X86_INS_MOVZX && a.kind == K_BITS) {
		unsigned s = x->operands[1].size;

		a = bits(a.v, (a.known & size_mask(s)) | ~size_mask(s));
	} else if (id == X86_INS_MOVSX || id == X86_INS_MOVSXD) {
		a = unknown;
	} else if (x->operands[1].type == X86_OP_IMM) {
		a = bits((uint64_t)x->operands[1].imm, size_mask(x->operands[0].size));
		a.imm = e->in->address;
	} else if (x->operands[1].type != X86_OP_REG) {
		a.imm = 0;
	}
	if (x->operands[0].type == X86_OP_MEM && x->operands[0].size == 8)
		note_addr_store(e, &x->operands[0].mem);
	if (a.kind == K_ADDR && x->operands[0].type == X86_OP_MEM && x->operands[0].size == 8) {
		int64_t off;

		if (frame_addr(e, &x->operands[0].mem, &off)) {
			note_astore(e, off, a.v);
			mem_forget(e, off, 8);
			return;
		}
	}
	write_op(e, &x->operands[0], a, io);
}

/* base + index * scale + disp, one of the two an address and the other a
 * value known in full (scale 1 when the index is the address). */
static bool lea_indexed(const struct eval *e, const x86_op_mem *m, uint64_t *va)
{
	int b = cp_reg64(m->base), i = cp_reg64(m->index);

	if (b < 0 || i < 0)
		return false;
	if (e->reg[b].kind == K_ADDR && e->reg[i].kind == K_BITS && e->reg[i].known == ~0ull)
		*va = e->reg[b].v + e->reg[i].v * (uint64_t)m->scale + (uint64_t)m->disp;
	else if (m->scale == 1 && e->reg[i].kind == K_ADDR && e->reg[b].kind == K_BITS && e->reg[b].known == ~0ull)
		*va = e->reg[i].v + e->reg[b].v + (uint64_t)m->disp;
	else
		return false;
	return true;
}

static void do_lea(struct eval *e, const cs_x86 *x)
{
	const x86_op_mem *m = &x->operands[1].mem;
	struct aval a = unknown;
	int64_t off;
	uint64_t va;

	if (m->base == X86_REG_RIP && m->index == X86_REG_INVALID) {
		const struct cp_section *s;

		va = cp_x86_rip_addr(e->in, m);
		a.kind = K_ADDR;
		a.v = va;
		s = cp_image_section_at(e->img, va);
		if (s && cp_section_is_rodata(s)) {
			struct cp_frame *f = e->f;

			if (CP_GROW(f->leas, f->capleas, f->nleas + 1) ||
			    CP_GROW(f->lea_insn, f->capleainsn, f->nleas + 1)) {
				e->oom = true;
				return;
			}
			f->leas[f->nleas] = va;
			f->lea_insn[f->nleas++] = e->in->address;
		}
	} else if (frame_addr(e, m, &off)) {
		a.kind = K_FRAME;
		a.v = (uint64_t)off;
	} else if (m->index == X86_REG_INVALID && cp_reg64(m->base) >= 0 &&
		   e->reg[cp_reg64(m->base)].kind == K_ADDR) {
		/* lea rcx, [rbx + 0x10]: an address next to one lea'd before
		 * (Cython 3.0's string table: &mstate->x for entry after entry) */
		a.kind = K_ADDR;
		a.v = e->reg[cp_reg64(m->base)].v + (uint64_t)m->disp;
	} else if (lea_indexed(e, m, &va)) {
		/* lea rdi, [r12 + rbx]: an address plus a known offset; no
		 * address noted for it */
		a.kind = K_ADDR;
		a.v = va;
		reg_write(e, x->operands[0].reg, x->operands[0].size, a);
		return;
	}
	if (a.kind == K_ADDR)
		note_addr(e, a.v);
	reg_write(e, x->operands[0].reg, x->operands[0].size, a);
}

static void push_val(struct eval *e, struct aval a)
{
	e->reg[RSP].v -= 8;
	mem_write(e, (int64_t)e->reg[RSP].v, 8, a, 0);
}

static void do_pushpop(struct eval *e, const cs_x86 *x, unsigned id)
{
	if (e->reg[RSP].kind != K_FRAME || x->op_count != 1)
		return;
	if (id == X86_INS_PUSH) {
		push_val(e, read_op(e, &x->operands[0]));
		return;
	}
	write_op(e, &x->operands[0], mem_read(e, (int64_t)e->reg[RSP].v, 8), 0);
	e->reg[RSP].v += 8;
}

static void note_body(struct eval *e)
{
	if (!e->body_set && e->reg[RSP].kind == K_FRAME) {
		e->body = (int64_t)e->reg[RSP].v;
		e->body_set = true;
	}
}

static void do_arith(struct eval *e, const cs_x86 *x, unsigned id)
{
	struct aval a, b;

	if (x->op_count != 2)
		return;
	a = read_op(e, &x->operands[0]);
	b = read_op(e, &x->operands[1]);
	if (x->operands[0].type == X86_OP_REG && cp_reg64(x->operands[0].reg) == RSP) {
		a = e->reg[RSP];
		write_op(e, &x->operands[0], arith(id, a, b, 8), 0);
		/* the prologue's frame allocation defines the body's depth, even
		 * when a mov came between the pushes */
		if (id == X86_INS_SUB && !e->body_from_sub && e->reg[RSP].kind == K_FRAME) {
			e->body = (int64_t)e->reg[RSP].v;
			e->body_set = e->body_from_sub = true;
		}
		return;
	}
	write_op(e, &x->operands[0], arith(id, a, b, x->operands[0].size), 0);
}

static void do_logic(struct eval *e, const cs_x86 *x, unsigned id)
{
	struct aval a, b;

	if (x->op_count != 2)
		return;
	if (id == X86_INS_XOR && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && x->operands[0].reg == x->operands[1].reg) {
		write_op(e, &x->operands[0], bits(0, ~0ull), 0);
		return;
	}
	a = read_op(e, &x->operands[0]);
	b = read_op(e, &x->operands[1]);
	write_op(e, &x->operands[0], logic(id, a, b), 0);
}

static unsigned string_width(unsigned id)
{
	switch (id) {
	case X86_INS_MOVSB: case X86_INS_STOSB: return 1;
	case X86_INS_MOVSW: case X86_INS_STOSW: return 2;
	case X86_INS_MOVSD: case X86_INS_STOSD: return 4;
	case X86_INS_MOVSQ: case X86_INS_STOSQ: return 8;
	default: return 0;
	}
}

/* rep movs / rep stos into the frame. */
static void do_string(struct eval *e, const cs_insn *in, unsigned id)
{
	unsigned w = string_width(id);
	struct aval *di = &e->reg[7], *si = &e->reg[6], *cx = &e->reg[1];
	bool rep = in->detail->x86.prefix[0] == X86_PREFIX_REP;
	uint64_t n = 1;

	if (rep) {
		if (cx->kind != K_BITS || cx->known != ~0ull)
			goto forget;
		n = cx->v;
	}
	if (di->kind != K_FRAME || n > CP_FRAME_SIZE / w)
		goto forget;
	if (id == X86_INS_MOVSB || id == X86_INS_MOVSW || id == X86_INS_MOVSD || id == X86_INS_MOVSQ) {
		if (si->kind != K_ADDR)
			goto forget;
		mem_copy_in(e, (int64_t)di->v, si->v, n * w);
		si->v += n * w;
	} else {
		struct aval a = e->reg[0];

		if (a.kind != K_BITS || (a.known & size_mask(w)) != size_mask(w) ||
		    (w > 1 && a.v != (uint64_t)(uint8_t)a.v * (0x0101010101010101ull & size_mask(w))))
			goto forget;
		mem_fill(e, (int64_t)di->v, (uint8_t)a.v, n * w);
	}
	di->v += n * w;
	if (rep)
		*cx = bits(0, ~0ull);
	return;
forget:
	if (di->kind == K_FRAME && n <= CP_FRAME_SIZE / (w ? w : 1))
		mem_forget(e, (int64_t)di->v, (unsigned)(n * w > 32 ? 32 : n * w));
	*di = unknown;
	*si = unknown;
	*cx = unknown;
}

static void note_astore(struct eval *e, int64_t off, uint64_t va)
{
	if (!cp_frame_note_astore(e->f, off, va, e->in->address))
		e->oom = true;
}

/* What follows each address stored since the last call, as it is now. */
static void resolve_astores(struct eval *e)
{
	cp_frame_resolve_astores(e->f);
}

static void clobber_call(struct eval *e)
{
	static const int regs[] = { 0, 1, 2, 6, 7, 8, 9, 10, 11 };
	size_t i;

	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		e->reg[regs[i]] = unknown;
	memset(e->xmm, 0, sizeof(e->xmm));
}

static void note_arglen(struct eval *e, const char *name)
{
	struct aval *di = &e->reg[7], *si = &e->reg[6];
	struct cp_frame *f = e->f;
	bool bytes = !strcmp(name, "PyBytes_FromStringAndSize");

	if (!bytes && strcmp(name, "PyUnicode_DecodeUTF8"))
		return;
	if (si->kind != K_BITS || si->known != ~0ull ||
	    (di->kind == K_BITS && di->known == ~0ull && di->v == 0))
		return; /* unknown, or an allocation PyBytes_FromStringAndSize(NULL, n) */
	if (CP_GROW(f->arglens, f->caparglens, f->narglens + 1)) {
		e->oom = true;
		return;
	}
	f->arglens[f->narglens].insn = e->in->address;
	f->arglens[f->narglens].len = si->v;
	f->arglens[f->narglens].set = si->origin;
	f->arglens[f->narglens].ptr_set = di->origin;
	f->arglens[f->narglens].is_bytes = bytes;
	f->narglens++;
}


/* Every call, with its argument registers (cp_frame_call). */
static void note_call(struct eval *e, const cs_x86 *x, const char *name)
{
	struct cp_frame *f = e->f;
	struct cp_frame_call *c;
	int i;

	if (CP_GROW(f->calls, f->capcalls, f->ncalls + 1)) {
		e->oom = true;
		return;
	}
	c = &f->calls[f->ncalls++];
	memset(c, 0, sizeof(*c));
	c->insn = e->in->address;
	c->name = name;
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
		c->target = (uint64_t)x->operands[0].imm;
	for (i = 0; i < 6; i++) {
		const struct aval *a = &e->reg[cp_x86_64_arg_regs[i]];

		if (a->kind == K_ADDR) {
			c->addr_known |= (uint8_t)(1u << i);
			c->addr[i] = a->v;
		}
		if (a->kind != K_BITS || a->known != ~0ull)
			continue;
		c->known |= (uint8_t)(1u << i);
		c->arg[i] = a->v;
		c->arg_imm[i] = a->imm;
	}
}

/* memcpy / memset calls that fill the frame; constant string lengths. */
static void do_call(struct eval *e, const cs_x86 *x)
{
	const char *name = NULL;
	struct aval *di = &e->reg[7], *si = &e->reg[6], *dx = &e->reg[2];

	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
		name = cp_image_plt_name(e->img, (uint64_t)x->operands[0].imm);
	else if (x->op_count == 1 && x->operands[0].type == X86_OP_MEM &&
		 x->operands[0].mem.base == X86_REG_RIP && x->operands[0].mem.index == X86_REG_INVALID)
		name = cp_image_got_name(e->img, cp_x86_rip_addr(e->in, &x->operands[0].mem)); /* -fno-plt */
	note_call(e, x, name);
	if (name)
		note_arglen(e, name);
	resolve_astores(e);
	if (name && di->kind == K_FRAME && dx->kind == K_BITS && dx->known == ~0ull) {
		if ((!strcmp(name, "memcpy") || !strcmp(name, "memmove")) && si->kind == K_ADDR)
			mem_copy_in(e, (int64_t)di->v, si->v, dx->v);
		else if (!strcmp(name, "memset") && si->kind == K_BITS && (si->known & 0xff) == 0xff)
			mem_fill(e, (int64_t)di->v, (uint8_t)si->v, dx->v);
	}
	clobber_call(e);
}

static int xmm_index(x86_reg r)
{
	if (r >= X86_REG_XMM0 && r <= X86_REG_XMM15)
		return (int)(r - X86_REG_XMM0);
	return -1;
}

static bool is_vector_move(unsigned id)
{
	switch (id) {
	case X86_INS_MOVDQA: case X86_INS_MOVDQU: case X86_INS_MOVAPS: case X86_INS_MOVUPS:
	case X86_INS_MOVAPD: case X86_INS_MOVUPD: case X86_INS_LDDQU:
	case X86_INS_VMOVDQA: case X86_INS_VMOVDQU: case X86_INS_VMOVAPS: case X86_INS_VMOVUPS:
		return true;
	default:
		return false;
	}
}

/* 16-byte moves between .rodata, xmm registers and the frame. */
static bool do_vector(struct eval *e, const cs_x86 *x)
{
	const cs_x86_op *d = &x->operands[0], *s = &x->operands[1];
	int di = d->type == X86_OP_REG ? xmm_index(d->reg) : -1;
	int si = s->type == X86_OP_REG ? xmm_index(s->reg) : -1;
	int64_t off;

	if (x->op_count != 2 || d->size != 16)
		return false;
	if (di >= 0 && si >= 0) {
		e->xmm[di] = e->xmm[si];
		return true;
	}
	if (di >= 0 && s->type == X86_OP_MEM) {
		const uint8_t *p = NULL;
		int64_t o;

		memset(&e->xmm[di], 0, sizeof(e->xmm[di]));
		if (s->mem.base == X86_REG_RIP && s->mem.index == X86_REG_INVALID)
			p = cp_image_va_bytes(e->img, cp_x86_rip_addr(e->in, &s->mem), 16);
		if (p) {
			memcpy(e->xmm[di].v, p, 16);
			memset(e->xmm[di].known, 0xff, 16);
		} else if (frame_addr(e, &s->mem, &o)) {
			size_t idx;

			if (frame_index(o, 16, &idx)) {
				memcpy(e->xmm[di].v, e->f->val + idx, 16);
				memcpy(e->xmm[di].known, e->f->known + idx, 16);
			}
		}
		return true;
	}
	if (si >= 0 && d->type == X86_OP_MEM) {
		if (frame_addr(e, &d->mem, &off)) {
			mem_write_bytes(e, off, e->xmm[si].v, e->xmm[si].known, 16, 0, 0);
			note_astore(e, off, e->xmm[si].addr[0]);
			note_astore(e, off + 8, e->xmm[si].addr[1]);
		}
		return true;
	}
	return false;
}

/* movq xmm, r64 (or a relocated pointer) and punpcklqdq xmm, xmm: the
 * halves of a 16-byte store (GCC pairs a string-table entry's pointers
 * this way, g++ an import-pointer array's entries). */
static bool do_qword_xmm(struct eval *e, const cs_x86 *x, unsigned id)
{
	const cs_x86_op *d = &x->operands[0], *s = &x->operands[1];
	int di = x->op_count == 2 && d->type == X86_OP_REG ? xmm_index(d->reg) : -1;
	struct xmm *xd;

	if (di < 0)
		return false;
	xd = &e->xmm[di];
	if (id == X86_INS_MOVQ && s->type == X86_OP_REG && s->size == 8 && cp_reg64(s->reg) >= 0) {
		struct aval a = reg_read(e, s->reg, 8);
		unsigned b;

		memset(xd, 0, sizeof(*xd));
		memset(xd->known + 8, 0xff, 8);
		if (a.kind == K_ADDR)
			xd->addr[0] = a.v;
		else if (a.kind == K_BITS)
			for (b = 0; b < 8; b++) {
				xd->v[b] = (uint8_t)(a.v >> (8 * b));
				xd->known[b] = (uint8_t)(a.known >> (8 * b));
			}
		return true;
	}
	if (id == X86_INS_MOVQ && s->type == X86_OP_MEM && s->mem.base == X86_REG_RIP &&
	    s->mem.index == X86_REG_INVALID) {
		memset(xd, 0, sizeof(*xd));
		memset(xd->known + 8, 0xff, 8);
		xd->addr[0] = cp_image_relative_at(e->img, cp_x86_rip_addr(e->in, &s->mem));
		return true;
	}
	if (id == X86_INS_PUNPCKLQDQ && s->type == X86_OP_REG && xmm_index(s->reg) >= 0) {
		const struct xmm *xs = &e->xmm[xmm_index(s->reg)];

		memmove(xd->v + 8, xs->v, 8);
		memmove(xd->known + 8, xs->known, 8);
		xd->addr[1] = xs->addr[0];
		return true;
	}
	return false;
}

/* (a one-entry bytes index is read directly, after the str loop) */
static void snap_fill(struct eval *e, int64_t off, size_t len)
{
	cp_frame_snap_fill(e->f, off, len);
}

static void snapshot(struct eval *e, int64_t base)
{
	if (!cp_frame_snapshot(e->f, base))
		e->oom = true;
}

static void record_indexed_load(struct eval *e, const cs_x86 *x)
{
	int i;

	for (i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		int b = op->type == X86_OP_MEM ? cp_reg64(op->mem.base) : -1;
		struct cp_frame *f = e->f;
		struct cp_frame_load *l;

		if (b < 0 || op->mem.index == X86_REG_INVALID || e->reg[b].kind != K_FRAME)
			continue;
		if (CP_GROW(f->loads, f->caploads, f->nloads + 1)) {
			e->oom = true;
			return;
		}
		l = &f->loads[f->nloads++];
		l->insn = e->in->address;
		l->base = (int64_t)e->reg[b].v + op->mem.disp;
		l->scale = (uint8_t)op->mem.scale;
		l->width = op->size;
		if (l->scale == 4)
			snapshot(e, l->base);
	}
}

static void record_imms(struct eval *e, const cs_x86 *x)
{
	struct cp_frame *f = e->f;
	int i;

	for (i = 0; i < x->op_count; i++) {
		if (x->operands[i].type != X86_OP_IMM || x->operands[i].imm < 0)
			continue;
		if (CP_GROW(f->imms, f->capimms, f->nimms + 1) ||
		    CP_GROW(f->cmps, f->capcmps, f->ncmps + 1)) {
			e->oom = true;
			return;
		}
		f->imms[f->nimms++] = (uint64_t)x->operands[i].imm;
		if (e->in->id == X86_INS_CMP)
			f->cmps[f->ncmps++] = (uint64_t)x->operands[i].imm;
	}
	if (e->in->id != X86_INS_CMP)
		return;
	for (i = 0; i < x->op_count; i++) {
		struct aval a;

		if (x->operands[i].type != X86_OP_REG && x->operands[i].type != X86_OP_MEM)
			continue;
		if (x->operands[i].type == X86_OP_REG) {
			a = reg_read(e, x->operands[i].reg, x->operands[i].size);
		} else {
			int64_t off;

			/* not read_op: what the decode loop reads first stays as the
			 * snapshots have it */
			if (!frame_addr(e, &x->operands[i].mem, &off))
				continue;
			a = mem_read(e, off, x->operands[i].size);
		}
		if (a.kind != K_BITS || a.known != size_mask(x->operands[i].size))
			continue;
		if (CP_GROW(f->cmpvals, f->capcmpvals, f->ncmpvals + 1)) {
			e->oom = true;
			return;
		}
		f->cmpvals[f->ncmpvals++] = a.v;
	}
}

static void forget_written(struct eval *e, csh h, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0, i;
	uint32_t gprs = 0;
	int k;

	for (k = 0; k < x->op_count; k++) {
		int64_t off;

		if (x->operands[k].type == X86_OP_MEM && ref_op_written(in, k) && frame_addr(e, &x->operands[k].mem, &off))
			mem_forget(e, off, x->operands[k].size);
	}
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		nwr = 0;
	for (i = 0; i < nwr; i++) {
		int r = cp_reg64((x86_reg)wr[i]);
		int v = xmm_index((x86_reg)wr[i]);

		if (r >= 0)
			gprs |= 1u << r;
		if (v >= 0)
			memset(&e->xmm[v], 0, sizeof(e->xmm[v]));
	}
	gprs = ref_regs_written(in, gprs);
	for (k = 0; k < NREG; k++)
		if (k != RSP && (gprs >> k & 1))
			e->reg[k] = unknown;
}

static void end_block(struct eval *e)
{
	int i;

	/* rsp returns to the body's depth; a frame pointer (rbp = rsp at entry,
	 * -O0 code) stays what it is for the whole function */
	for (i = 0; i < NREG; i++)
		if (i != RSP && !(i == RBP && e->reg[RBP].kind == K_FRAME))
			e->reg[i] = unknown;
	memset(e->xmm, 0, sizeof(e->xmm));
	if (e->body_set) {
		e->reg[RSP].kind = K_FRAME;
		e->reg[RSP].v = (uint64_t)e->body;
	}
}

static void step(struct eval *e, csh h, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	unsigned id = in->id;

	e->in = in;
	record_indexed_load(e, x);
	record_imms(e, x);
	if (id != X86_INS_PUSH && id != X86_INS_SUB && id != X86_INS_ENDBR64)
		note_body(e);
	switch (id) {
	case X86_INS_MOV: case X86_INS_MOVABS: case X86_INS_MOVZX: case X86_INS_MOVSX:
	case X86_INS_MOVSXD:
		do_mov(e, x, id);
		return;
	case X86_INS_LEA:
		do_lea(e, x);
		return;
	case X86_INS_PUSH: case X86_INS_POP:
		do_pushpop(e, x, id);
		return;
	case X86_INS_ADD: case X86_INS_SUB:
		do_arith(e, x, id);
		return;
	case X86_INS_AND: case X86_INS_OR: case X86_INS_XOR:
		do_logic(e, x, id);
		return;
	case X86_INS_CALL:
		do_call(e, x);
		return;
	case X86_INS_RET: case X86_INS_JMP: case X86_INS_UD2:
		end_block(e);
		return;
	default:
		break;
	}
	/* movsd is also SSE2's scalar move, whose operands are not both memory
	 * (this evaluator took it for the string instruction, and forgot rdi,
	 * rsi and rcx) */
	if (string_width(id) && (id != X86_INS_MOVSD || (x->op_count == 2 && x->operands[0].type == X86_OP_MEM &&
							  x->operands[1].type == X86_OP_MEM))) {
		do_string(e, in, id);
		return;
	}
	if (is_vector_move(id) && do_vector(e, x))
		return;
	if (do_qword_xmm(e, x, id))
		return;
	forget_written(e, h, in);
}



cp_status ref_x86_frame_eval(const cp_image *img, uint64_t start, uint64_t end, bool seed_args,
			    struct cp_frame *f, cp_error *err)
{
	const struct cp_section *s = cp_image_section_at(img, start);
	struct eval e;
	const uint8_t *code;
	size_t size;
	uint64_t addr = start;
	cp_dis d = { NULL, NULL }; /* the evaluator decodes through capstone itself */
	cp_status st;

	memset(f, 0, sizeof(*f));
	if (!s || end <= start || end - start > s->size - (start - s->addr))
		return CP_OK;
	code = cp_image_bytes(img, s->offset + (start - s->addr), end - start);
	if (!code)
		return CP_OK;
	if (!cp_frame_build_alloc(f))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	st = cp_x86_dis_open(&d, err);
	if (st)
		return st;
	memset(&e, 0, sizeof(e));
	e.img = img;
	e.f = f;
	e.reg[RSP].kind = K_FRAME;
	if (seed_args) {
		int i;

		for (i = 0; i < 6; i++)
			e.reg[cp_x86_64_arg_regs[i]] = bits(CP_FRAME_ARG(i), ~0ull);
	}
	size = end - start;
	while (size > 0 && !e.oom) {
		if (!cs_disasm_iter(x86_dis(&d)->handle, &code, &size, &addr, x86_dis(&d)->insn)) {
			code++;
			size--;
			addr++;
			end_block(&e);
			continue;
		}
		step(&e, x86_dis(&d)->handle, x86_dis(&d)->insn);
	}
	cp_x86_dis_close(&d);
	if (!e.oom)
		resolve_astores(&e);
	if (e.oom)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	cp_frame_unique(f->imms, &f->nimms);
	cp_frame_unique(f->cmps, &f->ncmps);
	return CP_OK;
}
