/*
 * plan_internal.h - the private header of the planner, a component of
 * several files that call downwards only:
 *
 *   plan.c, plan_fallback.c   the drivers: a retarget (literals,
 *                             relocations, code operands), the fallback stubs
 *   plan_blob.c               Cython 3.2+ string blobs, for plan.c
 *   place.c                   where the new space goes; addresses made real
 *   forms.c                   what a name becomes in the target layout
 *   pointers.c                what points into the data, indexed
 *   edits.c                   the record: edits, appended chunks, expected
 *                             operands, and the plan's invariants
 */
#ifndef CP_PLAN_INTERNAL_H
#define CP_PLAN_INTERNAL_H

#include "util/key_index.h"
#include "plan/plan.h"

struct cp_blob_plan;
struct cp_plan_pointers;

/* A source-layout name in one of its forms (dotted, path, mangled prefix)
 * and what it becomes in the target layout; made once per plan. */
struct cp_name_form {
	char *from, *to;
	size_t flen;
	bool mangled;  /* a prefix: no word boundary needed */
};

struct planner {
	const cp_image *img;
	const cp_scan *scan;
	const cp_rules *rules;
	struct cp_plan *p;
	cp_dis dis;
	cp_error *err;
	uint64_t *done;      /* string addresses already planned, */
	size_t ndone, capdone;
	struct cp_key_index done_index; /* and by address */
	struct cp_blob_plan *blobs; /* one per scan blob */
	bool inexpressible;  /* refused: strings alone cannot express a rewrite */
	struct code_lengths *code_lengths; /* plan.c: Cython 3.0 string-table lengths */
	struct cp_name_form *forms; /* by their first byte, in the rules' order */
	size_t nforms, capforms;
	size_t form_at[257];  /* forms beginning with byte c: [form_at[c], form_at[c + 1]) */
	struct cp_derived *pending; /* derived references that must be redirected */
	size_t npending, cappending;
	struct cp_plan_pointers *pointers; /* pointers.c: made by cp_plan_make */
};

/* plan.c */
/* Refuses a module that imports a module only its own layout has
 * (cuda.bindings.cynvvm): no rewrite or stub makes that import work in
 * layout target (-1: both, for fallback). */
cp_status cp_plan_refuse_unmapped(const cp_image *img, const cp_scan *scan, int target, cp_error *err);

/* pointers.c */
/* Indexes the targets of the scan's code operands and of the image's
 * relative relocations; cp_plan_free_pointers frees it (also after a
 * failure). */
cp_status cp_plan_index_pointers(struct planner *pl);
void cp_plan_free_pointers(struct planner *pl);
/* Whether some code operand or relative relocation points into [lo, hi]. */
bool cp_plan_pointed_into(const struct planner *pl, uint64_t lo, uint64_t hi);
/* The relative relocations whose addend is va, in the image's order
 * (*rel); how many. */
size_t cp_plan_relocs_to(const struct planner *pl, uint64_t va, const struct cp_reloc_at **rel);

/* edits.c */
/* An empty plan for layout target (-1: fallback) and its planner. */
void cp_plan_start(struct planner *pl, const cp_image *img, const cp_scan *scan, struct cp_plan *plan,
		   int target, cp_error *err);
cp_status cp_plan_oom(struct planner *pl);
cp_status cp_plan_add_edit(struct planner *pl, enum cp_edit_kind kind, uint64_t off,
			   const void *bytes, uint32_t len, uint64_t site, uint64_t target,
			   const char *what);
uint64_t cp_plan_append(struct planner *pl, const void *bytes, size_t len, unsigned align,
			const char *what);
uint64_t cp_plan_append_code(struct planner *pl, const void *bytes, size_t len, unsigned align,
			     const char *what);
/* Points the code operand at addr, which reaches the object of span
 * bytes at `from`, at `to`. A reference another instruction derives from
 * the address it makes (struct cp_derived) moves with it: inside the
 * object it is that object's byte; outside, it must be redirected too
 * (cp_plan_check_derived). */
cp_status cp_plan_redirect_code(struct planner *pl, uint64_t addr, uint64_t from, uint64_t span, uint64_t to,
				const char *what);
/* Every reference derived from a redirected address outside its object is
 * itself redirected; fails naming the first that is not. */
cp_status cp_plan_check_derived(struct planner *pl);
bool cp_plan_file_off(const struct planner *pl, uint64_t va, uint64_t len, uint64_t *off);
bool cp_plan_field(struct planner *pl, uint64_t insn, uint8_t field_off, uint8_t size,
		   int64_t value, uint8_t bytes[8], uint64_t *off);
/* Sorts the edits by offset; fails when two overlap. */
cp_status cp_plan_check_overlaps(struct planner *pl);
/* The check will decode the instruction at addr: it must reach target. */
cp_status cp_plan_expect(struct planner *pl, uint64_t addr, uint64_t target);

/* forms.c: the forms of every name that moves to the target layout. */
cp_status cp_plan_make_forms(struct planner *pl);
void cp_plan_free_forms(struct planner *pl);
/* Rewrites every source-layout name in text[0, n) into out (NUL-terminated,
 * its length in *outlen); returns the replacements made, -1 if out is short. */
int cp_plan_map_text(const struct planner *pl, const char *text, size_t n, char *out, size_t outsz,
		     size_t *outlen);

/* place.c: chooses the new space and resolves provisional addresses. */
cp_status cp_plan_place(struct planner *pl);
uint64_t cp_plan_real_address(const struct cp_plan *p, uint64_t t);

/* plan_blob.c */
cp_status cp_plan_blob_begin(struct planner *pl);
cp_status cp_plan_blob_ref(struct planner *pl, const struct cp_ref *r);
cp_status cp_plan_blob_from_import(struct planner *pl, const struct cp_ref *r, const char *parent,
				   const char *leaf);
cp_status cp_plan_blob_end(struct planner *pl);
/* Whether each blob's decoder takes the lengths the scan found (as a
 * retarget that rewrites the blob requires): fallback rewrites none, and
 * a decoder that disagrees with its blob fails at import. */
cp_status cp_plan_blob_check_decoders(struct planner *pl);
/* Frees the blob plans (cp_plan_blob_end does; error paths call it). */
void cp_plan_blob_free(struct planner *pl);

#endif
