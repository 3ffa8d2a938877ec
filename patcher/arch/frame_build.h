/*
 * frame_build.h - what every architecture's frame evaluator writes a
 * struct cp_frame with (frame_build.c): the frame's bytes with their known
 * bits and sources, template copies and fills, the snapshots of indexed
 * arrays, the address stores of Cython 3.0's string table, the addresses
 * noted and the sorted immediates. Private to patcher/arch/.
 *
 * Offsets are from the stack pointer at the function's entry; the frame
 * holds CP_FRAME_SIZE bytes below it and CP_FRAME_SLACK above (the return
 * address, the arguments).
 */
#ifndef CP_ARCH_FRAME_BUILD_H
#define CP_ARCH_FRAME_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/frame.h"

#define CP_FRAME_SLACK 64
#define CP_FRAME_BYTES (CP_FRAME_SIZE + CP_FRAME_SLACK)
/* One anonymous mapping holds a frame's sources, values and known bits:
 * its pages are zero until touched, and a function touches few of them. */
#define CP_FRAME_MAP (CP_FRAME_BYTES * (sizeof(struct cp_frame_src) + 2))

/* The frame's bytes, allocated; false when memory is exhausted. */
bool cp_frame_build_alloc(struct cp_frame *f);

/* Index of frame offset off in f->val when len bytes from it fit. */
bool cp_frame_index(int64_t off, unsigned len, size_t *idx);

/* len bytes (values v, known bits k) written at off; each made by insn, and
 * copied from va + i when va is not 0. Outside the frame: nothing. */
void cp_frame_put(struct cp_frame *f, int64_t off, const uint8_t *v, const uint8_t *k, unsigned len,
		  uint64_t va, uint64_t insn);

/* size (up to 8) bytes at off, little-endian, and their known bits; false
 * outside the frame. */
bool cp_frame_get(const struct cp_frame *f, int64_t off, unsigned size, uint64_t *v, uint64_t *known);

/* len bytes of the file at va copied to off (a template), or byte len
 * times (memset); made by insn. */
void cp_frame_copy_in(struct cp_frame *f, const cp_image *img, int64_t off, uint64_t va, uint64_t len,
		      uint64_t insn);
void cp_frame_fill(struct cp_frame *f, int64_t off, uint8_t byte, uint64_t len, uint64_t insn);

/* Bytes a snapshot does not know yet take the frame's current value at
 * [off, off + len): an array's cells may be written after its first
 * indexed read; known bytes stay (the slots are reused later). */
void cp_frame_snap_fill(struct cp_frame *f, int64_t off, size_t len);

/* The frame from base up, kept as code first indexes it (again: filled
 * where it was not known); false when memory is exhausted. */
bool cp_frame_snapshot(struct cp_frame *f, int64_t base);

/* An address va stored at off by insn; what follows each address stored
 * since the last resolve, as it is now (at a call). False: no memory. */
bool cp_frame_note_astore(struct cp_frame *f, int64_t off, uint64_t va, uint64_t insn);
void cp_frame_resolve_astores(struct cp_frame *f);

/* An address the code makes or stores through; false: no memory. */
bool cp_frame_note_addr(struct cp_frame *f, uint64_t va);

/* Known-bit logic: the value (*v, masked by *k) and known bits *k of a op b,
 * each given as a value and its known bits. */
enum cp_bit_op { CP_BIT_AND, CP_BIT_OR, CP_BIT_XOR };
void cp_bits_logic(enum cp_bit_op op, uint64_t av, uint64_t ak, uint64_t bv, uint64_t bk, uint64_t *v,
		   uint64_t *k);

/* v[0, *count) sorted, repeats dropped. */
void cp_frame_unique(uint64_t *v, size_t *count);

#endif
