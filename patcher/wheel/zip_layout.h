/*
 * zip_layout.h - where each member of a zip archive lies, and its central
 * directory record: what libzip reads but does not expose. repair copies
 * the members it leaves alone as these byte ranges, in the kernel
 * (zip_splice.h), instead of through libzip's 8 KiB buffer.
 *
 * Read after libzip has opened and checked the same archive (its local
 * headers against the central directory, ZIP_CHECKCONS); this reader checks
 * again only what the copy relies on: every range inside the file, ranges
 * that do not overlap, a local header where each begins and its data
 * inside its range.
 */
#ifndef CP_ZIP_LAYOUT_H
#define CP_ZIP_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cypatch.h"

struct cp_zip_span {
	uint64_t off;      /* its local header */
	uint64_t len;      /* to the next member's local header or the central directory */
	uint64_t comp_size;
	uint64_t data;     /* its data, after the local header */
	const uint8_t *cd; /* its central directory record, inside the layout */
	size_t cd_len;
};

struct cp_zip_layout {
	uint8_t *cd;           /* the central directory, whole */
	uint64_t cd_off, cd_size;
	struct cp_zip_span *m; /* in central directory order: libzip's indices */
	size_t n;
};

/* The layout of the archive open as fd (path names it in errors). */
cp_status cp_zip_layout_read(int fd, const char *path, struct cp_zip_layout *l, cp_error *err);

/* Whether span s's central directory record names `name`. */
bool cp_zip_span_named(const struct cp_zip_span *s, const char *name);

/* Span s's compression method, as its central directory record says. */
uint32_t cp_zip_span_method(const struct cp_zip_span *s);

/* Span s's general purpose bits, as its central directory record says;
 * those zipfile refuses to extract (APPNOTE 4.4.4). */
uint32_t cp_zip_span_flags(const struct cp_zip_span *s);
#define CP_ZIP_FLAG_ENCRYPTED 0x0001u
#define CP_ZIP_FLAG_PATCHED_DATA 0x0020u
#define CP_ZIP_FLAG_STRONG_ENCRYPTION 0x0040u

/* Offsets at or past this are written in zip64 fields (cp_zip_record_moved). */
#define CP_ZIP64_AT 0xffffffffull

/* Span s's central directory record for a local header at `off`, into out
 * (room for s->cd_len + 12 bytes): the offset set in place, or moved into
 * (or out of) the zip64 extra field when it crosses zip64_at. Returns the
 * record's length, or 0 when it cannot be written (an extra field full). */
size_t cp_zip_record_moved(const struct cp_zip_span *s, uint64_t off, uint64_t zip64_at, uint8_t *out);

void cp_zip_layout_free(struct cp_zip_layout *l);

#endif
