/* buildid.h - re-signing: the GNU build-id of a patched file. */
#ifndef CP_BUILDID_H
#define CP_BUILDID_H

#include <stdbool.h>
#include "emit/emit.h"
#include "plan/plan.h"

/*
 * Gives the NT_GNU_BUILD_ID note a new descriptor, so that a patched file
 * never shares the original's identity with debuggers and caches: a hash
 * (SHA-1 for a 20-byte descriptor, else SHA-256 cut to its size) of the old
 * descriptor, the sizes and the delta (buildid.c says why not the whole
 * file). The edit joins the plan; emit again to write it. *done is false
 * when the file has no build-id.
 */
cp_status cp_buildid_resign(const cp_image *img, struct cp_plan *plan, const struct cp_delta *d,
			    bool *done, cp_error *err);

#endif
