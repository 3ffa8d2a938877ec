/*
 * verify.h - `cypatch verify`: proof by loading. The extension (or every
 * patched extension of a wheel, unpacked) is imported by the interpreter
 * under test in a child process with a time limit; each cimported function
 * and variable slot must hold the pointer its provider exports; with gpu,
 * cuInit, cuDeviceGetCount and cudaGetDeviceCount are called through those
 * slots and a device must be counted.
 */
#ifndef CP_VERIFY_H
#define CP_VERIFY_H

#include <jansson.h>
#include <stdbool.h>
#include "cypatch.h"

struct cp_verify_opts {
	const char *python;  /* the interpreter whose site-packages decide */
	bool gpu;
	int timeout_s;
};

/* *result: the child's report plus "ok" and "why"; *ok when it all bound
 * (and, with gpu, the calls succeeded and counted a device). */
cp_status cp_verify(const char *path, const cp_rules *rules, const struct cp_verify_opts *o, json_t **result,
		    bool *ok, cp_error *err);

#endif
