/*
 * verify.c - proof by loading (see cypatch.h).
 *
 * cypatch writes a plan (JSON) from its own scan: per extension, the module
 * to import, its PyInit symbol and that symbol's address in the file (to
 * find where the loader put it), and every function and variable import
 * with its slot and provider in both layouts. The child script
 * (verify/verify_child.py) runs under the interpreter being tested and
 * answers in JSON; this file judges the answer.
 */
#include "cypatch.h"
#include "util/error.h"
#include "elf/image.h"
#include "rules/rules.h"
#include "scan/scan.h"
#include "wheel/wheel.h"
#include "wheel/wheel_name.h"
#include "util/write.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern const char cp_verify_child[];
extern char **environ;

/* The value of the PyInit_<name> symbol the module exports. */
static bool init_symbol(const cp_image *img, const char *modname, uint64_t *value)
{
	size_t i;

	for (i = 0; i < img->nsym; i++)
		if (img->sym[i].dynamic && img->sym[i].defined && !strncmp(img->sym[i].name, "PyInit_", 7) &&
		    !strcmp(img->sym[i].name + 7, modname)) {
			*value = img->sym[i].value;
			return true;
		}
	return false;
}

static json_t *bindings(const cp_scan *s)
{
	json_t *out = json_array();
	size_t i;

	for (i = 0; i < s->nrefs; i++) {
		const struct cp_ref *r = &s->refs[i];
		const char *other;

		if ((r->kind != CP_K_FUNCTION && r->kind != CP_K_VARIABLE) || !r->slot || !r->module || r->layout < 0)
			continue;
		other = cp_rules_map(s->rules, r->module, !r->layout);
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s?, s:I, s:b}", "kind", cp_ref_kind_name(r->kind),
						     "name", r->name, "provider", r->module, "other", other,
						     "slot", (json_int_t)r->slot, "standin",
						     r->kind == CP_K_FUNCTION && cp_scan_stands_in(s, r->name, false)));
	}
	return out;
}

static bool is_import(const struct cp_ref *r)
{
	return r->kind == CP_K_FUNCTION || r->kind == CP_K_VARIABLE;
}

/* Whether the module imports functions or variables from `module`, or
 * some that the scan tied to no module. */
static bool imports_from(const cp_scan *s, const char *module)
{
	size_t j;

	for (j = 0; j < s->nrefs; j++)
		if (is_import(&s->refs[j]) && (!s->refs[j].module || !strcmp(s->refs[j].module, module)))
			return true;
	return false;
}

/* The providers the module imports (PyImport_ImportModule) of which no
 * binding can be proven: it imports functions or variables from one and
 * none has a slot the child can read, and it imports no type (the import
 * itself checks a type's size). A patch that lost its slots looks like
 * that, and so does a module whose slots the scan cannot find (module
 * state). A provider it imports nothing from (cuda-core 1.2.2's
 * type-only `cimport cuda.bindings.driver`, whose __Pyx_ImportType the
 * scan does not read) is proven by the import itself, where the scan saw
 * every import's functions (no note says otherwise: module state's
 * function imports are tied to no module, so none looks like that). */
static json_t *unproven_providers(const cp_scan *s)
{
	json_t *out = json_array();
	size_t i, j;

	for (i = 0; i < s->nrefs; i++) {
		const struct cp_ref *r = &s->refs[i];
		bool bound = false;

		if (r->kind != CP_K_CIMPORT || !cp_ref_is_live(r) || !r->module ||
		    (!s->incomplete[0] && !imports_from(s, r->module)))
			continue;
		for (j = 0; j < s->nrefs && !bound; j++)
			bound = ((is_import(&s->refs[j]) && s->refs[j].slot) || s->refs[j].kind == CP_K_TYPE) &&
				s->refs[j].module && !strcmp(s->refs[j].module, r->module);
		if (!bound)
			json_array_append_new(out, json_string(r->module));
	}
	return out;
}

/* One extension of the plan; *added false when it binds to no mapped module. */
static cp_status plan_extension(const char *file, const char *module, const cp_rules *rules, json_t *exts,
				bool *added, cp_error *err)
{
	cp_image *img = NULL;
	cp_scan *scan = NULL;
	uint64_t init = 0;
	cp_status st = cp_image_open(file, &img, err);

	*added = false;
	if (!st && !cp_scan_is_module(img)) {
		cp_image_close(img);
		return CP_OK;
	}
	if (!st)
		st = cp_scan_run(img, rules, &scan, err);
	/* names the scan could not see: it cannot say what the module binds
	 * (as check says it), nor that it binds nothing */
	if (!st && !scan->layouts_seen && scan->incomplete[0])
		st = cp_fail(err, CP_E_INPUT, "%s: %s", file, scan->incomplete);
	if (!st && scan->layouts_seen) {
		char name[200];

		snprintf(name, sizeof(name), "PyInit_%s", scan->modname);
		if (!init_symbol(img, scan->modname, &init))
			st = cp_fail(err, CP_E_INPUT, "%s: no %s symbol", file, name);
		else
			json_array_append_new(exts, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "module",
							      module ? module : scan->modname, "file", file,
							      "machine", img->arch->name, "triplet", img->arch->triplet,
							      "init", name, "init_value", (json_int_t)init, "bindings",
							      bindings(scan), "unproven", unproven_providers(scan)));
		*added = !st;
	}
	st = cp_image_settle(img, st, err);
	cp_scan_free(scan);
	cp_image_close(img);
	return st;
}

static cp_status mkdirs(char *path, cp_error *err)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return cp_fail(err, CP_E_IO, "%s: cannot create it: %s", path, strerror(errno));
		}
		*p = '/';
	}
	return CP_OK;
}

/* "pkg/sub/mod.cpython-311-x86_64-linux-gnu.so" -> "pkg.sub.mod" */
static void module_of(const char *member, char *out, size_t n)
{
	const char *base = strrchr(member, '/');
	size_t len = strcspn(base ? base + 1 : member, ".") + (size_t)(base ? base + 1 - member : 0), i;

	snprintf(out, n, "%.*s", (int)len, member);
	for (i = 0; out[i]; i++)
		if (out[i] == '/')
			out[i] = '.';
}

/* The wheel unpacked under dir (its names were checked by cp_wheel_open);
 * every extension with mapped references planned. */
static cp_status plan_wheel(const char *path, const char *dir, const cp_rules *rules, json_t *exts,
			    cp_error *err)
{
	struct cp_wheel *w = NULL;
	cp_status st = cp_wheel_open(path, &w, err);
	size_t i;

	for (i = 0; !st && w && i < w->n; i++) {
		char file[8192];
		uint8_t *data;
		size_t len;

		if (w->m[i].dir)
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, w->m[i].name);
		st = mkdirs(file, err);
		if (!st)
			st = cp_wheel_read(w, i, &data, &len, err);
		if (!st) {
			st = cp_write_temp(file, data, len, 0755, file, sizeof(file), err);
			free(data);
		}
		if (!st) {
			char final[8192];

			snprintf(final, sizeof(final), "%s/%s", dir, w->m[i].name);
			st = cp_write_commit(file, final, true, err);
		}
	}
	for (i = 0; !st && w && i < w->n; i++) {
		const char *name = w->m[i].name;
		char file[8192], module[4096];
		bool added;

		if (w->m[i].dir || !strstr(name, ".so"))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, name);
		module_of(name, module, sizeof(module));
		st = plan_extension(file, module, rules, exts, &added, err);
	}
	cp_wheel_close(w);
	return st;
}

/* Runs python -c child plan; its stdout to out, stderr to errf. */
static cp_status run_child(const struct cp_verify_opts *o, const char *plan, const char *out, const char *errf,
			   int *status, bool *timed_out, cp_error *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char *argv[] = { (char *)o->python, "-c", (char *)cp_verify_child, (char *)plan, NULL };
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	long waited = 0;
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawnattr_init(&at);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	rc = posix_spawnp(&pid, o->python, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc)
		return cp_fail(err, CP_E_USAGE, "%s: cannot run it: %s", o->python, strerror(rc));
	*timed_out = false;
	while (waitpid(pid, status, WNOHANG) == 0) {
		if (waited++ * 20 >= (long)o->timeout_s * 1000) {
			kill(-pid, SIGKILL);
			waitpid(pid, status, 0);
			*timed_out = true;
			break;
		}
		nanosleep(&tick, NULL);
	}
	return CP_OK;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int c;

	if (!f)
		return NULL;
	while ((c = fgetc(f)) != EOF) {
		if (n + 2 > cap) {
			char *nb = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!nb)
				break;
			buf = nb;
		}
		buf[n++] = (char)c;
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* The last line of a text, for an error message. */
static const char *last_line(char *text)
{
	char *end;

	if (!text)
		return "no output";
	end = text + strlen(text);
	while (end > text && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	while (end > text && end[-1] != '\n')
		end--;
	return *end ? end : "no output";
}

/* Every import ok, every binding bound, and with gpu the calls counted a device. */
static bool judge(json_t *r, json_t *plan, bool gpu, char *why, size_t n)
{
	json_t *exts = json_object_get(r, "extensions"), *e, *b, *g;
	const char *k;
	size_t i, j;

	if (!json_array_size(exts)) /* make_plan refused a plan without one: the child said nothing */
		return snprintf(why, n, "the import child answered for no extension"), false;
	json_array_foreach(json_object_get(plan, "extensions"), i, e) {
		json_t *u = json_array_get(json_object_get(e, "unproven"), 0);

		/* the child answers the plan's extensions in order */
		if (u && !json_object_get(json_array_get(exts, i), "skipped"))
			return snprintf(why, n, "%s: imports %s, but no binding of it can be proven",
					json_string_value(json_object_get(e, "module")), json_string_value(u)), false;
	}
	json_array_foreach(exts, i, e) {
		json_t *imp = json_object_get(e, "import");

		if (json_object_get(e, "skipped"))
			continue;
		if (json_object_get(imp, "error"))
			return snprintf(why, n, "%s: %s", json_string_value(json_object_get(e, "module")),
					json_string_value(json_object_get(imp, "error"))), false;
		json_array_foreach(json_object_get(e, "bindings"), j, b)
			if (!json_is_true(json_object_get(b, "bound")) && !json_is_true(json_object_get(b, "stood_in")))
				return snprintf(why, n, "%s: %s %s is not bound to its provider",
						json_string_value(json_object_get(e, "module")),
						json_string_value(json_object_get(b, "kind")),
						json_string_value(json_object_get(b, "name"))), false;
	}
	if (!gpu)
		return true;
	json_object_foreach(json_object_get(r, "gpu"), k, g) {
		json_t *count = json_object_get(g, "count");

		if (json_object_get(g, "skipped"))
			continue; /* a call its providers do not make possible */
		if (json_object_get(g, "error"))
			return snprintf(why, n, "%s: %s", k, json_string_value(json_object_get(g, "error"))), false;
		if (json_integer_value(json_object_get(g, "status")))
			return snprintf(why, n, "%s returned %lld", k,
					(long long)json_integer_value(json_object_get(g, "status"))), false;
		if (count && json_integer_value(count) <= 0)
			return snprintf(why, n, "%s counted no device", k), false;
	}
	return true;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

/* The plan the child reads: the extensions to import, where they lie, and
 * whether to call through them on a GPU. */
static cp_status make_plan(const char *path, const char *dir, const cp_rules *rules, bool gpu, json_t *plan,
			   cp_error *err)
{
	json_t *exts = json_array();
	bool added = false;
	cp_status st;

	if (cp_wheel_name_is(path)) {
		st = plan_wheel(path, dir, rules, exts, err);
		json_object_set_new(plan, "root", json_string(dir));
		added = json_array_size(exts) > 0;
	} else {
		char copy[4096], *real = realpath(path, NULL);

		st = plan_extension(path, NULL, rules, exts, &added, err);
		snprintf(copy, sizeof(copy), "%s", real ? real : path);
		json_object_set_new(plan, "root", json_string(dirname(copy)));
		free(real);
	}
	/* as `check` says it (docs/exit-codes.md): a refusal, not a failure */
	if (!st && !added)
		st = cp_fail(err, CP_E_INPUT, "%s: references no module the rules map; nothing to verify", path);
	json_object_set_new(plan, "extensions", exts);
	json_object_set_new(plan, "gpu", json_boolean(gpu));
	return st;
}

/* The child's answer, read from dir: *result, or an error saying why
 * there is none (a crash of the interpreter is an answer: a failed proof). */
static cp_status read_answer(const char *path, const char *dir, const struct cp_verify_opts *o, int status,
			     bool timed_out, json_t **result, cp_error *err)
{
	char out[256], errf[256];
	char *text, *errtext;
	cp_status st = CP_OK;

	snprintf(out, sizeof(out), "%s/out.json", dir);
	snprintf(errf, sizeof(errf), "%s/err.txt", dir);
	text = read_text(out);
	errtext = read_text(errf);
	*result = text ? json_loads(text, 0, NULL) : NULL;
	if (timed_out)
		st = cp_fail(err, CP_E_INPUT, "%s: the import did not finish within %d s", path, o->timeout_s);
	else if (!*result && WIFSIGNALED(status))
		*result = json_pack("{s:s, s:s, s:[], s:i}", "python", o->python, "executable", o->python,
				    "extensions", "signal", WTERMSIG(status));
	else if (!*result)
		st = cp_fail(err, CP_E_INPUT, "%s: %s under %s: %s", path, "the import child failed", o->python,
			     last_line(errtext));
	free(text);
	free(errtext);
	return st;
}

/* An interpreter of another machine cannot load the extensions: that is no
 * failure of theirs, but a wrong --python. The interpreter says its GNU
 * triplet (sysconfig's MULTIARCH); one that does not is not judged here. */
static cp_status machine_matches(const char *path, json_t *result, json_t *plan, const struct cp_verify_opts *o,
				 cp_error *err)
{
	const char *theirs = json_string_value(json_object_get(result, "multiarch"));
	json_t *e = json_array_get(json_object_get(plan, "extensions"), 0);
	const char *ours = json_string_value(json_object_get(e, "machine"));
	const char *triplet = json_string_value(json_object_get(e, "triplet"));

	if (!theirs || !ours || !triplet || !strcmp(theirs, triplet))
		return CP_OK;
	return cp_fail(err, CP_E_INPUT, "%s: an %s extension (%s), and %s runs %s code: give --python an %s interpreter",
		       path, ours, triplet, o->python, theirs, ours);
}

/* An interpreter of another CPython version (or build: 3.14 and the
 * free-threaded 3.14t) imports no extension named for another: each plan
 * file named ".cpython-..." must end in the suffix the interpreter says
 * (EXT_SUFFIX); ".abi3.so" and other names are its import's to judge. */
static cp_status version_matches(const char *path, json_t *result, json_t *plan, const struct cp_verify_opts *o,
				 cp_error *err)
{
	const char *theirs = json_string_value(json_object_get(result, "ext_suffix"));
	json_t *e;
	size_t i;

	if (!theirs)
		return CP_OK;
	json_array_foreach(json_object_get(plan, "extensions"), i, e) {
		const char *file = json_string_value(json_object_get(e, "file")), *base = strrchr(file, '/');
		const char *dot = strstr(base ? base : file, ".cpython-");
		size_t n = strlen(theirs);

		if (!dot || (strlen(dot) == n && !strcmp(dot, theirs)))
			continue;
		return cp_fail(err, CP_E_INPUT, "%s: %s is built for another CPython (%s), and %s imports %s: give --python "
			       "the interpreter it was built for", path, json_string_value(json_object_get(e, "module")),
			       dot, o->python, theirs);
	}
	return CP_OK;
}

/* With --gpu, the calls made: 0 when the extension's providers offer none
 * of the probe's (verify_child.py), and the proof then holds no GPU call. */
static size_t gpu_calls(json_t *result)
{
	json_t *g;
	const char *k;
	size_t n = 0;

	json_object_foreach(json_object_get(result, "gpu"), k, g)
		n += !json_object_get(g, "skipped");
	return n;
}

/* The verdict written into the result: ok, and why not. */
static bool conclude(json_t *result, json_t *plan, const struct cp_verify_opts *o)
{
	char why[1024] = "";
	bool ok = false;

	if (json_object_get(result, "signal")) {
		int sig = (int)json_integer_value(json_object_get(result, "signal"));

		snprintf(why, sizeof(why), "the import child (%s) was killed by signal %d (%s)", o->python, sig,
			 strsignal(sig));
	} else {
		ok = judge(result, plan, o->gpu, why, sizeof(why));
	}
	json_object_set_new(result, "ok", json_boolean(ok));
	json_object_set_new(result, "why", json_string(why));
	return ok;
}

cp_status cp_verify(const char *path, const cp_rules *rules, const struct cp_verify_opts *o, json_t **result,
		    bool *ok, cp_error *err)
{
	char dir[] = "/tmp/cypatch-verify-XXXXXX", plan_path[256], out[256], errf[256];
	json_t *plan = json_object();
	bool timed_out = false;
	int status = 0;
	cp_status st = mkdtemp(dir) ? CP_OK : cp_fail(err, CP_E_IO, "cannot create a temporary directory");

	*result = NULL;
	*ok = false;
	if (!st)
		st = make_plan(path, dir, rules, o->gpu, plan, err);
	snprintf(plan_path, sizeof(plan_path), "%s/plan.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	snprintf(errf, sizeof(errf), "%s/err.txt", dir);
	if (!st && json_dump_file(plan, plan_path, 0))
		st = cp_fail(err, CP_E_IO, "%s: cannot write", plan_path);
	if (!st)
		st = run_child(o, plan_path, out, errf, &status, &timed_out, err);
	if (!st)
		st = read_answer(path, dir, o, status, timed_out, result, err);
	if (!st)
		st = machine_matches(path, *result, plan, o, err);
	if (!st)
		st = version_matches(path, *result, plan, o, err);
	if (!st)
		*ok = conclude(*result, plan, o);
	/* a pass whose GPU part called nothing proves nothing of the GPU */
	if (!st && *ok && o->gpu && !gpu_calls(*result))
		st = cp_fail(err, CP_E_INPUT, "%s: --gpu: it binds nothing through which cuInit, cuDeviceGetCount or "
			     "cudaGetDeviceCount can be called, so no GPU call proves it", path);
	if (st && *result) {
		json_decref(*result);
		*result = NULL;
	}
	json_decref(plan);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return st;
}
