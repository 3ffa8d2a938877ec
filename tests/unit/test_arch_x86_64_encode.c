/*
 * test_arch_x86_64_encode.c - x86-64's "Writing code" entries of struct
 * cp_arch (arch/arch.h), driven by instruction vectors, as capstone's
 * tests/MC are: each written instruction is decoded again by capstone and
 * must reach the intended target or hold the intended immediate. PC-relative
 * reach is refused one byte beyond +-2 GiB, leaving the field as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <capstone/capstone.h>
#include <elf.h>

#include "arch/arch.h"

static const struct cp_arch *arch(void)
{
	const struct cp_arch *a = cp_arch_for_machine(EM_X86_64);

	assert_non_null(a);
	return a;
}

/* The one instruction in b[0, n) at address at, decoded with detail. */
static cs_insn *decode(csh *h, const uint8_t *b, size_t n, uint64_t at)
{
	cs_insn *in = NULL;

	assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, h), CS_ERR_OK);
	cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	assert_int_equal(cs_disasm(*h, b, n, at, 1, &in), 1);
	return in;
}

static void done(csh *h, cs_insn *in)
{
	cs_free(in, 1);
	cs_close(h);
}

/* Where the RIP-relative memory operand of b reaches, decoded. */
static uint64_t rip_target(const uint8_t *b, size_t n, uint64_t at, size_t *size)
{
	csh h;
	cs_insn *in = decode(&h, b, n, at);
	const cs_x86 *x = &in->detail->x86;
	uint64_t t = 0;
	int i;

	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP)
			t = at + in->size + (uint64_t)x->operands[i].mem.disp;
	*size = in->size;
	done(&h, in);
	return t;
}

/* A RIP-relative operand before and after another field (cmp's imm8). */
static const struct {
	uint8_t bytes[16];
	uint8_t len, field_at;
} rip_vectors[] = {
	{ { 0x48, 0x8d, 0x05, 0, 0, 0, 0 }, 7, 3 },          /* lea rax, [rip + d] */
	{ { 0x4c, 0x8d, 0x2d, 0, 0, 0, 0 }, 7, 3 },          /* lea r13, [rip + d] */
	{ { 0x48, 0x8b, 0x05, 0, 0, 0, 0 }, 7, 3 },          /* mov rax, [rip + d] */
	{ { 0x48, 0x89, 0x3d, 0, 0, 0, 0 }, 7, 3 },          /* mov [rip + d], rdi */
	{ { 0x48, 0x83, 0x3d, 0, 0, 0, 0, 0x00 }, 8, 3 },    /* cmp qword [rip + d], 0 */
	{ { 0xff, 0x15, 0, 0, 0, 0 }, 6, 2 },                /* call [rip + d] */
};

static void test_pcrel_reencode(void **state)
{
	static const uint64_t at = 0x401000;
	static const uint64_t targets[] = { 0x401000, 0x5000, 0x7fff0000, 0x4011f8 };
	size_t v, t, size;

	(void)state;
	for (v = 0; v < sizeof(rip_vectors) / sizeof(rip_vectors[0]); v++)
		for (t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
			uint8_t b[16];

			memcpy(b, rip_vectors[v].bytes, sizeof(b));
			assert_true(arch()->pcrel_put(b + rip_vectors[v].field_at, at, rip_vectors[v].len,
						      targets[t]));
			assert_int_equal(rip_target(b, rip_vectors[v].len, at, &size), targets[t]);
			assert_int_equal(size, rip_vectors[v].len);
		}
}

/* lea rax, [rip + d] at 0x1000 to 0x5000: d counts from the end (0x1007). */
static void test_pcrel_bytes(void **state)
{
	uint8_t b[7] = { 0x48, 0x8d, 0x05, 0, 0, 0, 0 };
	static const uint8_t want[7] = { 0x48, 0x8d, 0x05, 0xf9, 0x3f, 0x00, 0x00 };

	(void)state;
	assert_int_equal(arch()->pcrel_size, 4);
	assert_true(arch()->pcrel_put(b + 3, 0x1000, 7, 0x5000));
	assert_memory_equal(b, want, 7);
}

/* +-2 GiB from the end of the instruction: the last reachable byte each
 * way is written, one further is refused and the field left as it was. */
static void test_pcrel_reach(void **state)
{
	static const uint64_t at = 0x100000000ull, end = at + 7;
	uint8_t b[7] = { 0x48, 0x8d, 0x05, 0xaa, 0xbb, 0xcc, 0xdd };
	static const uint8_t kept[4] = { 0xaa, 0xbb, 0xcc, 0xdd };
	size_t size;

	(void)state;
	assert_false(arch()->pcrel_put(b + 3, at, 7, end + INT32_MAX + 1ull));
	assert_memory_equal(b + 3, kept, 4);
	assert_false(arch()->pcrel_put(b + 3, at, 7, end - 0x80000001ull));
	assert_memory_equal(b + 3, kept, 4);
	assert_true(arch()->pcrel_put(b + 3, at, 7, end + INT32_MAX));
	assert_int_equal(rip_target(b, 7, at, &size), end + INT32_MAX);
	assert_true(arch()->pcrel_put(b + 3, at, 7, end - 0x80000000ull));
	assert_int_equal(rip_target(b, 7, at, &size), end - 0x80000000ull);
}

/* The forms a compiler and linker emit for a call, and what each becomes:
 * the same length, a direct call or jmp. */
static const struct {
	uint8_t in[8], len;
	uint8_t want[8];   /* with a zero field */
	uint8_t field_at, size;
	unsigned id;       /* X86_INS_CALL or X86_INS_JMP */
} branch_vectors[] = {
	{ { 0xe8, 1, 2, 3, 4 }, 5, { 0xe8, 0, 0, 0, 0 }, 1, 5, X86_INS_CALL },
	{ { 0xe9, 1, 2, 3, 4 }, 5, { 0xe9, 0, 0, 0, 0 }, 1, 5, X86_INS_JMP },
	{ { 0xf2, 0xe8, 1, 2, 3, 4 }, 6, { 0xf2, 0xe8, 0, 0, 0, 0 }, 2, 6, X86_INS_CALL },
	{ { 0xf2, 0xe9, 1, 2, 3, 4 }, 6, { 0xf2, 0xe9, 0, 0, 0, 0 }, 2, 6, X86_INS_JMP },
	{ { 0xff, 0x15, 1, 2, 3, 4 }, 6, { 0x67, 0xe8, 0, 0, 0, 0 }, 2, 6, X86_INS_CALL },
	{ { 0xff, 0x25, 1, 2, 3, 4 }, 6, { 0xe9, 0, 0, 0, 0, 0x90 }, 1, 5, X86_INS_JMP }, /* jmp; nop */
};

static void test_branch_rewrite(void **state)
{
	static const uint64_t at = 0x402340, to = 0x7f0010;
	size_t v;

	(void)state;
	for (v = 0; v < sizeof(branch_vectors) / sizeof(branch_vectors[0]); v++) {
		uint8_t out[16];
		uint8_t field_at = 0xff, size = 0;
		csh h;
		cs_insn *in;

		memset(out, 0x5a, sizeof(out));
		assert_true(arch()->branch_rewrite(branch_vectors[v].in, branch_vectors[v].len, out, &field_at,
						   &size));
		assert_memory_equal(out, branch_vectors[v].want, branch_vectors[v].len);
		assert_int_equal(field_at, branch_vectors[v].field_at);
		assert_int_equal(size, branch_vectors[v].size);
		assert_true(arch()->pcrel_put(out + field_at, at, size, to));
		in = decode(&h, out, branch_vectors[v].len, at);
		assert_int_equal(in->id, branch_vectors[v].id);
		assert_int_equal(in->size, size);
		assert_int_equal(in->detail->x86.operands[0].type, X86_OP_IMM);
		assert_int_equal((uint64_t)in->detail->x86.operands[0].imm, to);
		done(&h, in);
	}
}

static void test_branch_refused(void **state)
{
	static const uint8_t call_rax[2] = { 0xff, 0xd0 }, jmp8[2] = { 0xeb, 0x10 };
	static const uint8_t call_short[5] = { 0xff, 0x15, 0, 0, 0 };
	uint8_t out[16], at, size;

	(void)state;
	assert_false(arch()->branch_rewrite(call_rax, 2, out, &at, &size));
	assert_false(arch()->branch_rewrite(jmp8, 2, out, &at, &size));
	assert_false(arch()->branch_rewrite(call_short, 5, out, &at, &size));
}

/* Each argument register the thunk can load: rdi, rsi, rdx, rcx, r8, r9. */
static const unsigned arg_regs[6] = { X86_REG_RDI, X86_REG_RSI, X86_REG_RDX, X86_REG_RCX, X86_REG_R8, X86_REG_R9 };

static void test_thunk(void **state)
{
	static const uint64_t at = 0x800010, ctx = 0x7ff000, entry = 0x800000 + 0x31e;
	unsigned arg;

	(void)state;
	for (arg = 0; arg < 6; arg++) {
		uint8_t t[64];
		uint64_t jump = 0;
		size_t size, i;
		csh h;
		cs_insn *in;

		assert_true(arch()->thunk_size <= sizeof(t));
		assert_true(arch()->thunk(t, at, arg, ctx, entry, &jump));
		assert_int_equal(rip_target(t, arch()->thunk_size, at, &size), ctx);
		assert_int_equal(jump, at + size);
		in = decode(&h, t, arch()->thunk_size, at);
		assert_int_equal(in->id, X86_INS_LEA);
		assert_int_equal(in->detail->x86.operands[0].reg, arg_regs[arg]);
		done(&h, in);
		in = decode(&h, t + size, arch()->thunk_size - size, jump);
		assert_int_equal(in->id, X86_INS_JMP);
		assert_int_equal((uint64_t)in->detail->x86.operands[0].imm, entry);
		for (i = size + in->size; i < arch()->thunk_size; i++)
			assert_int_equal(t[i], 0xcc); /* int3 */
		done(&h, in);
	}
}

/* The fallback stub's thunk for PyImport_ImportModule, byte for byte. */
static void test_thunk_bytes(void **state)
{
	uint8_t t[16];
	uint64_t jump;
	static const uint8_t want[16] = { 0x48, 0x8d, 0x35, 0xf9, 0x0f, 0x00, 0x00, 0xe9, 0xf4, 0xef, 0xff, 0xff,
					  0xcc, 0xcc, 0xcc, 0xcc };

	(void)state;
	assert_int_equal(arch()->thunk_size, 16);
	assert_true(arch()->thunk(t, 0x2000, 1, 0x3000, 0x1000, &jump));
	assert_memory_equal(t, want, 16);
	assert_int_equal(jump, 0x2007);
}

/* A stand-in (--tolerate-missing): mov eax, 801; ret, as GNU as writes
 * it, int3 after; a value beyond 32 bits refused. */
static void test_standin(void **state)
{
	uint8_t t[16];
	static const uint8_t want[16] = { 0xb8, 0x21, 0x03, 0x00, 0x00, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
					  0xcc, 0xcc, 0xcc, 0xcc };

	(void)state;
	assert_true(arch()->standin(t, 801));
	assert_memory_equal(t, want, 16);
	assert_false(arch()->standin(t, 1L << 32));
}

static void test_thunk_refused(void **state)
{
	uint8_t t[16];
	uint64_t jump;

	(void)state;
	assert_false(arch()->thunk(t, 0x1000, 6, 0x2000, 0x3000, &jump)); /* no 7th register */
	assert_false(arch()->thunk(t, 0x100000000ull, 1, 0x1000, 0x100000100ull, &jump));
	assert_false(arch()->thunk(t, 0x1000, 1, 0x2000, 0x100002000ull, &jump));
}

/* An immediate field located as the decoder locates it, written, decoded. */
static const struct {
	uint8_t bytes[16];
	uint8_t len, at, size;
	int64_t value;
} imm_vectors[] = {
	{ { 0x83, 0xc0, 0x05 }, 3, 2, 1, 0x7f },                        /* add eax, imm8 */
	{ { 0x83, 0xc0, 0x05 }, 3, 2, 1, -128 },
	{ { 0x48, 0x81, 0xc7, 0, 0, 0, 0 }, 7, 3, 4, 0x12345 },         /* add rdi, imm32 */
	{ { 0xbe, 0, 0, 0, 0 }, 5, 1, 4, 0x7fffffff },                  /* mov esi, imm32 */
	{ { 0x66, 0xb8, 0, 0 }, 4, 2, 2, -2 },                          /* mov ax, imm16 */
	{ { 0x48, 0x8d, 0x7d, 0x10 }, 4, 3, 1, -0x80 },                 /* lea rdi, [rbp + disp8] */
	{ { 0x48, 0x8d, 0xbd, 0, 0, 0, 0 }, 7, 3, 4, 0x15c },           /* lea rdi, [rbp + disp32] */
};

static int64_t field_value(const uint8_t *b, size_t n)
{
	csh h;
	cs_insn *in = decode(&h, b, n, 0x1000);
	const cs_x86_op *op = &in->detail->x86.operands[in->detail->x86.op_count - 1];
	int64_t v = op->type == X86_OP_IMM ? op->imm : op->mem.disp;

	done(&h, in);
	return v;
}

static void test_field_put(void **state)
{
	size_t v;

	(void)state;
	for (v = 0; v < sizeof(imm_vectors) / sizeof(imm_vectors[0]); v++) {
		uint8_t b[16];
		int64_t got;

		memcpy(b, imm_vectors[v].bytes, sizeof(b));
		assert_true(arch()->field_put(b + imm_vectors[v].at, imm_vectors[v].size, imm_vectors[v].value));
		got = field_value(b, imm_vectors[v].len);
		if (imm_vectors[v].size == 2) /* capstone gives imm16 unsigned */
			got = (int16_t)got;
		assert_int_equal(got, imm_vectors[v].value);
	}
}

static void test_field_refused(void **state)
{
	uint8_t f[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t kept[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	(void)state;
	assert_false(arch()->field_put(f, 1, 128));
	assert_false(arch()->field_put(f, 1, -129));
	assert_false(arch()->field_put(f, 2, 0x8000));
	assert_false(arch()->field_put(f, 4, 0x80000000ll));
	assert_false(arch()->field_put(f, 4, -0x80000001ll));
	assert_false(arch()->field_put(f, 3, 1));
	assert_memory_equal(f, kept, 8);
	assert_true(arch()->field_put(f, 4, -1));
	assert_int_equal(f[0] & f[1] & f[2] & f[3], 0xff);
	assert_int_equal(f[4], 5);
}

/* The stub blob: code, and entries inside it that decode. */
static void test_stub(void **state)
{
	const struct cp_stub *s = arch()->stub;
	size_t i;

	(void)state;
	assert_non_null(s);
	assert_true(s->size > 0);
	for (i = 0; i < CP_STUB_NENTRIES; i++) {
		size_t size;
		csh h;
		cs_insn *in;

		assert_true(s->entry[i] < s->size);
		in = decode(&h, s->code + s->entry[i], s->size - s->entry[i], s->entry[i]);
		size = in->size;
		done(&h, in);
		assert_true(size > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pcrel_reencode), cmocka_unit_test(test_pcrel_bytes),
		cmocka_unit_test(test_pcrel_reach),    cmocka_unit_test(test_branch_rewrite),
		cmocka_unit_test(test_branch_refused), cmocka_unit_test(test_thunk),
		cmocka_unit_test(test_thunk_bytes),    cmocka_unit_test(test_thunk_refused),
		cmocka_unit_test(test_standin),
		cmocka_unit_test(test_field_put),      cmocka_unit_test(test_field_refused),
		cmocka_unit_test(test_stub),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
