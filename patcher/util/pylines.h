/*
 * pylines.h - a Python source cut into logical lines: comments cut,
 * string literals emptied (so that a docstring's text is not read as
 * code), bracketed and backslash-continued lines joined. What both readers
 * of a wheel's Python sources stand on: check's (predict/pystmt.c) and
 * repair's rewrite (repair/pysource.c).
 */
#ifndef CP_PYLINES_H
#define CP_PYLINES_H

#include <stdbool.h>
#include <stddef.h>
#include "cypatch.h"

/* a logical line longer than this is held as over, its text NULL */
#define CP_PYLINE_MAX 16384

struct cp_pyline {
	size_t at;      /* offset of its first physical line (its indent included) */
	size_t end;     /* offset just past its last byte, before the newline that ends it */
	int line;       /* its first physical line's number, from 1 */
	int indent;     /* spaces and tabs before it, each one */
	char *text;     /* comments cut, strings emptied, lines joined; NULL when over */
};

struct cp_pylines {
	struct cp_pyline *v;
	size_t n, cap;
};

/* The logical lines of src that hold more than blanks and comments, in
 * order, into out (freed by cp_pylines_free whatever the result). */
cp_status cp_pylines_read(const char *src, size_t len, struct cp_pylines *out, cp_error *err);
void cp_pylines_free(struct cp_pylines *l);

#endif
