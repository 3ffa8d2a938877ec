/*
 * repair.h - `cypatch repair`: a wheel in, a repaired wheel out.
 *
 * Every extension member (*.so) that references a mapped layout goes
 * through cp_patch_file; every other member is copied with its compressed
 * bytes untouched; RECORD is rewritten for what changed, and
 * <dist-info>/cypatch.json says what cypatch did. Same input, same bytes.
 */
#ifndef CP_REPAIR_H
#define CP_REPAIR_H

#include <stdbool.h>
#include "cypatch.h"
#include "emit/patch.h"

struct cp_repair_opts {
	const char *layout;     /* legacy, bindings or fallback */
	const char *outdir;     /* -w DIR */
	bool no_fallback, keep_build_id;
	bool no_fsync;          /* rename without waiting for the disk (write.h) */
	bool relax_requires;    /* widen cuda-python / cuda-bindings in METADATA */
	bool keep_sources;      /* leave the Python sources' import statements alone */
};

struct cp_repair_member {
	char *path;
	struct cp_patch_result r;
};

struct cp_repair_result {
	char out[4096];                   /* the wheel written */
	bool untouched;                   /* nothing needed: copied as it was */
	struct cp_repair_member *ext;     /* every *.so member, in order */
	size_t next, capext;
	size_t npatched;
	bool metadata_changed;
	char **sources;                   /* Python sources whose imports were rewritten */
	size_t nsources, capsources;
	int statements, left;             /* import statements rewritten; of other shapes */
};

cp_status cp_repair_wheel(const char *wheel, const cp_rules *rules, const struct cp_repair_opts *o,
			  struct cp_repair_result *res, cp_error *err);
void cp_repair_result_free(struct cp_repair_result *res);

#endif
