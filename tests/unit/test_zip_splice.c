/*
 * test_zip_splice.c - archives spliced from the members of others, read
 * back by libzip with its consistency checks (ZIP_CHECKCONS: every local
 * header against its central directory record): the members chosen, in the
 * order chosen, their bytes unchanged; offsets moved into and out of zip64
 * fields; the zip64 end records a member count of 0xffff or more needs;
 * broken archives refused by the layout reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>
#include <zip.h>

#include "wheel/zip_layout.h"
#include "wheel/zip_splice.h"

struct member {
	const char *name;
	const char *data;
	bool deflate;
};

static const struct member first[] = {
	{ "pkg/__init__.py", "", false },
	{ "pkg/a.py", "print('a')\nprint('a')\nprint('a')\nprint('a')\n", true },
	{ "pkg/b.bin", "\x7f" "ELF not really, only bytes", false },
	{ "pkg-1.0.dist-info/RECORD", "pkg/a.py,,\n", true },
};

static const struct member second[] = {
	{ "other/x.txt", "x x x x x x x x x x x x x x x x", true },
	{ "other/y.txt", "y", false },
};

/* An unlinked temporary file open for reading and writing. */
static int scratch(char *path)
{
	int fd;

	strcpy(path, "/tmp/test_zip_splice.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	return fd;
}

/* An archive of n members written by libzip, open as a descriptor. */
static int make_archive(const struct member *m, size_t n)
{
	char path[64];
	int fd = scratch(path), err = 0;
	zip_t *z = zip_open(path, ZIP_TRUNCATE, &err);
	size_t i;

	assert_non_null(z);
	for (i = 0; i < n; i++) {
		zip_source_t *src = zip_source_buffer(z, m[i].data, strlen(m[i].data), 0);
		zip_int64_t k = zip_file_add(z, m[i].name, src, 0);

		assert_true(k >= 0);
		assert_int_equal(zip_set_file_compression(z, (zip_uint64_t)k,
							   m[i].deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 6), 0);
	}
	assert_int_equal(zip_close(z), 0);
	/* libzip writes a new file and renames it over path */
	close(fd);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

static void read_layout(int fd, struct cp_zip_layout *l)
{
	cp_error err = { CP_OK, "" };

	assert_int_equal(cp_zip_layout_read(fd, "in.zip", l, &err), CP_OK);
}

/* The spans picked, one per (fd, layout, index), spliced into a new file. */
struct pick {
	int fd;
	const struct cp_zip_layout *l;
	size_t i;
};

static int spliced(const struct pick *p, size_t n, uint64_t zip64_at)
{
	char path[64];
	int out = scratch(path);
	cp_error err = { CP_OK, "" };
	cp_zip_splice *z = NULL;
	size_t i;

	unlink(path);
	assert_int_equal(cp_zip_splice_new(out, "out.zip", zip64_at, &z, &err), CP_OK);
	for (i = 0; i < n; i++)
		assert_int_equal(cp_zip_splice_add(z, p[i].fd, &p[i].l->m[p[i].i], &err), CP_OK);
	assert_int_equal(cp_zip_splice_finish(z, &err), CP_OK);
	cp_zip_splice_free(z);
	return out;
}

/* libzip's view of the archive in fd, checked member by member. */
static void expect(int fd, const struct member *const *m, size_t n)
{
	zip_error_t ze;
	zip_source_t *src;
	zip_t *z;
	size_t i;
	int d = dup(fd);

	zip_error_init(&ze);
	assert_true(d >= 0);
	src = zip_source_filep_create(fdopen(d, "rb"), 0, -1, &ze);
	assert_non_null(src);
	z = zip_open_from_source(src, ZIP_CHECKCONS | ZIP_RDONLY, &ze);
	if (!z)
		fail_msg("libzip refuses the spliced archive: %s", zip_error_strerror(&ze));
	assert_int_equal((int)zip_get_num_entries(z, 0), (int)n);
	for (i = 0; i < n; i++) {
		char buf[256];
		zip_file_t *f = zip_fopen_index(z, i, 0);
		zip_int64_t k;

		assert_string_equal(zip_get_name(z, i, 0), m[i]->name);
		assert_non_null(f);
		k = zip_fread(f, buf, sizeof(buf));
		assert_int_equal((int)k, (int)strlen(m[i]->data));
		assert_memory_equal(buf, m[i]->data, (size_t)k);
		zip_fclose(f);
	}
	zip_discard(z);
	zip_error_fini(&ze);
}

/* Members of two archives, reordered: each read back as it was written. */
static void members_of_two_archives_in_a_new_order(void **state)
{
	int a = make_archive(first, 4), b = make_archive(second, 2), out;
	struct cp_zip_layout la, lb;
	const struct member *want[] = { &second[1], &first[0], &first[1], &second[0], &first[3] };
	struct pick p[] = { { b, &lb, 1 }, { a, &la, 0 }, { a, &la, 1 }, { b, &lb, 0 }, { a, &la, 3 } };

	(void)state;
	read_layout(a, &la);
	read_layout(b, &lb);
	assert_int_equal((int)la.n, 4);
	assert_true(cp_zip_span_named(&la.m[3], "pkg-1.0.dist-info/RECORD"));
	assert_false(cp_zip_span_named(&la.m[3], "pkg-1.0.dist-info/RECOR"));
	out = spliced(p, 5, CP_ZIP64_AT);
	expect(out, want, 5);
	cp_zip_layout_free(&la);
	cp_zip_layout_free(&lb);
	close(a);
	close(b);
	close(out);
}

/* Every member, in order, from one archive: the members' bytes and their
 * central directory match the input's (only the end record may differ). */
static void one_archive_whole_is_its_own_bytes(void **state)
{
	int a = make_archive(first, 4), out;
	struct cp_zip_layout la, lo;
	struct pick p[4];
	size_t i;
	const struct member *want[4];

	(void)state;
	read_layout(a, &la);
	for (i = 0; i < 4; i++) {
		p[i] = (struct pick){ a, &la, i };
		want[i] = &first[i];
	}
	out = spliced(p, 4, CP_ZIP64_AT);
	expect(out, want, 4);
	read_layout(out, &lo);
	assert_int_equal((int)lo.cd_off, (int)la.cd_off);
	assert_int_equal((int)lo.cd_size, (int)la.cd_size);
	assert_memory_equal(lo.cd, la.cd, (size_t)la.cd_size);
	for (i = 0; i < 4; i++) {
		char x[512], y[512];

		assert_int_equal((int)lo.m[i].len, (int)la.m[i].len);
		assert_true(la.m[i].len <= sizeof(x));
		assert_int_equal((int)pread(a, x, la.m[i].len, (off_t)la.m[i].off), (int)la.m[i].len);
		assert_int_equal((int)pread(out, y, lo.m[i].len, (off_t)lo.m[i].off), (int)lo.m[i].len);
		assert_memory_equal(x, y, la.m[i].len);
	}
	cp_zip_layout_free(&la);
	cp_zip_layout_free(&lo);
	close(a);
	close(out);
}

/* Offsets at or past zip64_at go into zip64 extra fields, with zip64 end
 * records; splicing that archive again with the real limit moves them
 * back out. libzip reads all three the same. */
static void offsets_move_into_and_out_of_zip64(void **state)
{
	int a = make_archive(first, 4), wide, some, narrow;
	struct cp_zip_layout la, lw;
	struct pick p[4], q[4];
	const struct member *want[4];
	size_t i;

	(void)state;
	read_layout(a, &la);
	for (i = 0; i < 4; i++) {
		p[i] = (struct pick){ a, &la, i };
		want[i] = &first[i];
	}
	wide = spliced(p, 4, 0);
	expect(wide, want, 4);
	some = spliced(p, 4, la.m[2].off); /* the last two only */
	expect(some, want, 4);
	read_layout(wide, &lw);
	assert_true(lw.cd_size > la.cd_size); /* a zip64 field in each record */
	for (i = 0; i < 4; i++)
		q[i] = (struct pick){ wide, &lw, i };
	narrow = spliced(q, 4, CP_ZIP64_AT);
	expect(narrow, want, 4);
	cp_zip_layout_free(&lw);
	read_layout(narrow, &lw);
	assert_int_equal((int)lw.cd_size, (int)la.cd_size);
	cp_zip_layout_free(&la);
	cp_zip_layout_free(&lw);
	close(a);
	close(wide);
	close(some);
	close(narrow);
}

/* 0xffff members or more need the zip64 end records; a splice of all of
 * them reads back with every member. */
static void many_members_need_zip64_end_records(void **state)
{
	enum { N = 0x10000 + 3 };
	struct member *m = calloc(N, sizeof(*m));
	char (*names)[16] = calloc(N, sizeof(*names));
	const struct member **want = calloc(N, sizeof(*want));
	struct pick *p = calloc(N, sizeof(*p));
	struct cp_zip_layout la;
	int a, out;
	size_t i;

	(void)state;
	assert_true(m && names && want && p);
	for (i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "m/%zu", i);
		m[i] = (struct member){ names[i], "", false };
		want[i] = &m[i];
	}
	a = make_archive(m, N);
	read_layout(a, &la);
	assert_int_equal((int)la.n, N);
	for (i = 0; i < N; i++)
		p[i] = (struct pick){ a, &la, i };
	out = spliced(p, N, CP_ZIP64_AT);
	expect(out, want, N);
	cp_zip_layout_free(&la);
	close(a);
	close(out);
	free(m);
	free(names);
	free(want);
	free(p);
}

/* A copy of an archive, cut or with a byte changed, refused. */
static void broken_archives_are_refused(void **state)
{
	int a = make_archive(first, 4);
	off_t size = lseek(a, 0, SEEK_END);
	char *buf = malloc((size_t)size), path[64];
	struct cp_zip_layout l;
	cp_error err = { CP_OK, "" };
	int b;

	(void)state;
	assert_int_equal((int)pread(a, buf, (size_t)size, 0), (int)size);
	/* cut inside the end record */
	b = scratch(path);
	unlink(path);
	assert_int_equal((int)write(b, buf, (size_t)size - 5), (int)size - 5);
	assert_int_not_equal(cp_zip_layout_read(b, "cut.zip", &l, &err), CP_OK);
	assert_non_null(strstr(err.msg, "cut.zip: no end of central directory"));
	close(b);
	/* the first local header's signature broken */
	b = scratch(path);
	unlink(path);
	buf[0] ^= 1;
	assert_int_equal((int)write(b, buf, (size_t)size), (int)size);
	assert_int_not_equal(cp_zip_layout_read(b, "sig.zip", &l, &err), CP_OK);
	assert_non_null(strstr(err.msg, "sig.zip: no local header"));
	close(b);
	free(buf);
	close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(members_of_two_archives_in_a_new_order),
		cmocka_unit_test(one_archive_whole_is_its_own_bytes),
		cmocka_unit_test(offsets_move_into_and_out_of_zip64),
		cmocka_unit_test(many_members_need_zip64_end_records),
		cmocka_unit_test(broken_archives_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
