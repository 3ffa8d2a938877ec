/*
 * aarch64.h - what the files of arch/aarch64/ share: capstone's handle
 * behind a cp_dis, the register numbering (0..30 for x0..x30, 31 for sp)
 * and the AAPCS64 argument registers, and the functions aarch64_target.c puts in
 * cp_arch_aarch64.
 */
#ifndef CP_ARCH_AARCH64_H
#define CP_ARCH_AARCH64_H

#include <capstone/capstone.h>
#include <stdbool.h>
#include <stdint.h>
#include "arch/code.h"
#include "arch/frame.h"
#include "elf/image.h"

enum { A64_X0 = 0, A64_X8 = 8, A64_X16 = 16, A64_X17 = 17, A64_X18 = 18, A64_X19 = 19,
       A64_X28 = 28, A64_FP = 29, A64_LR = 30, A64_SP = 31 };

#define A64_INSN 4 /* every instruction is one 4-byte word */
#define A64_NREG 32 /* x0..x30 and sp */

/* What a cp_dis's impl points at: capstone with detail on, for aarch64. */
struct a64_dis {
	csh handle;
	cs_insn *insn;
};

static inline struct a64_dis *a64_dis(const cp_dis *d)
{
	return d->impl;
}

/* x0..x7 */
#define A64_NARGS 8      /* x0 to x7 */
extern const int8_t cp_a64_arg_regs[A64_NARGS];

/* Index 0..31 of the 64-bit register that holds reg (w3 -> x3, sp -> 31),
 * or -1 (xzr, vector and system registers). */
int cp_a64_reg(arm64_reg reg);

/* Whether reg is a whole 64-bit register (x0..x30, sp). */
bool cp_a64_is_x(arm64_reg reg);

/* The address an ADR, ADRP or literal LDR of in reaches (ADRP: the page). */
bool cp_a64_pc_target(const cs_insn *in, uint64_t *target);

/* "mnemonic operands", cut to the buffer. */
void cp_a64_describe(const cs_insn *in, char *buf, size_t n);

/* Whether in is a direct branch or call (b, b.cond, bl, cbz, cbnz, tbz,
 * tbnz), and its target. */
bool cp_a64_direct_target(const cs_insn *in, uint64_t *target);

/* aarch64_decode.c */
cp_status cp_a64_dis_open(cp_dis *d, cp_error *err);
void cp_a64_dis_close(cp_dis *d);
bool cp_a64_dis_next(cp_dis *d, const uint8_t **code, size_t *size, uint64_t *addr);
bool cp_a64_insn_pcrel(const cp_dis *d, uint8_t *disp_off, uint8_t *size, uint64_t *target);
bool cp_a64_insn_reaches(const cp_dis *d, uint64_t *target);
bool cp_a64_insn_completes(const cp_dis *d);
/* A register set to a constant (movz, movn, mov #imm, mov of the zero
 * register), as the whole x register holds it. */
bool cp_a64_constant(const cs_insn *in, int8_t *reg, uint64_t *v);
bool cp_a64_insn_immediate(const cp_dis *d, uint8_t *off, uint8_t *size, int64_t *value);
bool cp_a64_insn_is_cmp_reg_imm(const cp_dis *d);
unsigned cp_a64_insn_operand_size(const cp_dis *d);
bool cp_a64_insn_displacement(const cp_dis *d, uint8_t *off, uint8_t *size, int64_t *value);
unsigned cp_a64_insn_size(const cp_dis *d);
void cp_a64_insn_describe(const cp_dis *d, char *buf, size_t n);
bool cp_a64_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr);

/* aarch64_facts.c */
/* The registers in writes, a bit each (x0..x30, sp; a write-back base
 * too); all when capstone cannot tell. */
uint32_t cp_a64_writes(csh h, const cs_insn *in);
void cp_a64_insn_facts(const cp_dis *d, struct cp_insn_facts *f);
void cp_a64_insn_flow(const cp_dis *d, struct cp_insn_facts *f);

/* aarch64_walk.c */
cp_status cp_a64_code_walk(const cp_image *img, uint64_t start, uint64_t end,
			   const struct cp_code_visitor *v, cp_error *err);

/* aarch64_frame_eval.c */
cp_status cp_a64_frame_eval(const cp_image *img, uint64_t start, uint64_t end, bool callee,
			    struct cp_frame *f, cp_error *err);

#endif
