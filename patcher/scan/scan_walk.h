/*
 * scan_walk.h - the scan's code walk, as scan_code.c (a walk of all code)
 * and scan_splice.c (the check's walk of the functions an edit changed)
 * share it. Private to scan/.
 */
#ifndef CP_SCAN_WALK_H
#define CP_SCAN_WALK_H

#include "scan/scan.h"

#define CP_MAX_BLOCK_LOADS 4 /* the constant is loaded right after the import */
#define CP_MAX_PENDING 64

/* A walk in progress: the scan it adds to, and its state (struct
 * cp_walk_state is that state, normalised). */
struct cp_walk {
	cp_scan *s;
	bool oom;
	struct cp_import_block *block; /* open block, or NULL */
	/* whether the walk's position is reached from the open block's import
	 * with no call on the way (see advance) */
	bool clean;
	uint64_t last_break, func_end;
	uint64_t pending[CP_MAX_PENDING]; /* targets of forward jumps from clean code */
	size_t npending;
	uint64_t near_lo, near_hi; /* the function starts around the last target looked up */
	bool marking;     /* record s->marks as the walk enters each unit */
	size_t next_mark; /* the first unit not entered yet */
	/* the check's walk of a changed unit: the input's points it may meet
	 * (ascending), and the one met in the same state, or NULL */
	const struct cp_walk_point *goal;
	size_t ngoal;
	const struct cp_walk_point *met;
};

/* A walk adding to s, with nothing open; marking: record s->marks, which
 * cp_walk_units made. v: the visitor that drives it. */
void cp_walk_start(struct cp_walk *w, cp_scan *s, bool marking, struct cp_code_visitor *v);

/* The units of a walk of all of img's code, as s->marks with nothing
 * recorded yet (and the end as s->marks[s->nmarks]); s->marks stays NULL
 * when the walked spans do not rise in address. false: out of memory. */
bool cp_walk_units(cp_scan *s, const cp_image *img);

/* The walk enters unit k: the marks of the units up to k are recorded
 * (when it is marking) with the walk's findings and state now. */
void cp_walk_enter_unit(struct cp_walk *w, size_t k);

void cp_walk_state(const struct cp_walk *w, struct cp_walk_state *st);
/* Where the walk stands now: its scan's findings so far, its state. */
void cp_walk_at(const struct cp_walk *w, struct cp_walk_at *at);
bool cp_walk_state_equal(const struct cp_walk_state *a, const struct cp_walk_state *b);
/* Whether the walk, at addr with its tracker in state regs, stands where
 * the walk that recorded point p stood: the same place, registers and
 * state (then the two find the same from there on in the same bytes). */
bool cp_walk_meets(const struct cp_walk *w, const struct cp_walk_point *p, uint64_t addr,
		   const struct cp_code_state *regs);
/* Takes up the state st, whose open block (if any) is among s's blocks. */
void cp_walk_resume(struct cp_walk *w, const struct cp_walk_state *st);

/* Ends the walk: the units not entered get the final state, xrefs and
 * jumps are sorted (unless they are already); fails when the walk ran out
 * of memory. */
cp_status cp_walk_end(struct cp_walk *w, bool sorted, cp_error *err);

/* An order of a walk's records of `size` bytes: by the uint64_t at key_at,
 * then by the one at addr_at (the address that places a record in a
 * unit). */
struct cp_walk_order {
	size_t size, key_at, addr_at;
};

/* The orders of s->xrefs (target, then address) and s->jumps (target,
 * then source). */
extern const struct cp_walk_order cp_walk_xref_order, cp_walk_jump_order;

/* Sorts n records into order o; false: out of memory. */
bool cp_walk_sort(void *base, size_t n, const struct cp_walk_order *o);
/* Below, equal to or above 0 as record a comes before b in order o, with
 * it or after it. */
int cp_walk_order_cmp(const struct cp_walk_order *o, const void *a, const void *b);
/* Sorts s->xrefs and s->jumps into their orders; false: out of memory. */
bool cp_walk_sort_found(cp_scan *s);

/* walk_merge.c: spans of code walked again, in address order. */
struct cp_walk_spans {
	struct cp_walk_span {
		uint64_t start, end;
	} *v;
	size_t n, cap;
};
bool cp_walk_spans_add(struct cp_walk_spans *s, uint64_t start, uint64_t end);
/* s's xrefs and jumps (sorted into their orders here, unless they are
 * already) merged with from's (in their orders already) outside the spans
 * walked again; false: out of memory. */
bool cp_walk_merge_found(cp_scan *s, const cp_scan *from, const struct cp_walk_spans *again);

/* Units [k, end) of from's walk (from->marks[k]...), taken: their calls,
 * uses, derived references and import blocks appended to the walk's scan
 * (not their xrefs and jumps, which the caller orders), and the walk put
 * in the state the last leaves. Each unit after the first must have been
 * entered in the state the one before it left, as from's walk entered it.
 * false: out of memory. */
bool cp_walk_take_units(struct cp_walk *w, const cp_scan *from, size_t k, size_t end);
/* The same for unit k up to its point p, and for the rest of it from p on. */
bool cp_walk_take_upto(struct cp_walk *w, const cp_scan *from, size_t k, const struct cp_walk_point *p);
bool cp_walk_take_rest(struct cp_walk *w, const cp_scan *from, size_t k, const struct cp_walk_point *p);

/* Appends a copy of import block b (the loads of it at [from, to)) to s,
 * with its module's name read from s's image. false: out of memory. */
bool cp_walk_copy_block(cp_scan *s, const struct cp_import_block *b, uint64_t from, uint64_t to);

/* The walk of all of s's code on the calling thread, recording s->marks
 * when cp_walk_units made them (scan_threads.c's cp_scan_code decides
 * whether to share the walk among threads). */
cp_status cp_scan_code_one(cp_scan *s, cp_error *err);

#endif
