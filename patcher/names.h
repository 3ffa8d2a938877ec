/* names.h - Python identifiers and dotted module names, as bytes. */
#ifndef CP_NAMES_H
#define CP_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* [A-Za-z_][A-Za-z0-9_]* over exactly n bytes (ASCII: what Cython mangles). */
bool cp_is_identifier(const char *s, size_t n);

/* Identifiers joined by single dots ("cuda.bindings.cydriver"). */
bool cp_is_dotted_name(const char *s, size_t n);

#endif
