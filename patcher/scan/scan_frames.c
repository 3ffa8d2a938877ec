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
 * A scan of the input guesses instead: as each run of its walk ends
 * (scan_threads.c), and again after the walk, it adds the large functions
 * that the run saw make imports, which its later passes evaluate most often
 * (Cython 3.0 builds its string table in the module's exec function, beside
 * the imports). The thread takes them as they come, so that a frame is
 * begun on the core that the walk's first run to end leaves idle, and is
 * made while the other run ends and the single-threaded passes after the
 * walk go on. A guess not taken is work on a core that would be idle; the
 * end of the scan waits only for the one being made.
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
	struct ahead f[MAX_AHEAD]; /* the functions, in the order given */
	size_t n;              /* f[0..n) given; under lock */
	bool closed;           /* no more will be given; under lock */
	size_t done;           /* f[0..done) evaluated (made or not); under lock */
	pthread_mutex_t lock;
	pthread_cond_t more;   /* n, closed or done changed */
	pthread_t thread;
	bool running;
	atomic_bool stop;      /* what is not begun yet is not wanted */
};

/* The next function to evaluate, waiting for one to be given; false once
 * the list is closed and all are done. */
static bool next_given(struct cp_frames_ahead *a, size_t i)
{
	bool have;

	pthread_mutex_lock(&a->lock);
	while (i == a->n && !a->closed)
		pthread_cond_wait(&a->more, &a->lock);
	have = i < a->n;
	pthread_mutex_unlock(&a->lock);
	return have;
}

static void *evaluate(void *arg)
{
	struct cp_frames_ahead *a = arg;
	cp_error err;
	size_t i;

	for (i = 0; next_given(a, i); i++) {
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

/* No more functions will be given. */
static void close_list(struct cp_frames_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	a->closed = true;
	pthread_cond_broadcast(&a->more);
	pthread_mutex_unlock(&a->lock);
}

static void ahead_free(struct cp_frames_ahead *a)
{
	size_t i;

	if (!a)
		return;
	atomic_store(&a->stop, true);
	close_list(a);
	if (a->running)
		pthread_join(a->thread, NULL);
	for (i = 0; i < a->n; i++)
		if (a->f[i].made && !a->f[i].taken)
			cp_frame_free(&a->f[i].frame);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->more);
	free(a);
}

/* Gives fn unless it is given already or the list is full. */
static void give(struct cp_frames_ahead *a, const struct cp_frame_fn *fn)
{
	size_t i;

	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->n && a->f[i].fn.start != fn->start; i++)
		;
	if (i == a->n && a->n < MAX_AHEAD && !a->closed) {
		a->f[a->n++].fn = *fn;
		pthread_cond_broadcast(&a->more);
	}
	pthread_mutex_unlock(&a->lock);
}

/* The thread, waiting for functions to be given (NULL: none started, and
 * each frame is made when needed). */
static struct cp_frames_ahead *start_ahead(const cp_image *img)
{
	struct cp_frames_ahead *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->img = img;
	atomic_init(&a->stop, false);
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->more, NULL);
	a->running = !cp_cleanup_thread(&a->thread, evaluate, a);
	if (!a->running) {
		ahead_free(a);
		return NULL;
	}
	return a;
}

static int larger_first(const void *x, const void *y)
{
	const struct cp_frame_fn *a = x, *b = y;
	uint64_t m = a->end - a->start, n = b->end - b->start;

	return m > n ? -1 : m < n;
}

/* Whether some function of img is large enough to be guessed. */
static bool has_large_function(const cp_image *img)
{
	size_t i;

	for (i = 0; i + 1 < img->nfunc; i++)
		if (img->func[i + 1] - img->func[i] >= MIN_GUESS)
			return true;
	return false;
}

void cp_scan_frames_ahead(cp_scan *s, bool cores)
{
	const cp_scan *in = s->skip ? s->skip->code : NULL;
	struct cp_frame_fn *fn;
	size_t i;

	if (!in) {
		if (cores && has_large_function(s->img))
			s->frames_ahead = start_ahead(s->img);
		return;
	}
	if (!in->nframe_fns || !(fn = malloc(in->nframe_fns * sizeof(*fn))))
		return; /* nothing ahead: each is made when needed */
	if ((s->frames_ahead = start_ahead(s->img)) != NULL) {
		memcpy(fn, in->frame_fns, in->nframe_fns * sizeof(*fn));
		qsort(fn, in->nframe_fns, sizeof(*fn), larger_first); /* at most MAX_AHEAD are made */
		for (i = 0; i < in->nframe_fns; i++)
			give(s->frames_ahead, &fn[i]);
		close_list(s->frames_ahead);
	}
	free(fn);
}

void cp_scan_frames_guess_from(const cp_scan *s, const cp_scan *walked)
{
	uint64_t start, end;
	size_t i;

	if (!s->frames_ahead || s->skip)
		return;
	for (i = 0; i < walked->ncalls; i++) {
		const char *name = walked->calls[i].name;

		if (name && !strncmp(name, "PyImport_", 9) &&
		    cp_image_function(s->img, walked->calls[i].addr, &start, &end) && end - start >= MIN_GUESS)
			give(s->frames_ahead, &(struct cp_frame_fn){ start, end });
	}
}

void cp_scan_frames_guess(cp_scan *s)
{
	cp_scan_frames_guess_from(s, s);
	if (s->frames_ahead && !s->skip)
		close_list(s->frames_ahead);
}

/* The frame made ahead for [start, end), moved into *f, once its
 * evaluation has finished; false if none was made. */
static bool take_ahead(cp_scan *s, uint64_t start, uint64_t end, struct cp_frame *f)
{
	struct cp_frames_ahead *a = s->frames_ahead;
	size_t i;

	if (!a)
		return false;
	/* the list is closed (cp_scan_frames_guess ran): n no longer changes */
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
