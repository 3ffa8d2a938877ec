/*
 * cores.c - the cores this process may run on (see cores.h).
 */
#include "util/cores.h"

#include <sched.h>
#include <unistd.h>

unsigned cp_cores(void)
{
	cpu_set_t set;
	long online;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	online = sysconf(_SC_NPROCESSORS_ONLN);
	return online > 0 ? (unsigned)online : 1;
}
