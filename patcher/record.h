/*
 * record.h - a wheel's RECORD: `path,sha256=<urlsafe base64, no padding>,size`
 * per line (PEP 376 / 427), read, checked and written again.
 */
#ifndef CP_RECORD_H
#define CP_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "cypatch.h"

struct cp_record_row {
	char *path;
	char *hash;    /* "sha256=..." or "" */
	char *size;    /* decimal, or "" */
};

struct cp_record {
	struct cp_record_row *rows;
	size_t n, cap;
};

/* Parses RECORD text (CSV; quoted paths allowed). */
cp_status cp_record_parse(struct cp_record *r, const char *text, size_t len, const char *what, cp_error *err);
void cp_record_free(struct cp_record *r);

/* dst (uninitialised) as a copy of src; dst is empty on failure. */
cp_status cp_record_copy(struct cp_record *dst, const struct cp_record *src, cp_error *err);

/* The row of path, or NULL. */
struct cp_record_row *cp_record_find(struct cp_record *r, const char *path);

/* Sets (or adds) the row of path to the hash and size of data. */
cp_status cp_record_set(struct cp_record *r, const char *path, const uint8_t *data, size_t len, cp_error *err);

/* RECORD text again, rows in their order; the caller frees it. */
char *cp_record_format(const struct cp_record *r, size_t *len);

/* "sha256=<urlsafe base64 without padding>" of a digest (32 bytes) into out (>= 52). */
void cp_record_hash_text(const uint8_t digest[32], char *out);

#endif
