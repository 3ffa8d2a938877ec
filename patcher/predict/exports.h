/*
 * exports.h - what a provider extension exports to cimporting modules: the
 * capsules of its __pyx_capi__ (function and variable names, with their
 * signatures), read from the binary. Cython exports each one with
 * __Pyx_ExportFunction / __Pyx_ExportVoidPtr(name, pointer, signature),
 * which calls PyCapsule_New: the calls to that helper carry both strings.
 */
#ifndef CP_EXPORTS_H
#define CP_EXPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include "elf/image.h"

struct cp_export {
	char *name;   /* NULL when the key is a Python string object (variables) */
	char *sig;
	bool variable; /* __Pyx_ExportVoidPtr's, not __Pyx_ExportFunction's */
};

struct cp_exports {
	struct cp_export *v;
	size_t n, cap;
};

struct cp_scan;

cp_status cp_exports_read(const cp_image *img, struct cp_exports *out, cp_error *err);

/* Cython 3.2+ keeps the names and signatures of a module's exports in its
 * string blob, one signature constant per kind (functions, variables) that
 * no import loads: adds those of the provider's scan to out. */
cp_status cp_exports_from_blob(const struct cp_scan *scan, struct cp_exports *out, cp_error *err);
void cp_exports_free(struct cp_exports *e);

/* The exports of one provider file, as `check` reads them and `show
 * --exports` lists them: from the calls that make the capsules, and (Cython
 * 3.2+) from the signature constants of its string blob. Fills out (free it
 * with cp_exports_free, also on failure); fails when the file cannot be
 * read. */
cp_status cp_exports_of_file(const char *file, const cp_rules *rules, struct cp_exports *out, cp_error *err);
const struct cp_export *cp_exports_find(const struct cp_exports *e, const char *name);

#endif
