/*
 * cores.h - how many cores this process may run on: the one count that
 * sizes repair's workers and the code walk's threads.
 */
#ifndef CP_CORES_H
#define CP_CORES_H

/* The CPUs of this process's affinity mask (what taskset and a container's
 * cpuset allow), else the CPUs online; at least 1. */
unsigned cp_cores(void);

#endif
