/*
 * test_arch_aarch64_decode.c - aarch64's decoder behind arch/code.h, driven
 * by instruction vectors: words that aarch64-linux-gnu-as assembled and ld
 * linked at 0x1000 (one per 4 bytes, in order), and what cypatch must read
 * from each: the PC-relative operand, where it reaches, the immediate, and
 * the facts the analyses over branches use (flow, condition, the registers
 * written, constants, copies, addresses, spills). No corpus needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/arch.h"
#include "arch/code.h"

#define AT 0x1000u
#define NONE (-1)
#define X(n) (1u << (n))
#define SP 31

struct vec {
	uint32_t word;
	const char *text;
	bool pcrel;            /* cp_insn_pcrel answers, with target */
	uint64_t target;       /* also a direct branch's */
	enum cp_flow flow;
	enum cp_cond cond;
	uint32_t writes;       /* the registers written */
	int imm_reg;           /* a constant ... */
	uint64_t imm;
	int copy_dst, copy_src;
	int addr_reg;          /* ADR/ADRP: the address (target) */
	int load_reg;          /* a literal load of target */
	int test_reg;
	int spill_src, fill_dst;
	int32_t stack_disp;    /* the spill's or fill's */
};

#define PLAIN CP_FLOW_NEXT, CP_COND_OTHER
static const struct vec vecs[] = {
	{ 0xb0000036, "adrp x22, #0x6000", true, 0x6000, PLAIN, X(22), NONE, 0, NONE, NONE, 22, NONE, NONE,
	  NONE, NONE, 0 },
	{ 0x911ca2da, "add x26, x22, #0x728", false, 0, PLAIN, X(26), NONE, 0, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	{ 0xd1034352, "sub x18, x26, #0xd0", false, 0, PLAIN, X(18), NONE, 0, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	{ 0xf944a260, "ldr x0, [x19, #0x940]", false, 0, PLAIN, X(0), NONE, 0, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	{ 0x58000100, "ldr x0, #0x1030", true, 0x1030, PLAIN, X(0), NONE, 0, NONE, NONE, NONE, 0, NONE, NONE,
	  NONE, 0 },
	{ 0x10000801, "adr x1, #0x1114", true, 0x1114, PLAIN, X(1), NONE, 0, NONE, NONE, 1, NONE, NONE, NONE,
	  NONE, 0 },
	{ 0x94000400, "bl #0x2018", false, 0x2018, CP_FLOW_CALL, CP_COND_OTHER, X(30), NONE, 0, NONE, NONE, NONE,
	  NONE, NONE, NONE, NONE, 0 },
	{ 0x14000002, "b #0x1024", false, 0x1024, CP_FLOW_JUMP, CP_COND_OTHER, 0, NONE, 0, NONE, NONE, NONE, NONE,
	  NONE, NONE, NONE, 0 },
	{ 0x54000080, "b.eq #0x1030", false, 0x1030, CP_FLOW_COND, CP_COND_EQ, 0, NONE, 0, NONE, NONE, NONE, NONE,
	  NONE, NONE, NONE, 0 },
	{ 0xb5000100, "cbnz x0, #0x1044", false, 0x1044, CP_FLOW_COND, CP_COND_NE, 0, NONE, 0, NONE, NONE, NONE,
	  NONE, 0, NONE, NONE, 0 },
	{ 0xd63f0220, "blr x17", false, 0, CP_FLOW_CALL, CP_COND_OTHER, X(30), NONE, 0, NONE, NONE, NONE, NONE,
	  NONE, NONE, NONE, 0 },
	{ 0xd61f0200, "br x16", false, 0, CP_FLOW_JUMP, CP_COND_OTHER, 0, NONE, 0, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	{ 0xd65f03c0, "ret ", false, 0, CP_FLOW_RET, CP_COND_OTHER, 0, NONE, 0, NONE, NONE, NONE, NONE, NONE, NONE,
	  NONE, 0 },
	{ 0xd2805e00, "movz x0, #0x2f0", false, 0, PLAIN, X(0), 0, 0x2f0, NONE, NONE, NONE, NONE, NONE, NONE, NONE,
	  0 },
	{ 0xf2a06160, "movk x0, #0x30b, lsl #16", false, 0, PLAIN, X(0), NONE, 0, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	/* a w write clears the upper half */
	{ 0x12800985, "movn w5, #0x4c", false, 0, PLAIN, X(5), 5, 0xffffffb3, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	{ 0xaa1a03e1, "mov x1, x26", false, 0, PLAIN, X(1), NONE, 0, 1, 26, NONE, NONE, NONE, NONE, NONE, 0 },
	/* capstone 4 lists x20 as written: a compare writes only the flags */
	{ 0xf100669f, "cmp x20, #0x19", false, 0, PLAIN, 0, NONE, 0, NONE, NONE, NONE, NONE, NONE, NONE, NONE, 0 },
	{ 0xf90067e0, "str x0, [sp, #0xc8]", false, 0, PLAIN, 0, NONE, 0, NONE, NONE, NONE, NONE, NONE, 0, NONE,
	  200 },
	/* the write-back moves sp */
	{ 0xa9bf7bfd, "stp x29, x30, [sp, #-0x10]!", false, 0, PLAIN, X(SP), NONE, 0, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	{ 0xf9400be3, "ldr x3, [sp, #0x10]", false, 0, PLAIN, X(3), NONE, 0, NONE, NONE, NONE, NONE, NONE, NONE, 3,
	  16 },
	{ 0xd503201f, "nop ", false, 0, PLAIN, 0, NONE, 0, NONE, NONE, NONE, NONE, NONE, NONE, NONE, 0 },
	{ 0xd4200000, "brk #0", false, 0, CP_FLOW_TRAP, CP_COND_OTHER, 0, NONE, 0, NONE, NONE, NONE, NONE, NONE,
	  NONE, NONE, 0 },
	/* an ordering (a loop's count reads unsigned and signed alike) */
	{ 0x54000088, "b.hi #0x106c", false, 0x106c, CP_FLOW_COND, CP_COND_GT, 0, NONE, 0, NONE, NONE, NONE, NONE,
	  NONE, NONE, NONE, 0 },
};

static int open_dis(void **state)
{
	static cp_dis d;
	cp_error err;

	if (cp_dis_open_arch(&d, &cp_arch_aarch64, &err))
		return -1;
	*state = &d;
	return 0;
}

static int close_dis(void **state)
{
	cp_dis_close(*state);
	return 0;
}

static void decode(cp_dis *d, size_t i)
{
	uint8_t b[4];

	memcpy(b, &vecs[i].word, 4); /* the test runs little-endian, as aarch64 does */
	assert_true(cp_dis_bytes(d, b, 4, AT + 4 * i));
	assert_int_equal(cp_insn_size(d), 4);
}

static void test_operands(void **state)
{
	cp_dis *d = *state;
	size_t i;

	for (i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		const struct vec *v = &vecs[i];
		char text[96];
		uint8_t off, size;
		uint64_t target;

		decode(d, i);
		cp_insn_describe(d, text, sizeof(text));
		assert_string_equal(text, v->text);
		assert_int_equal(cp_insn_pcrel(d, &off, &size, &target), v->pcrel);
		if (v->pcrel) {
			assert_int_equal(target, v->target);
			assert_int_equal(off, 0); /* the field is the word */
			assert_int_equal(size, 4);
		}
		assert_int_equal(cp_insn_reaches(d, &target), v->pcrel || v->target);
		if (v->pcrel || v->target)
			assert_int_equal(target, v->target);
	}
}

static void check_facts(const struct vec *v, const struct cp_insn_facts *f)
{
	assert_int_equal(f->flow, v->flow);
	assert_int_equal(f->cond, v->cond);
	if (v->flow == CP_FLOW_CALL || v->flow == CP_FLOW_JUMP || v->flow == CP_FLOW_COND) {
		assert_int_equal(f->direct, v->target != 0);
		if (v->target)
			assert_int_equal(f->target, v->target);
	}
	assert_true(f->regs_known);
	assert_int_equal(f->writes, v->writes);
	assert_int_equal(f->imm_reg, v->imm_reg);
	if (v->imm_reg != NONE)
		assert_int_equal(f->imm, v->imm);
	assert_int_equal(f->copy_dst, v->copy_dst);
	assert_int_equal(f->copy_src, v->copy_src);
	assert_int_equal(f->addr_reg, v->addr_reg);
	if (v->addr_reg != NONE)
		assert_int_equal(f->addr_val, v->target);
	assert_int_equal(f->load_reg, v->load_reg);
	if (v->load_reg != NONE)
		assert_int_equal(f->load_addr, v->target);
	assert_int_equal(f->test_reg, v->test_reg);
	assert_int_equal(f->stack.spill_src, v->spill_src);
	assert_int_equal(f->stack.fill_dst, v->fill_dst);
	if (v->spill_src != NONE)
		assert_int_equal(f->stack.spill_disp, v->stack_disp);
	if (v->fill_dst != NONE)
		assert_int_equal(f->stack.fill_disp, v->stack_disp);
	assert_int_equal(f->moves_sp, (v->writes >> SP) & 1);
}

static void test_facts(void **state)
{
	cp_dis *d = *state;
	struct cp_insn_facts f;
	size_t i;

	for (i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		decode(d, i);
		cp_insn_facts(d, &f);
		assert_int_equal(f.addr, AT + 4 * i);
		check_facts(&vecs[i], &f);
	}
}

/* A word loaded from a register plus an offset (the module state's
 * string table: scan_state.c), not from the stack or the PC. */
static void test_based_loads(void **state)
{
	static const struct {
		size_t at;
		int dst, base;
		int64_t disp;
	} want[] = { { 3, 0, 19, 0x940 }, { 4, NONE, NONE, 0 }, { 20, NONE, NONE, 0 } };
	cp_dis *d = *state;
	struct cp_insn_facts f;
	size_t i;

	assert_int_equal(vecs[20].word, 0xf9400be3); /* ldr x3, [sp, #0x10] */
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		decode(d, want[i].at);
		cp_insn_facts(d, &f);
		assert_int_equal(f.based_dst, want[i].dst);
		assert_int_equal(f.based_base, want[i].base);
		if (want[i].dst != NONE)
			assert_int_equal(f.based_disp, want[i].disp);
	}
}

/* Immediates come back whole (shifted into place); their field is the word. */
static void test_immediates(void **state)
{
	static const struct {
		size_t at;
		int64_t value;
	} imms[] = { { 1, 0x728 }, { 2, 0xd0 }, { 13, 0x2f0 }, { 14, 0x30b0000 }, { 17, 0x19 } };
	cp_dis *d = *state;
	uint8_t off, size;
	int64_t value;
	size_t i;

	for (i = 0; i < sizeof(imms) / sizeof(imms[0]); i++) {
		decode(d, imms[i].at);
		assert_true(cp_insn_immediate(d, &off, &size, &value));
		assert_int_equal(value, imms[i].value);
		assert_int_equal(off, 0);
		assert_int_equal(size, 4);
	}
	decode(d, 17);
	assert_true(cp_insn_is_cmp_reg_imm(d));
	decode(d, 16);
	assert_false(cp_insn_immediate(d, &off, &size, &value));
}

/* A word at a misaligned address is no instruction. */
static void test_misaligned(void **state)
{
	uint8_t b[4];

	memcpy(b, &vecs[0].word, 4);
	assert_false(cp_dis_bytes(*state, b, 4, AT + 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_operands),
		cmocka_unit_test(test_facts),
		cmocka_unit_test(test_based_loads),
		cmocka_unit_test(test_immediates),
		cmocka_unit_test(test_misaligned),
	};

	return cmocka_run_group_tests(tests, open_dis, close_dis);
}
