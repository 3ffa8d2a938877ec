/*
 * walk_starts_fixture.c - a shared object for test_walk_starts.c, built by
 * the project's compiler: function cp_fixture_a ends in the first two bytes
 * of a 10-byte instruction (48 b8: movabs rax, imm64), and cp_fixture_b,
 * right after it, takes a string's address RIP-relative. A linear sweep
 * that read an instruction across cp_fixture_b's start would take its lea
 * and ret as that instruction's immediate and never see the reference.
 */
__asm__(".text\n"
	".globl cp_fixture_a\n"
	".type cp_fixture_a, @function\n"
	"cp_fixture_a:\n"
	"	ret\n"
	"	.byte 0x48, 0xb8\n"
	".size cp_fixture_a, . - cp_fixture_a\n"
	".globl cp_fixture_b\n"
	".type cp_fixture_b, @function\n"
	"cp_fixture_b:\n"
	"	leaq cp_fixture_text(%rip), %rax\n"
	"	ret\n"
	".size cp_fixture_b, . - cp_fixture_b\n"
	".section .rodata\n"
	"cp_fixture_text:\n"
	"	.asciz \"cuda.ccudart\"\n"
	".text\n");
