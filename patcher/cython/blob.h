/*
 * blob.h - decoders for the string blobs Cython 3.2+ embeds.
 *
 * Cython 3.2 and later store all string constants of a module as one blob,
 * compressed by CYTHON_COMPRESS_STRINGS: 1 zlib (3.2 default), 2 bz2,
 * 3 zstd, 90 LZSS (3.3 default, decoder embedded in the module), 0 none.
 */
#ifndef CP_BLOB_H
#define CP_BLOB_H

#include <stddef.h>
#include <stdint.h>

enum cp_blob_algo {
	CP_BLOB_NONE = 0,
	CP_BLOB_ZLIB = 1,
	CP_BLOB_BZ2 = 2,
	CP_BLOB_ZSTD = 3,
	CP_BLOB_LZSS = 90
};

const char *cp_blob_algo_name(enum cp_blob_algo algo);

/*
 * Decodes src (at most srclen bytes are read) into exactly outlen bytes at
 * out. On success returns 0 and sets *consumed to the compressed bytes the
 * stream used; returns -1 when the data is not a valid stream of the
 * algorithm or does not decode to exactly outlen bytes.
 */
int cp_blob_decode(enum cp_blob_algo algo, const uint8_t *src, size_t srclen,
		   uint8_t *out, size_t outlen, size_t *consumed);

/* The stream's decoded size when the format records or implies it without
 * knowing it in advance (zlib, bz2, zstd); -1 otherwise or on bad data.
 * At most `limit` bytes are decoded. */
long long cp_blob_decoded_size(enum cp_blob_algo algo, const uint8_t *src,
			       size_t srclen, size_t limit, size_t *consumed);

/* Encodes n bytes with algo into a new buffer (*out, *outlen; the caller
 * frees it): zlib level 9, bz2 level 9, zstd level 19, Cython's LZSS (a
 * greedy encoder of the format above), or a copy for none. 0, or -1. */
int cp_blob_encode(enum cp_blob_algo algo, const uint8_t *src, size_t n, uint8_t **out,
		   size_t *outlen);

#endif
