/*
 * repair.c - a wheel through cypatch (see cypatch.h): what changes.
 *
 * Extensions are unpacked into a private directory beside the output (the
 * patcher maps files), patched there, and read back, on every core at
 * once; sources and METADATA are rewritten in memory. Large libraries are
 * bet not to be extensions and read on a second thread meanwhile. The
 * archive is written by repair_write.c.
 */
#include "repair/repair_job.h"
#include "util/cleanup_on_signal.h"
#include "util/cores.h"
#include "util/error.h"
#include "repair/pysource.h"
#include "rules/rules.h"
#include "predict/import_chain.h"
#include "predict/requirement.h"
#include "repair/requires.h"
#include "wheel/wheel.h"
#include "wheel/wheel_name.h"
#include "util/write.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* A shared object this large whose first MiB holds no "PyInit_" is bet not
 * to be an extension: the whole read that settles it (RECORD, PyInit_)
 * runs on a second thread while the archive is written, and a lost bet
 * writes the archive again. A 1 GB library is then read and copied at the
 * same time rather than one after the other (docs/performance.md). */
#define BET_BYTES (64ull << 20)
#define PROBE_BYTES (1u << 20)

static bool is_shared_object(const char *name)
{
	size_t n = strlen(name);

	return (n > 3 && !strcmp(name + n - 3, ".so")) || strstr(name, ".so.");
}

bool cp_repair_is_extension(const struct cp_wheel_member *m)
{
	return !m->dir && is_shared_object(m->name);
}

static cp_status slurp(const char *path, uint8_t **data, size_t *len, cp_error *err)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	size_t got = 0;

	*data = NULL;
	if (!f || fstat(fileno(f), &sb) || !(*data = malloc((size_t)sb.st_size + 1)) ||
	    (got = fread(*data, 1, (size_t)sb.st_size, f)) != (size_t)sb.st_size) {
		if (f)
			fclose(f);
		free(*data);
		*data = NULL;
		return cp_fail(err, CP_E_IO, "%s: cannot read it back", path);
	}
	fclose(f);
	*len = got;
	return CP_OK;
}

/* An error about a file in the private directory, told about the member. */
static cp_status about_member(struct job *j, cp_error *err, const char *tmp, size_t i, cp_status st)
{
	return cp_fail_about_member(err, st, tmp, j->w->path, j->w->m[i].name);
}

/* Member i unpacked (through z, a reader of the wheel) into the private
 * directory, in pieces (a scratch file, removed below, needs no fsync, and
 * a 1 GiB library no 1 GiB buffer), and searched for "PyInit_" on the way. */
static cp_status unpack(struct job *j, zip_t *z, size_t i, const char *path, bool *module, cp_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	cp_status st;

	if (fd < 0)
		return cp_fail(err, CP_E_IO, "%s: cannot write there: %s", j->dir, cp_write_strerror(errno));
	st = cp_wheel_extract(j->w, z, i, fd, "PyInit_", module, err);
	if (close(fd) && !st)
		st = cp_fail(err, CP_E_IO, "%s: cannot write there: %s", j->dir, cp_write_strerror(errno));
	return st;
}

/* The bets placed (BET_BYTES): each large shared object's first MiB read. */
static cp_status place_bets(struct job *j)
{
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < j->w->n; i++) {
		bool head = true;

		if (cp_repair_is_extension(&j->w->m[i]) && j->w->m[i].size >= BET_BYTES)
			st = cp_wheel_head_contains(j->w, i, PROBE_BYTES, "PyInit_", &head, j->err);
		j->bet[i] = !st && !head;
	}
	return st;
}

/* The scratch names of worker k (the private directory's in-K.so, out-K.so). */
static void scratch(const struct job *j, size_t k, char *in, char *out, size_t n)
{
	snprintf(in, n, "%s/in-%zu.so", j->dir, k);
	snprintf(out, n, "%s/out-%zu.so", j->dir, k);
}

/* Member i patched by worker k (reading the wheel through z) into x, its
 * new bytes into j->data[i]. */
static cp_status patch_member(struct job *j, zip_t *z, size_t k, size_t i, struct cp_repair_member *x,
			      cp_error *err)
{
	struct cp_patch_opts po;
	char in[4200], out[4200];
	bool module = false;
	cp_status st = CP_OK;

	scratch(j, k, in, out, sizeof(in));
	/* An extension exports PyInit_<name>, so its bytes hold "PyInit_":
	 * what lacks them is read once, for RECORD, and its scratch copy
	 * removed (a bet one, a 1 GB libcudf, is read by the settler and never
	 * written out). */
	if (!j->bet[i])
		st = unpack(j, z, i, in, &module, err);
	if (st || j->bet[i] || !module) {
		x->r.outcome = CP_NOT_EXTENSION;
		unlink(in);
		return st;
	}
	memset(&po, 0, sizeof(po));
	po.layout = j->o->layout;
	po.no_fallback = j->o->no_fallback;
	po.keep_build_id = j->o->keep_build_id;
	po.no_fsync = true; /* a scratch file, read back and removed */
	po.full_check = j->o->full_check;
	po.walk_cores = j->walk_cores;
	po.tolerate = j->o->tolerate;
	po.tolerate_major = cp_chain_tree_major(j->w, j->w->m[i].name, NULL);
	po.releases = j->o->kb;
	st = cp_patch_file(in, out, j->rules, &po, &x->r, err);
	if (!st && x->r.outcome == CP_PATCHED)
		st = slurp(out, &j->data[i], &j->len[i], err);
	if (!st && j->data[i])
		j->packed[i] = cp_deflate(j->data[i], j->len[i]); /* here, on this worker's core */
	unlink(in);
	unlink(out);
	return st ? about_member(j, err, in, i, st) : CP_OK;
}

/*
 * The extensions patched on every core, at most MAX_WORKERS at once: each
 * worker takes the next extension, the largest first (so that no large one
 * is left to run alone at the end), reads the wheel through its own reader
 * and writes its own scratch names; each extension's result has its own
 * slot. Once one fails, only the extensions before it in the wheel's order
 * are still taken, and the first failure in the wheel's order is the one
 * told, as patching them one at a time would (every extension before it is
 * finished).
 */
#define MAX_WORKERS 8

struct task {
	size_t member;   /* index into the wheel */
	size_t slot;     /* index into res->ext */
	bool done;
	cp_status st;
	cp_error err;
};

struct pool {
	struct job *j;
	struct task *task;
	size_t *order;           /* the tasks, largest member first */
	size_t ntask;
	atomic_size_t next;      /* into order */
	atomic_size_t failed;    /* the first task failed, in the wheel's order, or SIZE_MAX */
};

struct worker {
	struct pool *p;
	size_t k;
	zip_t *z;        /* its reader: worker 0, in the calling thread, uses the wheel's own */
	pthread_t thread;
	bool running;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->p;
	size_t k, t;

	while ((k = atomic_fetch_add(&p->next, 1)) < p->ntask) {
		struct task *x = &p->task[t = p->order[k]];
		size_t first;

		if (t > atomic_load(&p->failed))
			continue; /* after a failure: not told, not needed */
		x->st = patch_member(p->j, w->z, w->k, x->member, &p->j->res->ext[x->slot], &x->err);
		x->done = true;
		first = atomic_load(&p->failed);
		while (x->st && t < first && !atomic_compare_exchange_weak(&p->failed, &first, t))
			;
	}
	return NULL;
}

/* A task and the size of its member, to order them by. */
struct by_size {
	uint64_t size;
	size_t task;
};

static int larger_first(const void *x, const void *y)
{
	const struct by_size *a = x, *b = y;

	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->task < b->task ? -1 : a->task > b->task;
}

/* p->order: the tasks, the largest member first. */
static cp_status order_tasks(struct job *j, struct pool *p)
{
	struct by_size *v = malloc((p->ntask + 1) * sizeof(*v));
	size_t t;

	p->order = malloc((p->ntask + 1) * sizeof(*p->order));
	if (!v || !p->order) {
		free(v);
		return cp_fail(j->err, CP_E_INTERNAL, "out of memory");
	}
	for (t = 0; t < p->ntask; t++) {
		v[t].size = j->w->m[p->task[t].member].size;
		v[t].task = t;
	}
	qsort(v, p->ntask, sizeof(*v), larger_first);
	for (t = 0; t < p->ntask; t++)
		p->order[t] = v[t].task;
	free(v);
	return CP_OK;
}

/* One result slot per extension, in the wheel's order, and its task. */
static cp_status list_tasks(struct job *j, struct pool *p)
{
	size_t i;

	p->task = calloc(j->w->n + 1, sizeof(*p->task));
	if (!p->task)
		return cp_fail(j->err, CP_E_INTERNAL, "out of memory");
	for (i = 0; i < j->w->n; i++) {
		if (!cp_repair_is_extension(&j->w->m[i]))
			continue;
		if (CP_GROW(j->res->ext, j->res->capext, j->res->next + 1))
			return cp_fail(j->err, CP_E_INTERNAL, "out of memory");
		memset(&j->res->ext[j->res->next], 0, sizeof(j->res->ext[0]));
		if (!(j->res->ext[j->res->next].path = strdup(j->w->m[i].name)))
			return cp_fail(j->err, CP_E_INTERNAL, "out of memory");
		p->task[p->ntask].member = i;
		p->task[p->ntask++].slot = j->res->next++;
	}
	return CP_OK;
}

static size_t count_workers(size_t ntask, unsigned cores)
{
	size_t n = cores;

	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	return n < ntask ? n : (ntask ? ntask : 1);
}

/* Workers 1.. on threads of their own (each with its own reader and its
 * scratch names registered first); those that cannot start are left out. */
static void start_workers(struct pool *p, struct worker *w, size_t n)
{
	char in[4200], out[4200];
	cp_error ignored;
	size_t k;

	for (k = 1; k < n; k++) {
		w[k].p = p;
		w[k].k = k;
		scratch(p->j, k, in, out, sizeof(in));
		if (cp_wheel_reader(p->j->w, &w[k].z, &ignored))
			break;
		cp_cleanup_add(in, false);
		cp_cleanup_add(out, false);
		w[k].running = !cp_cleanup_thread(&w[k].thread, work, &w[k]);
		if (!w[k].running) {
			zip_discard(w[k].z);
			cp_cleanup_remove(in);
			cp_cleanup_remove(out);
			break;
		}
	}
}

static void stop_workers(struct pool *p, struct worker *w, size_t n)
{
	char in[4200], out[4200];
	size_t k;

	for (k = 1; k < n && w[k].running; k++) {
		pthread_join(w[k].thread, NULL);
		zip_discard(w[k].z);
		scratch(p->j, k, in, out, sizeof(in));
		cp_cleanup_remove(in);
		cp_cleanup_remove(out);
	}
}

/* The failure told, and the result slots after it dropped: what patching
 * one at a time would have left. */
static void fail_at(struct job *j, const struct task *t)
{
	*j->err = t->err;
	while (j->res->next > t->slot + 1)
		free(j->res->ext[--j->res->next].path);
}

static cp_status patch_extensions(struct job *j)
{
	struct pool p = { j, NULL, NULL, 0, 0, SIZE_MAX };
	struct worker w[MAX_WORKERS];
	cp_status st = list_tasks(j, &p);
	unsigned cores = cp_cores();
	size_t n = count_workers(p.ntask, cores), t;

	/* each worker's share of the cores, for its code walks */
	j->walk_cores = cores / n ? (unsigned)(cores / n) : 1;
	if (!st)
		st = order_tasks(j, &p);

	memset(w, 0, sizeof(w));
	if (!st) {
		w[0].p = &p;
		w[0].z = j->w->zip;
		start_workers(&p, w, n);
		work(&w[0]);
		stop_workers(&p, w, n);
	}
	for (t = 0; !st && t < p.ntask && p.task[t].done; t++) {
		st = p.task[t].st;
		if (st)
			fail_at(j, &p.task[t]);
		else
			j->res->npatched += j->res->ext[p.task[t].slot].r.outcome == CP_PATCHED;
	}
	free(p.task);
	free(p.order);
	return st;
}

static bool is_source(const struct cp_wheel_member *m)
{
	size_t n = strlen(m->name);

	return !m->dir && n > 3 && !strcmp(m->name + n - 3, ".py");
}

/* Import statements of mapped modules in the wheel's Python sources. */
static cp_status rewrite_sources(struct job *j)
{
	cp_status st = CP_OK;
	size_t i;

	for (i = 0; !st && i < j->w->n; i++) {
		struct cp_pysource_counts c;
		uint8_t *text;
		char *out = NULL;
		size_t len, outlen;

		if (!is_source(&j->w->m[i]) || (st = cp_wheel_read(j->w, i, &text, &len, j->err)))
			continue;
		if (cp_rules_mentioned(j->rules, (const char *)text, len))
			st = cp_pysource_rewrite((const char *)text, len, j->rules, j->o->layout, &out, &outlen, &c,
						 j->err);
		free(text);
		if (st || !out)
			continue;
		if (c.unhandled) {
			free(out);
			return cp_fail(j->err, CP_E_INPUT, "%s: %s line %d: `%s` imports from the %s layout, and "
				       "cypatch has no rewrite of it for the %s layout%s%s",
				       j->w->path, j->w->m[i].name, c.first_line, c.first,
				       j->rules->layout[c.first_layout],
				       j->rules->layout[!c.first_layout],
				       strcmp(j->o->layout, "fallback") ? "" : ", which --target-layout fallback must serve too",
				       c.unhandled > 1 ? " (nor of later lines like it)" : "");
		}
		j->res->left += c.left;
		if (!c.rewritten) {
			free(out);
			continue;
		}
		j->res->statements += c.rewritten;
		j->data[i] = (uint8_t *)out;
		j->len[i] = outlen;
		if (CP_GROW(j->res->sources, j->res->capsources, j->res->nsources + 1) ||
		    !(j->res->sources[j->res->nsources++] = strdup(j->w->m[i].name)))
			st = cp_fail(j->err, CP_E_INTERNAL, "out of memory");
	}
	return st;
}

/* What check cannot predict for the output keeps the requirement as it
 * was, and says why (the file it read, path, named as the output). */
static void keep_requires(struct job *j, const char *path, const cp_error *why)
{
	const char *tmp = strstr(why->msg, path);
	char *o = j->res->requires_kept;
	int n = (int)sizeof(j->res->requires_kept) - 1;

	size_t k = tmp ? (size_t)snprintf(o, (size_t)n + 1, "%.*s%s%s", (int)(tmp - why->msg), why->msg,
					  j->res->out, tmp + strlen(path))
		       : (size_t)snprintf(o, (size_t)n + 1, "%s", why->msg);

	if (k > (size_t)n) /* cut at the field's size: still the message's start */
		o[n] = '\0';
}

/* Whether METADATA has a Requires-Dist line on cuda-python or cuda-bindings. */
static bool names_ours(const char *meta, size_t len)
{
	struct cp_requires_dist r;
	size_t pos = 0;

	while (cp_requires_dist_next(meta, len, &pos, &r))
		if (r.ours)
			return true;
	return false;
}

cp_status cp_repair_requires(struct job *j, const char *path, bool *again)
{
	struct cp_release_verdict *v = NULL;
	cp_error why = { CP_OK, "" };
	char where[4300], *out = NULL;
	size_t n, len = 0, outlen, at, kept = 0;
	uint8_t *meta = NULL;
	bool changed = false;
	cp_status st;

	*again = false;
	st = cp_wheel_read_metadata(j->w, &at, &meta, &len, where, sizeof(where), j->err);
	if (st || !names_ours((const char *)meta, len)) { /* nothing to predict for */
		free(meta);
		return st;
	}
	if (cp_release_verdicts(path, j->res->out, j->rules, j->o->kb, &v, &n, &why)) {
		keep_requires(j, path, &why);
		free(meta);
		return CP_OK;
	}
	st = cp_requires_rewrite((const char *)meta, len, v, n, where, &out, &outlen, &changed, &kept, j->err);
	if (!st && kept)
		snprintf(j->res->requires_kept, sizeof(j->res->requires_kept), "%zu line%s under which the wheel binds "
			 "under no release cypatch knows (rules/releases.txt) of the CUDA majors %s", kept,
			 kept == 1 ? "" : "s", kept == 1 ? "it admits" : "they admit");
	free(meta);
	free(v);
	if (st || !changed) {
		free(out);
		return st;
	}
	free(j->data[at]);
	j->data[at] = (uint8_t *)out;
	j->len[at] = outlen;
	j->res->metadata_changed = *again = true;
	return CP_OK;
}

static const char *outcome_name(enum cp_patch_outcome o)
{
	static const char *const names[] = { "patched", "planned", "already", "no-mapped-reference",
					     "not-an-extension" };

	return names[o];
}

/* <dist-info>/cypatch.json: what was done, reproducibly (no time, no path). */
cp_status cp_repair_note(struct job *j)
{
	json_t *doc = json_object(), *files = json_array();
	size_t i;

	free(j->note); /* a lost bet makes it again */
	free(j->note_name);
	j->note_name = NULL;
	json_object_set_new(doc, "cypatch", json_string(CYPATCH_VERSION));
	json_object_set_new(doc, "target_layout", json_string(j->o->layout));
	json_object_set_new(doc, "requires_rewritten", json_boolean(j->res->metadata_changed));
	if (j->o->tolerate) /* only then: notes of repairs without it stay as they were */
		json_object_set_new(doc, "tolerate_missing", json_string(j->o->tolerate));
	for (i = 0; i < j->res->next; i++) {
		const struct cp_repair_member *x = &j->res->ext[i];

		json_array_append_new(files, json_pack("{s:s, s:s, s:b, s:I, s:b}", "path", x->path, "outcome",
						       outcome_name(x->r.outcome), "fallback_stub", x->r.fallback,
						       "references", (json_int_t)x->r.nchanged, "build_id_recomputed",
						       x->r.build_id));
		if (x->r.standin_funcs + x->r.standin_modules)
			json_object_set_new(json_array_get(files, json_array_size(files) - 1), "stand_ins",
					    json_pack("{s:I, s:I}", "functions", (json_int_t)x->r.standin_funcs, "modules",
						      (json_int_t)x->r.standin_modules));
	}
	json_object_set_new(doc, "extensions", files);
	files = json_array();
	for (i = 0; i < j->res->nsources; i++)
		json_array_append_new(files, json_string(j->res->sources[i]));
	json_object_set_new(doc, "python_sources", files);
	json_object_set_new(doc, "import_statements_rewritten", json_integer(j->res->statements));
	json_object_set_new(doc, "import_lines_left", json_integer(j->res->left));
	files = json_array();
	for (i = 0; i < j->w->n; i++) /* with --drop-signature; without it, refused */
		if (cp_wheel_is_signature(j->w, i))
			json_array_append_new(files, json_string(j->w->m[i].name));
	if (json_array_size(files))
		json_object_set_new(doc, "signatures_dropped", files);
	else
		json_decref(files);
	j->note = (uint8_t *)json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (!j->note || asprintf(&j->note_name, "%s/cypatch.json", j->w->dist_info) < 0)
		return cp_fail(j->err, CP_E_INTERNAL, "out of memory");
	j->note_len = strlen((char *)j->note);
	return CP_OK;
}

/* RECORD for the new members and the note. */
cp_status cp_repair_record(struct job *j, uint8_t **rec, size_t *rec_len)
{
	struct cp_record r; /* the input's stays: the settler reads it meanwhile */
	cp_status st = cp_record_copy(&r, &j->w->record, j->err);
	size_t i;

	for (i = 0; !st && i < j->w->n; i++)
		if (j->data[i] && i != j->w->record_at)
			st = cp_record_set(&r, j->w->m[i].name, j->data[i], j->len[i], j->err);
	if (!st)
		st = cp_record_set(&r, j->note_name, j->note, j->note_len, j->err);
	if (!st && !(*rec = (uint8_t *)cp_record_format(&r, rec_len)))
		st = cp_fail(j->err, CP_E_INTERNAL, "out of memory");
	cp_record_free(&r);
	return st;
}

static void *settle(void *arg)
{
	struct job *j = arg;
	struct settler *s = &j->s;
	bool module;
	size_t i;

	for (i = 0; !s->st && i < j->w->n; i++) {
		if (!j->bet[i])
			continue;
		s->st = cp_wheel_contains_in(j->w, s->z, i, "PyInit_", &module, &s->err);
		j->lost[i] = !s->st && module;
		s->lost |= j->lost[i];
	}
	return NULL;
}

static bool betting(const struct job *j)
{
	size_t i;

	for (i = 0; i < j->w->n; i++)
		if (j->bet[i])
			return true;
	return false;
}

/* The bets settled on a second thread, through its own libzip handle,
 * while the extensions are patched and the archive written; with no second
 * reader or thread, cp_repair_settle settles them itself. */
static void start_settler(struct job *j)
{
	cp_error ignored;

	if (!betting(j) || cp_wheel_reader(j->w, &j->s.z, &ignored))
		return;
	j->s.running = !cp_cleanup_thread(&j->s.thread, settle, j);
	if (!j->s.running) {
		zip_discard(j->s.z);
		j->s.z = NULL;
	}
}

cp_status cp_repair_settle(struct job *j, bool *lost, cp_error *err)
{
	if (j->s.running) {
		pthread_join(j->s.thread, NULL);
		zip_discard(j->s.z);
		j->s.z = NULL;
		j->s.running = false;
	} else if (betting(j)) {
		j->s.z = j->w->zip;
		settle(j);
		j->s.z = NULL;
	}
	*lost = j->s.lost;
	if (j->s.st)
		*err = j->s.err;
	return j->s.st;
}

cp_status cp_repair_pay(struct job *j)
{
	cp_status st = CP_OK;
	size_t i, k;

	for (i = 0; !st && i < j->w->n; i++) {
		j->bet[i] = false;
		/* a member's result slot, by name: once per lost bet */
		for (k = 0; j->lost[i] && k < j->res->next; k++)
			if (!strcmp(j->res->ext[k].path, j->w->m[i].name) &&
			    !(st = patch_member(j, j->w->zip, 0, i, &j->res->ext[k], j->err)))
				j->res->npatched += j->res->ext[k].r.outcome == CP_PATCHED;
		j->lost[i] = false;
	}
	j->s.lost = false;
	return st;
}

bool cp_repair_untouched(const struct job *j)
{
	return !j->res->npatched && !j->res->metadata_changed && !j->res->nsources;
}

/* The names a file in the private directory can have, unpacked or
 * written, and then the directory (cleanup_on_signal.h): a signal removes
 * each, whether or not it exists by then, then the directory. The
 * patcher's temporary beside out.so registers itself (write.c). */
static const char *const scratch_names[] = { "in-0.so", "out-0.so", "changed.zip" };
#define NSCRATCH (sizeof(scratch_names) / sizeof(scratch_names[0]))

static void register_dir(struct job *j)
{
	char path[4200];
	size_t i;

	cp_cleanup_add(j->dir, true);
	for (i = 0; i < NSCRATCH; i++) {
		snprintf(path, sizeof(path), "%s/%s", j->dir, scratch_names[i]);
		cp_cleanup_add(path, false);
	}
}

static void unregister_dir(struct job *j)
{
	char path[4200];
	size_t i;

	if (!j->dir[0])
		return;
	for (i = 0; i < NSCRATCH; i++) {
		snprintf(path, sizeof(path), "%s/%s", j->dir, scratch_names[i]);
		cp_cleanup_remove(path);
	}
	cp_cleanup_remove(j->dir);
}

static void cleanup(struct job *j)
{
	cp_error ignored;
	size_t i;
	bool lost;

	cp_repair_drop_output(j);
	if (j->s.running)
		cp_repair_settle(j, &lost, &ignored);
	for (i = 0; j->w && i < j->w->n; i++) {
		if (j->data)
			free(j->data[i]);
		if (j->packed)
			cp_deflated_free(j->packed[i]);
	}
	free(j->data);
	free(j->packed);
	free(j->len);
	free(j->bet);
	free(j->lost);
	free(j->group);
	free(j->note);
	free(j->note_name);
	if (j->dir[0])
		rmdir(j->dir);
	unregister_dir(j);
	cp_wheel_close(j->w);
}

static cp_status alloc_job(struct job *j)
{
	size_t n = j->w->n;

	j->out.fd = -1;
	j->data = calloc(n, sizeof(*j->data));
	j->packed = calloc(n, sizeof(*j->packed));
	j->len = calloc(n, sizeof(*j->len));
	j->bet = calloc(n, sizeof(*j->bet));
	j->lost = calloc(n, sizeof(*j->lost));
	j->group = calloc(n, sizeof(*j->group));
	if (!j->data || !j->packed || !j->len || !j->bet || !j->lost || !j->group)
		return cp_fail(j->err, CP_E_INTERNAL, "out of memory");
	if ((size_t)snprintf(j->dir, sizeof(j->dir), "%s/.cypatch-XXXXXX", j->o->outdir) < sizeof(j->dir)) {
		sigset_t old;
		bool made;
		int saved;

		cp_cleanup_hold(&old); /* registered before a signal is taken */
		made = mkdtemp(j->dir) != NULL;
		saved = errno;
		if (made)
			register_dir(j);
		cp_cleanup_release(&old);
		if (!made) {
			j->dir[0] = '\0';
			return cp_fail(j->err, CP_E_IO, "%s: cannot write there: %s", j->o->outdir, strerror(saved));
		}
	}
	return CP_OK;
}

cp_status cp_repair_wheel(const char *wheel, const cp_rules *rules, const struct cp_repair_opts *o,
			  struct cp_repair_result *res, cp_error *err)
{
	struct job j;
	char copy[4096];
	cp_status st;

	memset(&j, 0, sizeof(j));
	memset(res, 0, sizeof(*res));
	j.o = o;
	j.rules = rules;
	j.res = res;
	j.err = err;
	j.out.fd = -1;
	snprintf(copy, sizeof(copy), "%s", wheel);
	if ((size_t)snprintf(res->out, sizeof(res->out), "%s/%s", o->outdir, basename(copy)) >= sizeof(res->out))
		return cp_fail(err, CP_E_USAGE, "%s: output path too long", wheel);
	/* every shared object is unpacked below, and checked against RECORD then */
	st = cp_wheel_open_deferring(wheel, is_shared_object, &j.w, err);
	if (!st)
		st = alloc_job(&j);
	if (!st)
		st = place_bets(&j);
	if (!st && !o->keep_sources)
		st = rewrite_sources(&j);
	if (!st) {
		start_settler(&j);
		st = cp_repair_start_output(&j);
	}
	if (!st)
		st = patch_extensions(&j);
	if (!st)
		st = cp_repair_write(&j, wheel);
	cleanup(&j);
	return st;
}

void cp_repair_result_free(struct cp_repair_result *res)
{
	size_t i;

	for (i = 0; i < res->next; i++)
		free(res->ext[i].path);
	free(res->ext);
	for (i = 0; i < res->nsources; i++)
		free(res->sources[i]);
	free(res->sources);
	memset(res, 0, sizeof(*res));
}
