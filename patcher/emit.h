/* emit.h - the output file's bytes, from the input and a plan. */
#ifndef CP_EMIT_H
#define CP_EMIT_H

#include "plan.h"

/*
 * Copies the input and applies the edits and the new space's chunks. With
 * new space, the section header table is written again after everything,
 * one entry longer: a section ".cypatch" covers the new space, so that
 * strip and readelf see it; its name table is copied there with the name.
 */
cp_status cp_emit(const cp_image *img, const struct cp_plan *plan, uint8_t **out, size_t *outlen,
		  cp_error *err);

/* The name of the section that covers appended data. */
#define CP_SECTION_NAME ".cypatch"

#endif
