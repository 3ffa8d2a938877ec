/*
 * test_walk_points.c - the check's splice (scan/scan_splice.c) walks a
 * changed function again only up to the first of the input's points inside
 * it where its walk stands as the input's stood, then takes the input's
 * findings: it must not take them where only the bytes agree. The fixture
 * (walk_points_fixture.c, compiled here) keeps a string's address in a
 * callee-saved register across two points and passes it to a call at its
 * end; the test retargets that lea in a copy, and the spliced walk of the
 * copy must find what a walk of all its code finds (the call's argument the
 * new string), which the check proves (full_check). An edit that leaves the
 * registers alone (an immediate) must splice to the same as well, and one
 * after the last point, which the walk again starts from in the state the
 * input's walk recorded there. And the points are the same whether the
 * walk came from the function before or began at it (a thread's run): a
 * cut inside a function's last instruction makes none at the next
 * function's start. No corpus needed.
 *
 * usage: test_walk_points FIXTURE.so
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "scan/scan.h"
#include "fixture_symbols.h"

static const char *fixture;

static cp_image *open_image(const char *path)
{
	cp_image *img = NULL;
	cp_error err;

	if (cp_image_open(path, &img, &err))
		fail_msg("%s", err.msg);
	return img;
}

/* The walk of all of img's code, with its units and points, on that many
 * threads (one: a single walk). */
static cp_scan *walk_on(const cp_image *img, unsigned threads)
{
	cp_scan *s = calloc(1, sizeof(*s));
	cp_error err;

	assert_non_null(s);
	s->img = img;
	s->path = strdup(img->path);
	s->threads = threads;
	if (cp_scan_code(s, &err))
		fail_msg("%s", err.msg);
	return s;
}

static cp_scan *walk(const cp_image *img)
{
	return walk_on(img, 1);
}

/* The first of s's points in [start, end), or NULL. */
static const struct cp_walk_point *first_point_in(const cp_scan *s, uint64_t start, uint64_t end)
{
	size_t i;

	for (i = 0; i < s->npoints; i++)
		if (s->points[i].addr >= start && s->points[i].addr < end)
			return &s->points[i];
	return NULL;
}

static void free_walk(cp_scan *s)
{
	cp_scan_free_walk(s);
	free(s->path);
	free(s);
}

/* A copy of the fixture with the n bytes at va made those of value. */
static void write_edited(const cp_image *img, uint64_t va, uint32_t value, size_t n, const char *out)
{
	uint64_t off;
	FILE *f;
	uint8_t *bytes = malloc(img->size);

	assert_non_null(bytes);
	assert_true(n <= sizeof(value) && cp_image_va_to_off(img, va, n, &off));
	memcpy(bytes, img->data, img->size);
	memcpy(bytes + off, &value, n); /* little-endian */
	f = fopen(out, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, img->size, f), img->size);
	assert_int_equal(fclose(f), 0);
	free(bytes);
}

/* The copy's walk spliced from the fixture's, against a walk of all of
 * the copy's code; and the address the last call with arguments passes. */
static uint64_t spliced(const cp_image *in, cp_scan *from, const char *copy)
{
	cp_image *out = open_image(copy);
	cp_scan *s = calloc(1, sizeof(*s));
	cp_error err;
	uint64_t arg = 0;
	size_t i;

	assert_non_null(s);
	s->img = out;
	s->path = strdup(copy);
	if (cp_scan_code_from(s, from, in, true, &err))
		fail_msg("%s", err.msg);
	for (i = 0; i < s->nfuses; i++)
		if (s->fuses[i].arg[0].kind == CP_V_ADDR)
			arg = s->fuses[i].arg[0].v;
	free_walk(s);
	cp_image_close(out);
	return arg;
}

static void test_registers_decide(void **state)
{
	cp_image *in = open_image(fixture);
	cp_scan *from = walk(in);
	uint64_t big = fixture_symbol(in, "cp_points_big"), a = fixture_symbol(in, "cp_points_a"), b = fixture_symbol(in, "cp_points_b");
	uint64_t lea_disp = big + 1 + 3, lea_next = big + 1 + 7; /* push rbx; lea rbx, [rip + disp32] */
	char copy[64];
	int fd;

	(void)state;
	/* the walk recorded points after the lea, rbx holding a's address */
	assert_non_null(first_point_in(from, big, fixture_symbol(in, "cp_points_f")));
	assert_true(first_point_in(from, big, fixture_symbol(in, "cp_points_f"))->addr > lea_next);
	snprintf(copy, sizeof(copy), "/tmp/test_walk_points.XXXXXX");
	fd = mkstemp(copy);
	assert_true(fd >= 0);
	close(fd);
	write_edited(in, lea_disp, (uint32_t)(b - lea_next), 4, copy);
	assert_int_equal(spliced(in, from, copy), b);
	/* an immediate changed (add eax, 2): the registers agree at the first
	 * point */
	write_edited(in, lea_next + 2, 0x02, 1, copy);
	assert_int_equal(spliced(in, from, copy), a);
	/* the last add's immediate: the walk again starts at the last point,
	 * in the state recorded there (rbx still a's address) */
	write_edited(in, lea_next + 3 * 5999 + 2, 0x02, 1, copy);
	assert_int_equal(spliced(in, from, copy), a);
	unlink(copy);
	free_walk(from);
	cp_image_close(in);
}

static void test_points_where_runs_begin(void **state)
{
	cp_image *in = open_image(fixture);
	cp_scan *one = walk_on(in, 1), *two = walk_on(in, 2);
	uint64_t edge = fixture_symbol(in, "cp_points_edge"), g = fixture_symbol(in, "cp_points_g");
	size_t i;

	(void)state;
	/* the second run begins at cp_points_g (the first holds over half the
	 * code); the single walk comes to it from cp_points_edge's last
	 * instruction, which holds a cut */
	assert_int_equal(g - edge, 24580);
	assert_non_null(first_point_in(one, edge, g));
	assert_null(first_point_in(one, g, g + 1));
	assert_int_equal(one->npoints, two->npoints);
	for (i = 0; i < one->npoints; i++)
		assert_int_equal(one->points[i].addr, two->points[i].addr);
	free_walk(one);
	free_walk(two);
	cp_image_close(in);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registers_decide),
		cmocka_unit_test(test_points_where_runs_begin),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_walk_points FIXTURE.so\n");
		return 64;
	}
	fixture = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
