/*
 * cleanup_on_signal.c - a registry of paths to remove on a fatal signal
 * (see cleanup_on_signal.h).
 *
 * Process-wide state, as in map_guard.c, because a signal handler has no
 * other way to find what to remove. The slots are fixed (no allocation in
 * or for the handler) and published through their state, set last and
 * cleared first; the handler makes only async-signal-safe calls: unlink,
 * rmdir, write, _exit (and signal, raise when no output is declared).
 */
#include "util/cleanup_on_signal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 64 /* repair: its folder, changed.zip, its temporary, and per worker
		  * (8) in.so, out.so and out.so's temporary; verify, check */
#define PATH 4200

enum { FREE, CLAIMED, ACTIVE };

static struct slot {
	atomic_int state;
	bool dir;
	char path[PATH];
} slots[SLOTS];

static const int handled[] = { SIGTERM, SIGINT, SIGHUP };
#define NHANDLED (sizeof(handled) / sizeof(handled[0]))

static char output[PATH];        /* written before `writing` is set */
static atomic_bool writing;
static atomic_flag installed = ATOMIC_FLAG_INIT;

static const char *name_of(int sig)
{
	return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
}

static void put(char *buf, size_t *n, size_t cap, const char *s)
{
	while (*s && *n < cap)
		buf[(*n)++] = *s++;
}

static void on_signal(int sig)
{
	char msg[PATH + 64];
	size_t i, n = 0;

	if (!atomic_load(&writing)) {
		/* nothing under way: die of it as before (blocked until we return) */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	for (i = 0; i < SLOTS; i++)
		if (atomic_load(&slots[i].state) == ACTIVE && !slots[i].dir)
			unlink(slots[i].path);
	for (i = 0; i < SLOTS; i++)
		if (atomic_load(&slots[i].state) == ACTIVE && slots[i].dir)
			rmdir(slots[i].path);
	put(msg, &n, sizeof(msg) - 1, "cypatch: ");
	put(msg, &n, sizeof(msg) - 1, output);
	put(msg, &n, sizeof(msg) - 1, ": interrupted by ");
	put(msg, &n, sizeof(msg) - 1, name_of(sig));
	msg[n++] = '\n';
	(void)!write(STDERR_FILENO, msg, n);
	_exit(2);
}

static void fatal_set(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < NHANDLED; i++)
		sigaddset(set, handled[i]);
}

static void install(void)
{
	struct sigaction sa, old;
	size_t i;

	if (atomic_flag_test_and_set(&installed))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	fatal_set(&sa.sa_mask); /* a second signal waits: the handler exits */
	for (i = 0; i < NHANDLED; i++)
		if (!sigaction(handled[i], NULL, &old) && old.sa_handler != SIG_IGN)
			sigaction(handled[i], &sa, NULL);
	/* a file size limit: EFBIG from write, told by the error path */
	signal(SIGXFSZ, SIG_IGN);
}

void cp_cleanup_begin(const char *output_path)
{
	install();
	atomic_store(&writing, false);
	snprintf(output, sizeof(output), "%s", output_path);
	atomic_store(&writing, true);
}

void cp_cleanup_end(void)
{
	sigset_t set;

	atomic_store(&writing, false);
	fatal_set(&set);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

bool cp_cleanup_add(const char *path, bool dir)
{
	size_t i;

	if (strlen(path) >= PATH)
		return false;
	for (i = 0; i < SLOTS; i++) {
		int none = FREE;

		if (atomic_compare_exchange_strong(&slots[i].state, &none, CLAIMED)) {
			memcpy(slots[i].path, path, strlen(path) + 1);
			slots[i].dir = dir;
			atomic_store(&slots[i].state, ACTIVE);
			return true;
		}
	}
	return false;
}

void cp_cleanup_remove(const char *path)
{
	size_t i;

	for (i = 0; i < SLOTS; i++)
		if (atomic_load(&slots[i].state) == ACTIVE && !strcmp(slots[i].path, path)) {
			atomic_store(&slots[i].state, FREE);
			return;
		}
}

void cp_cleanup_hold(sigset_t *old)
{
	sigset_t set;

	fatal_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void cp_cleanup_release(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

void cp_cleanup_committing(const char *target)
{
	sigset_t set;

	if (!atomic_load(&writing) || strcmp(target, output))
		return;
	fatal_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int cp_cleanup_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t old;
	int e;

	cp_cleanup_hold(&old);
	e = pthread_create(t, NULL, fn, arg);
	cp_cleanup_release(&old);
	return e;
}
