/*
 * patch.c - the whole pipeline for one file (see cypatch.h).
 */
#include "cypatch.h"
#include "emit/buildid.h"
#include "emit/rescan.h"
#include "util/copy_ahead.h"
#include "emit/emit.h"
#include "util/error.h"
#include "plan/plan.h"
#include "releases/releases.h"
#include "rules/rules.h"
#include "scan/scan.h"
#include "util/write.h"

#include <errno.h>
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

/* The output's temporary file, and the copy of the input into it, which
 * runs on a second thread while the scan and the plan do (copy_ahead.h). */
struct output {
	char tmp[4200];
	int fd;                     /* -1: not open */
	struct cp_copy_ahead *copy; /* NULL: not started, or joined */
};

/* Opens the temporary file and starts the copy. Quietly does nothing when
 * either fails: write_checked opens and copies then, and says why. */
static void start_output(const cp_image *img, const char *target, struct output *w)
{
	struct stat sb;
	cp_error ignored;

	if (fstat(img->fd, &sb) || cp_write_open(target, sb.st_mode, w->tmp, sizeof(w->tmp), &w->fd, &ignored)) {
		w->fd = -1;
		return;
	}
	if (cp_copy_ahead_start(img->fd, w->fd, img->size, &w->copy))
		w->copy = NULL;
}

/* Nothing is written: the copy stopped, the temporary file removed. */
static void drop_output(struct output *w)
{
	cp_copy_ahead_cancel(w->copy);
	w->copy = NULL;
	if (w->fd >= 0)
		cp_write_discard(w->fd, w->tmp);
	w->fd = -1;
}

/* The input in the temporary file: the copy joined, or made now. */
static cp_status copy_input(const cp_image *img, struct output *w, const char *target, cp_error *err)
{
	int r;

	if (w->copy) {
		r = cp_copy_ahead_finish(w->copy);
		w->copy = NULL;
	} else {
		r = cp_write_copy_range(img->fd, 0, w->fd, 0, img->size);
	}
	return r ? cp_fail(err, CP_E_IO, "%s: writing the output failed: %s", target, cp_write_strerror(errno)) : CP_OK;
}

/* Emit, re-sign, write beside `target`, check, rename. */
static cp_status write_checked(const cp_image *img, const cp_scan *scan, struct cp_plan *plan,
			       const char *target, const struct cp_patch_opts *o, struct output *w,
			       struct cp_patch_result *res, struct timespec *t0, cp_error *err)
{
	struct cp_delta d;
	struct stat sb;
	cp_status st;

	memset(&d, 0, sizeof(d));
	if (fstat(img->fd, &sb))
		return cp_fail(err, CP_E_INPUT, "%s: cannot stat", img->path);
	st = emit_signed(img, plan, o->keep_build_id, &d, &res->build_id, err);
	lap(res, CP_STAGE_EMIT, t0);
	if (!st && w->fd < 0)
		st = cp_write_open(target, sb.st_mode, w->tmp, sizeof(w->tmp), &w->fd, err);
	if (!st) {
		st = copy_input(img, w, target, err);
		if (!st)
			st = cp_emit_write(&d, w->fd, target, !o->no_fsync, err);
		lap(res, CP_STAGE_WRITE, t0);
		if (!st)
			st = cp_rescan(img, scan, plan, w->tmp, &d, o->full_check, err);
		if (!st && o->tolerate && o->check_tolerance)
			st = cp_tolerance_holds(w->tmp, target, scan->rules, o->releases, o->tolerate, err);
		lap(res, CP_STAGE_CHECK, t0);
		/* the input read whole and unchanged up to here, or no output */
		st = cp_image_settle(img, st, err);
		if (!st) {
			st = cp_write_close(w->fd, w->tmp, target, !o->no_fsync, err);
			w->fd = -1;
		}
		if (!st)
			st = cp_write_commit(w->tmp, target, !o->no_fsync, err);
		lap(res, CP_STAGE_SYNC, t0);
	}
	cp_delta_free(&d);
	return st;
}

/* Whether the stub already in the scanned file stands in for everything s
 * lists. */
static bool stands_in(const cp_scan *scan, const struct cp_standins *s)
{
	size_t i;

	for (i = 0; i < s->nfunc; i++)
		if (!cp_scan_stands_in(scan, s->func[i], false))
			return false;
	for (i = 0; i < s->nmodule; i++)
		if (!cp_scan_stands_in(scan, s->module[i], true))
			return false;
	return true;
}

/* --tolerate-missing: the stub, with the stand-ins the releases of the
 * range need, serving `target` (-1: both layouts); *planned false when
 * they need none (the plan is then made as without the option). */
static cp_status plan_tolerant(const cp_image *img, const cp_scan *scan, const struct cp_patch_opts *o, int target,
			       struct cp_plan *plan, struct cp_patch_result *res, bool *planned, cp_error *err)
{
	bool *pick = calloc(o->releases->nrel + 1, sizeof(*pick));
	struct cp_standins s;
	cp_status st;
	size_t i;

	*planned = false;
	if (!pick)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	if (cp_releases_pick(o->releases, "--tolerate-missing", o->tolerate, pick, err)) {
		free(pick);
		return err->code;
	}
	for (i = 0; o->tolerate_major && i < o->releases->nrel; i++) /* a tree never imported under the others */
		pick[i] = pick[i] && strtoul(o->releases->rel[i].version, NULL, 10) == o->tolerate_major;
	st = cp_plan_standins(img, scan, o->releases, pick, &s, err);
	free(pick);
	if (st || (!s.nfunc && !s.nmodule))
		return st;
	*planned = true;
	res->fallback = true;
	res->standin_funcs = s.nfunc;
	res->standin_modules = s.nmodule;
	if (scan->fallback && !stands_in(scan, &s))
		st = cp_fail(err, CP_E_INPUT, "%s: already patched by cypatch's stub, without the stand-ins %s needs; "
			     "patch the original instead", img->path, o->tolerate);
	if (!st)
		st = cp_plan_fallback(img, scan, target, &s, plan, err);
	cp_standins_free(&s);
	return st;
}

static cp_status plan_for(const cp_image *img, const cp_scan *scan, const struct cp_patch_opts *o,
			  struct cp_plan *plan, struct cp_patch_result *res, cp_error *err)
{
	int target = res->fallback ? -1 : cp_rules_layout_index(scan->rules, o->layout);
	bool planned = false;
	cp_status st;

	if (!res->fallback && target < 0)
		return cp_fail(err, CP_E_USAGE, "no layout named '%s' in the rules", o->layout);
	st = o->tolerate ? plan_tolerant(img, scan, o, target, plan, res, &planned, err) : CP_OK;
	if (st || planned)
		return st;
	st = res->fallback ? cp_plan_fallback(img, scan, -1, NULL, plan, err) : cp_plan_make(img, scan, target, plan, err);
	if (st && plan->inexpressible && !o->no_fallback) {
		/* strings cannot say it; the stub binds to the target at import,
		 * and owes nothing under the other layout */
		snprintf(res->covered, sizeof(res->covered), "%s", err->msg);
		res->fallback = true;
		st = cp_plan_fallback(img, scan, target, NULL, plan, err);
	}
	return st;
}

/* What a plan comes to: nothing to do, a dry run's listing, or the
 * output written and checked. */
static cp_status carry_out(const cp_image *img, const cp_scan *scan, struct cp_plan *plan, const char *out,
			   const struct cp_patch_opts *o, struct output *w, struct cp_patch_result *res,
			   struct timespec *t0, cp_error *err)
{
	res->nchanged = plan->nchanged;
	res->nedits = plan->nedits;
	res->new_bytes = cp_plan_new_bytes(plan);
	memcpy(res->layouts, scan->fallback_layout, sizeof(res->layouts));
	if (!plan->nedits && !res->new_bytes) {
		res->outcome = CP_ALREADY;
		return CP_OK;
	}
	if (o->dry_run) {
		res->outcome = CP_PLANNED;
		cp_plan_print(plan, img, o->dry_run);
		if (!o->keep_build_id)
			fputs("  build-id: recomputed from the old one and the bytes written, after emitting\n", o->dry_run);
		return CP_OK;
	}
	res->outcome = CP_PATCHED;
	return write_checked(img, scan, plan, out, o, w, res, t0, err);
}

/* The scan, or none where the module's bytes alone show that it maps
 * nothing (--full-check reads its code all the same). */
static cp_status scan_unless_nothing(const cp_image *img, const cp_rules *rules, const struct cp_patch_opts *o,
				     cp_scan **scan, bool *nothing, cp_error *err)
{
	cp_status st = o->full_check ? CP_OK : cp_scan_maps_nothing(img, rules, nothing, err);

	if (st || *nothing)
		return st;
	return cp_scan_run_cores(img, rules, o->walk_cores, scan, err);
}

cp_status cp_patch_file(const char *in, const char *out, const cp_rules *rules,
			const struct cp_patch_opts *o, struct cp_patch_result *res, cp_error *err)
{
	cp_image *img = NULL;
	cp_scan *scan = NULL;
	struct cp_plan plan;
	struct output w = { "", -1, NULL };
	struct timespec t0;
	bool nothing = false;
	cp_status st;

	memset(&plan, 0, sizeof(plan));
	memset(res, 0, sizeof(*res));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	res->fallback = !strcmp(o->layout, "fallback");
	st = cp_image_open(in, &img, err);
	if (!st && !o->dry_run)
		st = cp_write_may_replace(out, err);
	if (!st && !o->dry_run)
		start_output(img, out, &w);
	lap(res, CP_STAGE_LOAD, &t0);
	if (!st)
		st = scan_unless_nothing(img, rules, o, &scan, &nothing, err);
	lap(res, CP_STAGE_SCAN, &t0);
	if (st && img && !cp_scan_is_module(img)) {
		res->outcome = CP_NOT_EXTENSION;
		st = CP_OK;
		goto done;
	}
	if (!st && nothing) {
		res->outcome = CP_NOTHING_MAPPED;
		goto done;
	}
	/* "needs nothing" is a finding too: not made on what the scan could not see */
	if (!st && scan->incomplete[0])
		st = cp_fail(err, CP_E_INPUT, "%s: %s", in, scan->incomplete);
	if (!st && !scan->layouts_seen) {
		res->outcome = CP_NOTHING_MAPPED;
		goto done;
	}
	if (!st)
		st = plan_for(img, scan, o, &plan, res, err);
	lap(res, CP_STAGE_PLAN, &t0);
	if (st)
		goto done;
	st = carry_out(img, scan, &plan, out, o, &w, res, &t0, err);
done:
	/* a finding on bytes that changed meanwhile is no finding (before
	 * here, the output is renamed only when the input held still) */
	st = cp_image_settle(img, st, err);
	drop_output(&w);
	cp_plan_free(&plan);
	cp_scan_free(scan);
	cp_image_close(img);
	return st;
}
