/*
 * copy_ahead.c - the input copied on a second thread (see copy_ahead.h).
 */
#include "util/copy_ahead.h"
#include "util/cleanup_on_signal.h"
#include "util/write.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* A cancelled copy stops within one chunk: ~20 ms of kernel copying. */
#define CHUNK (64ull << 20)

struct cp_copy_ahead {
	pthread_t thread;
	int in, out;
	uint64_t size;
	atomic_bool stop;
	int error; /* errno of the failed chunk; read after the join */
};

static void *copy_chunks(void *arg)
{
	struct cp_copy_ahead *ca = arg;
	uint64_t off, n;

	for (off = 0; off < ca->size && !atomic_load(&ca->stop); off += n) {
		n = ca->size - off < CHUNK ? ca->size - off : CHUNK;
		if (cp_write_copy_range(ca->in, off, ca->out, off, n)) {
			ca->error = errno ? errno : EIO;
			break;
		}
	}
	return NULL;
}

int cp_copy_ahead_start(int in, int out, uint64_t size, struct cp_copy_ahead **ca)
{
	struct cp_copy_ahead *c = calloc(1, sizeof(*c));
	int e;

	*ca = NULL;
	if (!c)
		return -1;
	c->in = in;
	c->out = out;
	c->size = size;
	atomic_init(&c->stop, false);
	e = cp_cleanup_thread(&c->thread, copy_chunks, c);
	if (e) {
		free(c);
		errno = e;
		return -1;
	}
	*ca = c;
	return 0;
}

int cp_copy_ahead_finish(struct cp_copy_ahead *ca)
{
	int e;

	pthread_join(ca->thread, NULL);
	e = ca->error;
	free(ca);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

void cp_copy_ahead_cancel(struct cp_copy_ahead *ca)
{
	if (!ca)
		return;
	atomic_store(&ca->stop, true);
	pthread_join(ca->thread, NULL);
	free(ca);
}
