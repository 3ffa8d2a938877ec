/*
 * wheel.h - a wheel read with libzip and checked before anything trusts
 * it: member names that stay inside the target, no symlinks, no duplicate
 * names, sane declared sizes, one .dist-info named as the file is, with a
 * RECORD that matches every member (and each member's CRC-32); and
 * zip_layout.c's reading of the same archive, which repair copies from,
 * agreeing with libzip's member for member and byte for byte.
 */
#ifndef CP_WHEEL_H
#define CP_WHEEL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <zip.h>
#include "cypatch.h"
#include "wheel/record.h"
#include "wheel/zip_layout.h"

/* Bounds on what a member may declare (zip bombs). */
#define CP_WHEEL_MAX_MEMBER (4ull << 30)
#define CP_WHEEL_MAX_TOTAL (32ull << 30)
#define CP_WHEEL_MAX_RATIO 1000

struct cp_wheel_member {
	char *name;           /* UTF-8 (libzip reads a name without the UTF-8 flag as CP437) */
	char *raw_name;       /* the bytes the archive holds */
	uint64_t size, comp_size;
	uint32_t crc;         /* as the central directory declares it */
	int32_t comp_method;
	uint8_t opsys;
	uint32_t attr;
	time_t mtime;
	bool dir;
};

struct cp_wheel {
	char *path;
	int fd;               /* the archive, read through zip_source.h */
	zip_t *zip;
	struct cp_zip_layout layout; /* zip_layout.c's reading: libzip's members, name for name and byte for byte */
	struct cp_wheel_member *m;
	size_t n;
	bool *unchecked;      /* per member: RECORD not yet compared (deferred) */
	char *dist_info;      /* "pkg-1.0.dist-info" */
	size_t record_at;     /* index of RECORD */
	struct cp_record record;
};

cp_status cp_wheel_open(const char *path, struct cp_wheel **out, cp_error *err);
/* The same for a file that will be named `name` (a temporary output). */
cp_status cp_wheel_open_named(const char *path, const char *name, struct cp_wheel **out, cp_error *err);

/* Whether member i is the wheel's signature of RECORD (<dist-info>/RECORD.jws
 * or RECORD.p7s, which RECORD does not list). */
bool cp_wheel_is_signature(const struct cp_wheel *w, size_t i);

/* As cp_wheel_open, for a wheel written from src: the members whose src
 * index copied[] marks are compared with src's (CRC-32, sizes,
 * RECORD row) instead of hashed again. */
cp_status cp_wheel_open_copy(const char *path, const struct cp_wheel *src, const bool *copied,
			     struct cp_wheel **out, cp_error *err);

/* As cp_wheel_open, but the members defer(name) picks are compared with
 * RECORD when cp_wheel_extract or cp_wheel_contains_in reads them, not here: repair reads every
 * extension anyway, and inflating a 1 GB library twice cost a second. The
 * caller must read every such member before it trusts the wheel. */
cp_status cp_wheel_open_deferring(const char *path, bool (*defer)(const char *name), struct cp_wheel **out,
				  cp_error *err);

/* Member i inflated into fd, in pieces, and compared with RECORD when
 * that was deferred; *found tells whether its bytes hold needle (at most
 * 64 bytes). Read through z, a reader of w's (cp_wheel_reader; w->zip in
 * the thread that opened w): threads extract different members at once
 * through their own. */
cp_status cp_wheel_extract(struct cp_wheel *w, zip_t *z, size_t i, int fd, const char *needle, bool *found,
			   cp_error *err);

/* A second reader of w's archive, for another thread (a libzip handle
 * serves one thread); zip_discard it after use. */
cp_status cp_wheel_reader(struct cp_wheel *w, zip_t **z, cp_error *err);

/* Whether member i holds needle (at most 64 bytes), read in pieces
 * through z, a reader from cp_wheel_reader, and compared with RECORD on the
 * way where that was deferred. Touches no state of w but member i's. */
cp_status cp_wheel_contains_in(struct cp_wheel *w, zip_t *z, size_t i, const char *needle, bool *found,
			       cp_error *err);

/* Whether the first n bytes of member i hold needle; nothing is compared
 * with RECORD (a guess, which the whole read must confirm). */
cp_status cp_wheel_head_contains(struct cp_wheel *w, size_t i, size_t n, const char *needle, bool *found,
				 cp_error *err);
void cp_wheel_close(struct cp_wheel *w);

/* The bytes of member i (at most its declared size). */
cp_status cp_wheel_read(struct cp_wheel *w, size_t i, uint8_t **data, size_t *len, cp_error *err);

/* <dist-info>/METADATA: its member index and bytes; where gets
 * "WHEEL: <dist-info>/METADATA" for messages about it. */
cp_status cp_wheel_read_metadata(struct cp_wheel *w, size_t *at, uint8_t **data, size_t *len, char *where,
				 size_t wheren, cp_error *err);

#endif
