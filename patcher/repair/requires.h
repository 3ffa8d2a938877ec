/* requires.h - --relax-requires: a patched wheel's cuda-python requirement. */
#ifndef CP_REQUIRES_H
#define CP_REQUIRES_H

#include <stdbool.h>
#include <stddef.h>
#include "cypatch.h"

/*
 * Rewrites the Requires-Dist lines of METADATA that name cuda-python or
 * cuda-bindings to the range the patched wheel supports (docs/repair.md):
 * legacy and fallback drop the lower bounds (the legacy layout is
 * cuda-python <= 12.6.0, and 12.6.2 to 12.9 keep it as trampolines);
 * bindings drops the lower bounds and the upper bounds below 12.6.1 and
 * asks cuda-python >= 12.6.1. Other lines stay byte for byte. A line of
 * ours that PEP 508 does not allow, or a URL, is refused (where names the
 * file in the error).
 */
cp_status cp_relax_requires(const char *meta, size_t len, const char *layout, const char *where, char **out,
			    size_t *outlen, bool *changed, cp_error *err);

#endif
