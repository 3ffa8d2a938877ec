/*
 * import_chain.c - the Python code an extension's import runs first (see
 * import_chain.h): the wheel's modules indexed by dotted name, then walked
 * from each extension the way CPython's import would run them.
 */
#include "predict/import_chain.h"
#include "util/error.h"
#include "util/names.h"
#include "repair/pysource.h"
#include "predict/pystmt.h"
#include "rules/rules.h"
#include "scan/scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)
/* deeper chains of imports are left alone (no real package nests so) */
#define MAXDEPTH 128
/* a larger source is not read (no module's imports need it) */
#define MAXSOURCE (16u << 20)

/* what a dotted name is in the wheel, by the precedence CPython's path
 * finder gives them in one directory */
enum rank { R_NAMESPACE, R_SOURCE, R_EXTENSION, R_PACKAGE };

struct mod {
	char *name;
	char *real;                /* an alias's module (pkg.x for pkg/cu12/x), else NULL */
	enum rank rank;
	size_t member;             /* NONE for a namespace directory */
	struct cp_pystmts stmts;   /* a .py file's */
	size_t *imports, nimports, capimports; /* an extension's, of the wheel's modules */
	const json_t *own;         /* an extension's own predicted failures */
};

struct cp_chain {
	struct cp_wheel *w;
	const cp_rules *rules;
	unsigned major;
	struct mod *v;
	size_t n, cap;
};

/* A member path's directories and stem as a dotted name into out; false
 * when a part is no identifier (dist-info, .data, a versioned .so). */
static bool dotted_of(const char *path, size_t n, char *out, size_t size)
{
	size_t i, start = 0, k = 0;

	if (n >= size)
		return false;
	for (i = 0; i <= n; i++) {
		if (i < n && path[i] != '/')
			continue;
		if (!cp_is_identifier(path + start, i - start))
			return false;
		memcpy(out + k, path + start, i - start);
		k += i - start;
		out[k++] = i < n ? '.' : '\0';
		start = i + 1;
	}
	return true;
}

static cp_status add(struct cp_chain *ch, const char *name, enum rank rank, size_t member, cp_error *err)
{
	struct mod *m;

	if (CP_GROW(ch->v, ch->cap, ch->n + 1))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	m = &ch->v[ch->n];
	memset(m, 0, sizeof(*m));
	if (!(m->name = strdup(name)))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	m->rank = rank;
	m->member = member;
	ch->n++;
	return CP_OK;
}

unsigned cp_chain_tree_major(const struct cp_wheel *w, const char *name, size_t *head)
{
	const char *p = name;
	unsigned major;
	size_t i, plen;
	int len;

	for (; (p = strstr(p, "/cu")) != NULL; p++)
		if (sscanf(p + 3, "%u%n", &major, &len) == 1 && p[3 + len] == '/')
			break;
	if (!p)
		return 0;
	plen = (size_t)(p - name) + 3; /* "pkg/cu" */
	for (i = 0; i < w->n; i++) {
		const char *o = w->m[i].name;
		unsigned other;

		if (!strncmp(o, name, plen) && sscanf(o + plen, "%u%n", &other, &len) == 1 && o[plen + len] == '/' &&
		    other != major && strstr(o, ".so")) {
			if (head)
				*head = plen - 2;
			return major;
		}
	}
	return 0;
}

/* A module of the installed major's tree under its name without the tree
 * (pkg.x for pkg/cu12/x.so), as an alias that a real pkg/x yields to. */
static cp_status add_alias(struct cp_chain *ch, const char *path, size_t stem, const char *real, cp_error *err)
{
	char buf[512], name[512];
	const char *rest;
	size_t head;
	int n;

	if (!ch->major || cp_chain_tree_major(ch->w, path, &head) != ch->major)
		return CP_OK;
	rest = strchr(path + head, '/');
	n = snprintf(buf, sizeof(buf), "%.*s%.*s", (int)head, path, (int)(stem - (size_t)(rest + 1 - path)), rest + 1);
	if (n < 0 || (size_t)n >= sizeof(buf) || !dotted_of(buf, (size_t)n, name, sizeof(name)))
		return CP_OK;
	if (add(ch, name, R_NAMESPACE, NONE, err))
		return err->code;
	if (!(ch->v[ch->n - 1].real = strdup(real)))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	return CP_OK;
}

/* The modules member i of the wheel is, and the packages it lies in. */
static cp_status index_member(struct cp_chain *ch, size_t i, cp_error *err)
{
	const char *path = ch->w->m[i].name, *base = strrchr(path, '/'), *dot;
	size_t n = strlen(path), dir = base ? (size_t)(base - path) : 0;
	char name[512];
	cp_status st = CP_OK;
	size_t k;

	base = base ? base + 1 : path;
	dot = strchr(base, '.');
	if (ch->w->m[i].dir || !dot)
		return CP_OK;
	for (k = 0; !st && k < dir; k++) /* each directory above: a package */
		if (path[k + 1] == '/' || k + 1 == dir)
			st = dotted_of(path, k + 1, name, sizeof(name)) ? add(ch, name, R_NAMESPACE, NONE, err) : CP_OK;
	if (st || !dotted_of(path, (size_t)(dot - path), name, sizeof(name)))
		return st;
	if (!strcmp(dot, ".py") && !strcmp(base, "__init__.py")) {
		if (!dir || !dotted_of(path, dir, name, sizeof(name)))
			return CP_OK;
		st = add(ch, name, R_PACKAGE, i, err);
		return st ? st : add_alias(ch, path, dir, name, err);
	}
	if (strcmp(dot, ".py") && (n <= 3 || strcmp(path + n - 3, ".so")))
		return CP_OK;
	st = add(ch, name, strcmp(dot, ".py") ? R_EXTENSION : R_SOURCE, i, err);
	return st ? st : add_alias(ch, path, (size_t)(dot - path), name, err);
}

static int by_name_rank(const void *a, const void *b)
{
	const struct mod *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (!c && !x->real != !y->real)
		return x->real ? 1 : -1; /* the real module first */
	return c ? c : (int)y->rank - (int)x->rank;
}

static void free_mod(struct mod *m)
{
	free(m->name);
	free(m->real);
	free(m->imports);
	cp_pystmt_free(&m->stmts);
}

/* Sorted by name, one entry per name: the one the import system picks. */
static void settle(struct cp_chain *ch)
{
	size_t i, k = 0;

	qsort(ch->v, ch->n, sizeof(*ch->v), by_name_rank);
	for (i = 0; i < ch->n; i++) {
		if (k && !strcmp(ch->v[k - 1].name, ch->v[i].name))
			free_mod(&ch->v[i]);
		else
			ch->v[k++] = ch->v[i];
	}
	ch->n = k;
}

static size_t find(const struct cp_chain *ch, const char *name)
{
	size_t lo = 0, hi = ch->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ch->v[mid].name, name);

		if (!c) /* an alias leads to its module, never to another alias */
			return ch->v[mid].real ? find(ch, ch->v[mid].real) : mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NONE;
}

static cp_status read_source(struct cp_chain *ch, struct mod *m, cp_error *err)
{
	uint8_t *text;
	size_t len;
	cp_status st;

	if (ch->w->m[m->member].size > MAXSOURCE)
		return CP_OK;
	st = cp_wheel_read(ch->w, m->member, &text, &len, err);
	if (st)
		return st;
	st = cp_pystmt_read((const char *)text, len, &m->stmts, err);
	free(text);
	return st;
}

cp_status cp_chain_open(struct cp_wheel *w, const cp_rules *rules, unsigned major, struct cp_chain **out,
			cp_error *err)
{
	struct cp_chain *ch = calloc(1, sizeof(*ch));
	cp_status st = ch ? CP_OK : cp_fail(err, CP_E_INTERNAL, "out of memory");
	size_t i;

	*out = NULL;
	if (st)
		return st;
	ch->w = w;
	ch->rules = rules;
	ch->major = major;
	for (i = 0; !st && i < w->n; i++)
		st = index_member(ch, i, err);
	if (!st)
		settle(ch);
	for (i = 0; !st && i < ch->n; i++)
		if (ch->v[i].rank == R_SOURCE || ch->v[i].rank == R_PACKAGE)
			st = read_source(ch, &ch->v[i], err);
	if (st) {
		cp_chain_free(ch);
		return st;
	}
	*out = ch;
	return CP_OK;
}

static size_t by_member(const struct cp_chain *ch, const char *member)
{
	size_t i;

	for (i = 0; i < ch->n; i++)
		if (ch->v[i].member != NONE && !strcmp(ch->w->m[ch->v[i].member].name, member))
			return i;
	return NONE;
}

static cp_status note_import(struct cp_chain *ch, size_t self, const char *name, cp_error *err)
{
	struct mod *m = &ch->v[self];
	size_t i = find(ch, name), k;

	if (i == NONE || i == self)
		return CP_OK;
	for (k = 0; k < m->nimports; k++)
		if (m->imports[k] == i)
			return CP_OK;
	if (CP_GROW(m->imports, m->capimports, m->nimports + 1))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	m->imports[m->nimports++] = i;
	return CP_OK;
}

cp_status cp_chain_note_imports(struct cp_chain *ch, const char *member, const char *const *modules, size_t n,
				cp_error *err)
{
	size_t self = by_member(ch, member), i;
	cp_status st = CP_OK;

	if (self == NONE)
		return CP_OK;
	for (i = 0; !st && i < n; i++)
		st = note_import(ch, self, modules[i], err);
	return st;
}

/* One extension's prediction in the making. */
struct walk {
	struct cp_chain *ch;
	size_t self;
	unsigned char *seen;
	const char *file[MAXDEPTH];
	int line[MAXDEPTH];
	size_t depth;
	bool failed;           /* the import fails; msg says where, or is "" (its own failures) */
	char msg[1200];
	json_t *via;
	cp_chain_resolve resolve;
	void *ctx;
};

static int follow(struct walk *k, size_t i);

static bool enter(struct walk *k, const char *file, int line)
{
	if (k->depth == MAXDEPTH)
		return false;
	k->file[k->depth] = file;
	k->line[k->depth++] = line;
	return true;
}

/* The failure msg, where the walk stands; returns 1 (stop). */
static int fail(struct walk *k, const char *msg, const char *where)
{
	char at[600];
	size_t i;

	k->failed = true;
	snprintf(k->msg, sizeof(k->msg), "%s (%s)", msg, where);
	json_decref(k->via);
	k->via = json_array();
	for (i = 0; i < k->depth; i++) {
		if (k->line[i])
			snprintf(at, sizeof(at), "%s line %d", k->file[i], k->line[i]);
		else
			snprintf(at, sizeof(at), "%s", k->file[i]);
		json_array_append_new(k->via, json_string(at));
	}
	return 1;
}

static int fail_here(struct walk *k, const char *msg)
{
	char where[600];

	snprintf(where, sizeof(where), "%s line %d", k->file[k->depth - 1], k->line[k->depth - 1]);
	return fail(k, msg, where);
}

/* Importing `name` as far as the wheel holds it: the longest of it and
 * its packages that is a module of the wheel (what lies beyond, the
 * wheel does not hold: left alone). */
static int follow_name(struct walk *k, const char *name)
{
	char buf[512];
	char *dot;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", name) >= sizeof(buf))
		return 0;
	for (;;) {
		size_t i = find(k->ch, buf);

		if (i != NONE)
			return follow(k, i);
		if (!(dot = strrchr(buf, '.')))
			return 0;
		*dot = '\0';
	}
}

/* `import name`: the wheel's module, or a mapped one that must resolve. */
static int import_module(struct walk *k, const char *name)
{
	char missing[512], msg[700];

	if (follow_name(k, name))
		return 1;
	if (find(k->ch, name) != NONE || cp_pysource_name_layout(k->ch->rules, name) < 0 ||
	    k->resolve(k->ctx, name, missing, sizeof(missing)))
		return 0;
	snprintf(msg, sizeof(msg), "ModuleNotFoundError: No module named '%s'", missing);
	return fail_here(k, msg);
}

/* `from base import n`: a module of the wheel, or a mapped module (or a
 * layout-specific package) that must resolve; other names are left alone. */
static int import_name(struct walk *k, const char *base, const char *n)
{
	const cp_rules *r = k->ch->rules;
	char full[800], missing[512], msg[1000];

	if (!strcmp(n, "*") || (size_t)snprintf(full, sizeof(full), "%s.%s", base, n) >= sizeof(full))
		return 0;
	if (find(k->ch, full) != NONE)
		return follow(k, find(k->ch, full));
	if ((cp_rules_module_layout(r, full) < 0 && cp_rules_package_layout(r, full) < 0) ||
	    k->resolve(k->ctx, full, missing, sizeof(missing)))
		return 0;
	snprintf(msg, sizeof(msg), "ImportError: cannot import name '%s' from '%s'", n, base);
	return fail_here(k, msg);
}

/* The absolute name a statement of module m imports from (relative
 * imports resolved against m's package); false when it leaves the wheel's
 * top level. */
static bool absolute(const struct mod *m, const struct cp_pystmt *s, char *out, size_t n)
{
	char pkg[512];
	int level;

	if (!s->level)
		return (size_t)snprintf(out, n, "%s", s->module) < n;
	snprintf(pkg, sizeof(pkg), "%s", m->name);
	for (level = m->rank == R_PACKAGE ? 1 : 0; level < s->level; level++) {
		char *dot = strrchr(pkg, '.');

		if (!dot)
			return false;
		*dot = '\0';
	}
	return (size_t)snprintf(out, n, "%s%s%s", pkg, s->module[0] ? "." : "", s->module) < n;
}

static int eval(struct walk *k, const struct mod *m, const struct cp_pystmt *s)
{
	char base[512];
	size_t i;

	if (!absolute(m, s, base, sizeof(base)))
		return 0;
	if (import_module(k, base))
		return 1;
	for (i = 0; s->from && i < s->nnames; i++)
		if (import_name(k, base, s->names[i]))
			return 1;
	return 0;
}

/* A statement; one of a fallback block passes when its other import does. */
static int statement(struct walk *k, const struct mod *m, const struct cp_pystmt *s)
{
	size_t depth = k->depth, i;
	int rc;

	if (!enter(k, k->ch->w->m[m->member].name, s->line))
		return 0;
	rc = eval(k, m, s);
	if (rc && k->msg[0] && s->nalt && json_array_size(k->via) == depth + 1) { /* failed here */
		k->failed = false;
		k->msg[0] = '\0';
		rc = 0;
		for (i = 0; !rc && i < s->nalt; i++)
			rc = eval(k, m, &m->stmts.v[s->alt_at + i]);
	}
	k->depth = depth;
	return rc;
}

static int run_source(struct walk *k, const struct mod *m)
{
	size_t i;

	for (i = 0; i < m->stmts.n; i++)
		if (!m->stmts.v[i].alt && statement(k, m, &m->stmts.v[i]))
			return 1;
	return 0;
}

/* An extension of the wheel: its own failures, then what it imports. The
 * one whose import is predicted stops the walk at its own failures,
 * reported already. */
static int run_extension(struct walk *k, size_t i)
{
	const struct mod *m = &k->ch->v[i];
	const char *file = k->ch->w->m[m->member].name;
	size_t depth = k->depth, j;

	if (m->own && json_array_size(m->own)) {
		if (i == k->self) {
			k->failed = true;
			return 1;
		}
		if (!enter(k, file, 0))
			return 0;
		fail(k, json_string_value(json_array_get(m->own, 0)), file);
		k->depth = depth;
		return 1;
	}
	if (!enter(k, file, 0))
		return 0;
	for (j = 0; j < m->nimports; j++)
		if (follow(k, m->imports[j])) {
			k->depth = depth;
			return 1;
		}
	k->depth = depth;
	return 0;
}

/* Importing module i: its package first, then (once) its own code. */
static int follow(struct walk *k, size_t i)
{
	const char *dot = strrchr(k->ch->v[i].name, '.');

	if (k->seen[i])
		return 0;
	if (dot) {
		char parent[512];
		size_t p;

		snprintf(parent, sizeof(parent), "%.*s", (int)(dot - k->ch->v[i].name), k->ch->v[i].name);
		p = find(k->ch, parent);
		if (p != NONE && follow(k, p))
			return 1;
		if (k->seen[i])
			return 0;
	}
	k->seen[i] = 1;
	switch (k->ch->v[i].rank) {
	case R_SOURCE:
	case R_PACKAGE:
		return run_source(k, &k->ch->v[i]);
	case R_EXTENSION:
		return run_extension(k, i);
	default:
		return 0;
	}
}

/* The first failure of extension i's import, into k (k->failed). */
static cp_status walk_one(struct walk *k, size_t i, cp_error *err)
{
	memset(k->seen, 0, k->ch->n);
	k->self = i;
	k->depth = 0;
	k->failed = false;
	k->msg[0] = '\0';
	json_decref(k->via);
	k->via = NULL;
	follow(k, i);
	if (k->failed && k->msg[0] && !k->via)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	return CP_OK;
}

/* The chain's failure at the head of entry e's failures, with its way. */
static cp_status apply(json_t *e, const char *msg, json_t *via, cp_error *err)
{
	json_t *f = json_object_get(e, "failures");

	if (!f || json_array_insert_new(f, 0, json_string(msg)) || json_object_set(e, "via", via))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	return CP_OK;
}

cp_status cp_chain_predict(struct cp_chain *ch, json_t *exts, cp_chain_resolve resolve, void *ctx, cp_error *err)
{
	struct walk *k = calloc(1, sizeof(*k));
	json_t *found = json_array(), *e;
	cp_status st = k && found ? CP_OK : cp_fail(err, CP_E_INTERNAL, "out of memory");
	size_t i, x;

	if (!st && !(k->seen = calloc(ch->n ? ch->n : 1, 1)))
		st = cp_fail(err, CP_E_INTERNAL, "out of memory");
	json_array_foreach(exts, i, e)
		if (!st && (x = by_member(ch, json_string_value(json_object_get(e, "file")))) != NONE)
			ch->v[x].own = json_object_get(e, "failures");
	k->ch = ch;
	k->resolve = resolve;
	k->ctx = ctx;
	/* all walked before any is changed: a walk reads the others' own failures */
	json_array_foreach(exts, i, e) {
		x = st ? NONE : by_member(ch, json_string_value(json_object_get(e, "file")));
		if (x == NONE || json_object_get(e, "skipped") || (st = walk_one(k, x, err)))
			continue;
		if (k->failed && k->msg[0])
			json_array_append_new(found, json_pack("{s:i, s:s, s:O}", "at", (int)i, "msg", k->msg, "via",
							       k->via));
	}
	json_array_foreach(found, i, e)
		if (!st)
			st = apply(json_array_get(exts, (size_t)json_integer_value(json_object_get(e, "at"))),
				   json_string_value(json_object_get(e, "msg")), json_object_get(e, "via"), err);
	for (i = 0; i < ch->n; i++)
		ch->v[i].own = NULL;
	if (k) {
		json_decref(k->via);
		free(k->seen);
	}
	free(k);
	json_decref(found);
	return st;
}

void cp_chain_free(struct cp_chain *ch)
{
	size_t i;

	if (!ch)
		return;
	for (i = 0; i < ch->n; i++)
		free_mod(&ch->v[i]);
	free(ch->v);
	free(ch);
}
