/*
 * scan_frames.c - the frame evaluations of a scan (arch/frame.h), and the
 * check's, begun ahead on a second thread.
 *
 * Reading Cython's string table or blob evaluates the function that makes
 * it (cuda-python's driver module: a 547 KB init function, a fifth of a
 * patch's time). A scan notes the functions it evaluated; the check's scan
 * of the output (struct cp_scan_skip) evaluates the same functions of the
 * output on another thread while it walks the code, and takes each frame
 * when it comes to need it. An evaluation reads only the image, so a frame
 * made ahead is the one that would be made then; one not made ahead is
 * made when needed. At most MAX_AHEAD are made ahead, the largest (a frame
 * holds about 5 MB).
 */
#include "scan/scan.h"
#include "arch/frame.h"
#include "util/cleanup_on_signal.h"
#include "util/error.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_AHEAD 4

struct cp_frames_ahead {
	const cp_image *img;
	struct cp_frame_fn *fn;  /* the functions, copied from the input's scan */
	struct cp_frame *frame;  /* made for each, or zero */
	bool *made, *taken;
	size_t n;
	pthread_t thread;
	bool running;
};

static void *evaluate(void *arg)
{
	struct cp_frames_ahead *a = arg;
	cp_error err;
	size_t i;

	for (i = 0; i < a->n; i++)
		a->made[i] = !cp_frame_eval(a->img, a->fn[i].start, a->fn[i].end, &a->frame[i], &err);
	return NULL;
}

static void ahead_free(struct cp_frames_ahead *a)
{
	size_t i;

	if (!a)
		return;
	if (a->running)
		pthread_join(a->thread, NULL);
	for (i = 0; a->frame && i < a->n; i++)
		if (a->made[i] && !a->taken[i])
			cp_frame_free(&a->frame[i]);
	free(a->fn);
	free(a->frame);
	free(a->made);
	free(a->taken);
	free(a);
}

static int larger_first(const void *x, const void *y)
{
	const struct cp_frame_fn *a = x, *b = y;
	uint64_t m = a->end - a->start, n = b->end - b->start;

	return m > n ? -1 : m < n;
}

void cp_scan_frames_ahead(cp_scan *s)
{
	const cp_scan *in = s->skip ? s->skip->code : NULL;
	struct cp_frames_ahead *a;

	if (!in || !in->nframe_fns || !(a = calloc(1, sizeof(*a))))
		return;
	a->img = s->img;
	a->n = in->nframe_fns;
	a->fn = malloc(a->n * sizeof(*a->fn));
	if (a->fn) {
		memcpy(a->fn, in->frame_fns, a->n * sizeof(*a->fn));
		qsort(a->fn, a->n, sizeof(*a->fn), larger_first);
		if (a->n > MAX_AHEAD)
			a->n = MAX_AHEAD;
	}
	a->frame = calloc(a->n, sizeof(*a->frame));
	a->made = calloc(a->n, sizeof(*a->made));
	a->taken = calloc(a->n, sizeof(*a->taken));
	if (!a->fn || !a->frame || !a->made || !a->taken) {
		ahead_free(a);
		return; /* nothing ahead: each is made when needed */
	}
	a->running = !cp_cleanup_thread(&a->thread, evaluate, a);
	if (!a->running) {
		ahead_free(a);
		return;
	}
	s->frames_ahead = a;
}

/* The frame made ahead for [start, end), moved into *f; false if none. */
static bool take_ahead(cp_scan *s, uint64_t start, uint64_t end, struct cp_frame *f)
{
	struct cp_frames_ahead *a = s->frames_ahead;
	size_t i;

	if (!a)
		return false;
	if (a->running) {
		pthread_join(a->thread, NULL);
		a->running = false;
	}
	for (i = 0; i < a->n; i++)
		if (a->fn[i].start == start && a->fn[i].end == end && a->made[i] && !a->taken[i]) {
			a->taken[i] = true;
			*f = a->frame[i];
			return true;
		}
	return false;
}

cp_status cp_scan_frame(cp_scan *s, uint64_t start, uint64_t end, struct cp_frame *f, cp_error *err)
{
	cp_status st = CP_OK;

	if (!take_ahead(s, start, end, f))
		st = cp_frame_eval(s->img, start, end, f, err);
	if (!st && !CP_GROW(s->frame_fns, s->capframe_fns, s->nframe_fns + 1)) {
		s->frame_fns[s->nframe_fns].start = start;
		s->frame_fns[s->nframe_fns++].end = end;
	}
	return st;
}

void cp_scan_frames_end(cp_scan *s)
{
	ahead_free(s->frames_ahead);
	s->frames_ahead = NULL;
}
