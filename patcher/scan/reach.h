/*
 * reach.h - the value a register holds at an instruction, found backwards
 * over the branches of the function it is in.
 *
 * The code walk follows registers forwards in address order and forgets
 * them at every jump, which loses a value loaded in one block and used in
 * another (GCC's module-exec functions are laid out that way). This looks
 * back from the use along every path that reaches it, and answers only
 * when all of them agree.
 */
#ifndef CP_REACH_H
#define CP_REACH_H

#include <stdint.h>
#include "util/error.h"
#include "elf/image.h"

/* A direct jump, conditional or not, anywhere in the image's code (the
 * scan's walk collects them all, sorted by target). */
struct cp_jump {
	uint64_t from, to;
};

enum cp_reach_kind {
	CP_REACH_UNKNOWN,
	CP_REACH_SLOT, /* loaded from the PC-relative address v, on every path */
	CP_REACH_ARG,  /* the function's argument v (ABI order), unchanged, on every path */
	CP_REACH_IMM,  /* the constant v, on every path */
};

struct cp_reach_val {
	enum cp_reach_kind kind;
	uint64_t v;
};

typedef struct cp_reach cp_reach;

cp_status cp_reach_open(const cp_image *img, const struct cp_jump *jumps, size_t njumps, cp_reach **out,
			cp_error *err);
void cp_reach_close(cp_reach *r);

/* What register reg (numbered by the image's arch, arch/code.h) holds
 * right before the instruction at `at`. */
cp_status cp_reach_value(cp_reach *r, uint64_t at, int reg, struct cp_reach_val *out, cp_error *err);

#endif
