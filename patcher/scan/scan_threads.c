/*
 * scan_threads.c - the code walk of a large module on several threads.
 *
 * Where an architecture's walk of a function reads only that function
 * (cp_arch.walk_local), the walk's units are cut into runs of about equal
 * size. The first run is walked on the calling thread, every other on a
 * thread of its own into a scan of its own, from the state of no import
 * block open. The runs are then joined in order, as the check's splice
 * joins the input's walk (scan_splice.c): a unit entered in the state that
 * its run's walk entered it in is taken as that walk found it; any other
 * (an import block left open across a cut) is walked again, and the
 * states agree again within a few units. What is found is what one walk
 * of all code finds (tests/unit/walk_crosscheck.c compares the two).
 */
#include "scan/scan_walk.h"
#include "util/cleanup_on_signal.h"
#include "util/cores.h"
#include "util/big_array.h"
#include "util/error.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MIN_RUN (1u << 20) /* bytes of code a thread is worth starting for */
#define MAX_THREADS 8

struct run {
	const cp_scan *whole;  /* the scan it is part of */
	cp_scan part;          /* its findings; part.marks: its units, then the next */
	size_t first;          /* its first unit in the scan's marks */
	cp_error err;
	cp_status st;
	pthread_t thread;
	bool running;
};

static uint64_t code_bytes(const cp_scan *s, size_t from, size_t to)
{
	uint64_t n = 0;
	size_t k;

	for (k = from; k < to; k++)
		n += s->marks[k].end - s->marks[k].start;
	return n;
}

unsigned cp_scan_cores(const cp_scan *s)
{
	if (s->threads)
		return s->threads;
	return s->cores ? s->cores : cp_cores();
}

/* How many threads a walk of all of s's code should use (1: its code is
 * too small to share; s->marks made). */
static unsigned walk_threads_for(const cp_scan *s)
{
	uint64_t by_size = code_bytes(s, 0, s->nmarks) / MIN_RUN;
	unsigned n = cp_scan_cores(s);

	if (s->threads)
		return s->threads;
	if (n > MAX_THREADS)
		n = MAX_THREADS;
	if (by_size < n)
		n = by_size ? (unsigned)by_size : 1;
	return n;
}

/* The first unit of each run: cut[0] = 0 < ... < cut[n] = nmarks, the runs
 * about equal in bytes; the number of runs (fewer when units are large). */
static size_t cut_runs(const cp_scan *s, unsigned n, size_t *cut)
{
	uint64_t total = code_bytes(s, 0, s->nmarks), acc = 0;
	size_t k, r = 1;

	cut[0] = 0;
	for (k = 0; k < s->nmarks && r < n; k++) {
		acc += s->marks[k].end - s->marks[k].start;
		if (acc >= total / n * r && k + 1 < s->nmarks)
			cut[r++] = k + 1;
	}
	cut[r] = s->nmarks;
	return r;
}

static void *walk_run(void *arg)
{
	struct run *r = arg;
	cp_scan *p = &r->part;
	struct cp_walk w;
	struct cp_code_visitor v;

	cp_walk_start(&w, p, true, &v);
	r->st = cp_code_walk(p->img, p->marks[0].start, p->marks[p->nmarks - 1].end, &v, &r->err);
	if (!r->st)
		cp_scan_frames_guess_from(r->whole, p);
	if (!r->st)
		r->st = cp_walk_end(&w, false, &r->err); /* sorted here, on its thread */
	return NULL;
}

static bool start_run(cp_scan *s, struct run *r, size_t first, size_t end)
{
	size_t n = end - first;

	memset(r, 0, sizeof(*r));
	r->whole = s;
	r->first = first;
	r->part.img = s->img;
	r->part.path = s->path;
	r->part.marks = malloc((n + 1) * sizeof(*r->part.marks));
	if (!r->part.marks)
		return false;
	memcpy(r->part.marks, &s->marks[first], (n + 1) * sizeof(*r->part.marks));
	r->part.nmarks = n;
	r->part.cuts = s->cuts; /* borrowed */
	r->part.ncuts = s->ncuts;
	r->running = !cp_cleanup_thread(&r->thread, walk_run, r);
	if (!r->running)
		walk_run(r); /* no thread: here, then */
	return true;
}

/* Run r joined to the walk w of s: each unit taken, or walked again (a
 * span of again). Its xrefs and jumps are merged after (walk_merge.c). */
static cp_status join_run(struct cp_walk *w, const struct cp_code_visitor *v, struct run *r,
			  struct cp_walk_spans *again, cp_error *err)
{
	cp_scan *s = w->s;
	const cp_scan *p = &r->part;
	size_t j;
	cp_status st = CP_OK;

	for (j = 0; !st && !w->oom && j < p->nmarks; j++) {
		const struct cp_walk_mark *m = &p->marks[j];
		struct cp_walk_state now;
		bool take;

		cp_walk_enter_unit(w, r->first + j);
		cp_walk_state(w, &now);
		take = cp_walk_state_equal(&now, &m->at.state) && m[1].at.state.npending <= CP_WALK_PENDING;
		if (take)
			w->oom = !cp_walk_take_units(w, p, j, j + 1);
		else if (!(st = cp_code_walk(s->img, m->start, m->end, v, err)))
			w->oom = !cp_walk_spans_add(again, m->start, m->end) || w->oom;
	}
	return st ? st : w->oom ? cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path) : CP_OK;
}

static cp_status walk_threads(cp_scan *s, unsigned n, cp_error *err)
{
	struct run runs[MAX_THREADS];
	size_t cut[MAX_THREADS + 1], nruns, k;
	struct cp_walk w;
	struct cp_code_visitor v;
	struct cp_walk_spans again = { NULL, 0, 0 };
	cp_status st = CP_OK;
	bool oom = false;

	assert(s->marks && n >= 1);
	nruns = cut_runs(s, n < MAX_THREADS ? n : MAX_THREADS, cut);
	for (k = 1; k < nruns; k++)
		oom = !start_run(s, &runs[k], cut[k], cut[k + 1]) || oom;
	cp_walk_start(&w, s, true, &v);
	if (!oom)
		st = cp_code_walk(s->img, s->marks[0].start, s->marks[cut[1] - 1].end, &v, err);
	if (!st && !oom)
		cp_scan_frames_guess_from(s, s);
	/* its own in their order while the other runs end */
	if (!st && !oom)
		oom = !cp_walk_sort_found(s);
	for (k = 1; k < nruns; k++) {
		if (runs[k].running)
			pthread_join(runs[k].thread, NULL);
		if (!st && !oom && runs[k].st)
			st = cp_fail(err, runs[k].err.code, "%s", runs[k].err.msg);
		if (!st && !oom)
			st = join_run(&w, &v, &runs[k], &again, err);
	}
	for (k = 1; !st && !oom && k < nruns; k++)
		oom = !cp_walk_merge_found(s, &runs[k].part, &again);
	free(again.v);
	for (k = 1; k < nruns; k++) {
		runs[k].part.path = NULL;
		runs[k].part.cuts = NULL;
		cp_scan_free_walk(&runs[k].part);
	}
	if (!st && oom)
		st = cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	return st ? st : cp_walk_end(&w, true, err);
}

cp_status cp_scan_code(cp_scan *s, cp_error *err)
{
	unsigned n;

	if (s->img->arch->walk_local && !cp_walk_units(s, s->img))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	n = s->marks ? walk_threads_for(s) : 1;
	return n > 1 ? walk_threads(s, n, err) : cp_scan_code_one(s, err);
}
