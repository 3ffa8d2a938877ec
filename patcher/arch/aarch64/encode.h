/*
 * encode.h - writing aarch64 code (little-endian, LP64): PC-relative
 * operands re-encoded, the :lo12: companions of ADRP, immediates as bit
 * fields, direct branches in place of calls through a register, and the
 * fallback stub's thunks. Pure functions of the instruction words; each
 * returns false, leaving its output as it was, for a form it does not know
 * or a value it cannot encode or reach. The "word" functions take and give
 * an instruction as a host integer; the "_put" ones read and write its 4
 * little-endian bytes, shaped for struct cp_arch (arch/arch.h).
 */
#ifndef CP_AARCH64_ENCODE_H
#define CP_AARCH64_ENCODE_H

#include "arch/arch.h"

#define CP_A64_PCREL_SIZE 4  /* the field is the whole instruction */
#define CP_A64_THUNK_SIZE 16 /* adr, b, brk #0, brk #0 */

/* PC-relative forms: ADR (+-1 MiB), ADRP (+-4 GiB of pages), B and BL
 * (imm26, +-128 MiB), B.cond, CBZ, CBNZ and LDR/LDRSW/PRFM (literal,
 * imm19, +-1 MiB), TBZ and TBNZ (imm14, +-32 KiB). *out is insn made to
 * reach target from pc: for ADRP the page of target (its low 12 bits are
 * the companion's, cp_a64_lo12); false for another form, a misaligned
 * target of a word-scaled form (all but ADR and ADRP), a pc not 4-aligned,
 * or a target out of reach. */
bool cp_a64_pcrel(uint32_t insn, uint64_t pc, uint64_t target, uint32_t *out);

/* ADRP's companions: ADD (immediate, unshifted, 32 or 64-bit) and the
 * loads and stores with an unsigned, size-scaled 12-bit offset (LDR, STR,
 * LDRB, LDRH, LDRSB, LDRSH, LDRSW, PRFM, and the SIMD&FP ones). *out is
 * insn with target's low 12 bits as its immediate; false for another form,
 * an ADD with LSL #12, or low bits the access size does not divide. */
bool cp_a64_lo12(uint32_t insn, uint64_t target, uint32_t *out);

/* An immediate field set to value, value being the operand as capstone
 * shows it with its shift applied (cp_a64_insn_immediate and
 * cp_a64_insn_displacement report it so):
 *   ADD, ADDS, SUB, SUBS (so CMP, CMN) immediate: imm12 or imm12 << 12,
 *     the shift chosen to fit (LSL #12 only when the low 12 bits are 0);
 *   MOVZ, MOVN: the value the register gets (zero-extended for W, as
 *     cp_a64_insn_immediate reports it), made by MOVZ when one 16-bit
 *     part holds it, else by MOVN: the operation may change between them;
 *   MOVK: imm16 << 16 * hw, its hw kept (hw says which bits it replaces);
 *   LDR/STR... (unsigned offset): the byte offset, a multiple of the
 *     access size below 4096 times it.
 * The registers and width are kept; false for another form, a negative
 * value (but MOVZ/MOVN's, a bit pattern), or one that does not fit. */
bool cp_a64_imm(uint32_t insn, int64_t value, uint32_t *out);

/* ADRP (at adrp_pc) and its companion (cp_a64_lo12, based on the register
 * the ADRP writes) pointed at target together: both words rewritten, or
 * neither. The companion's address does not matter (:lo12: is absolute). */
bool cp_a64_adrp_pair(uint8_t adrp[4], uint64_t adrp_pc, uint8_t lo[4], uint64_t target);

/* An instruction that completes an address from a register, insn at pc,
 * as one that yields target by itself, into the same register: ADD or SUB
 * (immediate, 64-bit, no flags, not into sp) becomes ADR (+-1 MiB); LDR
 * xT, LDR wT and LDRSW xT with an unsigned offset become LDR (literal)
 * (+-1 MiB, target 4-aligned). The register it read keeps its value for
 * whatever else uses it (an ADRP's page, a neighbour string's address).
 * False for another form or a target out of reach. */
bool cp_a64_standalone(uint32_t insn, uint64_t pc, uint64_t target, uint32_t *out);

/* For struct cp_arch (arch.h: the field holds the instruction's 4 bytes
 * on entry, rewritten in place). pcrel_put: insn_size must be 4; the
 * PC-relative forms of cp_a64_pcrel but ADRP (its page is shared by the
 * instructions that complete it), and the completions of
 * cp_a64_standalone. field_put: size must be 4; cp_a64_imm. */
bool cp_a64_pcrel_put(uint8_t *field, uint64_t insn, unsigned insn_size, uint64_t target);
bool cp_a64_field_put(uint8_t *field, unsigned size, int64_t value);

/* A call or jump insn (len 4) as a direct one in out: BL and B keep their
 * opcode; BLR xN becomes BL, BR xN becomes B (the ADRP and LDR that
 * loaded xN stay, harmless). The imm26 is left 0 for pcrel_put, *field_at
 * is 0 and *branch_size 4. False for another form (RET, BLRAA...). */
bool cp_a64_branch_rewrite(const uint8_t *insn, unsigned len, uint8_t *out, uint8_t *field_at,
			   uint8_t *branch_size);

/* A 64-bit load of a pointer (LDR xT, [xN, #imm] or LDR xT, label; a
 * GOT slot's under -fno-plt) as ADR xT, . in out, for pcrel_put to point
 * at the thunk that stands for the function: len must be 4; false for
 * another form. */
bool cp_a64_load_rewrite(const uint8_t *insn, unsigned len, uint8_t *out);

/* The fallback thunk at address at (out, CP_A64_THUNK_SIZE bytes):
 *     adr xA, ctx; b entry; brk #0; brk #0
 * with xA argument register arg (0..7); *jump = at + 4, where the b sits.
 * False, out untouched, for arg > 7, at not 4-aligned, ctx beyond ADR's
 * +-1 MiB or entry beyond B's +-128 MiB (or not 4-aligned). */
bool cp_a64_thunk(uint8_t *out, uint64_t at, unsigned arg, uint64_t ctx, uint64_t entry,
		  uint64_t *jump);

/* A stand-in (out, CP_A64_THUNK_SIZE bytes): movz w0, #lo; movk w0, #hi,
 * lsl #16; ret; brk #0. False for a value outside 32 bits. */
bool cp_a64_standin(uint8_t *out, long value);

/* The stub as embed_stub.cmake wrote it for aarch64. */
extern const struct cp_stub cp_stub_aarch64;

#endif
