/*
 * walk_points_fixture.c - a shared object for test_walk_points.c, built by
 * the project's compiler: cp_points_big keeps a string's address in rbx
 * (callee-saved: the walk keeps it across its 18 KB) and passes it to
 * cp_points_f at its end, past the points the walk records every 8 KB of a
 * large function (hidden and local symbols: no PLT, no GOT). The test
 * retargets the lea to the other string. cp_points_edge, first, is 24,580
 * bytes whose last instruction (a 10-byte movabs from byte 24,570) holds
 * its third cut, 24,576, and ends where cp_points_g begins: the walk's
 * first instruction after that cut is another function's start.
 */
__asm__(".text\n"
	".globl cp_points_edge\n"
	".hidden cp_points_edge\n"
	".type cp_points_edge, @function\n"
	"cp_points_edge:\n"
	"	.rept 8190\n"
	"	addl $1, %eax\n"
	"	.endr\n"
	"	movabsq $0x1122334455667788, %rax\n"
	".size cp_points_edge, . - cp_points_edge\n"
	".globl cp_points_g\n"
	".hidden cp_points_g\n"
	".type cp_points_g, @function\n"
	"cp_points_g:\n"
	"	ret\n"
	".size cp_points_g, . - cp_points_g\n"
	".globl cp_points_big\n"
	".type cp_points_big, @function\n"
	"cp_points_big:\n"
	"	pushq %rbx\n"
	"	leaq cp_points_a(%rip), %rbx\n"
	"	.rept 6000\n"
	"	addl $1, %eax\n"
	"	.endr\n"
	"	movq %rbx, %rdi\n"
	"	call cp_points_f\n"
	"	popq %rbx\n"
	"	ret\n"
	".size cp_points_big, . - cp_points_big\n"
	".globl cp_points_f\n"
	".hidden cp_points_f\n"
	".type cp_points_f, @function\n"
	"cp_points_f:\n"
	"	ret\n"
	".size cp_points_f, . - cp_points_f\n"
	".section .rodata\n"
	"cp_points_a:\n"
	"	.asciz \"cuda.ccudart\"\n"
	"cp_points_b:\n"
	"	.asciz \"cuda.cudart\"\n"
	".text\n");
