/* test_blob.c - the string-blob decoders: zlib, bz2, zstd, Cython's LZSS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <bzlib.h>
#include <zlib.h>
#include <zstd.h>

#include "cython/blob.h"

static const char *vector_dir;

static unsigned char *read_file(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	unsigned char *buf;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A text with the shape of a Cython blob, and its compressed forms. */
static size_t sample(unsigned char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 64 < cap)
		n += (size_t)snprintf((char *)buf + n, cap - n, "cuda.bindings.cyruntime%zucudaMemcpyAsync", n % 97);
	return n;
}

static void check_roundtrip(enum cp_blob_algo algo, const unsigned char *z, size_t zlen,
			    const unsigned char *raw, size_t n)
{
	unsigned char *out = malloc(n + 1);
	size_t used = 0;

	assert_non_null(out);
	assert_int_equal(cp_blob_decode(algo, z, zlen, out, n, &used), 0);
	assert_memory_equal(out, raw, n);
	assert_int_equal(used, zlen);
	/* trailing bytes after the stream are ignored, as CPython ignores them */
	assert_int_equal(cp_blob_decoded_size(algo, z, zlen, n + 100, &used), (long long)n);
	/* the wrong expected length is refused */
	assert_int_equal(cp_blob_decode(algo, z, zlen, out, n - 1, &used), -1);
	/* a truncated stream is refused */
	assert_int_equal(cp_blob_decode(algo, z, zlen / 2, out, n, &used), -1);
	free(out);
}

static void zlib_streams(void **state)
{
	unsigned char raw[20000], z[30000];
	uLongf zlen = sizeof(z);
	size_t n = sample(raw, sizeof(raw));

	(void)state;
	assert_int_equal(compress2(z, &zlen, raw, n, 9), Z_OK);
	check_roundtrip(CP_BLOB_ZLIB, z, zlen, raw, n);
	z[zlen / 3] ^= 0x55;
	{
		unsigned char out[20000];
		size_t used;

		assert_int_equal(cp_blob_decode(CP_BLOB_ZLIB, z, zlen, out, n, &used), -1);
	}
}

static void bz2_streams(void **state)
{
	unsigned char raw[20000], z[30000];
	unsigned int zlen = sizeof(z);
	size_t n = sample(raw, sizeof(raw));

	(void)state;
	assert_int_equal(BZ2_bzBuffToBuffCompress((char *)z, &zlen, (char *)raw, (unsigned)n, 9, 0, 0), BZ_OK);
	check_roundtrip(CP_BLOB_BZ2, z, zlen, raw, n);
}

static void zstd_streams(void **state)
{
	unsigned char raw[20000], z[30000];
	size_t n = sample(raw, sizeof(raw));
	size_t zlen = ZSTD_compress(z, sizeof(z), raw, n, 19);

	(void)state;
	assert_false(ZSTD_isError(zlen));
	check_roundtrip(CP_BLOB_ZSTD, z, zlen, raw, n);
}

static void lzss_vector(const char *name)
{
	char f[256];
	size_t rawlen, zlen, used = 0;
	unsigned char *raw, *z, *out;

	snprintf(f, sizeof(f), "%s.raw", name);
	raw = read_file(vector_dir, f, &rawlen);
	snprintf(f, sizeof(f), "%s.lzss", name);
	z = read_file(vector_dir, f, &zlen);
	out = malloc(rawlen);
	assert_non_null(out);
	assert_int_equal(cp_blob_decode(CP_BLOB_LZSS, z, zlen, out, rawlen, &used), 0);
	assert_memory_equal(out, raw, rawlen);
	assert_int_equal(used, zlen); /* what Cython's decoder checks */
	assert_int_equal(cp_blob_decode(CP_BLOB_LZSS, z, zlen - 1, out, rawlen, &used), -1);
	free(raw);
	free(z);
	free(out);
}

static void lzss_cython_vectors(void **state)
{
	(void)state;
	lzss_vector("strings");
	lzss_vector("long");
	lzss_vector("random");
	lzss_vector("runs");
	lzss_vector("tiny");
}

static void lzss_rejects_references_before_the_start(void **state)
{
	/* flags 0: a back-reference first, distance 5 length 3, nothing before it */
	static const unsigned char bad[] = { 0x00, 0x05, 0x00 };
	/* a literal, then a reference whose length runs past the output */
	static const unsigned char longref[] = { 0x01, 'a', 0x00, 0x00 };
	unsigned char out[16];
	size_t used;

	(void)state;
	assert_int_equal(cp_blob_decode(CP_BLOB_LZSS, bad, sizeof(bad), out, 8, &used), -1);
	assert_int_equal(cp_blob_decode(CP_BLOB_LZSS, longref, sizeof(longref), out, 16, &used), -1);
	assert_int_equal(cp_blob_decode(CP_BLOB_LZSS, longref, 0, out, 1, &used), -1);
	assert_int_equal(cp_blob_decode(CP_BLOB_LZSS, longref, sizeof(longref), out, 0, &used), -1);
}

/* Our encoders round-trip through our decoders; the LZSS encoder's output
 * also decodes exactly as Cython's vectors do (same format). */
static void encoders_round_trip(void **state)
{
	static const enum cp_blob_algo algos[] = { CP_BLOB_NONE, CP_BLOB_ZLIB, CP_BLOB_BZ2,
						   CP_BLOB_ZSTD, CP_BLOB_LZSS };
	static const char *const names[] = { "strings", "long", "random", "runs", "tiny" };
	size_t a, v;

	(void)state;
	for (v = 0; v < sizeof(names) / sizeof(names[0]); v++) {
		char f[64];
		size_t n, zlen, used;
		unsigned char *raw, *z, *out;

		snprintf(f, sizeof(f), "%s.raw", names[v]);
		raw = read_file(vector_dir, f, &n);
		out = malloc(n);
		assert_non_null(out);
		for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
			assert_int_equal(cp_blob_encode(algos[a], raw, n, &z, &zlen), 0);
			used = 0;
			assert_int_equal(cp_blob_decode(algos[a], z, zlen, out, n, &used), 0);
			assert_memory_equal(out, raw, n);
			assert_int_equal(used, zlen);
			if (algos[a] == CP_BLOB_LZSS && n > 1000 && strcmp(names[v], "random") != 0)
				assert_true(zlen < n / 2); /* it does compress */
			free(z);
		}
		free(raw);
		free(out);
	}
}

static void plain_blobs_and_names(void **state)
{
	unsigned char out[4];
	size_t used;

	(void)state;
	assert_int_equal(cp_blob_decode(CP_BLOB_NONE, (const unsigned char *)"abcd", 4, out, 4, &used), 0);
	assert_int_equal(used, 4);
	assert_int_equal(cp_blob_decode(CP_BLOB_NONE, (const unsigned char *)"ab", 2, out, 4, &used), -1);
	assert_string_equal(cp_blob_algo_name(CP_BLOB_LZSS), "lzss");
	assert_string_equal(cp_blob_algo_name(CP_BLOB_ZLIB), "zlib");
	assert_int_equal(cp_blob_decoded_size(CP_BLOB_LZSS, out, 4, 10, &used), -1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(zlib_streams),
		cmocka_unit_test(bz2_streams),
		cmocka_unit_test(zstd_streams),
		cmocka_unit_test(lzss_cython_vectors),
		cmocka_unit_test(lzss_rejects_references_before_the_start),
		cmocka_unit_test(encoders_round_trip),
		cmocka_unit_test(plain_blobs_and_names),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s LZSS_VECTOR_DIR\n", argv[0]);
		return 2;
	}
	vector_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
