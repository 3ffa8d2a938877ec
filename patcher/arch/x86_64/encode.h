/*
 * encode.h - writing x86-64 code: the "Writing code" entries of
 * cp_arch_x86_64 (arch/arch.h says what each does), for x86_64_target.c.
 */
#ifndef CP_X86_64_ENCODE_H
#define CP_X86_64_ENCODE_H

#include "arch/arch.h"

#define CP_X86_64_PCREL_SIZE 4  /* rel32, disp32 */
#define CP_X86_64_THUNK_SIZE 16 /* lea (7) + jmp (5), padded */

bool cp_x86_64_pcrel_put(uint8_t *field, uint64_t insn, unsigned insn_size, uint64_t target);
bool cp_x86_64_field_put(uint8_t *field, unsigned size, int64_t value);
bool cp_x86_64_branch_rewrite(const uint8_t *insn, unsigned len, uint8_t *out, uint8_t *field_at,
			      uint8_t *branch_size);
bool cp_x86_64_thunk(uint8_t *out, uint64_t at, unsigned arg, uint64_t ctx, uint64_t entry,
		     uint64_t *jump);
bool cp_x86_64_standin(uint8_t *out, long value);

/* The stub as embed_stub.cmake wrote it for x86-64. */
extern const struct cp_stub cp_stub_x86_64;

#endif
