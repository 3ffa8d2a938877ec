/*
 * patch.h - one extension through the whole pipeline: load, scan, plan
 * (retarget, or fallback stubs), emit, re-sign, write a temporary file,
 * check it, and rename it over the output. `cypatch --target-layout` and
 * `cypatch repair` both go through here.
 */
#ifndef CP_PATCH_H
#define CP_PATCH_H

#include <stdbool.h>
#include <stdio.h>
#include "cypatch.h"

struct cp_patch_opts {
	const char *layout;   /* a layout of the rules, or "fallback" */
	bool no_fallback;     /* refuse what strings cannot express */
	bool keep_build_id;   /* leave the GNU build-id as it was */
	bool no_fsync;        /* rename without waiting for the disk (write.h) */
	FILE *dry_run;        /* when set: print the plan there, write nothing */
};

enum cp_patch_outcome {
	CP_PATCHED,        /* written */
	CP_PLANNED,        /* dry run: printed */
	CP_ALREADY,        /* already binds as asked: nothing written */
	CP_NOTHING_MAPPED, /* references no mapped module: nothing written */
	CP_NOT_EXTENSION   /* an ELF file but no Cython extension module: nothing
			    * written; err holds the scan's message */
};

/* Where the time goes (docs/performance.md): filled by cp_patch_file. */
enum cp_stage {
	CP_STAGE_LOAD,   /* map, validate, read sections, relocations, functions */
	CP_STAGE_SCAN,   /* code walk, strings, blobs, imports */
	CP_STAGE_PLAN,   /* retarget or fallback plan, placement */
	CP_STAGE_EMIT,   /* the delta and the build-id */
	CP_STAGE_WRITE,  /* the kernel's copy of the input, the delta's bytes */
	CP_STAGE_CHECK,  /* the output loaded and scanned again */
	CP_STAGE_SYNC,   /* fsync, rename */
	CP_NSTAGES
};

const char *cp_stage_name(enum cp_stage s);

struct cp_patch_result {
	enum cp_patch_outcome outcome;
	bool fallback;          /* the fallback stub was (or is) the means */
	char covered[512];      /* what strings could not express, when the stub covers it */
	size_t nchanged, nedits;
	unsigned long long new_bytes;
	bool build_id;          /* the build-id was recomputed */
	char layouts[2][32];    /* fallback: built against, accepted besides */
	double seconds[CP_NSTAGES];
};

/* Patches `in` into `out` (which may be `in`). Nothing is written unless
 * the output passed the check; `out` is replaced atomically. */
cp_status cp_patch_file(const char *in, const char *out, const cp_rules *rules,
			const struct cp_patch_opts *o, struct cp_patch_result *res, cp_error *err);

#endif
