/*
 * requirement.h - what a wheel's METADATA asks of cuda-python and
 * cuda-bindings (its Requires-Dist lines naming either), and whether a
 * release of the knowledge base is one pip would install for it.
 */
#ifndef CP_REQUIREMENT_H
#define CP_REQUIREMENT_H

#include <stdbool.h>
#include <stddef.h>
#include "cypatch.h"

#define CP_REQUIREMENT_MAX 8

struct cp_requirement {
	char line[CP_REQUIREMENT_MAX][512]; /* each Requires-Dist value, as written */
	bool python[CP_REQUIREMENT_MAX];    /* names cuda-python, else cuda-bindings */
	char specs[CP_REQUIREMENT_MAX][512]; /* its version specifiers, joined by "," */
	char extra[CP_REQUIREMENT_MAX][64];  /* the extra its marker asks for, or "" */
	size_t n;
};

/* A Requires-Dist header of METADATA: its value [value, end) (after the
 * key and spaces, before the line's end), the length of the name it starts
 * with, and whether that names cuda-python (python) or cuda-bindings. */
struct cp_requires_dist {
	size_t value, end, namelen;
	bool ours, python;
};

/* The next Requires-Dist header of meta[0, len) from *pos on (advanced
 * past it); false at the end of the headers (the first empty line), which
 * leaves the body unread. */
bool cp_requires_dist_next(const char *meta, size_t len, size_t *pos, struct cp_requires_dist *r);

/* The Requires-Dist lines of a wheel's METADATA that name cuda-python or
 * cuda-bindings, each with the extra its marker asks for (`extra ==
 * "cu13"`: cuda-core's); other markers are taken as true. A line PEP 508
 * does not allow is an error naming it. */
cp_status cp_requirement_of_wheel(const char *path, struct cp_requirement *req, cp_error *err);

/* Whether every line that applies with `extra` installed (the lines of no
 * extra, and those of it; "" for none) admits release `version` of `dist`
 * ("cuda-python" or "cuda-bindings"). cuda-python from 11.8.6 and 12.8.0 on is a package
 * without modules that requires the cuda-bindings of its own version, so a
 * line naming cuda-python admits the cuda-bindings release its version
 * admits; a line naming cuda-bindings admits no cuda-python release. */
bool cp_requirement_admits(const struct cp_requirement *req, const char *extra, const char *dist,
			   const char *version);

#endif
