/* emit.h - the output file's bytes, from the input and a plan. */
#ifndef CP_EMIT_H
#define CP_EMIT_H

#include "plan.h"

/*
 * Copies the input, applies the edits and, when the plan appends data,
 * adds the new PT_LOAD: the program header table moves to its start (with
 * one entry more), a section ".cypatch" covers the data (so that strip and
 * readelf see it), and the section header table and its name table are
 * written anew after it. Bytes of the input outside the edits and the ELF
 * header's table fields stay as they were.
 */
cp_status cp_emit(const cp_image *img, const struct cp_plan *plan, uint8_t **out, size_t *outlen,
		  cp_error *err);

/* The name of the section that covers appended data. */
#define CP_SECTION_NAME ".cypatch"

#endif
