/*
 * cython.h - which Cython generated a module, and the one way to ask.
 *
 * What Cython emits changes by release series (0.29, 3.0 ... 3.3): every
 * version test in cypatch goes through these two predicates, so that a
 * series newer than the ones known reads as the newest known.
 */
#ifndef CP_CYTHON_H
#define CP_CYTHON_H

#include <stdbool.h>
#include "scan/scan.h"

/* Sets s->cython and s->cy_major/minor/patch from the ABI module name. */
void cp_cython_version(cp_scan *s);

/* Whether Cython major.minor or a later release generated the module. */
bool cp_cython_at_least(const cp_scan *s, int major, int minor);

/* Whether a release of the series major.minor generated it. */
bool cp_cython_is(const cp_scan *s, int major, int minor);

#endif
