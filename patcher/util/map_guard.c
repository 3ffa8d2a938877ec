/*
 * map_guard.c - SIGBUS on a truncated mapped input becomes "the file changed".
 *
 * Slots are lock-free (the handler may run in any thread that reads a
 * mapping, and only async-signal-safe calls are made in it: mmap is a
 * system call). A slot is published by its end, written last and cleared
 * first.
 */
#include "util/map_guard.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 64 /* images open at once: input, output, providers of check */

static struct slot {
	_Atomic uintptr_t start, end;
	atomic_bool changed;
} slots[SLOTS];

static atomic_flag installed = ATOMIC_FLAG_INIT;
static _Atomic uintptr_t page_size; /* read before the handler is installed: sysconf is not async-signal-safe */

static struct slot *slot_of(uintptr_t addr)
{
	size_t i;

	for (i = 0; i < SLOTS; i++) {
		uintptr_t end = atomic_load(&slots[i].end);

		if (end && addr >= atomic_load(&slots[i].start) && addr < end)
			return &slots[i];
	}
	return NULL;
}

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	uintptr_t page = atomic_load(&page_size), addr = (uintptr_t)si->si_addr, from;
	struct slot *s = slot_of(addr);

	(void)ctx;
	/* not a guarded mapping, or no way to cover it: die of it as before */
	from = addr & ~(page - 1);
	if (!s || mmap((void *)from, atomic_load(&s->end) - from, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		signal(sig, SIG_DFL);
		return; /* the read faults again, now fatally */
	}
	/* every page from here on is past the new end too: all zeros now */
	atomic_store(&s->changed, true);
}

static void install(void)
{
	struct sigaction sa;

	if (atomic_flag_test_and_set(&installed))
		return;
	atomic_store(&page_size, (uintptr_t)sysconf(_SC_PAGESIZE));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

bool cp_map_guard_add(const void *data, size_t size)
{
	size_t i;

	install();
	for (i = 0; i < SLOTS; i++) {
		uintptr_t none = 0;

		/* claim the slot through its start, publish it through its end */
		if (atomic_compare_exchange_strong(&slots[i].start, &none, (uintptr_t)data)) {
			atomic_store(&slots[i].changed, false);
			atomic_store(&slots[i].end, (uintptr_t)data + size);
			return true;
		}
	}
	return false;
}

static struct slot *find(const void *data)
{
	size_t i;

	for (i = 0; i < SLOTS; i++)
		if (atomic_load(&slots[i].end) && atomic_load(&slots[i].start) == (uintptr_t)data)
			return &slots[i];
	return NULL;
}

void cp_map_guard_remove(const void *data)
{
	struct slot *s = find(data);

	if (!s)
		return;
	atomic_store(&s->end, 0);
	atomic_store(&s->start, 0);
}

bool cp_map_guard_intact(const void *data)
{
	struct slot *s = find(data);

	return !s || !atomic_load(&s->changed);
}
