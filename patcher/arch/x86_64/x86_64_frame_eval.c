/*
 * x86_64_frame_eval.c - x86-64's abstract frame evaluator (see arch/frame.h).
 *
 * Values carry known-bit masks so that bit-field stores (load, and, or,
 * store) keep exactly the bits the code defines. The walk is linear: after a
 * return or an unconditional jump, rsp goes back to the depth the prologue
 * set up, which is where GCC's code between epilogues runs.
 *
 * It decodes with Zydis, as the code walk does: a Cython 3.2+ module's init
 * function is 100,000 instructions or more, evaluated once for the scan and
 * once for the check. tests/unit/frame_reference.c proves on every corpus
 * and real module that it makes the frames the capstone evaluator it
 * replaced (tests/unit/x86_frame_capstone.c) made.
 */
#include "arch/x86_64/zydis.h"
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
	const struct zin *in;
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
	cp_frame_put(e->f, off, v, k, len, va, insn ? insn : e->in ? e->in->addr : 0);
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
	cp_frame_copy_in(e->f, e->img, off, va, len, e->in ? e->in->addr : 0);
}

static void mem_fill(struct eval *e, int64_t off, uint8_t byte, uint64_t len)
{
	cp_frame_fill(e->f, off, byte, len, e->in ? e->in->addr : 0);
}

static bool is_high8(ZydisRegister r)
{
	return r == ZYDIS_REGISTER_AH || r == ZYDIS_REGISTER_BH || r == ZYDIS_REGISTER_CH || r == ZYDIS_REGISTER_DH;
}

static struct aval reg_read(struct eval *e, ZydisRegister r, unsigned size)
{
	int i = cp_zreg64(r);
	struct aval a;

	if (i < 0)
		return unknown;
	a = e->reg[i];
	if (size == 8)
		return a;
	if (a.kind != K_BITS)
		return unknown;
	if (is_high8(r)) /* bits 8 to 15: `or ah, 0x1` sets bit 8 of a 9-bit field */
		return bits((a.v >> 8) & 0xff, (a.known >> 8) & 0xff);
	{
		struct aval r = bits(a.v & size_mask(size), a.known & size_mask(size));

		r.origin = a.origin;
		r.imm = size == 4 ? a.imm : 0;
		return r;
	}
}

static void reg_write(struct eval *e, ZydisRegister r, unsigned size, struct aval a)
{
	int i = cp_zreg64(r);
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
		d->origin = e->in ? e->in->addr : 0;
		return;
	}
	a.origin = e->in ? e->in->addr : 0;
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

/* An operand's size in bytes. An immediate's is the instruction's operand
 * size: what it makes (push 0x10 pushes 8 bytes; add rsp, 0x10 adds to 8). */
static unsigned op_size(const struct eval *e, const ZydisDecodedOperand *op)
{
	return (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE ? e->in->in.operand_width : op->size) / 8;
}

/* Which of the instruction's (at most two) immediates op is. */
static unsigned op_imm_index(const struct eval *e, const ZydisDecodedOperand *op)
{
	return op != &e->in->op[0] && e->in->op[op - e->in->op - 1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
}

/*
 * An immediate's value as the readers of the immediates were tuned on
 * (capstone 4's reading): a relative one as the address it names; and,
 * or, xor and 8-bit operations as their operand-size value; one encoded
 * as wide as its operation zero-extended (mov eax, 0xffffffff); a shorter
 * one sign-extended, as the instruction extends it (cmp eax, -1). The
 * evaluator's arithmetic masks each value to its operation's size, where
 * all of these readings agree.
 */
static uint64_t imm_value(const struct eval *e, const ZydisDecodedOperand *op)
{
	const ZydisDecodedInstruction *in = &e->in->in;
	unsigned osz = in->operand_width, esz = in->raw.imm[op->imm.is_relative ? 0 : op_imm_index(e, op)].size;

	if (op->imm.is_relative)
		return cp_zimm(e->in, op);
	if (in->mnemonic == ZYDIS_MNEMONIC_AND || in->mnemonic == ZYDIS_MNEMONIC_OR ||
	    in->mnemonic == ZYDIS_MNEMONIC_XOR || osz == 8 || esz == osz)
		return op->imm.value.u & size_mask(osz / 8);
	return op->imm.value.u;
}

static bool unindexed(const ZydisDecodedOperand *op)
{
	return op->mem.index == ZYDIS_REGISTER_NONE;
}

/* A memory operand's frame offset, when its base is the frame and it has no
 * index register. */
static bool frame_addr(struct eval *e, const ZydisDecodedOperand *op, int64_t *off)
{
	int b = cp_zreg64(op->mem.base);

	if (b < 0 || !unindexed(op) || e->reg[b].kind != K_FRAME)
		return false;
	*off = (int64_t)e->reg[b].v + op->mem.disp.value;
	return true;
}

static void snap_fill(struct eval *e, int64_t off, size_t len);
static void note_astore(struct eval *e, int64_t off, uint64_t va);

/* What an 8-byte (or shorter) read of read-only data at va gives. */
static struct aval rodata_read(struct eval *e, uint64_t va, unsigned size)
{
	const uint8_t *p = cp_image_va_bytes(e->img, va, size);
	const struct cp_section *s = cp_image_section_at(e->img, va);
	uint64_t v = 0;

	if (!p || !s || !cp_section_is_rodata(s) || size > 8)
		return unknown;
	memcpy(&v, p, size);
	return bits(v, size_mask(size));
}

static struct aval read_op(struct eval *e, const ZydisDecodedOperand *op)
{
	unsigned size = op_size(e, op);
	int64_t off;

	switch (op->type) {
	case ZYDIS_OPERAND_TYPE_IMMEDIATE:
		return bits(imm_value(e, op), size_mask(size));
	case ZYDIS_OPERAND_TYPE_REGISTER:
		return reg_read(e, op->reg.value, size);
	case ZYDIS_OPERAND_TYPE_MEMORY:
		if (cp_zrip(op))
			return rodata_read(e, cp_zrip_addr(e->in, op), size);
		if (frame_addr(e, op, &off)) {
			snap_fill(e, off, size);
			return mem_read(e, off, size);
		}
		return unknown;
	default:
		return unknown;
	}
}

static void write_op(struct eval *e, const ZydisDecodedOperand *op, struct aval a, int imm_off)
{
	int64_t off;

	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
		reg_write(e, op->reg.value, op_size(e, op), a);
	else if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && frame_addr(e, op, &off))
		mem_write(e, off, op_size(e, op), a, imm_off);
}

static struct aval logic(ZydisMnemonic id, struct aval a, struct aval b)
{
	uint64_t v, k;

	if (a.kind != K_BITS || b.kind != K_BITS)
		return unknown;
	cp_bits_logic(id == ZYDIS_MNEMONIC_AND ? CP_BIT_AND : id == ZYDIS_MNEMONIC_OR ? CP_BIT_OR : CP_BIT_XOR, a.v,
		      a.known, b.v, b.known, &v, &k);
	return bits(v, k);
}

static struct aval arith(ZydisMnemonic id, struct aval a, struct aval b, unsigned size)
{
	int64_t d;

	if (b.kind != K_BITS || b.known != size_mask(size))
		return unknown;
	d = id == ZYDIS_MNEMONIC_ADD ? (int64_t)b.v : -(int64_t)b.v;
	if (size < 8 && (b.v >> (size * 8 - 1)) & 1)
		d = id == ZYDIS_MNEMONIC_ADD ? (int64_t)(b.v | ~size_mask(size)) : -(int64_t)(b.v | ~size_mask(size));
	if (a.kind == K_FRAME || a.kind == K_ADDR) {
		a.v += (uint64_t)d;
		return size == 8 ? a : unknown;
	}
	if (a.known != size_mask(size))
		return unknown;
	return bits((a.v + (uint64_t)d) & size_mask(size), size_mask(size));
}

static void note_addr(struct eval *e, uint64_t va)
{
	if (!cp_frame_note_addr(e->f, va))
		e->oom = true;
}

static void note_addr_store(struct eval *e, const ZydisDecodedOperand *op)
{
	int b = cp_zreg64(op->mem.base);

	if (b >= 0 && e->reg[b].kind == K_ADDR)
		note_addr(e, e->reg[b].v + (uint64_t)op->mem.disp.value);
}

static void do_mov(struct eval *e, ZydisMnemonic id)
{
	const ZydisDecodedOperand *d = &e->in->op[0], *s = &e->in->op[1];
	bool stores8 = d->type == ZYDIS_OPERAND_TYPE_MEMORY && op_size(e, d) == 8;
	struct aval a;
	int io = 0;

	if (e->in->in.operand_count_visible != 2)
		return;
	a = read_op(e, s);
	if (s->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
		io = e->in->in.raw.imm[0].offset;
	if (id == ZYDIS_MNEMONIC_MOVZX && a.kind == K_BITS) {
		unsigned n = op_size(e, s);

		a = bits(a.v, (a.known & size_mask(n)) | ~size_mask(n));
	} else if (id == ZYDIS_MNEMONIC_MOVSX || id == ZYDIS_MNEMONIC_MOVSXD) {
		a = unknown;
	} else if (s->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		a = bits(s->imm.value.u, size_mask(op_size(e, d)));
		a.imm = e->in->addr;
	} else if (s->type != ZYDIS_OPERAND_TYPE_REGISTER) {
		a.imm = 0;
	}
	if (stores8)
		note_addr_store(e, d);
	if (a.kind == K_ADDR && stores8) {
		int64_t off;

		if (frame_addr(e, d, &off)) {
			note_astore(e, off, a.v);
			mem_forget(e, off, 8);
			return;
		}
	}
	write_op(e, d, a, io);
}

/* A lea of read-only data, noted: the string-table loop's candidates. */
static void note_lea(struct eval *e, uint64_t va)
{
	const struct cp_section *s = cp_image_section_at(e->img, va);
	struct cp_frame *f = e->f;

	if (!s || !cp_section_is_rodata(s))
		return;
	if (CP_GROW(f->leas, f->capleas, f->nleas + 1) || CP_GROW(f->lea_insn, f->capleainsn, f->nleas + 1)) {
		e->oom = true;
		return;
	}
	f->leas[f->nleas] = va;
	f->lea_insn[f->nleas++] = e->in->addr;
}

/* [base + index * scale + disp] where one of base and index (scale 1) is
 * an address and the other a value all of whose bits are known. */
static bool indexed_addr(const struct eval *e, const ZydisDecodedOperand *m, uint64_t *va)
{
	int b = cp_zreg64(m->mem.base), x = cp_zreg64(m->mem.index);
	const struct aval *ab, *ax;

	if (b < 0 || x < 0)
		return false;
	ab = &e->reg[b];
	ax = &e->reg[x];
	if (ab->kind == K_ADDR && ax->kind == K_BITS && ax->known == ~0ull)
		*va = ab->v + ax->v * m->mem.scale;
	else if (m->mem.scale == 1 && ax->kind == K_ADDR && ab->kind == K_BITS && ab->known == ~0ull)
		*va = ax->v + ab->v;
	else
		return false;
	*va += (uint64_t)m->mem.disp.value;
	return true;
}

static void do_lea(struct eval *e)
{
	const ZydisDecodedOperand *m = &e->in->op[1];
	struct aval a = unknown;
	int b = cp_zreg64(m->mem.base);
	int64_t off;

	if (cp_zrip(m)) {
		a.kind = K_ADDR;
		a.v = cp_zrip_addr(e->in, m);
		note_lea(e, a.v);
		if (e->oom)
			return;
	} else if (frame_addr(e, m, &off)) {
		a.kind = K_FRAME;
		a.v = (uint64_t)off;
	} else if (unindexed(m) && b >= 0 && e->reg[b].kind == K_ADDR) {
		/* lea rcx, [rbx + 0x10]: an address next to one lea'd before
		 * (Cython 3.0's string table: &mstate->x for entry after entry) */
		a.kind = K_ADDR;
		a.v = e->reg[b].v + (uint64_t)m->mem.disp.value;
	} else if (indexed_addr(e, m, &a.v)) {
		/* lea rdi, [r12 + rbx]: a blob's start plus an offset still
		 * known (0 on the decode loop's first pass, linearly) */
		reg_write(e, e->in->op[0].reg.value, op_size(e, &e->in->op[0]),
			  (struct aval){ K_ADDR, a.v, 0, 0, 0 });
		return;
	}
	if (a.kind == K_ADDR)
		note_addr(e, a.v);
	reg_write(e, e->in->op[0].reg.value, op_size(e, &e->in->op[0]), a);
}

static void push_val(struct eval *e, struct aval a)
{
	e->reg[RSP].v -= 8;
	mem_write(e, (int64_t)e->reg[RSP].v, 8, a, 0);
}

static void do_pushpop(struct eval *e, ZydisMnemonic id)
{
	if (e->reg[RSP].kind != K_FRAME || e->in->in.operand_count_visible != 1)
		return;
	if (id == ZYDIS_MNEMONIC_PUSH) {
		push_val(e, read_op(e, &e->in->op[0]));
		return;
	}
	write_op(e, &e->in->op[0], mem_read(e, (int64_t)e->reg[RSP].v, 8), 0);
	e->reg[RSP].v += 8;
}

static void note_body(struct eval *e)
{
	if (!e->body_set && e->reg[RSP].kind == K_FRAME) {
		e->body = (int64_t)e->reg[RSP].v;
		e->body_set = true;
	}
}

static void do_arith(struct eval *e, ZydisMnemonic id)
{
	const ZydisDecodedOperand *d = &e->in->op[0];
	struct aval a, b;

	if (e->in->in.operand_count_visible != 2)
		return;
	a = read_op(e, d);
	b = read_op(e, &e->in->op[1]);
	if (d->type == ZYDIS_OPERAND_TYPE_REGISTER && cp_zreg64(d->reg.value) == RSP) {
		a = e->reg[RSP];
		write_op(e, d, arith(id, a, b, 8), 0);
		/* the prologue's frame allocation defines the body's depth, even
		 * when a mov came between the pushes */
		if (id == ZYDIS_MNEMONIC_SUB && !e->body_from_sub && e->reg[RSP].kind == K_FRAME) {
			e->body = (int64_t)e->reg[RSP].v;
			e->body_set = e->body_from_sub = true;
		}
		return;
	}
	write_op(e, d, arith(id, a, b, op_size(e, d)), 0);
}

static void do_logic(struct eval *e, ZydisMnemonic id)
{
	const ZydisDecodedOperand *d = &e->in->op[0], *s = &e->in->op[1];
	struct aval a, b;

	if (e->in->in.operand_count_visible != 2)
		return;
	if (id == ZYDIS_MNEMONIC_XOR && d->type == ZYDIS_OPERAND_TYPE_REGISTER &&
	    s->type == ZYDIS_OPERAND_TYPE_REGISTER && d->reg.value == s->reg.value) {
		write_op(e, d, bits(0, ~0ull), 0);
		return;
	}
	a = read_op(e, d);
	b = read_op(e, s);
	write_op(e, d, logic(id, a, b), 0);
}

/* The element width of movs and stos; 0 for anything else (movsd is also
 * SSE2's scalar move, which is not a string instruction). */
static unsigned string_width(const struct zin *z)
{
	if (z->in.meta.category != ZYDIS_CATEGORY_STRINGOP)
		return 0;
	switch (z->in.mnemonic) {
	case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_STOSB: return 1;
	case ZYDIS_MNEMONIC_MOVSW: case ZYDIS_MNEMONIC_STOSW: return 2;
	case ZYDIS_MNEMONIC_MOVSD: case ZYDIS_MNEMONIC_STOSD: return 4;
	case ZYDIS_MNEMONIC_MOVSQ: case ZYDIS_MNEMONIC_STOSQ: return 8;
	default: return 0;
	}
}

static bool is_movs(ZydisMnemonic id)
{
	return id == ZYDIS_MNEMONIC_MOVSB || id == ZYDIS_MNEMONIC_MOVSW || id == ZYDIS_MNEMONIC_MOVSD ||
	       id == ZYDIS_MNEMONIC_MOVSQ;
}

/* rep movs / rep stos into the frame. */
static void do_string(struct eval *e, unsigned w)
{
	struct aval *di = &e->reg[7], *si = &e->reg[6], *cx = &e->reg[1];
	bool rep = (e->in->in.attributes & ZYDIS_ATTRIB_HAS_REP) != 0;
	uint64_t n = 1;

	if (rep) {
		if (cx->kind != K_BITS || cx->known != ~0ull)
			goto forget;
		n = cx->v;
	}
	if (di->kind != K_FRAME || n > CP_FRAME_SIZE / w)
		goto forget;
	if (is_movs(e->in->in.mnemonic)) {
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
	if (di->kind == K_FRAME && n <= CP_FRAME_SIZE / w)
		mem_forget(e, (int64_t)di->v, (unsigned)(n * w > 32 ? 32 : n * w));
	*di = unknown;
	*si = unknown;
	*cx = unknown;
}

static void note_astore(struct eval *e, int64_t off, uint64_t va)
{
	if (!cp_frame_note_astore(e->f, off, va, e->in->addr))
		e->oom = true;
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
	f->arglens[f->narglens].insn = e->in->addr;
	f->arglens[f->narglens].len = si->v;
	f->arglens[f->narglens].set = si->origin;
	f->arglens[f->narglens].ptr_set = di->origin;
	f->arglens[f->narglens].is_bytes = bytes;
	f->narglens++;
}

/* A direct call's target, else 0. */
static uint64_t call_target(const struct eval *e)
{
	const ZydisDecodedOperand *op = &e->in->op[0];

	return e->in->in.operand_count_visible == 1 && op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE ? cp_zimm(e->in, op)
												 : 0;
}

/* The imported function a call reaches: through the PLT, or through its
 * GOT slot (-fno-plt), else NULL. */
static const char *callee_name(const struct eval *e)
{
	const ZydisDecodedOperand *op = &e->in->op[0];
	uint64_t target = call_target(e);

	if (target)
		return cp_image_plt_name(e->img, target);
	if (e->in->in.operand_count_visible == 1 && cp_zrip(op))
		return cp_image_got_name(e->img, cp_zrip_addr(e->in, op));
	return NULL;
}

/* Every call, with its argument registers (cp_frame_call). */
static void note_call(struct eval *e, const char *name)
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
	c->insn = e->in->addr;
	c->name = name;
	c->target = call_target(e);
	for (i = 0; i < X86_64_NARGS; i++) {
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
static void do_call(struct eval *e)
{
	const char *name = callee_name(e);
	struct aval *di = &e->reg[7], *si = &e->reg[6], *dx = &e->reg[2];

	note_call(e, name);
	if (name)
		note_arglen(e, name);
	cp_frame_resolve_astores(e->f);
	if (name && di->kind == K_FRAME && dx->kind == K_BITS && dx->known == ~0ull) {
		if ((!strcmp(name, "memcpy") || !strcmp(name, "memmove")) && si->kind == K_ADDR)
			mem_copy_in(e, (int64_t)di->v, si->v, dx->v);
		else if (!strcmp(name, "memset") && si->kind == K_BITS && (si->known & 0xff) == 0xff)
			mem_fill(e, (int64_t)di->v, (uint8_t)si->v, dx->v);
	}
	clobber_call(e);
}

static int xmm_index(const ZydisDecodedOperand *op)
{
	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && op->reg.value >= ZYDIS_REGISTER_XMM0 &&
	    op->reg.value <= ZYDIS_REGISTER_XMM15)
		return (int)(op->reg.value - ZYDIS_REGISTER_XMM0);
	return -1;
}

static bool is_vector_move(ZydisMnemonic id)
{
	switch (id) {
	case ZYDIS_MNEMONIC_MOVDQA: case ZYDIS_MNEMONIC_MOVDQU: case ZYDIS_MNEMONIC_MOVAPS: case ZYDIS_MNEMONIC_MOVUPS:
	case ZYDIS_MNEMONIC_MOVAPD: case ZYDIS_MNEMONIC_MOVUPD: case ZYDIS_MNEMONIC_LDDQU:
	case ZYDIS_MNEMONIC_VMOVDQA: case ZYDIS_MNEMONIC_VMOVDQU: case ZYDIS_MNEMONIC_VMOVAPS:
	case ZYDIS_MNEMONIC_VMOVUPS:
		return true;
	default:
		return false;
	}
}

/* A 16-byte load into xmm register di from .rodata or the frame. */
static void vector_load(struct eval *e, int di, const ZydisDecodedOperand *s)
{
	const uint8_t *p = NULL;
	int64_t o;
	size_t idx;

	memset(&e->xmm[di], 0, sizeof(e->xmm[di]));
	if (cp_zrip(s))
		p = cp_image_va_bytes(e->img, cp_zrip_addr(e->in, s), 16);
	if (p) {
		memcpy(e->xmm[di].v, p, 16);
		memset(e->xmm[di].known, 0xff, 16);
	} else if (frame_addr(e, s, &o) && frame_index(o, 16, &idx)) {
		memcpy(e->xmm[di].v, e->f->val + idx, 16);
		memcpy(e->xmm[di].known, e->f->known + idx, 16);
	}
}

/* 16-byte moves between .rodata, xmm registers and the frame. */
static bool do_vector(struct eval *e)
{
	const ZydisDecodedOperand *d = &e->in->op[0], *s = &e->in->op[1];
	int di = xmm_index(d), si = xmm_index(s);
	int64_t off;

	if (e->in->in.operand_count_visible != 2 || op_size(e, d) != 16)
		return false;
	if (di >= 0 && si >= 0) {
		e->xmm[di] = e->xmm[si];
		return true;
	}
	if (di >= 0 && s->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		vector_load(e, di, s);
		return true;
	}
	if (si >= 0 && d->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		if (frame_addr(e, d, &off)) {
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
 * this way, and g++ the entries of Cython 3.2's import-pointer array,
 * cuda-core 1.2.2's). */
static bool do_qword_xmm(struct eval *e, ZydisMnemonic id)
{
	const ZydisDecodedOperand *d = &e->in->op[0], *s = &e->in->op[1];
	int di = e->in->in.operand_count_visible == 2 ? xmm_index(d) : -1;
	struct xmm *xd;

	if (di < 0)
		return false;
	xd = &e->xmm[di];
	if (id == ZYDIS_MNEMONIC_MOVQ && s->type == ZYDIS_OPERAND_TYPE_REGISTER && s->size == 64 &&
	    cp_zreg64(s->reg.value) >= 0) {
		struct aval a = reg_read(e, s->reg.value, 8);
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
	if (id == ZYDIS_MNEMONIC_MOVQ && s->type == ZYDIS_OPERAND_TYPE_MEMORY && cp_zrip(s)) {
		memset(xd, 0, sizeof(*xd));
		memset(xd->known + 8, 0xff, 8);
		xd->addr[0] = cp_image_relative_at(e->img, cp_zrip_addr(e->in, s));
		return true;
	}
	if (id == ZYDIS_MNEMONIC_PUNPCKLQDQ && xmm_index(s) >= 0) {
		const struct xmm *xs = &e->xmm[xmm_index(s)];

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

static void record_indexed_load(struct eval *e)
{
	int i;

	for (i = 0; i < e->in->in.operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &e->in->op[i];
		int b = op->type == ZYDIS_OPERAND_TYPE_MEMORY ? cp_zreg64(op->mem.base) : -1;
		struct cp_frame *f = e->f;
		struct cp_frame_load *l;

		if (b < 0 || unindexed(op) || e->reg[b].kind != K_FRAME)
			continue;
		if (CP_GROW(f->loads, f->caploads, f->nloads + 1)) {
			e->oom = true;
			return;
		}
		l = &f->loads[f->nloads++];
		l->insn = e->in->addr;
		l->base = (int64_t)e->reg[b].v + op->mem.disp.value;
		l->scale = op->mem.scale;
		l->width = (uint8_t)op_size(e, op);
		if (l->scale == 4 && !cp_frame_snapshot(f, l->base))
			e->oom = true;
	}
}

/* A compared value the code computed (not an immediate), when all its bits
 * are known. */
static bool compared_value(struct eval *e, const ZydisDecodedOperand *op, uint64_t *v)
{
	unsigned size = op_size(e, op);
	struct aval a;
	int64_t off;

	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
		a = reg_read(e, op->reg.value, size);
	else if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && frame_addr(e, op, &off))
		/* not read_op: what the decode loop reads first stays as the
		 * snapshots have it */
		a = mem_read(e, off, size);
	else
		return false;
	*v = a.v;
	return a.kind == K_BITS && a.known == size_mask(size);
}

/* A vector compare, whose immediate is its predicate, not a number
 * (cmpnlesd). */
static bool is_vector_compare(ZydisMnemonic id)
{
	switch (id) {
	case ZYDIS_MNEMONIC_CMPSS: case ZYDIS_MNEMONIC_CMPSD: case ZYDIS_MNEMONIC_CMPPS: case ZYDIS_MNEMONIC_CMPPD:
	case ZYDIS_MNEMONIC_VCMPSS: case ZYDIS_MNEMONIC_VCMPSD: case ZYDIS_MNEMONIC_VCMPPS: case ZYDIS_MNEMONIC_VCMPPD:
		return true;
	default:
		return false;
	}
}

static void record_imms(struct eval *e)
{
	struct cp_frame *f = e->f;
	bool cmp = e->in->in.mnemonic == ZYDIS_MNEMONIC_CMP;
	uint64_t v;
	int i;

	for (i = 0; !is_vector_compare(e->in->in.mnemonic) && i < e->in->in.operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &e->in->op[i];

		if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && (int64_t)(v = imm_value(e, op)) >= 0) {
			if (CP_GROW(f->imms, f->capimms, f->nimms + 1) || CP_GROW(f->cmps, f->capcmps, f->ncmps + 1)) {
				e->oom = true;
				return;
			}
			f->imms[f->nimms++] = v;
			if (cmp)
				f->cmps[f->ncmps++] = v;
		}
	}
	for (i = 0; cmp && i < e->in->in.operand_count_visible; i++) {
		if (!compared_value(e, &e->in->op[i], &v))
			continue;
		if (CP_GROW(f->cmpvals, f->capcmpvals, f->ncmpvals + 1)) {
			e->oom = true;
			return;
		}
		f->cmpvals[f->ncmpvals++] = v;
	}
}

/* What the instruction writes that step() does not follow is no longer
 * known: frame bytes through its explicit operands, every register. */
static void forget_written(struct eval *e)
{
	int k, r, v;

	for (k = 0; k < e->in->in.operand_count; k++) {
		const ZydisDecodedOperand *op = &e->in->op[k];
		int64_t off;

		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && k < e->in->in.operand_count_visible &&
		    (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) && frame_addr(e, op, &off))
			mem_forget(e, off, op_size(e, op));
		if ((r = cp_zwritten(op)) >= 0 && r != RSP)
			e->reg[r] = unknown;
		if ((v = xmm_index(op)) >= 0 && (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			memset(&e->xmm[v], 0, sizeof(e->xmm[v]));
	}
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

/* The instructions that move values step() follows; false for the rest. */
static bool step_move(struct eval *e, ZydisMnemonic id)
{
	switch (id) {
	case ZYDIS_MNEMONIC_MOV: case ZYDIS_MNEMONIC_MOVZX: case ZYDIS_MNEMONIC_MOVSX: case ZYDIS_MNEMONIC_MOVSXD:
		do_mov(e, id);
		return true;
	case ZYDIS_MNEMONIC_LEA:
		do_lea(e);
		return true;
	case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_POP:
		do_pushpop(e, id);
		return true;
	case ZYDIS_MNEMONIC_ADD: case ZYDIS_MNEMONIC_SUB:
		do_arith(e, id);
		return true;
	case ZYDIS_MNEMONIC_AND: case ZYDIS_MNEMONIC_OR: case ZYDIS_MNEMONIC_XOR:
		do_logic(e, id);
		return true;
	case ZYDIS_MNEMONIC_CALL:
		do_call(e);
		return true;
	case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_JMP: case ZYDIS_MNEMONIC_UD2:
		end_block(e);
		return true;
	default:
		return false;
	}
}

static void step(struct eval *e, const struct zin *z)
{
	ZydisMnemonic id = z->in.mnemonic;
	unsigned w;

	e->in = z;
	record_indexed_load(e);
	record_imms(e);
	if (id != ZYDIS_MNEMONIC_PUSH && id != ZYDIS_MNEMONIC_SUB && id != ZYDIS_MNEMONIC_ENDBR64)
		note_body(e);
	if (step_move(e, id))
		return;
	if ((w = string_width(z))) {
		do_string(e, w);
		return;
	}
	if (is_vector_move(id) && do_vector(e))
		return;
	if (do_qword_xmm(e, id))
		return;
	forget_written(e);
}

static void eval_start(struct eval *e, const cp_image *img, struct cp_frame *f, bool seed_args)
{
	int i;

	memset(e, 0, sizeof(*e));
	e->img = img;
	e->f = f;
	e->reg[RSP].kind = K_FRAME;
	for (i = 0; seed_args && i < X86_64_NARGS; i++)
		e->reg[cp_x86_64_arg_regs[i]] = bits(CP_FRAME_ARG(i), ~0ull);
}

/* Steps through [start, start + size) of code; a byte that does not decode
 * ends the block and is stepped over. */
static void eval_code(struct eval *e, const ZydisDecoder *dec, const uint8_t *code, size_t size, uint64_t start)
{
	size_t pos = 0;
	struct zin z;

	while (pos < size && !e->oom) {
		if (!cp_zdecode(dec, code + pos, size - pos, start + pos, &z)) {
			pos++;
			end_block(e);
			continue;
		}
		pos += z.in.length;
		step(e, &z);
	}
}

cp_status cp_x86_frame_eval(const cp_image *img, uint64_t start, uint64_t end, bool seed_args,
			    struct cp_frame *f, cp_error *err)
{
	const struct cp_section *s = cp_image_section_at(img, start);
	const uint8_t *code;
	ZydisDecoder dec;
	struct eval e;

	memset(f, 0, sizeof(*f));
	if (!s || end <= start || end - start > s->size - (start - s->addr))
		return CP_OK;
	code = cp_image_bytes(img, s->offset + (start - s->addr), end - start);
	if (!code)
		return CP_OK;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return cp_fail(err, CP_E_INTERNAL, "%s: the x86-64 decoder did not start", img->path);
	if (!cp_frame_build_alloc(f))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	eval_start(&e, img, f, seed_args);
	eval_code(&e, &dec, code, end - start, start);
	if (!e.oom)
		cp_frame_resolve_astores(f);
	if (e.oom)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	cp_frame_unique(f->imms, &f->nimms);
	cp_frame_unique(f->cmps, &f->ncmps);
	return CP_OK;
}
