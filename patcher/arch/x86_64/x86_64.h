/*
 * x86_64.h - what the files of arch/x86_64/ share: the decoders behind a
 * cp_dis (Zydis, and capstone for the questions about operand fields and
 * text), the register numbering (0..15, rax..r15 in encoding order) and
 * the System V argument registers, and the functions x86_64_target.c puts in
 * cp_arch_x86_64.
 */
#ifndef CP_ARCH_X86_64_H
#define CP_ARCH_X86_64_H

#include <Zydis/Zydis.h>
#include <capstone/capstone.h>
#include <stdbool.h>
#include <stdint.h>
#include "arch/code.h"
#include "arch/frame.h"
#include "elf/image.h"

enum { R_RAX, R_RCX, R_RDX, R_RBX, R_RSP, R_RBP, R_RSI, R_RDI,
       R_R8, R_R9, R_R10, R_R11, R_R12, R_R13, R_R14, R_R15 };

/* One instruction decoded by Zydis. */
struct zin {
	ZydisDecodedInstruction in;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t addr;
};

/* What a cp_dis's impl points at. Zydis decodes every instruction (the
 * analyses over branches step through whole functions: x86_64_facts.c); capstone,
 * with detail on, decodes the last one again only when a question about
 * its fields or text is asked (x86_64_decode.c). */
struct x86_dis {
	ZydisDecoder dec;
	struct zin z;
	uint8_t bytes[16];   /* z's bytes, for capstone */
	csh handle;
	cs_insn *insn;
	enum { CS_NOT_YET, CS_SAME, CS_OTHER } cs; /* insn: not decoded yet; the
						    * same instruction; not */
};

static inline struct x86_dis *x86_dis(const cp_dis *d)
{
	return d->impl;
}

/* rdi, rsi, rdx, rcx, r8, r9 */
#define X86_64_NARGS 6   /* rdi, rsi, rdx, rcx, r8, r9 */
extern const int8_t cp_x86_64_arg_regs[X86_64_NARGS];

/* Index 0..15 of the 64-bit register that holds reg (eax -> rax), or -1. */
int cp_reg64(x86_reg reg);

/* The address a rip-relative memory operand m of in names: rip is the
 * address after the instruction. */
static inline uint64_t cp_x86_rip_addr(const cs_insn *in, const x86_op_mem *m)
{
	return in->address + in->size + (uint64_t)m->disp;
}

/* The target of the instruction's memory operand relative to rip (not
 * indexed), and which operand it is. */
bool cp_x86_rip_target(const cs_insn *in, uint64_t *target, int *opi);

/* "mnemonic operands", cut to the buffer. */
void cp_x86_describe(const cs_insn *in, char *buf, size_t n);

/* x86_64_decode.c */
cp_status cp_x86_dis_open(cp_dis *d, cp_error *err);
void cp_x86_dis_close(cp_dis *d);
bool cp_x86_dis_next(cp_dis *d, const uint8_t **code, size_t *size, uint64_t *addr);
bool cp_x86_insn_pcrel(const cp_dis *d, uint8_t *disp_off, uint8_t *size, uint64_t *target);
bool cp_x86_insn_reaches(const cp_dis *d, uint64_t *target);
bool cp_x86_insn_immediate(const cp_dis *d, uint8_t *off, uint8_t *size, int64_t *value);
bool cp_x86_insn_is_cmp_reg_imm(const cp_dis *d);
unsigned cp_x86_insn_operand_size(const cp_dis *d);
bool cp_x86_insn_displacement(const cp_dis *d, uint8_t *off, uint8_t *size, int64_t *value);
unsigned cp_x86_insn_size(const cp_dis *d);
void cp_x86_insn_describe(const cp_dis *d, char *buf, size_t n);
bool cp_x86_calls_nothing(cp_dis *d, const cp_image *img, uint64_t addr);

/* x86_64_facts.c */
void cp_x86_insn_facts(const cp_dis *d, struct cp_insn_facts *f);
void cp_x86_insn_flow(const cp_dis *d, struct cp_insn_facts *f);

/* x86_64_walk.c */
cp_status cp_x86_code_walk(const cp_image *img, uint64_t start, uint64_t end,
			   const struct cp_code_visitor *v, cp_error *err);

/* x86_64_frame_eval.c */
cp_status cp_x86_frame_eval(const cp_image *img, uint64_t start, uint64_t end, bool callee,
			    struct cp_frame *f, cp_error *err);

#endif
