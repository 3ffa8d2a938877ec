/*
 * scan_frames.c - the frame evaluations of a scan (arch/frame.h), and the
 * check's, begun ahead on a second thread.
 *
 * Reading Cython's string table or blob evaluates the function that makes
 * it (cuda-python's driver module: a 547 KB init function, a fifth of a
 * patch's time). A scan notes the functions it evaluated; the check's scan
 * of the output (struct cp_scan_skip) evaluates the same functions of the
 * output on another thread while it walks the code, and takes each frame
 * when it comes to need it, waiting only until that one is made. An
 * evaluation reads only the image, so a frame made ahead is the one that
 * would be made then; one not made ahead is made when needed. At most
 * MAX_AHEAD are made ahead, the largest first (a frame holds about 5 MB).
 *
 * A scan of the input guesses instead: right after its walk, it begins the
 * frames of the large functions that make imports, which its later passes
 * evaluate most often (Cython 3.0 builds its string table in the module's
 * exec function, beside the imports). A guess not taken is work on the
 * core that the single-threaded passes after the walk leave idle; the end
 * of the scan waits only for the one being made.
 */
#include "scan/scan.h"
#include "arch/frame.h"
#include "util/cleanup_on_signal.h"
#include "util/error.h"

#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_AHEAD 4
#define MIN_GUESS (32u << 10) /* bytes of code: about 1 ms to evaluate */

struct ahead {
	struct cp_frame_fn fn;
	struct cp_frame frame; /* made for fn when made */
	bool made, taken;
};

struct cp_frames_ahead {
	const cp_image *img;
	struct ahead *f;       /* the functions of the input's scan, largest first */
	size_t n;
	size_t done;           /* f[0..done) evaluated (made or not); under lock */
	pthread_mutex_t lock;
	pthread_cond_t more;   /* done grew */
	pthread_t thread;
	bool running;
	atomic_bool stop;      /* what is not begun yet is not wanted */
};

static void *evaluate(void *arg)
{
	struct cp_frames_ahead *a = arg;
	cp_error err;
	size_t i;

	for (i = 0; i < a->n; i++) {
		const struct cp_frame_fn *fn = &a->f[i].fn;
		bool made = !atomic_load(&a->stop) && !cp_frame_eval(a->img, fn->start, fn->end, &a->f[i].frame, &err);

		pthread_mutex_lock(&a->lock);
		a->f[i].made = made;
		a->done = i + 1;
		pthread_cond_broadcast(&a->more);
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

static void ahead_free(struct cp_frames_ahead *a)
{
	size_t i;

	if (!a)
		return;
	atomic_store(&a->stop, true);
	if (a->running)
		pthread_join(a->thread, NULL);
	for (i = 0; i < a->n; i++)
		if (a->f[i].made && !a->f[i].taken)
			cp_frame_free(&a->f[i].frame);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->more);
	free(a->f);
	free(a);
}

static int larger_first(const void *x, const void *y)
{
	const struct ahead *a = x, *b = y;
	uint64_t m = a->fn.end - a->fn.start, n = b->fn.end - b->fn.start;

	return m > n ? -1 : m < n;
}

static void start_ahead(cp_scan *s, const struct cp_frame_fn *fns, size_t n)
{
	struct cp_frames_ahead *a;
	size_t i;

	if (!n || !(a = calloc(1, sizeof(*a))))
		return;
	a->img = s->img;
	atomic_init(&a->stop, false);
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->more, NULL);
	if (!(a->f = calloc(n, sizeof(*a->f)))) {
		ahead_free(a);
		return; /* nothing ahead: each is made when needed */
	}
	for (i = 0; i < n; i++)
		a->f[i].fn = fns[i];
	qsort(a->f, n, sizeof(*a->f), larger_first);
	a->n = n < MAX_AHEAD ? n : MAX_AHEAD;
	a->running = !cp_cleanup_thread(&a->thread, evaluate, a);
	if (!a->running) {
		a->n = 0;
		ahead_free(a);
		return;
	}
	s->frames_ahead = a;
}

void cp_scan_frames_ahead(cp_scan *s)
{
	const cp_scan *in = s->skip ? s->skip->code : NULL;

	if (in)
		start_ahead(s, in->frame_fns, in->nframe_fns);
}

void cp_scan_frames_guess(cp_scan *s)
{
	struct cp_frame_fn fn[MAX_AHEAD];
	size_t i, k, n = 0;
	uint64_t start, end;

	if (s->skip || cp_scan_cores(s) < 2)
		return;
	for (i = 0; i < s->ncalls && n < MAX_AHEAD; i++) {
		const char *name = s->calls[i].name;

		if (!name || strncmp(name, "PyImport_", 9) ||
		    !cp_image_function(s->img, s->calls[i].addr, &start, &end) || end - start < MIN_GUESS)
			continue;
		for (k = 0; k < n && fn[k].start != start; k++)
			;
		if (k == n)
			fn[n++] = (struct cp_frame_fn){ start, end };
	}
	start_ahead(s, fn, n);
}

/* The frame made ahead for [start, end), moved into *f, once its
 * evaluation has finished; false if none was made. */
static bool take_ahead(cp_scan *s, uint64_t start, uint64_t end, struct cp_frame *f)
{
	struct cp_frames_ahead *a = s->frames_ahead;
	size_t i;

	if (!a)
		return false;
	for (i = 0; i < a->n; i++)
		if (a->f[i].fn.start == start && a->f[i].fn.end == end && !a->f[i].taken)
			break;
	if (i == a->n)
		return false;
	pthread_mutex_lock(&a->lock);
	while (a->done <= i)
		pthread_cond_wait(&a->more, &a->lock);
	pthread_mutex_unlock(&a->lock);
	if (!a->f[i].made)
		return false;
	a->f[i].taken = true;
	*f = a->f[i].frame;
	return true;
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
