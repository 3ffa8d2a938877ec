/*
 * predict.h - `cypatch check`: the import of an extension (or of each
 * extension of a wheel) against a site-packages directory, predicted from
 * the files alone: every cimported module is resolved the way the import
 * system resolves it (packages, extension suffixes), every cimported
 * function and variable looked up among the provider's exported capsules
 * (exports.h; trampolines followed), fallback stubs honoured, and every
 * failure written as the message CPython would raise.
 *
 * Not predicted: type sizes (__Pyx_ImportType's check), and what a
 * provider's own import would raise (its dependencies, its init code).
 */
#ifndef CP_PREDICT_H
#define CP_PREDICT_H

#include <jansson.h>
#include <stdbool.h>
#include "cypatch.h"

cp_status cp_predict(const char *path, const cp_rules *rules, const char *site, json_t **result, bool *ok,
		     cp_error *err);

#endif
