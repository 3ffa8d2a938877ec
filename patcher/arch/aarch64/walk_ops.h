/*
 * walk_ops.h - the code walk's view of an instruction (aarch64_ops.c decodes,
 * aarch64_walk.c runs): what it does to the registers the walk follows, and how
 * control leaves it. Private to arch/aarch64/.
 */
#ifndef CP_ARCH_AARCH64_WALK_OPS_H
#define CP_ARCH_AARCH64_WALK_OPS_H

#include "arch/aarch64/aarch64.h"

enum a64_op_kind {
	A64_OP_OTHER,   /* writes `writes`, nothing followed */
	A64_OP_ADRP,    /* dst = page v */
	A64_OP_ADR,     /* dst = address v */
	A64_OP_LDR_LIT, /* dst = the word at v (wide: a whole x register) */
	A64_OP_ADDI,    /* dst = src + v (a SUB's v is negated) */
	A64_OP_MEM,     /* a load (load) or store at src + v; wide: ldr of an x dst */
	A64_OP_MOVR,    /* dst = src, x registers */
	A64_OP_CONST,   /* dst = v */
	A64_OP_MOVK,    /* dst's 16 bits at shift = v */
	A64_OP_CALL,    /* bl target, or blr src */
	A64_OP_JUMP,    /* b target, or br src */
	A64_OP_COND,    /* b.cond, cbz, cbnz, tbz, tbnz */
	A64_OP_END,     /* ret, brk, hlt, or a word that does not decode */
};

struct a64_op {
	uint64_t addr;
	uint64_t v;
	uint64_t target;     /* direct: the branch's target */
	size_t target_idx;   /* target_in: its index in the function */
	uint32_t writes;     /* registers written, a bit each */
	uint8_t kind;
	int8_t dst, src;
	uint8_t shift;
	bool wide, load;
	bool direct, branches, ends, target_in;
};

/* Direct branch targets reached from another function (sorted). */
struct a64_targets {
	uint64_t *addr;
	size_t n;
};

/* The ops of [start, end) of a code section (*n of them, one per word),
 * in a new array *ops. */
cp_status cp_a64_decode_ops(const cp_image *img, cp_dis *d, uint64_t start, uint64_t end, struct a64_op **ops,
			    size_t *n, cp_error *err);

/* Every direct jump target whose jump lies in another function. */
cp_status cp_a64_external_targets(const cp_image *img, cp_dis *d, struct a64_targets *t, cp_error *err);

bool cp_a64_targets_has(const struct a64_targets *t, uint64_t addr);

/* What the code walk knows at a block's start: each register's value on
 * every way into the block that the function itself shows. */
struct a64_entry {
	uint64_t addr;
	struct cp_val reg[A64_NREG];
};

/* The block starts of the function [start, end), in address order, with
 * their entry states (aarch64_walk.c); jumps from other functions are not looked
 * for, so a block they enter may know more than it should: for readers
 * that check what they find (the frame evaluator's candidates). */
cp_status cp_a64_entry_states(const cp_image *img, cp_dis *d, uint64_t start, uint64_t end,
			      struct a64_entry **out, size_t *n, cp_error *err);

#endif
