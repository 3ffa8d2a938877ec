/*
 * test_arch_x86_64_decode.c - x86-64's decoder behind arch/code.h, driven
 * by instruction vectors in the manner of capstone's tests/MC: the bytes of
 * one real instruction at address 0x1000, and what cypatch must read from
 * it (length, text, the PC-relative operand, where it reaches, the
 * immediate and displacement fields) and the facts the analyses over
 * branches (scan/reach.c, predict/import_time.c) use. No corpus needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/code.h"

#define AT 0x1000u
#define NO (-2) /* the field is absent */

/* What one instruction reads as. Offsets NO: the query answers false. */
struct vec {
	const char *bytes;
	unsigned n;
	const char *text;
	int pcrel_off;      /* the disp32 a redirect rewrites */
	uint64_t pcrel_target;
	bool reaches;
	uint64_t reach;
	int imm_off, imm_size;
	int64_t imm;
	int disp_off, disp_size;
	int64_t disp;
};

static const struct vec vecs[] = {
	{ "\x48\x8d\x3d\x78\x56\x34\x12", 7, "lea rdi, [rip + 0x12345678]", 3, 0x1234667f, true, 0x1234667f,
	  NO, 0, 0, NO, 0, 0 },
	{ "\x48\x8b\x05\x10\x00\x00\x00", 7, "mov rax, qword ptr [rip + 0x10]", 3, 0x1017, true, 0x1017,
	  NO, 0, 0, NO, 0, 0 },
	{ "\xff\x15\xf2\x0f\x00\x00", 6, "call qword ptr [rip + 0xff2]", 2, 0x1ff8, true, 0x1ff8, NO, 0, 0, NO, 0, 0 },
	{ "\xe8\xfb\x0f\x00\x00", 5, "call 0x2000", NO, 0, true, 0x2000, 1, 4, 0x2000, NO, 0, 0 },
	{ "\xe9\xfb\x0f\x00\x00", 5, "jmp 0x2000", NO, 0, true, 0x2000, 1, 4, 0x2000, NO, 0, 0 },
	{ "\x74\x0e", 2, "je 0x1010", NO, 0, false, 0, 1, 1, 0x1010, NO, 0, 0 },
	{ "\xff\xd0", 2, "call rax", NO, 0, false, 0, NO, 0, 0, NO, 0, 0 },
	{ "\xb8\x2a\x00\x00\x00", 5, "mov eax, 0x2a", NO, 0, false, 0, 1, 4, 42, NO, 0, 0 },
	{ "\x48\xc7\xc6\xff\xff\xff\xff", 7, "mov rsi, -1", NO, 0, false, 0, 3, 4, -1, NO, 0, 0 },
	{ "\x81\xfb\xe8\x03\x00\x00", 6, "cmp ebx, 0x3e8", NO, 0, false, 0, 2, 4, 1000, NO, 0, 0 },
	{ "\x8b\x83\x82\x00\x00\x00", 6, "mov eax, dword ptr [rbx + 0x82]", NO, 0, false, 0, NO, 0, 0, 2, 4, 0x82 },
	{ "\x0f\xb6\x43\x05", 4, "movzx eax, byte ptr [rbx + 5]", NO, 0, false, 0, NO, 0, 0, 3, 1, 5 },
	{ "\xc6\x44\x24\x07\x41", 5, "mov byte ptr [rsp + 7], 0x41", NO, 0, false, 0, 4, 1, 0x41, 3, 1, 7 },
	{ "\xc3", 1, "ret ", NO, 0, false, 0, NO, 0, 0, NO, 0, 0 },
};

static int open_dis(void **state)
{
	static cp_dis d;
	cp_error err;

	if (cp_dis_open_arch(&d, &cp_arch_x86_64, &err))
		return -1;
	*state = &d;
	return 0;
}

static int close_dis(void **state)
{
	cp_dis_close(*state);
	return 0;
}

static void check_vec(cp_dis *d, const struct vec *v)
{
	char text[96];
	uint8_t off, size;
	uint64_t target;
	int64_t value;

	assert_true(cp_dis_bytes(d, (const uint8_t *)v->bytes, v->n, AT));
	assert_int_equal(cp_insn_size(d), v->n);
	cp_insn_describe(d, text, sizeof(text));
	assert_string_equal(text, v->text);
	assert_int_equal(cp_insn_pcrel(d, &off, &size, &target), v->pcrel_off != NO);
	if (v->pcrel_off != NO) {
		assert_int_equal(off, v->pcrel_off);
		assert_int_equal(size, v->n);
		assert_int_equal(target, v->pcrel_target);
	}
	assert_int_equal(cp_insn_reaches(d, &target), v->reaches);
	if (v->reaches)
		assert_int_equal(target, v->reach);
	assert_int_equal(cp_insn_immediate(d, &off, &size, &value), v->imm_off != NO);
	if (v->imm_off != NO) {
		assert_int_equal(off, v->imm_off);
		assert_int_equal(size, v->imm_size);
		assert_int_equal(value, v->imm);
	}
	assert_int_equal(cp_insn_displacement(d, &off, &size, &value), v->disp_off != NO);
	if (v->disp_off != NO) {
		assert_int_equal(off, v->disp_off);
		assert_int_equal(size, v->disp_size);
		assert_int_equal(value, v->disp);
	}
}

static void test_vectors(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		check_vec(*state, &vecs[i]);
}

/* A truncated instruction does not decode; a short buffer is never read
 * past. */
static void test_truncated(void **state)
{
	assert_false(cp_dis_bytes(*state, (const uint8_t *)"\xe8\x00\x00", 3, AT));
	assert_false(cp_dis_bytes(*state, (const uint8_t *)"\x48\x8d\x3d\x78\x56\x34\x12", 6, AT));
	assert_true(cp_dis_bytes(*state, (const uint8_t *)"\x90\xe8", 2, AT));
	assert_int_equal(cp_insn_size(*state), 1);
}

/* cmp of a register with an immediate, the stack pointer left out; the
 * size an immediate extends to. */
static void test_cmp(void **state)
{
	assert_true(cp_dis_bytes(*state, (const uint8_t *)"\x81\xfb\xe8\x03\x00\x00", 6, AT));
	assert_true(cp_insn_is_cmp_reg_imm(*state));
	assert_int_equal(cp_insn_operand_size(*state), 4);
	assert_true(cp_dis_bytes(*state, (const uint8_t *)"\x48\x83\xfc\x10", 4, AT));
	assert_false(cp_insn_is_cmp_reg_imm(*state));
	assert_int_equal(cp_insn_operand_size(*state), 8);
	assert_true(cp_dis_bytes(*state, (const uint8_t *)"\xb8\x2a\x00\x00\x00", 5, AT));
	assert_false(cp_insn_is_cmp_reg_imm(*state));
}

static void facts_of(cp_dis *d, const char *bytes, unsigned n, struct cp_insn_facts *f)
{
	assert_true(cp_dis_bytes(d, (const uint8_t *)bytes, n, AT));
	cp_insn_facts(d, f);
	assert_int_equal(f->addr, AT);
	assert_int_equal(f->size, n);
}

/* How control leaves: the kinds reach.c and import_time.c tell apart. */
static void test_flow(void **state)
{
	struct cp_insn_facts f;

	facts_of(*state, "\xe8\xfb\x0f\x00\x00", 5, &f);
	assert_true(f.flow == CP_FLOW_CALL && f.direct && f.target == 0x2000 && !f.via_slot);
	facts_of(*state, "\xff\x15\xf2\x0f\x00\x00", 6, &f);
	assert_true(f.flow == CP_FLOW_CALL && !f.direct && f.via_slot && f.slot == 0x1ff8);
	facts_of(*state, "\xff\xd0", 2, &f);
	assert_true(f.flow == CP_FLOW_CALL && !f.direct && !f.via_slot);
	facts_of(*state, "\xe9\xfb\x0f\x00\x00", 5, &f);
	assert_true(f.flow == CP_FLOW_JUMP && f.direct && f.target == 0x2000);
	facts_of(*state, "\x74\x0e", 2, &f);
	assert_true(f.flow == CP_FLOW_COND && f.cond == CP_COND_EQ && f.direct && f.target == 0x1010);
	facts_of(*state, "\x0f\x85\xfa\x0f\x00\x00", 6, &f);
	assert_true(f.flow == CP_FLOW_COND && f.cond == CP_COND_NE && f.target == 0x2000);
	/* the orderings, unsigned and signed alike (a loop's count) */
	facts_of(*state, "\x72\x0e", 2, &f); /* jb */
	assert_true(f.flow == CP_FLOW_COND && f.cond == CP_COND_LT);
	facts_of(*state, "\x7d\x0e", 2, &f); /* jge */
	assert_true(f.flow == CP_FLOW_COND && f.cond == CP_COND_GE);
	facts_of(*state, "\x76\x0e", 2, &f); /* jbe */
	assert_true(f.flow == CP_FLOW_COND && f.cond == CP_COND_LE);
	facts_of(*state, "\x0f\x8f\xfa\x0f\x00\x00", 6, &f); /* jg */
	assert_true(f.flow == CP_FLOW_COND && f.cond == CP_COND_GT);
	facts_of(*state, "\xc3", 1, &f);
	assert_int_equal(f.flow, CP_FLOW_RET);
	facts_of(*state, "\x0f\x0b", 2, &f);
	assert_int_equal(f.flow, CP_FLOW_HALT);
	facts_of(*state, "\xcc", 1, &f);
	assert_int_equal(f.flow, CP_FLOW_TRAP);
	facts_of(*state, "\x90", 1, &f);
	assert_true(f.flow == CP_FLOW_NEXT && f.nop);
}

/* Registers set to constants, addresses, loaded words and copies
 * (registers numbered rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, ...). */
static void test_values(void **state)
{
	struct cp_insn_facts f;

	facts_of(*state, "\xb8\xff\xff\xff\xff", 5, &f);
	assert_true(f.imm_reg == 0 && f.imm == 0xffffffffu); /* a 32-bit write zero-extends */
	facts_of(*state, "\x48\xc7\xc6\xff\xff\xff\xff", 7, &f);
	assert_true(f.imm_reg == 6 && f.imm == UINT64_MAX && f.writes == 1u << 6);
	facts_of(*state, "\x31\xc0", 2, &f);
	assert_true(f.imm_reg == 0 && f.imm == 0);
	facts_of(*state, "\x48\x8d\x3d\x78\x56\x34\x12", 7, &f);
	assert_true(f.addr_reg == 7 && f.addr_val == 0x1234667f && f.load_reg == -1);
	assert_int_equal(f.addr_reg, cp_arch_x86_64.arg_regs[0]);
	facts_of(*state, "\x48\x8b\x05\x10\x00\x00\x00", 7, &f);
	assert_true(f.load_reg == 0 && f.load_addr == 0x1017 && f.addr_reg == -1);
	facts_of(*state, "\x48\x89\xdf", 3, &f);
	assert_true(f.copy_dst == 7 && f.copy_src == 3 && f.regs_known && f.writes == 1u << 7);
	facts_of(*state, "\x48\x85\xc0", 3, &f);
	assert_true(f.test_reg == 0 && f.writes == 0);
	/* mov rbp, [rax + 0x1a8]: a module-state word (scan_state.c) */
	facts_of(*state, "\x48\x8b\xa8\xa8\x01\x00\x00", 7, &f);
	assert_true(f.based_dst == 5 && f.based_base == 0 && f.based_disp == 0x1a8 && f.load_reg == -1);
	facts_of(*state, "\x48\x8b\x44\x24\x08", 5, &f); /* mov rax, [rsp + 8]: a fill */
	assert_true(f.based_dst == -1 && f.stack.fill_dst == 0);
	facts_of(*state, "\x48\x8b\x05\x10\x00\x00\x00", 7, &f); /* mov rax, [rip + 0x10] */
	assert_true(f.based_dst == -1);
	assert_int_equal(cp_arch_x86_64.ret_reg, 0);
}

/* Stack slots: spills, fills, other writes, addresses taken. */
static void test_stack(void **state)
{
	struct cp_insn_facts f;

	facts_of(*state, "\x48\x89\x44\x24\x08", 5, &f);
	assert_true(f.stack.spill_src == 0 && f.stack.spill_disp == 8 && !f.stack.write);
	facts_of(*state, "\x48\x8b\x5c\x24\x10", 5, &f);
	assert_true(f.stack.fill_dst == 3 && f.stack.fill_disp == 0x10);
	facts_of(*state, "\xc6\x44\x24\x07\x41", 5, &f);
	assert_true(f.stack.write && f.stack.disp == 7 && f.stack.size == 1 && f.stack.spill_src == -1);
	facts_of(*state, "\x48\x8d\x7c\x24\x20", 5, &f);
	assert_true(f.stack.addr_taken && f.stack.disp == 0x20);
	facts_of(*state, "\x48\x83\xec\x18", 4, &f);
	assert_true(f.moves_sp && !f.stack.write);
	facts_of(*state, "\x48\x89\x04\xcc", 4, &f); /* mov [rsp + rcx*8], rax */
	assert_true(f.stack.write && f.stack.disp == INT32_MIN);
}

/* What capstone 4 misread (tests/unit/x86_capstone_misreads.h), as the
 * instructions do it: stores it missed, registers it had written. */
static void test_writes(void **state)
{
	struct cp_insn_facts f;

	facts_of(*state, "\x0f\x11\x44\x24\x28", 5, &f); /* movups [rsp + 0x28], xmm0 */
	assert_true(f.stack.write && f.stack.disp == 0x28 && f.stack.size == 16 && f.writes == 0);
	facts_of(*state, "\x0f\x92\x44\x24\xc3", 5, &f); /* setb [rsp - 0x3d] */
	assert_true(f.stack.write && f.stack.disp == -0x3d && f.stack.size == 1);
	facts_of(*state, "\xf6\x84\x24\x90\x00\x00\x00\x04", 8, &f); /* test byte [rsp + 0x90], 4 */
	assert_true(!f.stack.write && f.writes == 0);
	facts_of(*state, "\xa8\x08", 2, &f); /* test al, 8 */
	assert_int_equal(f.writes, 0);
	facts_of(*state, "\x99", 1, &f); /* cdq */
	assert_int_equal(f.writes, 1u << 2);
	facts_of(*state, "\xf0\x0f\xb1\x13", 4, &f); /* lock cmpxchg [rbx], edx */
	assert_int_equal(f.writes, 1u << 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_cmp),
		cmocka_unit_test(test_flow),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_stack),
		cmocka_unit_test(test_writes),
	};

	return cmocka_run_group_tests(tests, open_dis, close_dis);
}
