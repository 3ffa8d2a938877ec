/*
 * pep440.h - PEP 440 versions and version specifiers: the order of the
 * releases' versions (12.6.2.post1 after 12.6.2, 13.0.0a0 before 13.0.0)
 * and whether a version satisfies a specifier set (">=12.9.2,<13.0a0",
 * "==12.*", "~=12.9"), as pip decides both.
 */
#ifndef CP_PEP440_H
#define CP_PEP440_H

#include <stdbool.h>
#include <stddef.h>

/* -1, 0 or 1 as a sorts before, with or after b; *ok false (and 0) when
 * either is not a version. */
int cp_pep440_compare(const char *a, const char *b, bool *ok);

/* Whether version v satisfies every specifier of the comma-separated set
 * spec[0, n) (an empty set admits every version); -1 when spec is not a
 * specifier set or v not a version. Pre-releases are admitted only where a
 * specifier names one, as pip does. */
int cp_pep440_satisfies(const char *spec, size_t n, const char *v);

#endif
