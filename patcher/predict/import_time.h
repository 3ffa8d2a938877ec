/*
 * import_time.h - whether a Python-level import of an extension module runs
 * when the module is imported (either machine: the code is read through
 * the arch table).
 *
 * Cython runs the module's top-level statements in its exec function
 * (__pyx_pymod_exec_<name>; PyInit_<name> for single-phase modules). An
 * import call there fails the module's import unless a handler catches it
 * or control can pass it by. Two findings make an import "deferred", each
 * positive evidence read from the code; without one, the import counts as
 * made at import time (so `check` never calls a failure harmless on a
 * guess):
 *
 *  - handled: on the call's NULL branch, a path reaches the except
 *    clause's __Pyx_AddTraceback("<qualified module name>") (the module's
 *    own error exit passes "init <qualified module name>");
 *  - conditional: without passing the call, the exec function's normal
 *    flow (code from which a PyDict_SetItem, a store of a module global, is
 *    still reachable; the error exit makes none) reaches code that also
 *    follows the call (`if TYPE_CHECKING:`, an except clause's body).
 *
 * A call outside the exec function and every function it calls (directly,
 * at any depth) is in a function: deferred too. The exec function is the
 * one its symbol names, else (a stripped multi-phase module) the one
 * Py_mod_exec slot of the PyModuleDef that PyInit_<name> passes to
 * PyModuleDef_Init, when that definition's m_name is the module's. An
 * indirect jump in the exec function, or an exec function that cannot be
 * found, leaves every import at import time. Not read: the
 * exception types an except clause names (any clause that catches counts),
 * and what a `with` block's __exit__ suppresses.
 */
#ifndef CP_IMPORT_TIME_H
#define CP_IMPORT_TIME_H

#include <stdint.h>
#include "util/error.h"
#include "elf/image.h"

enum cp_when {
	CP_WHEN_AT_IMPORT,
	CP_WHEN_IN_FUNCTION,
	CP_WHEN_CONDITIONAL,
	CP_WHEN_HANDLED,
};

typedef struct cp_import_time cp_import_time;

/* Reads the exec function of img, an extension whose PyInit_ names
 * modname. */
cp_status cp_import_time_open(const cp_image *img, const char *modname, cp_import_time **out, cp_error *err);
void cp_import_time_close(cp_import_time *t);

/* When the import made by the call at `call` runs. */
cp_status cp_import_time_of(cp_import_time *t, uint64_t call, enum cp_when *out, cp_error *err);

/* "in a function", "under a condition", "under a handler", or NULL for
 * CP_WHEN_AT_IMPORT. */
const char *cp_when_text(enum cp_when w);

#endif
