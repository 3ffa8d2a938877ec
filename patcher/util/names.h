/* names.h - Python identifiers and dotted module names, as bytes. */
#ifndef CP_NAMES_H
#define CP_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* The one definition of an identifier's bytes, ASCII whatever the locale
 * (what Cython mangles; a non-ASCII Python name is left to CPython):
 * [A-Za-z_] may start one, [A-Za-z0-9_] continue it. */
bool cp_is_ident_start(char c);
bool cp_is_ident_byte(char c);

/* [A-Za-z_][A-Za-z0-9_]* over exactly n bytes (ASCII: what Cython mangles). */
bool cp_is_identifier(const char *s, size_t n);

/* Identifiers joined by single dots ("cuda.bindings.cydriver"). */
bool cp_is_dotted_name(const char *s, size_t n);

/* Whether text[pos, pos + len) is a whole name where it stands: no
 * identifier byte right after it, and none, nor '.' or '/', right before it
 * ("cuda.cuda" in "see cuda.cuda." but not in "ncuda.cuda", "x.cuda.cuda" or
 * "cuda.cudart"). What the string search, the blob's prose and the
 * rewrite all take a module name to be. */
bool cp_name_on_boundary(const char *text, size_t n, size_t pos, size_t len);

/* FNV-1a of the first len bytes of s: the hash of the rules' hash tables. */
size_t cp_name_hash(const char *s, size_t len);

#endif
