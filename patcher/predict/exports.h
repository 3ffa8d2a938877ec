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

/* struct cp_exports, cp_exports_of_file (what `show --exports` lists) and
 * cp_exports_free are public: cypatch.h. */

struct cp_scan;

cp_status cp_exports_read(const cp_image *img, struct cp_exports *out, cp_error *err);

/* Cython 3.2+ keeps the names and signatures of a module's exports in its
 * string blob, one signature constant per kind (functions, variables) that
 * no import loads: adds those of the provider's scan to out. */
cp_status cp_exports_from_blob(const struct cp_scan *scan, struct cp_exports *out, cp_error *err);

/* The capsules module exports in release rel of the knowledge base (what
 * `show --exports` read from that release's wheel). */
struct cp_releases;
cp_status cp_exports_of_release(const struct cp_releases *kb, size_t rel, const char *module,
				struct cp_exports *out, cp_error *err);

const struct cp_export *cp_exports_find(const struct cp_exports *e, const char *name);

#endif
