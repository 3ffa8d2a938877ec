/*
 * plan.h - what a retarget changes: byte edits and new read-only space.
 *
 * A plan rewrites every reference a scan found from the source layout to
 * the target layout. A name that fits where it is gets written in place
 * (NUL-padded: these strings are read with strlen or compared with strcmp,
 * and stored lengths are updated with them); a longer one goes into new
 * read-only space and every site is redirected to it. Existing code and
 * data never move.
 *
 * The new space is, in this order of preference: the padding after a
 * read-only PT_LOAD, up to the next segment (the segment grows over it); or
 * a new PT_LOAD at the end of the file that takes the place of PT_NOTE in
 * the program headers (the notes stay, as sections). Both keep the program
 * header table where it is, which binutils' strip needs: strip mislays a
 * PT_LOAD that holds program headers unless it is the first, and refuses a
 * table outside every segment. Addresses in the new space are provisional
 * until the whole plan is known (cp_plan_place).
 */
#ifndef CP_PLAN_H
#define CP_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include "scan/scan.h"

enum cp_edit_kind {
	CP_EDIT_STRING,  /* a string rewritten in place */
	CP_EDIT_LENGTH,  /* a stored length */
	CP_EDIT_DISP,    /* a RIP-relative displacement redirected */
	CP_EDIT_ADDEND,  /* a relocation's addend (and the word it relocates) */
	CP_EDIT_WORD,    /* a pointer-sized word */
	CP_EDIT_IMM,     /* an immediate operand in code */
	CP_EDIT_BRANCH   /* a call or jmp rewritten as a direct one to new code */
};

struct cp_edit {
	enum cp_edit_kind kind;
	uint64_t off;       /* file offset */
	uint32_t len;
	uint8_t bytes[1024]; /* the new bytes; len <= 1024 */
	uint64_t site;      /* the address concerned (instruction, relocation, string) */
	uint64_t target;    /* CP_EDIT_DISP, BRANCH, ADDEND, WORD: the address written */
	uint64_t site_end;  /* CP_EDIT_DISP, BRANCH: the end of the instruction */
	uint8_t disp_at;    /* CP_EDIT_DISP, BRANCH: where the rel32 sits in bytes */
	char what[200];     /* for --dry-run */
};

/* Data to append: placed at its space's seg_vaddr + its offset there. */
struct cp_chunk {
	uint64_t seg_off;
	uint32_t len;
	uint8_t *bytes;
	char what[200];
};

enum cp_place { CP_PLACE_NONE, CP_PLACE_GAP, CP_PLACE_NOTE };

/* New space: read-only data (names, blobs, the fallback context) and code
 * (the fallback stubs). */
enum cp_space_kind { CP_SPACE_DATA, CP_SPACE_CODE, CP_NSPACES };

struct cp_space {
	struct cp_chunk *chunks;
	size_t nchunks, capchunks;
	enum cp_place place;
	uint64_t seg_off, seg_vaddr; /* where the chunks go (file, memory) */
	uint64_t size;               /* the chunks, aligned */
	uint32_t flags;              /* PF_* of the segment that holds them */
};

/* Provisional addresses of the new space, until cp_plan_place: data at
 * CP_PROVISIONAL + offset, code at CP_PROVISIONAL_CODE + offset. */
#define CP_PROVISIONAL (1ull << 62)
#define CP_PROVISIONAL_CODE (1ull << 61)

/* An instruction in new code and the address its operand must reach. */
struct cp_expect {
	uint64_t addr, target;
};

struct cp_plan {
	int target;                  /* layout index; -1 for fallback */
	struct cp_edit *edits;
	size_t nedits, capedits;
	struct cp_expect *expects;   /* checked after emitting */
	size_t nexpects, capexpects;
	struct cp_space space[CP_NSPACES];
	size_t nchanged;             /* references rewritten (or call sites redirected) */
	bool inexpressible;          /* cp_plan_make refused what strings cannot express */
};

/* Bytes the plan adds in new space, all spaces together. */
uint64_t cp_plan_new_bytes(const struct cp_plan *plan);

/* Plans the retarget of img (scanned as scan) to layout `target`. A plan
 * with no edits means the file already binds to the target. When it fails
 * because strings alone cannot express a rewrite, plan->inexpressible is
 * set: the fallback stubs (cp_plan_fallback) cover those. */
cp_status cp_plan_make(const cp_image *img, const cp_scan *scan, int target,
		       struct cp_plan *plan, cp_error *err);
void cp_plan_free(struct cp_plan *plan);

/* What the fallback stub stands in for (--tolerate-missing,
 * docs/tolerate.md): cimported functions and modules some release of a
 * range lacks, and the return types of those functions. The strings are
 * the scan's and the rules'. */
struct cp_error_value;
struct cp_releases;
struct cp_standins {
	const char **func;
	size_t nfunc;
	const char **module;
	size_t nmodule;
	const struct cp_error_value **ret;
	size_t nret;
};

/* The stand-ins img (scanned as s) needs under every release of the
 * knowledge base kb that pick marks; fails naming the first function or
 * module that cannot be stood in for. */
cp_status cp_plan_standins(const cp_image *img, const cp_scan *s, const struct cp_releases *kb, const bool *pick,
			   struct cp_standins *out, cp_error *err);
void cp_standins_free(struct cp_standins *s);

/* Plans fallback stubs for img (see docs/fallback.md): every import of a
 * mapped module and every capsule check goes through injected code that
 * accepts both layouts. `serve` is the layout the output must work under
 * (a retarget that strings cannot express), or -1 for both: a module only
 * one layout has is refused only where it must serve the other. standins,
 * when not NULL, are added to the stub. A plan with no edits means the file
 * is already fallback-patched. */
cp_status cp_plan_fallback(const cp_image *img, const cp_scan *scan, int serve,
			   const struct cp_standins *standins, struct cp_plan *plan, cp_error *err);

/* Writes the plan as text, one edit a line (--dry-run). */
void cp_plan_print(const struct cp_plan *plan, const cp_image *img, FILE *out);

#endif
