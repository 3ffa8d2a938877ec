/*
 * map_guard.h - mapped input files that another process may truncate.
 *
 * A read of a mapped page past the file's new end raises SIGBUS. Copying the
 * input into memory instead would cost its size in resident memory (a 1 GiB
 * module is read a window at a time, docs/performance.md); so the mapping
 * is guarded: the SIGBUS handler puts zero pages over the mapping from the
 * faulting page on, notes that the file changed and lets the read go on.
 * The caller asks cp_map_guard_intact before it trusts what it read.
 */
#ifndef CP_MAP_GUARD_H
#define CP_MAP_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* Guard [data, data+size); false when every slot is taken (the mapping is
 * then unguarded: the caller should not map). */
bool cp_map_guard_add(const void *data, size_t size);

/* Stop guarding data (before munmap). */
void cp_map_guard_remove(const void *data);

/* Whether no read of the mapping at data has faulted past the file's end. */
bool cp_map_guard_intact(const void *data);

#endif
