/* emit.h - what the output holds besides a copy of the input. */
#ifndef CP_EMIT_H
#define CP_EMIT_H

#include "plan/plan.h"

/* Bytes that replace the input's at off (inside the input). */
struct cp_run {
	uint64_t off;
	uint64_t len;
	uint8_t *bytes;
};

/*
 * The output as a delta: the input's bytes, then the runs written over
 * them (sorted, disjoint, each holding its final bytes), then the tail
 * after the input's end. Building, hashing, writing and checking it cost
 * what the edits cost, not what the file does.
 */
struct cp_delta {
	struct cp_run *run;
	size_t nrun;
	uint8_t *tail;     /* the output's bytes [in_size, size) */
	uint64_t in_size, size;
};

/*
 * The plan as a delta: the edits and the new space's chunks. With new
 * space, the section header table is written again after everything, with
 * a section over each new space (".cypatch" for read-only data,
 * ".cypatch.text" for code), so that strip and readelf see them; its name
 * table is copied there with the names.
 */
cp_status cp_emit(const cp_image *img, const struct cp_plan *plan, struct cp_delta *d,
		  cp_error *err);

/* Writes the delta into fd, which holds a copy of the input (the caller's,
 * copy_ahead.h): the runs and the tail; when sync, starts the writeback,
 * which the caller's fsync ends. */
cp_status cp_emit_write(const struct cp_delta *d, int fd, const char *target, bool sync, cp_error *err);

void cp_delta_free(struct cp_delta *d);

#endif
