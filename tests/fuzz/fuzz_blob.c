/*
 * fuzz_blob.c - the string-blob decoders (zlib, bz2, zstd, LZSS, none).
 *
 * Byte 0 picks the algorithm, bytes 1-2 the expected decoded size; the
 * rest is the stream. Each decoder must stay inside its buffers, and a
 * stream it accepts must re-encode to something that decodes to the same
 * bytes (the patcher re-encodes what it rewrites).
 */
#include "fuzz_input.h"
#include "cython/blob.h"

#include <stdlib.h>
#include <string.h>

static const enum cp_blob_algo algos[] = {
	CP_BLOB_NONE, CP_BLOB_ZLIB, CP_BLOB_BZ2, CP_BLOB_ZSTD, CP_BLOB_LZSS
};

static void round_trip(enum cp_blob_algo algo, const uint8_t *plain, size_t n)
{
	uint8_t *enc = NULL, *dec;
	size_t enclen, used;

	if (cp_blob_encode(algo, plain, n, &enc, &enclen) != 0)
		abort();
	dec = malloc(n ? n : 1);
	if (!dec)
		abort();
	if (cp_blob_decode(algo, enc, enclen, dec, n, &used) != 0 || used != enclen ||
	    memcmp(dec, plain, n) != 0)
		abort();
	free(dec);
	free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum cp_blob_algo algo;
	size_t outlen, used;
	uint8_t *out;

	if (size < 3)
		return 0;
	algo = algos[data[0] % (sizeof(algos) / sizeof(algos[0]))];
	outlen = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	cp_blob_decoded_size(algo, data, size, 1u << 20, &used);
	out = malloc(outlen ? outlen : 1);
	if (!out)
		return 0;
	if (cp_blob_decode(algo, data, size, out, outlen, &used) == 0) {
		if (used > size)
			abort();
		round_trip(algo, out, outlen);
	}
	free(out);
	return 0;
}
