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
#include <time.h>
#include <unistd.h>

const char *cp_stage_name(enum cp_stage s)
{
	static const char *const names[CP_NSTAGES] = { "load", "scan", "plan", "emit",
						       "write", "check", "sync" };

	return s < CP_NSTAGES ? names[s] : "?";
}

/* Adds the time since *t0 to stage s and restarts the clock. */
static void lap(struct cp_patch_result *res, enum cp_stage s, struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->seconds[s] += (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
	*t0 = t1;
}

/* The delta, with the build-id's edit when it is re-signed. */
static cp_status emit_signed(const cp_image *img, struct cp_plan *plan, bool keep_build_id,
			     struct cp_delta *d, bool *resigned, cp_error *err)
{
	cp_status st = cp_emit(img, plan, d, err);

	if (st || keep_build_id)
		return st;
	st = cp_buildid_resign(img, plan, d, resigned, err);
	if (st || !*resigned)
		return st;
	cp_delta_free(d);
	return cp_emit(img, plan, d, err);
}

/* Emit, re-sign, write beside `target`, check, rename. */
static cp_status write_checked(const cp_image *img, const cp_scan *scan, struct cp_plan *plan,
			       const char *target, bool keep_build_id, struct cp_patch_result *res,
			       struct timespec *t0, cp_error *err)
{
	struct cp_delta d;
	struct stat sb;
	char tmp[4200];
	int fd = -1;
	cp_status st;

	memset(&d, 0, sizeof(d));
	if (fstat(img->fd, &sb))
		return cp_fail(err, CP_E_INPUT, "%s: cannot stat", img->path);
	st = emit_signed(img, plan, keep_build_id, &d, &res->build_id, err);
	lap(res, CP_STAGE_EMIT, t0);
	if (!st)
		st = cp_write_open(target, sb.st_mode, tmp, sizeof(tmp), &fd, err);
	if (!st) {
		st = cp_emit_write(img, &d, fd, target, err);
		lap(res, CP_STAGE_WRITE, t0);
		if (!st)
			st = cp_check(img, scan, plan, tmp, &d, err);
		lap(res, CP_STAGE_CHECK, t0);
		if (st)
			cp_write_discard(fd, tmp);
		else
			st = cp_write_close(fd, tmp, target, err);
		if (!st)
			st = cp_write_commit(tmp, target, err);
		lap(res, CP_STAGE_SYNC, t0);
	}
	cp_delta_free(&d);
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
	struct timespec t0;
	cp_status st;

	memset(&plan, 0, sizeof(plan));
	memset(res, 0, sizeof(*res));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	res->fallback = !strcmp(o->layout, "fallback");
	st = cp_image_open(in, &img, err);
	lap(res, CP_STAGE_LOAD, &t0);
	if (!st)
		st = cp_scan_run(img, rules, &scan, err);
	lap(res, CP_STAGE_SCAN, &t0);
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
	lap(res, CP_STAGE_PLAN, &t0);
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
			fputs("  build-id: recomputed from the old one and the bytes written, after emitting\n", o->dry_run);
	} else {
		res->outcome = CP_PATCHED;
		st = write_checked(img, scan, &plan, out, o->keep_build_id, res, &t0, err);
	}
done:
	cp_plan_free(&plan);
	cp_scan_free(scan);
	cp_image_close(img);
	return st;
}
