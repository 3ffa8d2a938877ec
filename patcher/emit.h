/* emit.h - the output file's bytes, from the input and a plan. */
#ifndef CP_EMIT_H
#define CP_EMIT_H

#include "plan.h"

/*
 * Copies the input and applies the edits and the new space's chunks. With
 * new space, the section header table is written again after everything,
 * with a section over each new space (".cypatch" for read-only data,
 * ".cypatch.text" for code), so that strip and readelf see them; its name
 * table is copied there with the names.
 */
cp_status cp_emit(const cp_image *img, const struct cp_plan *plan, uint8_t **out, size_t *outlen,
		  cp_error *err);

/* The names of the sections that cover appended data and code. */
#define CP_SECTION_NAME ".cypatch"
#define CP_CODE_SECTION_NAME ".cypatch.text"

#endif
