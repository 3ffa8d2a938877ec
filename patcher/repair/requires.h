/* requires.h - a wheel's cuda-python / cuda-bindings requirement made true. */
#ifndef CP_REQUIRES_H
#define CP_REQUIRES_H

#include <stdbool.h>
#include <stddef.h>
#include "cypatch.h"
#include "releases/releases.h"

/*
 * Rewrites the Requires-Dist lines of METADATA that name cuda-python or
 * cuda-bindings so that each admits exactly the releases of v[0, n) (those
 * that ship for the wheel's Python) where the wheel binds, within the CUDA
 * majors the line admitted before (an extra's `==12.*` stays on 12; a
 * line's own floors and caps inside a major are replaced). A line names
 * cuda-python where a release of cuda-python with modules binds (cuda-python
 * from 11.8.6 and 12.8.0 on installs the cuda-bindings of its version, so
 * such a line admits both), else the distribution it named. Specifiers:
 * `>=` the oldest release that binds, `<` the next major, `!=` each
 * release between that fails. The marker and every other line stay byte
 * for byte. A line under which no release of its majors binds (a wheel
 * built against a release newer than the base, or one that binds under
 * none) is kept as it is, and counted in *kept. A line PEP 508 does not
 * allow, or a URL, is an error naming it (where names the file).
 */
cp_status cp_requires_rewrite(const char *meta, size_t len, const struct cp_release_verdict *v, size_t n,
			      const char *where, char **out, size_t *outlen, bool *changed, size_t *kept,
			      cp_error *err);

#endif
