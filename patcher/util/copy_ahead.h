/*
 * copy_ahead.h - the input copied into the output's temporary file on a
 * second thread while the scan and the plan run.
 *
 * The output of a patch is the input plus a small delta (emit.h); the
 * copy is the file-sized part of the work and needs nothing the scan
 * finds, so it starts as soon as the input is loaded. On a 1 GiB module
 * it hides the scan, the plan and the emit behind the copy.
 */
#ifndef CP_COPY_AHEAD_H
#define CP_COPY_AHEAD_H

#include <stdint.h>

struct cp_copy_ahead;

/* Starts copying bytes [0, size) of `in` into `out` at the same offsets
 * (cp_write_copy_range, a chunk at a time). 0, or -1 with errno set
 * (no thread: the caller copies itself). */
int cp_copy_ahead_start(int in, int out, uint64_t size, struct cp_copy_ahead **ca);

/* Waits for the copy and frees ca. 0 when every byte was copied, or -1
 * with errno set to the copy's error. */
int cp_copy_ahead_finish(struct cp_copy_ahead *ca);

/* The copy is not wanted (nothing to write, or an error): stops it after
 * the chunk in flight, waits, and frees ca. NULL is a no-op. */
void cp_copy_ahead_cancel(struct cp_copy_ahead *ca);

#endif
