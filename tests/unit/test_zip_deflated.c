/*
 * test_zip_deflated.c - members added through cp_zip_source_deflated, read
 * back by libzip with its consistency checks (ZIP_CHECKCONS) and by zlib's
 * inflate through libzip: the bytes, sizes and CRC-32 come back, the
 * member is stored as libdeflate wrote it (libzip did not deflate it
 * again), and the same input gives the same archive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <libdeflate.h>
#include <zlib.h>
#include <zip.h>

#include "wheel/zip_deflated.h"

struct input {
	const char *name;
	uint8_t *data;
	size_t len;
};

/* Four kinds of bytes: none, text that compresses, noise that does not
 * (deflate falls back to stored blocks), and 3 MiB of a repeated pattern. */
static size_t make_inputs(struct input *in)
{
	static const char text[] = "from cuda.bindings import driver\n";
	uint32_t x = 12345;
	size_t i;

	in[0] = (struct input){ "empty", calloc(1, 1), 0 };
	in[1] = (struct input){ "text.py", malloc(64 * sizeof(text)), 64 * (sizeof(text) - 1) };
	for (i = 0; i < 64; i++)
		memcpy(in[1].data + i * (sizeof(text) - 1), text, sizeof(text) - 1);
	in[2] = (struct input){ "noise.bin", malloc(1 << 20), 1 << 20 };
	for (i = 0; i < in[2].len; i++) {
		x = x * 1103515245u + 12345u;
		in[2].data[i] = (uint8_t)(x >> 16);
	}
	in[3] = (struct input){ "lib/pattern.so", malloc(3u << 20), 3u << 20 };
	for (i = 0; i < in[3].len; i++)
		in[3].data[i] = (uint8_t)(i % 251);
	return 4;
}

static void write_archive(const char *path, const struct input *in, size_t n)
{
	int err = 0;
	zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
	size_t i;

	assert_non_null(z);
	for (i = 0; i < n; i++) {
		zip_error_t ze;
		zip_source_t *src;

		zip_error_init(&ze);
		src = cp_zip_source_deflated(in[i].data, in[i].len, &ze);
		zip_error_fini(&ze);
		assert_non_null(src);
		assert_true(zip_file_add(z, in[i].name, src, 0) == (zip_int64_t)i);
		assert_int_equal(zip_file_set_mtime(z, i, 315532800, 0), 0);
	}
	assert_int_equal(zip_close(z), 0);
}

/* What libdeflate writes at CP_DEFLATE_LEVEL for these bytes: the member
 * must hold exactly this many compressed bytes. */
static size_t deflated_size(const struct input *in)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(CP_DEFLATE_LEVEL);
	size_t cap = libdeflate_deflate_compress_bound(c, in->len);
	uint8_t *buf = malloc(cap);
	size_t n = libdeflate_deflate_compress(c, in->data, in->len, buf, cap);

	free(buf);
	libdeflate_free_compressor(c);
	return n;
}

static void check_archive(const char *path, const struct input *in, size_t n)
{
	int err = 0;
	zip_t *z = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err);
	size_t i;

	assert_non_null(z);
	assert_int_equal(zip_get_num_entries(z, 0), (zip_int64_t)n);
	for (i = 0; i < n; i++) {
		zip_stat_t st;
		zip_file_t *f;
		uint8_t *back = malloc(in[i].len + 1);

		assert_int_equal(zip_stat_index(z, i, 0, &st), 0);
		assert_string_equal(st.name, in[i].name);
		assert_int_equal(st.comp_method, ZIP_CM_DEFLATE);
		assert_int_equal(st.size, in[i].len);
		assert_int_equal(st.comp_size, deflated_size(&in[i]));
		assert_int_equal(st.crc, crc32(0, in[i].data, (uInt)in[i].len));
		/* libzip inflates and checks the CRC-32 at the end */
		f = zip_fopen_index(z, i, 0);
		assert_non_null(f);
		assert_int_equal(zip_fread(f, back, in[i].len + 1), (zip_int64_t)in[i].len);
		assert_int_equal(zip_fclose(f), 0);
		assert_memory_equal(back, in[i].data, in[i].len);
		free(back);
	}
	zip_discard(z);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	buf = malloc(*len);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

static void test_round_trip(void **state)
{
	struct input in[4];
	size_t n = make_inputs(in), la, lb, i;
	char a[] = "/tmp/test_zip_deflated.XXXXXX", b[] = "/tmp/test_zip_deflated.XXXXXX";
	uint8_t *da, *db;

	(void)state;
	close(mkstemp(a));
	close(mkstemp(b));
	write_archive(a, in, n);
	check_archive(a, in, n);
	write_archive(b, in, n);
	da = slurp(a, &la);
	db = slurp(b, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(da, db, la);
	free(da);
	free(db);
	unlink(a);
	unlink(b);
	for (i = 0; i < n; i++)
		free(in[i].data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
