/*
 * plan.h - what a retarget changes: byte edits and an appended segment.
 *
 * A plan rewrites every reference a scan found from the source layout to
 * the target layout. A name that fits where it is gets written in place
 * (NUL-padded: these strings are read with strlen or compared with strcmp,
 * and stored lengths are updated with them); a longer one goes into a new
 * read-only PT_LOAD at the end of the file and every site is redirected to
 * it. Existing code and data never move.
 */
#ifndef CP_PLAN_H
#define CP_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include "scan.h"

enum cp_edit_kind {
	CP_EDIT_STRING,  /* a string rewritten in place */
	CP_EDIT_LENGTH,  /* a stored length */
	CP_EDIT_DISP,    /* a RIP-relative displacement redirected */
	CP_EDIT_ADDEND,  /* a relocation's addend (and the word it relocates) */
	CP_EDIT_WORD,    /* a pointer-sized word */
	CP_EDIT_IMM      /* an immediate operand in code */
};

struct cp_edit {
	enum cp_edit_kind kind;
	uint64_t off;       /* file offset */
	uint32_t len;
	uint8_t bytes[256]; /* the new bytes; len <= 256 */
	uint64_t site;      /* the address concerned (instruction, relocation, string) */
	uint64_t target;    /* CP_EDIT_DISP: the address the operand must reach */
	char what[200];     /* for --dry-run */
};

/* Data to append: placed at seg_vaddr + its offset in the segment. */
struct cp_chunk {
	uint64_t seg_off;
	uint32_t len;
	uint8_t *bytes;
	char what[200];
};

struct cp_plan {
	int target, source;          /* layout indexes */
	struct cp_edit *edits;
	size_t nedits, capedits;
	struct cp_chunk *chunks;
	size_t nchunks, capchunks;
	uint64_t seg_off, seg_vaddr; /* the new segment, when chunks exist */
	uint64_t seg_align;
	uint64_t seg_size;           /* program headers + chunks */
	uint64_t phdr_size;          /* the moved program header table, at the segment's start */
	size_t nchanged;             /* references rewritten */
};

/* Plans the retarget of img (scanned as scan) to layout `target`. A plan
 * with no edits means the file already binds to the target. */
cp_status cp_plan_make(const cp_image *img, const cp_scan *scan, int target,
		       struct cp_plan *plan, cp_error *err);
void cp_plan_free(struct cp_plan *plan);

/* Writes the plan as text, one edit a line (--dry-run). */
void cp_plan_print(const struct cp_plan *plan, const cp_image *img, FILE *out);

#endif
