/*
 * code.h - reading machine code, in words that fit every architecture.
 *
 * The decoder (cp_dis) reads one instruction at a time, from an image or
 * from bytes, and answers questions about the last one decoded: its
 * PC-relative operand, where it reaches, its immediate and displacement
 * fields, its text, and the facts (cp_insn_facts) the analyses over a
 * function's branches use. The code walk decodes code linearly and follows,
 * per register, values that are known: an address materialised from the PC,
 * an immediate, or a word loaded from a fixed address. It reports every
 * PC-relative operand and every call with the known values of its argument
 * registers. Values reset at function starts, after unconditional jumps and
 * returns, and caller-saved registers at calls; that is enough to pair
 * Cython's import calls with their string arguments, and it never invents a
 * value. Each call dispatches through the image's struct cp_arch.
 *
 * Registers are numbered by the architecture (below CP_MAX_REGS); the
 * argument registers in ABI order are arch->arg_regs.
 */
#ifndef CP_ARCH_CODE_H
#define CP_ARCH_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "elf/image.h"

#define CP_MAX_ARGS 8  /* integer argument registers of the largest ABI */
#define CP_MAX_REGS 32 /* general registers of the largest architecture */

enum cp_val_kind { CP_V_UNKNOWN, CP_V_ADDR, CP_V_IMM, CP_V_LOAD };

struct cp_val {
	uint8_t kind;
	uint64_t v;       /* the address, immediate, or address loaded from */
	uint64_t origin;  /* address of the instruction that produced it */
};

enum cp_insn_ref_kind { CP_REF_LEA, CP_REF_LOAD, CP_REF_STORE, CP_REF_OTHER };

/* An instruction with a PC-relative memory operand. */
struct cp_code_ref {
	uint64_t addr;     /* instruction address */
	uint8_t size;      /* instruction length */
	uint8_t disp_off;  /* offset of the displacement inside the instruction */
	uint64_t target;
	enum cp_insn_ref_kind kind;
	uint64_t base;     /* the instruction that made the address in the
			    * register it adds to or reads through (aarch64's
			    * add x0, x26, #8), or 0 when it reaches alone;
			    * only a walk that follows values over branches
			    * sets it (x86-64's linear walk guesses after a
			    * jump and leaves it 0) */
};

/* A call (or a tail jump to an imported function). */
struct cp_call {
	uint64_t addr;
	uint64_t target;     /* 0 when indirect through a register */
	const char *name;    /* imported or local symbol name, or NULL */
	struct cp_val arg[CP_MAX_ARGS]; /* the argument registers, in ABI order */
};

/* What a walk's tracker holds between two instructions of a function, in
 * a form two walks compare byte for byte: the values it follows (x86-64:
 * the 16 registers, then the 16 addresses last lea'd into them). */
#define CP_CODE_STATE_VALS 32
struct cp_code_state {
	uint8_t kind[CP_CODE_STATE_VALS];
	uint64_t v[CP_CODE_STATE_VALS], origin[CP_CODE_STATE_VALS];
};

struct cp_code_visitor {
	void (*on_ref)(void *ctx, const struct cp_code_ref *ref);
	void (*on_call)(void *ctx, const struct cp_call *call);
	void *ctx;
	/* optional: every direct jump, conditional or not */
	void (*on_jump)(void *ctx, uint64_t addr, uint64_t target);
	/* optional: every instruction after which execution does not fall
	 * through (jumps, returns, traps) */
	void (*on_end)(void *ctx, uint64_t addr);
	/* optional, where the architecture's walk keeps its state inside a
	 * function (x86-64's): before the first instruction at or after each
	 * of the ncuts addresses (ascending), where the walk stands; true
	 * stops the walk there. */
	const uint64_t *cuts;
	size_t ncuts;
	bool (*on_cut)(void *ctx, uint64_t addr, const struct cp_code_state *st);
	/* optional, with on_cut: the state the walk starts in, at an address
	 * inside a function where on_cut reported it (else it starts as at a
	 * function's start) */
	const struct cp_code_state *from;
};

/* A decoder, and the last instruction it decoded (impl: the arch's). */
typedef struct cp_dis {
	const struct cp_arch *arch;
	void *impl;
} cp_dis;

/* How control leaves an instruction. */
enum cp_flow {
	CP_FLOW_NEXT,  /* falls through */
	CP_FLOW_JUMP,  /* an unconditional jump, direct or not */
	CP_FLOW_COND,  /* a conditional branch */
	CP_FLOW_CALL,
	CP_FLOW_RET,
	CP_FLOW_HALT,  /* stops the program (an undefined instruction, halt) */
	CP_FLOW_TRAP,  /* a breakpoint */
};

/* What a conditional branch after a compare of a and b branches on, signed
 * and unsigned alike (a loop's count reads them the same): a == b, a != b,
 * a < b, a >= b, a <= b, a > b. */
enum cp_cond { CP_COND_OTHER, CP_COND_EQ, CP_COND_NE, CP_COND_LT, CP_COND_GE, CP_COND_LE, CP_COND_GT };

/* What an instruction does to the stack frame below the stack pointer. */
struct cp_stack_facts {
	int8_t spill_src;  /* a whole register stored to [sp + spill_disp], else -1 */
	int8_t fill_dst;   /* a whole register loaded from [sp + fill_disp], else -1 */
	int32_t spill_disp, fill_disp;
	bool write;        /* another write to [sp + disp, + size); disp
			    * INT32_MIN: anywhere in the frame */
	bool addr_taken;   /* the address sp + disp is computed */
	int32_t disp;
	uint8_t size;
};

/* The facts of one instruction that the analyses over a function's
 * branches use. A register field is -1 when it does not apply. */
struct cp_insn_facts {
	uint64_t addr;
	uint8_t size;
	enum cp_flow flow;
	enum cp_cond cond;      /* CP_FLOW_COND */
	bool direct;            /* a branch or call to target, given in the instruction */
	uint64_t target;
	bool via_slot;          /* a call through the word at slot (PC-relative) */
	uint64_t slot;
	bool nop;
	bool regs_known;        /* the registers it writes are known ... */
	uint32_t writes;        /* ... these, a bit per register; all when not known */
	bool moves_sp;          /* it writes the stack pointer */
	int8_t imm_reg;         /* a register set to a constant ... */
	uint64_t imm;           /* ... this one, as the whole register holds it */
	int8_t load_reg;        /* a whole register loaded from a PC-relative word ... */
	uint64_t load_addr;     /* ... at this address */
	int8_t copy_dst, copy_src; /* a whole register copied to another */
	int8_t based_dst;       /* a whole register loaded from [based_base + based_disp] ... */
	int8_t based_base;      /* ... another register (not the PC or stack pointer), no index ... */
	int64_t based_disp;     /* ... and a displacement */
	int8_t addr_reg;        /* a register set to a PC-relative address ... */
	uint64_t addr_val;      /* ... this one */
	int8_t test_reg;        /* a whole register tested against zero */
	struct cp_stack_facts stack;
};

/* The facts of an instruction of size bytes at addr before any is known:
 * falls through, writes every register, no register field applies. */
void cp_insn_facts_none(struct cp_insn_facts *f, uint64_t addr, uint8_t size);

/* Opens a decoder for the image's architecture, or for arch. */
cp_status cp_dis_open(cp_dis *d, const cp_image *img, cp_error *err);
cp_status cp_dis_open_arch(cp_dis *d, const struct cp_arch *arch, cp_error *err);
/* Closes d; harmless on a zeroed or closed decoder. */
void cp_dis_close(cp_dis *d);

/* Decodes the instruction at *addr from *code (*size bytes), advancing all
 * three past it; false when it does not decode (nothing advances). */
bool cp_dis_next(cp_dis *d, const uint8_t **code, size_t *size, uint64_t *addr);

/* Decodes the one instruction at code (n bytes, at address addr). */
bool cp_dis_bytes(cp_dis *d, const uint8_t *code, size_t n, uint64_t addr);

/* Decodes the instruction at addr of one of the image's code sections. */
bool cp_dis_at(cp_dis *d, const cp_image *img, uint64_t addr);

/* Questions about the instruction decoded last. */

/* Its PC-relative memory operand: where the displacement (of the size the
 * arch rewrites) sits, the instruction's length, the operand's target. */
bool cp_insn_pcrel(const cp_dis *d, uint8_t *disp_off, uint8_t *size, uint64_t *target);
/* A direct call's or jump's target, or its PC-relative operand's address. */
bool cp_insn_reaches(const cp_dis *d, uint64_t *target);
/* Where its immediate field sits, its size in bytes and its value. */
bool cp_insn_immediate(const cp_dis *d, uint8_t *imm_off, uint8_t *imm_size, int64_t *value);
/* Whether it compares a register other than the stack pointer (and
 * aarch64's frame pointer) with an immediate. */
bool cp_insn_is_cmp_reg_imm(const cp_dis *d);
/* The size in bytes of its first operand (what an immediate is extended
 * to), 0 when it has none. */
unsigned cp_insn_operand_size(const cp_dis *d);
/* The displacement of a memory operand based on a register other than the
 * PC: where it sits, its size, its value. */
bool cp_insn_displacement(const cp_dis *d, uint8_t *disp_off, uint8_t *disp_size, int64_t *value);
/* Its length in bytes. */
unsigned cp_insn_size(const cp_dis *d);
/* "mnemonic operands", cut to n bytes. */
void cp_insn_describe(const cp_dis *d, char *buf, size_t n);
/* Its facts for the analyses over branches. */
void cp_insn_facts(const cp_dis *d, struct cp_insn_facts *f);
/* Only addr, size, nop, flow, cond, direct, target, via_slot and slot of
 * them (cheaper: no register accesses); the rest as for no effect but
 * writes, all. */
void cp_insn_flow(const cp_dis *d, struct cp_insn_facts *f);

/* The same questions of the instruction at addr of the image. */
bool cp_dis_rip_operand(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			uint8_t *size, uint64_t *target);
bool cp_dis_reaches(cp_dis *d, const cp_image *img, uint64_t addr, uint64_t *target);
bool cp_dis_immediate(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *imm_off,
		      uint8_t *imm_size, int64_t *value);
bool cp_dis_is_cmp_reg_imm(cp_dis *d, const cp_image *img, uint64_t addr);
/* 0 when it does not decode */
unsigned cp_dis_operand_size(cp_dis *d, const cp_image *img, uint64_t addr);
bool cp_dis_displacement(cp_dis *d, const cp_image *img, uint64_t addr, uint8_t *disp_off,
			 uint8_t *disp_size, int64_t *value);
/* 0 when it does not decode */
unsigned cp_dis_size(cp_dis *d, const cp_image *img, uint64_t addr);
bool cp_dis_describe(cp_dis *d, const cp_image *img, uint64_t addr, char *buf, size_t n);

/* A loop bound: the instruction at addr compares a register with an
 * immediate (*imm) and the next one branches on it; *count is how many
 * times a counter from 0 passes: the immediate for ==, !=, <, >= (i != n,
 * i < n, leave at i >= n), one more for <=, > (i <= n - 1 at -O0, leave at
 * i > n - 1). */
bool cp_dis_loop_count(cp_dis *d, const cp_image *img, uint64_t addr, uint64_t *imm, uint64_t *count);

/* Whether the function at addr (a start) calls nothing that returns: a
 * leaf (PyBytes_AS_STRING left out of line at -Os), or a stub that only
 * asserts (__assert_fail, abort, ...). */
bool cp_dis_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr);

/* Whether name is a function that does not return, which a compiler may
 * call from the middle of a loop (an assert's cold stub): __assert_fail,
 * abort, Py_FatalError, ... */
bool cp_is_noreturn_name(const char *name);

/* The name a call to target reaches: its PLT entry's, else the symbol's
 * there, else NULL. */
const char *cp_callee_name(const cp_image *img, uint64_t target);

/* The name the call or jump of facts f reaches: a direct target's (as
 * cp_callee_name), or the imported function of the GOT slot it goes
 * through (-fno-plt); NULL otherwise. */
const char *cp_insn_callee(const cp_image *img, const struct cp_insn_facts *f);

/* Argument register i (ABI order) of the image's architecture, or -1. */
int cp_arg_reg(const cp_image *img, unsigned i);

/* The part [*a, *b) of section s that the code walk reads: a code section
 * other than the PLT (.plt, .plt.sec, .plt.got), within [start, end) when
 * end is not 0; false when there is none. */
bool cp_walk_span(const struct cp_section *s, uint64_t start, uint64_t end, uint64_t *a, uint64_t *b);

/* Walks [start, end) of the image's code (end 0: every code section). */
cp_status cp_code_walk(const cp_image *img, uint64_t start, uint64_t end,
		       const struct cp_code_visitor *v, cp_error *err);

/* Whether cp_code_walk reads the same tables in a and b, so that where
 * their code bytes are the same it reports the same (for an architecture
 * whose walk is local, struct cp_arch.walk_local): the same allocated
 * sections, function starts, symbols, GOT and PLT slots, but b may add
 * sections outside all of a's (above them, or in a segment's padding),
 * and function starts and slots in them. */
bool cp_code_walk_tables_same(const cp_image *a, const cp_image *b);

#endif
