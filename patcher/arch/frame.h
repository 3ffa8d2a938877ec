/*
 * frame.h - constant stack data built by one function (the frame
 * evaluator; each architecture's behind struct cp_arch).
 *
 * Cython 3.2+ builds the length index of its string blob as a local const
 * array: GCC writes it with immediate stores (bit-field cells) or copies it
 * from a .rodata template (rep movs, memcpy, SSE moves). This evaluator runs
 * a function's code linearly over an abstract frame whose bytes carry known
 * bits, so the array's values can be read back, together with where each
 * byte came from. It also lists the function's indexed frame loads (the
 * decode loop reading the array) and its immediates (loop bounds, lengths).
 */
#ifndef CP_ARCH_FRAME_H
#define CP_ARCH_FRAME_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/code.h"
#include "elf/image.h"

#define CP_FRAME_SIZE (1u << 18) /* bytes of frame below the entry stack pointer */

/* Where a frame byte's value came from. */
struct cp_frame_src {
	uint64_t insn;   /* the instruction that made its value: the store of an
			  * immediate, or what set the register stored (or eax, imm) */
	uint64_t va;     /* for template copies: the source address, else 0 */
};

struct cp_frame_load {
	uint64_t insn;
	int64_t base;    /* frame offset of the array */
	uint8_t scale;
	uint8_t width;   /* bytes loaded */
};

/* The frame from an array's base up, as it was when code first indexed it
 * (later code reuses the stack slots). */
struct cp_frame_snap {
	int64_t base;
	size_t len;
	uint8_t *val, *known;
	struct cp_frame_src *src;
};

struct cp_frame {
	struct cp_frame_snap snap[8];
	size_t nsnap;
	uint8_t *val, *known;        /* CP_FRAME_SIZE bytes each; index = offset + CP_FRAME_SIZE */
	struct cp_frame_src *src;
	struct cp_frame_load *loads;
	size_t nloads, caploads;
	uint64_t *imms;              /* distinct immediates, sorted */
	size_t nimms, capimms;
	uint64_t *cmps;              /* distinct immediates of cmp instructions, sorted */
	size_t ncmps, capcmps;
	/* Lengths passed to PyUnicode_DecodeUTF8 / PyBytes_FromStringAndSize as
	 * constants, in code order: entries whose index cell the compiler folded
	 * into the call (a one-entry loop). */
	struct cp_frame_arglen {
		uint64_t insn;   /* the call */
		uint64_t len;
		uint64_t set;    /* the instruction that set the length */
		uint64_t ptr_set; /* the instruction that set the data pointer */
		bool is_bytes;
	} *arglens;
	size_t narglens, caparglens;
	/* Every call, with what its argument registers held: a value whose
	 * bits are all known, and the instruction whose immediate made it (a
	 * `mov esi, imm`, followed through register copies), or 0. */
	struct cp_frame_call {
		uint64_t insn;
		uint64_t target;     /* a direct call's target, else 0 */
		const char *name;    /* the imported function it reaches (PLT or GOT), or NULL */
		uint64_t arg[CP_MAX_ARGS]; /* the argument registers, ABI order */
		uint64_t arg_imm[CP_MAX_ARGS];
		uint8_t known;       /* bit i: arg[i] is known */
		uint64_t addr[CP_MAX_ARGS]; /* an argument that is an address in the file */
		uint8_t addr_known;  /* bit i: addr[i] is known */
	} *calls;
	size_t ncalls, capcalls;
	uint64_t *cmpvals;           /* known values compared by cmp from a register or
				      * the frame (not immediates), in code order */
	size_t ncmpvals, capcmpvals;
	/* 8-byte frame stores of a RIP-relative lea's address (directly, or as
	 * a half of an xmm register: movq, punpcklqdq), and what the 8 bytes
	 * after it held at the next call: Cython 3.0's string table,
	 * {PyObject **p; const char *s; Py_ssize_t n; ...}, built in code. */
	struct cp_frame_astore {
		int64_t off;
		uint64_t va;
		uint64_t insn;      /* the store */
		bool resolved;
		bool next_known;    /* the next 8 bytes were all known ... */
		uint64_t next;      /* ... held this value ... */
		uint64_t next_insn; /* ... made by this one instruction (its
				     * immediate, or what set the register stored) */
	} *astores;
	size_t nastores, capastores;
	uint64_t *leas;              /* RIP-relative lea targets in read-only data */
	uint64_t *lea_insn;          /* ... and the lea instruction addresses */
	size_t nleas, capleas, capleainsn;
	/* the addresses lea makes (lea rax, [rip + x]; lea rbp, [rax - 0x98])
	 * and where 8-byte stores through an address register write (mov
	 * [rbp], rax): the loop that fills Cython's string table starts at
	 * one of them */
	uint64_t *addrs;
	size_t naddrs, capaddrs;
};

/* Evaluates [start, end). Returns CP_OK or an error on memory exhaustion. */
cp_status cp_frame_eval(const cp_image *img, uint64_t start, uint64_t end,
			struct cp_frame *f, cp_error *err);
void cp_frame_free(struct cp_frame *f);

/* The value argument i of a function holds at its entry, when evaluated by
 * cp_frame_eval_callee: a marker no code makes, so that a call of the
 * function's own that receives it (through registers or frame slots) shows
 * which argument reaches it. */
#define CP_FRAME_ARG(i) (0x7fc0ffee5eed0000ull | (uint64_t)(i))

/* As cp_frame_eval, with argument i's register holding CP_FRAME_ARG(i) at
 * entry. */
cp_status cp_frame_eval_callee(const cp_image *img, uint64_t start, uint64_t end,
			       struct cp_frame *f, cp_error *err);

/* Reads `bits` low bits of cell i (4 bytes) of the array at frame offset
 * base, as code first indexed it; false when any of them is unknown or the
 * cell lies outside what was kept. */
bool cp_frame_cell(const struct cp_frame *f, int64_t base, size_t i, unsigned bits, uint32_t *out);

/* Where the byte at frame offset off came from, or NULL. */
const struct cp_frame_src *cp_frame_src_at(const struct cp_frame *f, int64_t base, size_t i);

bool cp_frame_has_imm(const struct cp_frame *f, uint64_t v);

#endif
