/* buildid.h - re-signing: the GNU build-id of a patched file. */
#ifndef CP_BUILDID_H
#define CP_BUILDID_H

#include <stdbool.h>
#include "plan.h"

/*
 * Recomputes the NT_GNU_BUILD_ID note of out (the emitted file) as ld does:
 * a hash of the whole file with the note's descriptor zeroed (SHA-1 for a
 * 20-byte descriptor, else SHA-256 cut to its size), so that a patched file
 * never shares the original's identity with debuggers and caches. The
 * edit joins the plan, for the check. *done is false when the file has no
 * build-id.
 */
cp_status cp_buildid_resign(const cp_image *img, struct cp_plan *plan, uint8_t *out, size_t outlen,
			    bool *done, cp_error *err);

#endif
