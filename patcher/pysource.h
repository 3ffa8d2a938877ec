/*
 * pysource.h - the Python sources of a wheel: one-line import statements
 * of mapped modules, rewritten for a layout (docs/repair.md).
 *
 *   legacy/bindings: `from cuda.bindings import driver, runtime` becomes
 *     `from cuda import cuda as driver; from cuda import cudart as runtime`.
 *   fallback: the statement is wrapped in try/except ImportError
 *     (re-raised unless its `name` is the statement's own module or a
 *     parent: a missing module, or a missing name in a present package),
 *     the except branch importing the other layout.
 */
#ifndef CP_PYSOURCE_H
#define CP_PYSOURCE_H

#include <stddef.h>
#include "cypatch.h"

struct cp_pysource_counts {
	int rewritten;  /* statements rewritten */
	int left;       /* import lines naming cuda of a shape not rewritten */
	/* import statements that run unguarded (not under a handler of
	 * ImportError, not under `if TYPE_CHECKING:`) and name a module or a
	 * layout-specific package of a layout the output must not need
	 * (fallback: of either layout), which were not rewritten: the first
	 * one's line number and text. The wheel cannot work then. */
	int unhandled;
	int first_line, first_layout;
	char first[160];
};

cp_status cp_pysource_rewrite(const char *src, size_t len, const cp_rules *rules, const char *layout,
			      char **out, size_t *outlen, struct cp_pysource_counts *c, cp_error *err);

#endif
