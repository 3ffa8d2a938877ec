/*
 * test_walk_starts.c - the code walk never reads an instruction across a
 * function start (arch/x86_64/x86_64_walk.c, room()), so a function's walk is the
 * same whether the sweep came from the section's start or began at the
 * function: the threaded walk (scan/scan_threads.c) and the check's splice
 * (scan/scan_splice.c) join walks on that. The fixture
 * (walk_starts_fixture.c, compiled here) ends one function in the first
 * bytes of a 10-byte instruction; the walk of the whole image must report
 * in the next function exactly what the walk of that function alone
 * reports, its lea included. No corpus needed.
 *
 * usage: test_walk_starts FIXTURE.so
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/code.h"
#include "elf/image.h"

#define MAX_REFS 256

struct refs {
	uint64_t addr[MAX_REFS], target[MAX_REFS];
	size_t n;
	uint64_t from, to; /* only these instructions */
};

static const char *fixture;

static void on_ref(void *ctx, const struct cp_code_ref *ref)
{
	struct refs *r = ctx;

	if (ref->addr < r->from || ref->addr >= r->to)
		return;
	assert_true(r->n < MAX_REFS);
	r->addr[r->n] = ref->addr;
	r->target[r->n++] = ref->target;
}

static void on_call(void *ctx, const struct cp_call *call)
{
	(void)ctx;
	(void)call;
}

static const struct cp_symbol *symbol(const cp_image *img, const char *name)
{
	size_t i;

	for (i = 0; i < img->nsym; i++)
		if (!strcmp(img->sym[i].name, name))
			return &img->sym[i];
	return NULL;
}

/* The references of [from, to) in the walk of [start, end) (0, 0: all). */
static void walk(const cp_image *img, uint64_t start, uint64_t end, uint64_t from, uint64_t to, struct refs *r)
{
	struct cp_code_visitor v = { .on_ref = on_ref, .on_call = on_call, .ctx = r };
	cp_error err;

	memset(r, 0, sizeof(*r));
	r->from = from;
	r->to = to;
	assert_int_equal(cp_code_walk(img, start, end, &v, &err), CP_OK);
}

static void function_walk_is_the_sweeps(void **state)
{
	const struct cp_symbol *a, *b;
	struct refs whole, alone;
	cp_image *img = NULL;
	cp_error err;

	(void)state;
	assert_int_equal(cp_image_open(fixture, &img, &err), CP_OK);
	a = symbol(img, "cp_fixture_a");
	b = symbol(img, "cp_fixture_b");
	assert_non_null(a);
	assert_non_null(b);
	/* the fixture is laid out as written: b starts where a's two bytes end */
	assert_int_equal(b->value, a->value + a->size);
	walk(img, b->value, b->value + b->size, b->value, b->value + b->size, &alone);
	walk(img, 0, 0, b->value, b->value + b->size, &whole);
	assert_int_equal(alone.n, 1); /* the lea */
	assert_int_equal(alone.addr[0], b->value);
	assert_int_equal(whole.n, alone.n);
	assert_memory_equal(whole.addr, alone.addr, alone.n * sizeof(alone.addr[0]));
	assert_memory_equal(whole.target, alone.target, alone.n * sizeof(alone.target[0]));
	cp_image_close(img);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(function_walk_is_the_sweeps),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_walk_starts FIXTURE.so\n");
		return 64;
	}
	fixture = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
