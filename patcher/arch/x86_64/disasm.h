/*
 * disasm.h - capstone over the image's code, with a light register tracker.
 *
 * The walk decodes code linearly and follows, per register, values that are
 * known: an address materialised by a RIP-relative lea, an immediate, or a
 * word loaded from a fixed address. It reports every RIP-relative operand
 * and every call with the known values of its argument registers. Values
 * reset at function starts, after unconditional jumps and returns, and
 * caller-saved registers at calls; that is enough to pair Cython's import
 * calls with their string arguments, and it never invents a value.
 */
#ifndef CP_DISASM_H
#define CP_DISASM_H

#include <capstone/capstone.h>
#include <stdbool.h>
#include <stdint.h>
#include "elf/image.h"

enum cp_val_kind { CP_V_UNKNOWN, CP_V_ADDR, CP_V_IMM, CP_V_LOAD };

struct cp_val {
	uint8_t kind;
	uint64_t v;       /* the address, immediate, or address loaded from */
	uint64_t origin;  /* address of the instruction that produced it */
};

enum cp_insn_ref_kind { CP_REF_LEA, CP_REF_LOAD, CP_REF_STORE, CP_REF_OTHER };

/* An instruction with a RIP-relative memory operand. */
struct cp_code_ref {
	uint64_t addr;     /* instruction address */
	uint8_t size;      /* instruction length */
	uint8_t disp_off;  /* offset of the disp32 inside the instruction */
	uint64_t target;
	enum cp_insn_ref_kind kind;
	char text[96];     /* "lea rbp, [rip + 0x23a5]" */
};

/* A call (or a tail jump to an imported function). */
struct cp_call {
	uint64_t addr;
	uint64_t target;     /* 0 when indirect through a register */
	const char *name;    /* imported or local symbol name, or NULL */
	struct cp_val arg[6]; /* rdi, rsi, rdx, rcx, r8, r9 */
};

struct cp_code_visitor {
	void (*on_ref)(void *ctx, const struct cp_code_ref *ref);
	void (*on_call)(void *ctx, const struct cp_call *call);
	void *ctx;
	/* optional: every jmp or jcc to a known address */
	void (*on_jump)(void *ctx, uint64_t addr, uint64_t target);
	/* optional: every instruction after which execution does not fall
	 * through (jmp, ret, ud2, hlt) */
	void (*on_end)(void *ctx, uint64_t addr);
};

/* A capstone handle with detail on, for x86-64. */
typedef struct cp_dis {
	csh handle;
	cs_insn *insn;
} cp_dis;

cp_status cp_dis_open(cp_dis *d, cp_error *err);
void cp_dis_close(cp_dis *d);

/* Index 0..15 of the 64-bit register that holds reg (eax -> rax), or -1. */
int cp_reg64(x86_reg reg);

/* The System V argument registers, as cp_reg64 indices: rdi, rsi, rdx,
 * rcx, r8, r9. */
extern const int cp_arg_regs[6];

/* The RIP-relative memory operand of the instruction at addr: where its
 * disp32 sits in the instruction, the instruction's length, its target. */
bool cp_dis_rip_operand(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			uint8_t *size, uint64_t *target);

/* Where the instruction at addr reaches: a direct call's or jmp's target,
 * or its RIP-relative operand's address; false when neither. */
bool cp_dis_reaches(cp_dis *d, const cp_image *img, uint64_t addr, uint64_t *target);

/* Whether the function at addr (a start) calls nothing that returns: a
 * leaf (PyBytes_AS_STRING left out of line at -Os), or a stub that only
 * asserts (__assert_fail, abort, ...). */
bool cp_dis_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr);

/* Where the immediate of the instruction at addr sits, its size in bytes
 * (1, 2 or 4) and its value; false when it has none. */
bool cp_dis_immediate(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *imm_off,
		      uint8_t *imm_size, int64_t *value);

/* Whether the instruction at addr is `cmp` of a register other than the
 * stack and frame pointers with an immediate. */
bool cp_dis_is_cmp_reg_imm(cp_dis *d, const cp_image *img, uint64_t addr);

/* The size in bytes of the first operand of the instruction at addr (what
 * an immediate of it is extended to), or 0 when it cannot be decoded. */
unsigned cp_dis_operand_size(cp_dis *d, const cp_image *img, uint64_t addr);

/* The displacement of a memory operand based on a register other than rip
 * ([rbx + 0x82]): where it sits, its size, its value; false if none. */
bool cp_dis_displacement(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			 uint8_t *disp_size, int64_t *value);

/* The length of the instruction at addr, 0 when it does not decode. */
unsigned cp_dis_size(cp_dis *d, const cp_image *img, uint64_t addr);

/* Writes "mnemonic operands" of the instruction at addr into buf. */
bool cp_dis_describe(cp_dis *d, const cp_image *img, uint64_t addr, char *buf, size_t n);

/* Walks [start, end) of the image's code (end 0: every code section). */
cp_status cp_code_walk(const cp_image *img, uint64_t start, uint64_t end,
		       const struct cp_code_visitor *v, cp_error *err);

/* Whether cp_code_walk reports the same for a and b: everything it reads
 * (the code, the section table, the function starts, the symbol, GOT and
 * PLT names) is the same in both. A caller that keeps what the walk of a
 * reported may then use it for b, reading from b only what it took from
 * data itself. */
bool cp_code_walk_same(const cp_image *a, const cp_image *b);

#endif
