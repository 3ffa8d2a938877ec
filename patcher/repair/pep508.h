/* pep508.h - one dependency specification (PEP 508), parsed into spans. */
#ifndef CP_PEP508_H
#define CP_PEP508_H

#include <stdbool.h>
#include <stddef.h>

#define CP_PEP508_MAX_SPECS 16

/* Offsets into the parsed text; a span is [start, end). */
struct cp_pep508_span {
	size_t start, end;
};

struct cp_pep508 {
	struct cp_pep508_span name;
	struct cp_pep508_span extras;  /* "[...]" with its brackets; empty when none */
	struct cp_pep508_span specs[CP_PEP508_MAX_SPECS]; /* each "OP VERSION", spaces trimmed */
	size_t nspecs;
	bool url;                      /* "name @ URL": no version specifiers */
	size_t marker;                 /* the ';' that starts the marker; the length when none */
};

/*
 * Parses text[0, n) as PEP 508's `specification` (name, extras, version
 * specifiers with or without parentheses, or a URL, then an environment
 * marker: and/or/parentheses over comparisons of marker variables and
 * quoted strings). False when it is not one (or has more than
 * CP_PEP508_MAX_SPECS specifiers); what pip would refuse is refused.
 */
bool cp_pep508_parse(const char *text, size_t n, struct cp_pep508 *out);

#endif
