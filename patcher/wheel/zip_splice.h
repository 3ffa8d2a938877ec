/*
 * zip_splice.h - a zip archive assembled from the members of others, in
 * their order: each member's bytes (local header, data, descriptor) copied
 * as they are, in the kernel where it can (copy_file_range; adjacent
 * members in one call), then a central directory of their records with the
 * new offsets. repair writes a 1 GB wheel this way at the cost of copying
 * it; libzip moved every byte through user space 8 KiB at a time.
 */
#ifndef CP_ZIP_SPLICE_H
#define CP_ZIP_SPLICE_H

#include <stdint.h>
#include "cypatch.h"
#include "wheel/zip_layout.h"

typedef struct cp_zip_splice cp_zip_splice;

/* A new archive into out, an empty file open for writing (path names it
 * in errors). Offsets at or past zip64_at are written in zip64 fields:
 * CP_ZIP64_AT, or less to test that form without 4 GiB of data. */
cp_status cp_zip_splice_new(int out, const char *path, uint64_t zip64_at, cp_zip_splice **s, cp_error *err);

/* Member s of the archive open as fd, appended. */
cp_status cp_zip_splice_add(cp_zip_splice *z, int fd, const struct cp_zip_span *s, cp_error *err);

/* The copies added so far made now (add defers them, to join neighbours). */
cp_status cp_zip_splice_flush(cp_zip_splice *z, cp_error *err);

/* Asks a flush running on another thread to stop after the chunk in
 * flight (its result is then an error); the archive is to be discarded. */
void cp_zip_splice_stop(cp_zip_splice *z);

/* The copies finished, the central directory and end records written. */
cp_status cp_zip_splice_finish(cp_zip_splice *z, cp_error *err);

void cp_zip_splice_free(cp_zip_splice *z);

#endif
