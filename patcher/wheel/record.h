/*
 * record.h - a wheel's RECORD: `path,sha256=<urlsafe base64, no padding>,size`
 * per line (PEP 376 / 427), read, checked and written again.
 */
#ifndef CP_RECORD_H
#define CP_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>
#include "cypatch.h"

struct cp_record_row {
	char *path;
	char *hash;    /* "sha256=..." or "" */
	char *size;    /* decimal, or "" */
};

struct cp_record {
	struct cp_record_row *rows;
	size_t n, cap;
	size_t *slot;  /* open-addressing index by path: row + 1, 0 when free */
	size_t nslots; /* a power of two, more than twice n */
};

/* Parses RECORD text (CSV; quoted paths allowed); a path listed twice is
 * refused (which row would be the one to trust?). */
cp_status cp_record_parse(struct cp_record *r, const char *text, size_t len, const char *what, cp_error *err);
void cp_record_free(struct cp_record *r);

/* dst (uninitialised) as a copy of src; dst is empty on failure. */
cp_status cp_record_copy(struct cp_record *dst, const struct cp_record *src, cp_error *err);

/* The row of path, or NULL; constant time (a wheel of 70,000 members
 * looks each one up). */
struct cp_record_row *cp_record_find(struct cp_record *r, const char *path);

/* Sets (or adds) the row of path to the hash and size of data. */
cp_status cp_record_set(struct cp_record *r, const char *path, const uint8_t *data, size_t len, cp_error *err);

/* RECORD text again, rows in their order; the caller frees it. */
char *cp_record_format(const struct cp_record *r, size_t *len);

/* The digest a hash field names ("sha256=...", "sha384=...", "sha512=...":
 * hashlib algorithms of sha256 or stronger, as the wheel spec allows), or
 * NULL. */
const EVP_MD *cp_record_algorithm(const char *hash);

/* A hash field this reader can verify, or empty; what refuses it names
 * what (the RECORD) and path. */
cp_status cp_record_check_hash(const char *hash, const char *what, const char *path, cp_error *err);

/* "<algorithm>=<urlsafe base64 without padding>" of a digest of md into
 * out (>= CP_RECORD_HASH_MAX). */
#define CP_RECORD_HASH_MAX 100
void cp_record_hash_text(const EVP_MD *md, const uint8_t *digest, char *out);

#endif
