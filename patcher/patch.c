/*
 * patch.c - the whole pipeline for one file (see patch.h).
 */
#include "patch.h"
#include "buildid.h"
#include "check.h"
#include "emit.h"
#include "error.h"
#include "plan.h"
#include "rules.h"
#include "scan.h"
#include "write.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Emit, re-sign, write beside `target`, check, rename. */
static cp_status write_checked(const cp_image *img, const cp_scan *scan, struct cp_plan *plan,
			       const char *target, bool keep_build_id, bool *resigned, cp_error *err)
{
	uint8_t *out = NULL;
	size_t outlen = 0;
	struct stat sb;
	char tmp[4200];
	cp_status st;

	if (stat(img->path, &sb))
		return cp_fail(err, CP_E_INPUT, "%s: cannot stat", img->path);
	st = cp_emit(img, plan, &out, &outlen, err);
	if (!st && !keep_build_id)
		st = cp_buildid_resign(img, plan, out, outlen, resigned, err);
	if (!st)
		st = cp_write_temp(target, out, outlen, sb.st_mode, tmp, sizeof(tmp), err);
	if (!st) {
		st = cp_check(img, scan, plan, tmp, out, outlen, err);
		if (st)
			unlink(tmp);
		else
			st = cp_write_commit(tmp, target, err);
	}
	free(out);
	return st;
}

static cp_status plan_for(const cp_image *img, const cp_scan *scan, const struct cp_patch_opts *o,
			  struct cp_plan *plan, struct cp_patch_result *res, cp_error *err)
{
	int target = res->fallback ? -1 : cp_rules_layout_index(scan->rules, o->layout);
	cp_status st;

	if (!res->fallback && target < 0)
		return cp_fail(err, CP_E_USAGE, "no layout named '%s' in the rules", o->layout);
	st = res->fallback ? cp_plan_fallback(img, scan, plan, err) : cp_plan_make(img, scan, target, plan, err);
	if (st && plan->inexpressible && !o->no_fallback) {
		/* strings cannot say it; the stub binds to the target at import */
		snprintf(res->covered, sizeof(res->covered), "%s", err->msg);
		res->fallback = true;
		st = cp_plan_fallback(img, scan, plan, err);
	}
	return st;
}

cp_status cp_patch_file(const char *in, const char *out, const cp_rules *rules,
			const struct cp_patch_opts *o, struct cp_patch_result *res, cp_error *err)
{
	cp_image *img = NULL;
	cp_scan *scan = NULL;
	struct cp_plan plan;
	cp_status st;

	memset(&plan, 0, sizeof(plan));
	memset(res, 0, sizeof(*res));
	res->fallback = !strcmp(o->layout, "fallback");
	st = cp_image_open(in, &img, err);
	if (!st)
		st = cp_scan_run(img, rules, &scan, err);
	if (st && img && !cp_scan_is_module(img)) {
		res->outcome = CP_NOT_EXTENSION;
		st = CP_OK;
		goto done;
	}
	if (!st && !scan->layouts_seen) {
		res->outcome = CP_NOTHING_MAPPED;
		goto done;
	}
	if (!st)
		st = plan_for(img, scan, o, &plan, res, err);
	if (st)
		goto done;
	res->nchanged = plan.nchanged;
	res->nedits = plan.nedits;
	res->new_bytes = cp_plan_new_bytes(&plan);
	memcpy(res->layouts, scan->fallback_layout, sizeof(res->layouts));
	if (!plan.nedits && !res->new_bytes) {
		res->outcome = CP_ALREADY;
	} else if (o->dry_run) {
		res->outcome = CP_PLANNED;
		cp_plan_print(&plan, img, o->dry_run);
		if (!o->keep_build_id)
			fputs("  build-id: recomputed over the output after emitting\n", o->dry_run);
	} else {
		res->outcome = CP_PATCHED;
		st = write_checked(img, scan, &plan, out, o->keep_build_id, &res->build_id, err);
	}
done:
	cp_plan_free(&plan);
	cp_scan_free(scan);
	cp_image_close(img);
	return st;
}
