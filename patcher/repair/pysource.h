/*
 * pysource.h - the Python sources of a wheel: import statements of mapped
 * modules (logical lines: over several physical ones too), rewritten for
 * a layout (docs/repair.md).
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

#include <stdbool.h>
#include <stddef.h>
#include "cypatch.h"

struct cp_pysource_counts {
	int rewritten;  /* statements rewritten */
	int left;       /* import statements naming cuda of a shape not rewritten */
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

/* What `check` needs of the same reading (import_chain.c): */

/* Whether the statement that begins at offset `at` of src is guarded, in
 * the sense of `unhandled` above: its innermost block is `if
 * TYPE_CHECKING:`, or a try: body one of whose handlers catches the
 * import's failure without raising again. */
bool cp_pysource_guarded(const char *src, size_t len, size_t at);

/* The layout of a dotted name: a mapped module's, or that of the longest
 * prefix that is a package of one layout only; -1 when it says nothing. */
int cp_pysource_name_layout(const cp_rules *r, const char *name);

/* When the line at offset `at` is the import inside a block a fallback
 * rewrite wrote: the offset of the block's line that imports the other
 * layout (run when the first fails); else (size_t)-1. */
size_t cp_pysource_fallback_other(const char *src, size_t len, size_t at);

#endif
