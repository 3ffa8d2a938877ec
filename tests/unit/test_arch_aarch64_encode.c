/*
 * test_arch_aarch64_encode.c - aarch64's writing side (arch/aarch64/
 * encode.h), driven by instruction vectors: every word below is what
 * Debian's aarch64-linux-gnu-as 2.40 assembled (objdump -d of the source in
 * each comment; the thunks' words from aarch64-linux-gnu-ld.bfd with the
 * addresses given). Each written word is decoded again by capstone
 * (CS_ARCH_ARM64 with detail) and must be the same instruction reaching the
 * intended target or holding the intended immediate; reach is tried at the
 * last address each way and one step beyond, which is refused with the
 * word left as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <capstone/capstone.h>

#include "arch/aarch64/encode.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define GIB (1ull << 32)
#define PAGE_OF(a) ((a) & ~0xfffull)

static void put(uint8_t *b, uint32_t w)
{
	b[0] = (uint8_t)w;
	b[1] = (uint8_t)(w >> 8);
	b[2] = (uint8_t)(w >> 16);
	b[3] = (uint8_t)(w >> 24);
}

static uint32_t get(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* What capstone makes of word w at pc: the instruction's id, the last
 * immediate operand with its shift applied (a branch's or ADR's target,
 * ADRP's page), and the memory operand's displacement. */
struct seen {
	unsigned id;
	uint64_t imm;
	int64_t disp;
	bool has_imm, has_mem;
};

static struct seen decode(uint32_t w, uint64_t pc)
{
	struct seen s;
	uint8_t b[4];
	cs_insn *in = NULL;
	const cs_arm64 *a;
	csh h;
	int i;

	memset(&s, 0, sizeof(s));
	put(b, w);
	assert_int_equal(cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &h), CS_ERR_OK);
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	assert_int_equal(cs_disasm(h, b, 4, pc, 1, &in), 1);
	a = &in->detail->arm64;
	s.id = in->id;
	for (i = 0; i < a->op_count; i++) {
		const cs_arm64_op *op = &a->operands[i];

		if (op->type == ARM64_OP_IMM) {
			s.imm = (uint64_t)op->imm << (op->shift.type == ARM64_SFT_LSL ? op->shift.value : 0);
			s.has_imm = true;
		} else if (op->type == ARM64_OP_MEM) {
			s.disp = op->mem.disp;
			s.has_mem = true;
		}
	}
	cs_free(in, 1);
	cs_close(&h);
	return s;
}

/* The PC-relative forms: the furthest reachable target below and above pc
 * (relative to pc; for ADRP, to pc's page), and the step of the targets. */
static const struct pcrel_vec {
	uint32_t word;
	const char *src;
	int64_t lo, hi;
	unsigned step;
	uint32_t imm_mask; /* the bits that hold the offset */
} pcrel_vecs[] = {
	{ 0x90000001, "adrp x1, 0", -(int64_t)GIB, (int64_t)GIB - 4096, 4096, 0x60ffffe0 },
	{ 0x10000802, "adr x2, .+0x100", -(1 << 20), (1 << 20) - 1, 1, 0x60ffffe0 },
	{ 0x14000010, "b .+0x40", -(1 << 27), (1 << 27) - 4, 4, 0x03ffffff },
	{ 0x97fffff0, "bl .-0x40", -(1 << 27), (1 << 27) - 4, 4, 0x03ffffff },
	{ 0x54000401, "b.ne .+0x80", -(1 << 20), (1 << 20) - 4, 4, 0x00ffffe0 },
	{ 0x34000103, "cbz w3, .+0x20", -(1 << 20), (1 << 20) - 4, 4, 0x00ffffe0 },
	{ 0xb5ffff04, "cbnz x4, .-0x20", -(1 << 20), (1 << 20) - 4, 4, 0x00ffffe0 },
	{ 0x58000807, "ldr x7, .+0x100", -(1 << 20), (1 << 20) - 4, 4, 0x00ffffe0 },
	{ 0x18000808, "ldr w8, .+0x100", -(1 << 20), (1 << 20) - 4, 4, 0x00ffffe0 },
	{ 0x98000809, "ldrsw x9, .+0x100", -(1 << 20), (1 << 20) - 4, 4, 0x00ffffe0 },
	{ 0x36180085, "tbz w5, #3, .+0x10", -(1 << 15), (1 << 15) - 4, 4, 0x0007ffe0 },
	{ 0xb747ff86, "tbnz x6, #40, .-0x10", -(1 << 15), (1 << 15) - 4, 4, 0x0007ffe0 },
};

static const uint64_t PC = 0x200001234ull & ~3ull;

/* Re-encoded to t from PC: the same instruction, every other bit kept,
 * reaching t (ADRP: t's page). */
static void reaches(const struct pcrel_vec *v, uint64_t t)
{
	struct seen before = decode(v->word, PC), after;
	uint32_t out = 0;

	assert_true(cp_a64_pcrel(v->word, PC, t, &out));
	assert_int_equal(out & ~v->imm_mask, v->word & ~v->imm_mask);
	after = decode(out, PC);
	assert_int_equal(after.id, before.id);
	assert_true(after.has_imm);
	assert_int_equal(after.imm, v->step == 4096 ? PAGE_OF(t) : t);
}

/* Refused through the byte form: the bytes stay. */
static void refused(uint32_t word, uint64_t pc, uint64_t t)
{
	uint8_t b[4];

	put(b, word);
	assert_false(cp_a64_pcrel_put(b, pc, 4, t));
	assert_int_equal(get(b), word);
}

static void test_pcrel_reencode(void **state)
{
	size_t v;

	(void)state;
	for (v = 0; v < N(pcrel_vecs); v++) {
		const struct pcrel_vec *p = &pcrel_vecs[v];
		uint64_t base = p->step == 4096 ? PAGE_OF(PC) : PC;

		reaches(p, PC);
		reaches(p, base + (uint64_t)p->hi);
		reaches(p, base + (uint64_t)p->lo);
		reaches(p, PC + 0x40);
		reaches(p, PC - 0x1000);
		refused(p->word, PC, base + (uint64_t)p->hi + p->step);
		refused(p->word, PC, base + (uint64_t)p->lo - (p->step == 4096 ? 1 : p->step));
	}
}

/* ADRP takes any byte of the last page; ADR any byte; the word-scaled
 * forms refuse a target or a pc that is not 4-aligned. */
static void test_pcrel_alignment(void **state)
{
	size_t v;

	(void)state;
	reaches(&pcrel_vecs[0], PAGE_OF(PC) + GIB - 1);
	reaches(&pcrel_vecs[1], PC + 3);
	for (v = 2; v < N(pcrel_vecs); v++) {
		refused(pcrel_vecs[v].word, PC, PC + 2);
		refused(pcrel_vecs[v].word, PC, PC + 0x41);
	}
	for (v = 0; v < N(pcrel_vecs); v++)
		refused(pcrel_vecs[v].word, PC + 2, PC + 0x100);
}

/* b .+0x40 at 0x1000 to 0x2000: imm26 = 0x400. */
static void test_pcrel_bytes(void **state)
{
	uint8_t b[4] = { 0x10, 0x00, 0x00, 0x14 };

	(void)state;
	assert_true(cp_a64_pcrel_put(b, 0x1000, 4, 0x2000));
	assert_int_equal(get(b), 0x14000400);
	assert_false(cp_a64_pcrel_put(b, 0x1000, 8, 0x2000)); /* not one word */
	assert_int_equal(get(b), 0x14000400);
}

/* Words that are no PC-relative form are refused. */
static void test_pcrel_other(void **state)
{
	static const uint32_t words[] = {
		0xd63f0200, /* blr x16 */
		0xd65f03c0, /* ret */
		0xd2a24680, /* mov x0, #0x12340000 */
	};
	size_t i;
	uint32_t out = 0x5a5a5a5a;

	(void)state;
	for (i = 0; i < N(words); i++) {
		assert_false(cp_a64_pcrel(words[i], PC, PC + 8, &out));
		assert_int_equal(out, 0x5a5a5a5a);
		refused(words[i], PC, PC + 8);
	}
}

/* An instruction completing an address from a register becomes one that
 * reaches the target alone, into the same register: ADD/SUB -> ADR, LDR
 * (unsigned offset) -> LDR (literal), through pcrel_put as the planner
 * calls it. The reach is ADR's and LDR (literal)'s 1 MiB. */
static const struct {
	uint32_t word;
	const char *src;
	unsigned id; /* what it becomes */
	int rd;
} completes[] = {
	{ 0xd1034352, "sub x18, x26, #0xd0", ARM64_INS_ADR, 18 },
	{ 0x913c8021, "add x1, x1, #0xf20", ARM64_INS_ADR, 1 },
	{ 0xf947f610, "ldr x16, [x16, #0xfe8]", ARM64_INS_LDR, 16 },
	{ 0xb9400420, "ldr w0, [x1, #0x4]", ARM64_INS_LDR, 0 },
	{ 0xb9800420, "ldrsw x0, [x1, #0x4]", ARM64_INS_LDRSW, 0 },
};

static void test_standalone(void **state)
{
	static const int64_t deltas[] = { 0, 8, -0x100000, 0xffffc };
	size_t v, t;

	(void)state;
	for (v = 0; v < N(completes); v++)
		for (t = 0; t < N(deltas); t++) {
			uint8_t b[4];
			struct seen s;

			put(b, completes[v].word);
			assert_true(cp_a64_pcrel_put(b, PC, 4, PC + (uint64_t)deltas[t]));
			s = decode(get(b), PC);
			assert_int_equal(s.id, completes[v].id);
			assert_int_equal(s.imm, PC + (uint64_t)deltas[t]);
			assert_int_equal(get(b) & 31, (uint32_t)completes[v].rd);
			refused(completes[v].word, PC, PC + 0x100000);
			refused(completes[v].word, PC, PC - 0x100004);
		}
	/* LDR (literal) is word-scaled; ADR takes any byte */
	refused(0xf947f610, PC, PC + 2);
	{
		uint8_t b[4];

		put(b, 0x913c8021);
		assert_true(cp_a64_pcrel_put(b, PC, 4, PC + 3));
	}
}

/* Forms that do not complete an address alone, or whose register ADR
 * cannot write: refused, the word kept. An ADRP is never rewritten alone
 * (its page serves every instruction that completes it). */
static void test_standalone_refused(void **state)
{
	static const uint32_t words[] = {
		0x90000010, /* adrp x16, . */
		0xb1001c83, /* adds x3, x4, #7 */
		0x11003c20, /* add w0, w1, #0xf */
		0x910043ff, /* add sp, sp, #0x10 */
		0x39401c20, /* ldrb w0, [x1, #0x7] */
		0xb9000420, /* str w0, [x1, #0x4] */
		0x3dc00420, /* ldr q0, [x1, #0x10] */
	};
	size_t i;

	(void)state;
	for (i = 0; i < N(words); i++)
		refused(words[i], PC, PC + 0x40);
}

/* ADRP's companions, with the scale of their immediates. */
static const struct {
	uint32_t word;
	const char *src;
	unsigned scale;
} lo12_vecs[] = {
	{ 0x913c8021, "add x1, x1, #0xf20", 1 },
	{ 0xf947f610, "ldr x16, [x16, #0xfe8]", 8 },
	{ 0x39401c20, "ldrb w0, [x1, #0x7]", 1 },
	{ 0x79400c20, "ldrh w0, [x1, #0x6]", 2 },
	{ 0xb9800420, "ldrsw x0, [x1, #0x4]", 4 },
	{ 0xb9000420, "str w0, [x1, #0x4]", 4 },
	{ 0x3dc00420, "ldr q0, [x1, #0x10]", 16 },
};

static void test_lo12(void **state)
{
	static const uint64_t targets[] = { 0x12345000, 0x12345ff0, 0x7f0a10, 0x400020 };
	size_t v, t;

	(void)state;
	for (v = 0; v < N(lo12_vecs); v++)
		for (t = 0; t < N(targets); t++) {
			uint32_t out = 0;
			uint64_t lo = targets[t] & 0xfff;
			struct seen s;

			assert_true(cp_a64_lo12(lo12_vecs[v].word, targets[t], &out));
			assert_int_equal(out & ~(0xfffu << 10), lo12_vecs[v].word & ~(0xfffu << 10));
			s = decode(out, PC);
			assert_int_equal(s.id, decode(lo12_vecs[v].word, PC).id);
			if (s.has_mem)
				assert_int_equal(s.disp, lo);
			else
				assert_int_equal(s.imm, lo);
		}
}

/* An offset the access size does not divide; ADD with LSL #12, SUB. */
static void test_lo12_refused(void **state)
{
	size_t v;
	uint32_t out = 0x5a5a5a5a;

	(void)state;
	for (v = 0; v < N(lo12_vecs); v++)
		if (lo12_vecs[v].scale > 1) {
			assert_false(cp_a64_lo12(lo12_vecs[v].word, 0x12345000 + lo12_vecs[v].scale / 2, &out));
			refused(lo12_vecs[v].word, PC, 0x12345000 + lo12_vecs[v].scale / 2);
		}
	assert_false(cp_a64_lo12(0x91400421, 0x12345010, &out)); /* add x1, x1, #1, lsl #12 */
	assert_false(cp_a64_lo12(0xd1034352, 0x12345010, &out)); /* sub x18, x26, #0xd0 */
	assert_false(cp_a64_lo12(0xb1001c83, 0x12345010, &out)); /* adds x3, x4, #7 */
	assert_false(cp_a64_lo12(0xf85f8020, 0x12345010, &out)); /* ldur x0, [x1, #-8] */
	assert_int_equal(out, 0x5a5a5a5a);
}

/* adrp x1; add x1, x1, #0xf20 pointed at a string elsewhere. */
static void test_adrp_pair(void **state)
{
	uint8_t a[4], l[4];
	static const uint64_t at = 0x400000;

	(void)state;
	put(a, 0x90000001);
	put(l, 0x913c8021);
	assert_true(cp_a64_adrp_pair(a, at, l, 0x7f0a10));
	assert_int_equal(decode(get(a), at).imm, 0x7f0000);
	assert_int_equal(decode(get(l), at + 4).imm, 0xa10);
	/* the last page above, then one beyond: both words kept */
	assert_true(cp_a64_adrp_pair(a, at, l, at + GIB - 4096 + 0x18));
	assert_int_equal(decode(get(a), at).imm, at + GIB - 4096);
	assert_int_equal(decode(get(l), at + 4).imm, 0x18);
	put(a, 0x90000001);
	put(l, 0x913c8021);
	assert_false(cp_a64_adrp_pair(a, at, l, at + GIB));
	assert_int_equal(get(a), 0x90000001);
	assert_int_equal(get(l), 0x913c8021);
	/* a companion on another register (add x3, x3, #0x10) */
	put(l, 0x91004063);
	assert_false(cp_a64_adrp_pair(a, at, l, 0x7f0a10));
	assert_int_equal(get(a), 0x90000001);
	assert_int_equal(get(l), 0x91004063);
	/* adrp x16; ldr x16, [x16, #0xfe8] (a GOT slot): a misaligned target */
	put(a, 0x90000010);
	put(l, 0xf947f610);
	assert_false(cp_a64_adrp_pair(a, at, l, 0x7f0a14));
	assert_int_equal(get(a), 0x90000010);
	assert_true(cp_a64_adrp_pair(a, at, l, 0x7f0a18));
	assert_int_equal(decode(get(l), at + 4).disp, 0xa18);
}

/* Immediates: the word, a value it takes, and the value capstone shows. */
static const struct {
	uint32_t word;
	const char *src;
	int64_t value;
} imm_ok[] = {
	{ 0x913c8021, "add x1, x1, #0xf20", 0 },
	{ 0x913c8021, "add x1, x1, #0xf20", 0xfff },
	{ 0x913c8021, "add x1, x1, #0xf20", 0x1000 },
	{ 0x913c8021, "add x1, x1, #0xf20", 0xfff000 },
	{ 0x91400421, "add x1, x1, #1, lsl #12", 0x24 },
	{ 0xd1034352, "sub x18, x26, #0xd0", 0xe0 },
	{ 0xf100141f, "cmp x0, #5", 0x11 },
	{ 0x3100141f, "cmn w0, #5", 0x7000 },
	{ 0x7140045f, "cmp w2, #1, lsl #12", 7 },
	{ 0xb1001c83, "adds x3, x4, #7", 0xabc },
	{ 0xd2a24680, "movz x0, #0x1234, lsl #16", 0x5678 },
	{ 0xd2a24680, "movz x0, #0x1234, lsl #16", 0xabcd00000000 },
	{ 0xd2a24680, "movz x0, #0x1234, lsl #16", (int64_t)0x7fff000000000000 },
	{ 0x52b00003, "movz w3, #0x8000, lsl #16", 0x80000000 },
	/* MOVZ and MOVN take the value the register gets, and become each other */
	{ 0x92c24685, "movn x5, #0x1234, lsl #32", 0x42 },
	{ 0x92c24685, "movn x5, #0x1234, lsl #32", (int64_t)0xffffedcbffffffffull },
	{ 0x12824685, "movn w5, #0x1234", 0xffff0000 },
	{ 0x12800b20, "mov w0, #0xffffffa6 (movn w0, #0x59)", 0xffffffb3 },
	{ 0xd2a24680, "movz x0, #0x1234, lsl #16", -2 },
	{ 0xf2a24680, "movk x0, #0x1234, lsl #16", 0xbeef0000 },
	{ 0xf2a24680, "movk x0, #0x1234, lsl #16", 0 },
	{ 0x729fffe1, "movk w1, #0xffff", 0x42 },
	{ 0xf947f610, "ldr x16, [x16, #0xfe8]", 0x7ff8 },
	{ 0x39401c20, "ldrb w0, [x1, #0x7]", 0xfff },
	{ 0xb9000420, "str w0, [x1, #0x4]", 0x3ffc },
};

/* MOVZ or MOVN (opc 2 or 0 of the move-wide class). */
static bool movzn(uint32_t w)
{
	return (w & 0x1f800000u) == 0x12800000u && ((w >> 29) & 3) != 1 && ((w >> 29) & 3) != 3;
}

/* The value a MOVZ/MOVN word puts in its register, from the shifted
 * immediate capstone shows (MOVN's inverted, W's 32 bits). */
static uint64_t register_value(uint32_t w, uint64_t shown)
{
	uint64_t v = ((w >> 29) & 3) == 0 ? ~shown : shown;

	return w >> 31 ? v : v & 0xffffffffull;
}

static void test_imm(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N(imm_ok); i++) {
		uint32_t out = 0;
		uint8_t b[4];
		struct seen s;

		assert_true(cp_a64_imm(imm_ok[i].word, imm_ok[i].value, &out));
		s = decode(out, PC);
		if (movzn(imm_ok[i].word)) {
			/* the width and register are kept; the register gets the value */
			assert_int_equal(out & 0x8000001f, imm_ok[i].word & 0x8000001f);
			assert_true(movzn(out));
			assert_int_equal(register_value(out, s.imm), (uint64_t)imm_ok[i].value);
		} else {
			/* the operation and its registers are kept */
			assert_int_equal(out & 0xff80001f, imm_ok[i].word & 0xff80001f);
			assert_int_equal(s.id, decode(imm_ok[i].word, PC).id);
			if (s.has_mem)
				assert_int_equal(s.disp, imm_ok[i].value);
			else
				assert_int_equal(s.imm, (uint64_t)imm_ok[i].value);
		}
		put(b, imm_ok[i].word);
		assert_true(cp_a64_field_put(b, 4, imm_ok[i].value));
		assert_int_equal(get(b), out);
	}
}

static const struct {
	uint32_t word;
	const char *src;
	int64_t value;
} imm_refused[] = {
	{ 0x913c8021, "add x1, x1, #0xf20", 0x1001 },
	{ 0x913c8021, "add x1, x1, #0xf20", 0x1000000 },
	{ 0x913c8021, "add x1, x1, #0xf20", -1 },
	{ 0xf100141f, "cmp x0, #5", -5 },
	{ 0xd2a24680, "movz x0, #0x1234, lsl #16", 0x10001 },
	{ 0xd2a24680, "movz x0, #0x1234, lsl #16", (int64_t)0xffff0000ffff0000ull },
	{ 0x52b00003, "movz w3, #0x8000, lsl #16", 0x100000000 },
	{ 0x12800b20, "movn w0, #0x59", 0xfff0fff0 },
	{ 0xf2a24680, "movk x0, #0x1234, lsl #16", 0xbeef },
	{ 0xf2a24680, "movk x0, #0x1234, lsl #16", 0x1beef0000 },
	{ 0xf947f610, "ldr x16, [x16, #0xfe8]", 0x8000 },
	{ 0xf947f610, "ldr x16, [x16, #0xfe8]", 0xfe4 },
	{ 0x32001fe0, "orr w0, wzr, #0xff", 0x7f },
	{ 0xf85f8020, "ldur x0, [x1, #-8]", 8 },
	{ 0xaa0103e0, "mov x0, x1", 1 },
	{ 0x14000010, "b .+0x40", 4 },
};

static void test_imm_refused(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N(imm_refused); i++) {
		uint32_t out = 0x5a5a5a5a;
		uint8_t b[4];

		assert_false(cp_a64_imm(imm_refused[i].word, imm_refused[i].value, &out));
		assert_int_equal(out, 0x5a5a5a5a);
		put(b, imm_refused[i].word);
		assert_false(cp_a64_field_put(b, 4, imm_refused[i].value));
		assert_int_equal(get(b), imm_refused[i].word);
	}
	{
		uint8_t b[4] = { 0x21, 0x80, 0x3c, 0x91 }; /* add x1, x1, #0xf20 */

		assert_false(cp_a64_field_put(b, 2, 1)); /* a field is the whole word */
		assert_int_equal(get(b), 0x913c8021);
	}
}

/* bl, b, blr x16, br x17 become bl/b with an imm26 for pcrel_put. */
static void test_branch_rewrite(void **state)
{
	static const struct {
		uint32_t word, want;
		unsigned id;
	} v[] = {
		{ 0x97fffff0, 0x94000000, ARM64_INS_BL }, /* bl .-0x40 */
		{ 0x14000010, 0x14000000, ARM64_INS_B },  /* b .+0x40 */
		{ 0xd63f0200, 0x94000000, ARM64_INS_BL }, /* blr x16 */
		{ 0xd61f0220, 0x14000000, ARM64_INS_B },  /* br x17 */
	};
	static const uint64_t at = 0x10a0c, thunk = 0x8010a0;
	size_t i;

	(void)state;
	for (i = 0; i < N(v); i++) {
		uint8_t in[4], out[4];
		uint8_t field_at = 9, size = 9;
		struct seen s;

		put(in, v[i].word);
		assert_true(cp_a64_branch_rewrite(in, 4, out, &field_at, &size));
		assert_int_equal(get(out), v[i].want);
		assert_int_equal(field_at, 0);
		assert_int_equal(size, 4);
		assert_true(cp_a64_pcrel_put(out + field_at, at, size, thunk));
		s = decode(get(out), at);
		assert_int_equal(s.id, v[i].id);
		assert_int_equal(s.imm, thunk);
		/* BL's reach: 128 MiB */
		assert_false(cp_a64_pcrel_put(out, at, 4, at + (1 << 27)));
	}
}

static void test_branch_refused(void **state)
{
	static const uint32_t words[] = {
		0xd65f03c0, /* ret */
		0xd73f0a11, /* blraa x16, x17 (as -march=armv8.3-a) */
		0x54000401, /* b.ne .+0x80 */
		0x34000103, /* cbz w3, .+0x20 */
		0x90000001, /* adrp x1, 0 */
	};
	size_t i;
	uint8_t in[8] = { 0x10, 0x00, 0x00, 0x14 }, out[8] = { 0xaa, 0xaa, 0xaa, 0xaa };
	uint8_t at, size;

	(void)state;
	assert_false(cp_a64_branch_rewrite(in, 8, out, &at, &size)); /* not one word */
	for (i = 0; i < N(words); i++) {
		put(in, words[i]);
		assert_false(cp_a64_branch_rewrite(in, 4, out, &at, &size));
		assert_int_equal(get(out), 0xaaaaaaaa);
	}
}

/* A load of a GOT slot (-fno-plt) made the thunk's address: adr into the
 * same register, its offset for pcrel_put; anything else refused. */
static void test_load_rewrite(void **state)
{
	static const struct {
		uint32_t word;
		const char *src;
		unsigned rd;
	} ok[] = {
		{ 0xf947f610, "ldr x16, [x16, #0xfe8]", 16 },
		{ 0xf946b442, "ldr x2, [x2, #0xd68]", 2 },
		{ 0x58000102, "ldr x2, .+0x20", 2 },
	};
	static const uint32_t refused_words[] = {
		0xb9400420, /* ldr w0, [x1, #0x4] */
		0x39401c20, /* ldrb w0, [x1, #0x7] */
		0xf9000420, /* str x0, [x1, #0x8] */
		0x3dc00420, /* ldr q0, [x1, #0x10] */
		0x913c8021, /* add x1, x1, #0xf20 */
		0xd63f0200, /* blr x16 */
	};
	uint8_t in[8], out[8];
	size_t i;

	(void)state;
	for (i = 0; i < N(ok); i++) {
		struct seen s;

		put(in, ok[i].word);
		assert_true(cp_a64_load_rewrite(in, 4, out));
		assert_int_equal(get(out) & 31, ok[i].rd);
		assert_true(cp_a64_pcrel_put(out, PC, 4, PC + 0x40010));
		s = decode(get(out), PC);
		assert_int_equal(s.id, ARM64_INS_ADR);
		assert_int_equal(s.imm, PC + 0x40010);
	}
	for (i = 0; i < N(refused_words); i++) {
		put(in, refused_words[i]);
		memset(out, 0xaa, sizeof(out));
		assert_false(cp_a64_load_rewrite(in, 4, out));
		assert_int_equal(get(out), 0xaaaaaaaa);
	}
	put(in, ok[0].word);
	assert_false(cp_a64_load_rewrite(in, 8, out)); /* not one word */
}

/* The linker's words for the same thunks:
 *     adr x1, ctx; b entry; brk #0; brk #0
 * at 0x10000 with ctx 0x25010, entry 0x11000, and (x5) at 0x10010 with
 * ctx 0x8230, entry 0x8000 (aarch64-linux-gnu-ld.bfd -Ttext=0x10000
 * --defsym for the targets). */
static void test_thunk_bytes(void **state)
{
	static const uint32_t want1[4] = { 0x100a8081, 0x140003ff, 0xd4200000, 0xd4200000 };
	static const uint32_t want2[4] = { 0x10fc1105, 0x17ffdffb, 0xd4200000, 0xd4200000 };
	uint8_t out[CP_A64_THUNK_SIZE];
	uint64_t jump = 0;
	int i;

	(void)state;
	assert_true(cp_a64_thunk(out, 0x10000, 1, 0x25010, 0x11000, &jump));
	assert_int_equal(jump, 0x10004);
	for (i = 0; i < 4; i++)
		assert_int_equal(get(out + 4 * i), want1[i]);
	assert_true(cp_a64_thunk(out, 0x10010, 5, 0x8230, 0x8000, &jump));
	assert_int_equal(jump, 0x10014);
	for (i = 0; i < 4; i++)
		assert_int_equal(get(out + 4 * i), want2[i]);
}

/* A stand-in (--tolerate-missing), as aarch64-linux-gnu-as writes
 *     movz w0, #801; movk w0, #0, lsl #16; ret; brk #0
 * and for -1 (0xffff in both halves); a value beyond 32 bits refused. */
static void test_standin(void **state)
{
	static const uint32_t want801[4] = { 0x52806420, 0x72a00000, 0xd65f03c0, 0xd4200000 };
	static const uint32_t want_neg[2] = { 0x529fffe0, 0x72bfffe0 };
	uint8_t out[CP_A64_THUNK_SIZE];
	int i;

	(void)state;
	assert_true(cp_a64_standin(out, 801));
	for (i = 0; i < 4; i++)
		assert_int_equal(get(out + 4 * i), want801[i]);
	assert_true(cp_a64_standin(out, -1));
	for (i = 0; i < 2; i++)
		assert_int_equal(get(out + 4 * i), want_neg[i]);
	assert_false(cp_a64_standin(out, 1L << 32));
}

/* Every argument register, at the edges of ADR's and B's reach: the ADR
 * decodes back to the context itself (what the check asks of it). */
static void test_thunk(void **state)
{
	static const uint64_t at = 0x200000010ull;
	const uint64_t ctxs[] = { at + 0xfffff, at - 0x100000, at + 0x1231 };
	const uint64_t entries[] = { at + 4 + (1 << 27) - 4, at + 4 - (1 << 27), at - 0x800 };
	unsigned arg;
	size_t k;

	(void)state;
	for (arg = 0; arg < 8; arg++)
		for (k = 0; k < N(ctxs); k++) {
			uint8_t out[CP_A64_THUNK_SIZE];
			uint64_t jump;
			struct seen s;

			assert_true(cp_a64_thunk(out, at, arg, ctxs[k], entries[k], &jump));
			assert_int_equal(jump, at + 4);
			s = decode(get(out), at);
			assert_int_equal(s.id, ARM64_INS_ADR);
			assert_int_equal(s.imm, ctxs[k]);
			assert_int_equal(get(out) & 31, arg);
			s = decode(get(out + 4), jump);
			assert_int_equal(s.id, ARM64_INS_B);
			assert_int_equal(s.imm, entries[k]);
			assert_int_equal(decode(get(out + 8), at + 8).id, ARM64_INS_BRK);
			assert_int_equal(decode(get(out + 12), at + 12).id, ARM64_INS_BRK);
		}
}

static void test_thunk_refused(void **state)
{
	static const uint64_t at = 0x200000010ull;
	uint8_t out[CP_A64_THUNK_SIZE], kept[CP_A64_THUNK_SIZE];
	uint64_t jump = 7;

	(void)state;
	memset(out, 0xaa, sizeof(out));
	memcpy(kept, out, sizeof(out));
	assert_false(cp_a64_thunk(out, at, 8, at + 0x100, at + 0x200, &jump));     /* no x8 */
	assert_false(cp_a64_thunk(out, at, 0, at + 0x100000, at + 0x200, &jump));  /* beyond ADR */
	assert_false(cp_a64_thunk(out, at, 0, at - 0x100001, at + 0x200, &jump));
	assert_false(cp_a64_thunk(out, at, 0, at + 0x100, at + 4 + (1 << 27), &jump));
	assert_false(cp_a64_thunk(out, at, 0, at + 0x100, at + 4 - (1 << 27) - 4, &jump));
	assert_false(cp_a64_thunk(out, at, 0, at + 0x100, at + 0x202, &jump));     /* misaligned entry */
	assert_false(cp_a64_thunk(out, at + 2, 0, at + 0x100, at + 0x200, &jump)); /* misaligned thunk */
	assert_memory_equal(out, kept, sizeof(out));
	assert_int_equal(jump, 7);
}

/* The stub compiled for aarch64: its entries are words inside it that
 * capstone decodes. */
static void test_stub(void **state)
{
	const struct cp_stub *s = &cp_stub_aarch64;
	size_t i;

	(void)state;
	assert_true(s->size > 0);
	for (i = 0; i < CP_STUB_NENTRIES; i++) {
		assert_true(s->entry[i] + 4 <= s->size);
		assert_int_equal(s->entry[i] % 4, 0);
		assert_int_not_equal(decode(get(s->code + s->entry[i]), s->entry[i]).id, ARM64_INS_INVALID);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pcrel_reencode), cmocka_unit_test(test_pcrel_alignment),
		cmocka_unit_test(test_pcrel_bytes),    cmocka_unit_test(test_pcrel_other),
		cmocka_unit_test(test_standalone), cmocka_unit_test(test_standalone_refused),
		cmocka_unit_test(test_load_rewrite),
		cmocka_unit_test(test_lo12),           cmocka_unit_test(test_lo12_refused),
		cmocka_unit_test(test_adrp_pair),      cmocka_unit_test(test_imm),
		cmocka_unit_test(test_imm_refused),    cmocka_unit_test(test_branch_rewrite),
		cmocka_unit_test(test_branch_refused), cmocka_unit_test(test_standin), cmocka_unit_test(test_thunk_bytes),
		cmocka_unit_test(test_thunk),          cmocka_unit_test(test_thunk_refused),
		cmocka_unit_test(test_stub),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
