/*
 * pystmt.h - the import statements a Python module's source makes when the
 * module is imported, for `check` (import_chain.h): every `import a.b [as
 * x], c` and `from [.]P import n [as x], ...` (parenthesized names,
 * continuation lines and `;` included) that runs at import time. Left out:
 * those inside a function body or an except clause (they may not run),
 * and those pysource.h counts as guarded (under `if TYPE_CHECKING:`, or in
 * a try: body whose handler swallows ImportError), at any depth of blocks.
 * Anything that is not such a statement is passed over: `importlib`
 * calls, `__import__`, and the like are not read.
 */
#ifndef CP_PYSTMT_H
#define CP_PYSTMT_H

#include <stdbool.h>
#include <stddef.h>
#include "cypatch.h"

struct cp_pystmt {
	int line;
	bool from;
	int level;          /* the leading dots of a relative from-import */
	char module[256];   /* `import M`, `from M import` (after the dots; may be "") */
	char **names;       /* a from-import's names ("*" for a star import) */
	size_t nnames;
	bool alt;           /* not run unless its `of` statement fails */
	/* a statement of a block a fallback rewrite wrote: the statements
	 * importing the other layout, run when this one fails, at [alt_at,
	 * alt_at + nalt) */
	size_t alt_at, nalt;
};

struct cp_pystmts {
	struct cp_pystmt *v;
	size_t n, cap;
};

/* The statements of src, in order, into out (freed by cp_pystmt_free
 * whatever the result). */
cp_status cp_pystmt_read(const char *src, size_t len, struct cp_pystmts *out, cp_error *err);
void cp_pystmt_free(struct cp_pystmts *s);

#endif
