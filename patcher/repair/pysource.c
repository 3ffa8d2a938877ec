/*
 * pysource.c - import statements of a wheel's Python sources (see
 * pysource.h). The source is read as logical lines (util/pylines.h), so a
 * `from P import (...)` over several lines, or one continued with a
 * backslash, is one statement; `from P import ...` and `import P as x`
 * statements are rewritten, anything else that names a mapped module is
 * counted as left, for the report. Whatever is not rewritten is copied
 * byte for byte.
 */
#include "repair/pysource.h"
#include "util/error.h"
#include "util/names.h"
#include "util/pylines.h"
#include "rules/rules.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* names in one from-import (a parenthesised list can be long) */
#define MAXN 128
/* the except line of a fallback block: found again by earlier_block */
#define MARKER "except ImportError as _cypatch_e:  # cypatch: the other cuda-python layout"

struct stmt {
	bool from;                 /* from P import names; else import P as alias */
	char pkg[256];
	char name[MAXN][128], alias[MAXN][128];
	int n;
};

struct out {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->oom || CP_GROW(o->p, o->cap, o->n + n + 1)) {
		o->oom = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A dotted name at *p; returns its length (0 if none). */
static size_t dotted(const char **p, char *buf, size_t size)
{
	size_t n = 0;

	while (**p == ' ')
		(*p)++;
	while ((cp_is_ident_byte(**p) || **p == '.') && n + 1 < size)
		buf[n++] = *(*p)++;
	buf[n] = '\0';
	return n;
}

static bool word(const char **p, const char *w)
{
	size_t n = strlen(w);

	while (**p == ' ')
		(*p)++;
	if (strncmp(*p, w, n) || cp_is_ident_byte((*p)[n]))
		return false;
	*p += n;
	return true;
}

/* Whether the statement in text imports from a package the rules map
 * (`from cuda...`, `import cuda...`). */
static bool names_mapped_package(const cp_rules *r, const char *text)
{
	const char *p = !strncmp(text, "from ", 5) ? text + 5 : !strncmp(text, "import ", 7) ? text + 7 : NULL;
	size_t n = 0;

	while (p && cp_is_ident_byte(p[n]))
		n++;
	return n && cp_rules_is_top_package(r, p, n);
}

/* Parses one statement (a logical line: indentation removed, comments
 * cut, lines joined); a from-import's names may stand in parentheses. */
static bool parse(const char *s, struct stmt *st)
{
	const char *p = s;
	bool paren;

	memset(st, 0, sizeof(*st));
	if (word(&p, "from")) {
		st->from = true;
		if (!dotted(&p, st->pkg, sizeof(st->pkg)) || !word(&p, "import"))
			return false;
	} else if (!word(&p, "import")) {
		return false;
	}
	while (*p == ' ')
		p++;
	paren = st->from && *p == '(';
	p += paren;
	do {
		while (paren && *p == ' ')
			p++;
		if (paren && *p == ')' && st->n)
			break; /* a trailing comma */
		if (st->n == MAXN || !dotted(&p, st->from ? st->name[st->n] : st->pkg, 128))
			return false;
		if (word(&p, "as") && !dotted(&p, st->alias[st->n], 128))
			return false;
		st->n++;
		while (*p == ' ')
			p++;
	} while (st->from && *p == ',' && p++);
	if (paren && *p++ != ')')
		return false;
	while (*p == ' ')
		p++;
	return !*p && (st->from || (st->n == 1 && st->alias[0][0]));
}

/* The layout a statement binds to, or -1 when it names no mapped module. */
static int stmt_layout(const cp_rules *r, const struct stmt *st)
{
	char full[400];
	int lay = cp_rules_module_layout(r, st->pkg), i;

	if (lay >= 0 || !st->from)
		return lay;
	for (i = 0; i < st->n; i++) {
		snprintf(full, sizeof(full), "%s.%s", st->pkg, st->name[i]);
		if (cp_rules_module_layout(r, full) >= 0)
			return cp_rules_module_layout(r, full);
	}
	return cp_rules_package_layout(r, st->pkg);
}

/* The layout of a dotted name: a mapped module's, or that of the longest
 * prefix that is a package of one layout only (cuda.bindings.nvjitlink and
 * cuda.bindings are the bindings layout's, with no legacy counterpart);
 * -1 when it says nothing (cuda, cuda.core). */
static int name_layout(const cp_rules *r, const char *name)
{
	char buf[400];
	size_t n = strlen(name);
	int lay = cp_rules_module_layout(r, name);

	if (lay >= 0 || n >= sizeof(buf))
		return lay;
	memcpy(buf, name, n + 1);
	for (;;) {
		char *dot;

		if ((lay = cp_rules_package_layout(r, buf)) >= 0)
			return lay;
		if (!(dot = strrchr(buf, '.')))
			return -1;
		*dot = '\0';
	}
}

/* The layout of some module an import statement's text names (any shape:
 * `import a.b`, `from P import (a, b`), or -1. Names after `import` in a
 * from-statement are tried as P.name too. */
static int text_layout(const cp_rules *r, const char *text)
{
	const char *p = text;
	char pkg[256] = "", tok[256], full[520];
	bool from = false, names = false;
	int lay;

	while (*p) {
		if (!cp_is_ident_byte(*p)) {
			p++;
			continue;
		}
		dotted(&p, tok, sizeof(tok));
		if (!strcmp(tok, "from") && !names)
			from = true;
		else if (!strcmp(tok, "import"))
			names = true;
		else if (!strcmp(tok, "as"))
			dotted(&p, tok, sizeof(tok)); /* the alias names nothing */
		else if ((lay = name_layout(r, tok)) >= 0)
			return lay;
		else if (from && !names)
			snprintf(pkg, sizeof(pkg), "%s", tok);
		else if (from && pkg[0]) {
			snprintf(full, sizeof(full), "%s.%s", pkg, tok);
			if ((lay = name_layout(r, full)) >= 0)
				return lay;
		}
	}
	return -1;
}

/* The statement on one line, importing from `pkg` instead of its own. */
static void spell(const struct stmt *st, const char *pkg, struct out *o)
{
	char buf[800];
	int i;

	if (!st->from) {
		snprintf(buf, sizeof(buf), "import %s as %s", pkg, st->alias[0]);
		puts_(o, buf);
		return;
	}
	snprintf(buf, sizeof(buf), "from %s import ", pkg);
	puts_(o, buf);
	for (i = 0; i < st->n; i++) {
		snprintf(buf, sizeof(buf), "%s%s%s%s", i ? ", " : "", st->name[i], st->alias[i][0] ? " as " : "",
			 st->alias[i]);
		puts_(o, buf);
	}
}

/* The statement for layout `to`, into o; false when a name has no place there. */
static bool translate(const cp_rules *r, const struct stmt *st, int to, struct out *o)
{
	const char *m = cp_rules_map(r, st->pkg, to);
	char full[400], buf[800];
	int i;

	if (m || !st->from) {
		if (!m)
			return false;
		spell(st, m, o);
		return true;
	}
	for (i = 0; i < st->n; i++) { /* from a package: each name is a module */
		const char *t, *dot;

		snprintf(full, sizeof(full), "%s.%s", st->pkg, st->name[i]);
		t = cp_rules_map(r, full, to);
		dot = t ? strrchr(t, '.') : NULL;
		if (!dot)
			return false;
		snprintf(buf, sizeof(buf), "%sfrom %.*s import %s as %s", i ? "; " : "", (int)(dot - t), t, dot + 1,
			 st->alias[i][0] ? st->alias[i] : st->name[i]);
		puts_(o, buf);
	}
	return true;
}

/* full and each of its parent packages, as tuple items not yet there
 * (the tuple starts at o->p + from). */
static void add_prefixes(const char *full, struct out *o, size_t from)
{
	const char *c = full;
	char one[420];

	do {
		c = strchr(c + 1, '.');
		snprintf(one, sizeof(one), "'%.*s', ", (int)(c ? (size_t)(c - full) : strlen(full)), full);
		if (!o->p || !strstr(o->p + from, one))
			puts_(o, one);
	} while (c);
}

/* The module names a statement imports and their parents, as a tuple. */
static void names_tuple(const struct stmt *st, struct out *o)
{
	char full[400];
	size_t from = o->n;
	int i;

	puts_(o, "(");
	add_prefixes(st->pkg, o, from);
	for (i = 0; st->from && i < st->n; i++) {
		snprintf(full, sizeof(full), "%s.%s", st->pkg, st->name[i]);
		add_prefixes(full, o, from);
	}
	puts_(o, ")");
}

/* One logical line of the source, as the rewrite meets it. */
struct span {
	const char *s;  /* its first physical line (the indent included) */
	size_t n;       /* its bytes, up to the newline that ends it */
	size_t ind;     /* the indent's bytes */
	bool multi;     /* it runs over several physical lines */
};

/* The span's comments, joined by two spaces (an import statement holds no
 * string, so each # starts one), into o. */
static void comments(const struct span *sp, struct out *o)
{
	const char *p = sp->s, *end = sp->s + sp->n;

	while ((p = memchr(p, '#', (size_t)(end - p)))) {
		size_t k = 0;

		while (p + k < end && p[k] != '\r' && p[k] != '\n')
			k++;
		puts_(o, "  ");
		put(o, p, k);
		p += k;
	}
}

/* A statement the fallback keeps, wrapped so that the other layout's
 * import runs when this one's module is missing:
 *     try:
 *         <the statement>
 *     except ImportError as _cypatch_e:  # cypatch: ...
 *         if _cypatch_e.name not in (<names>):
 *             raise
 *         <the statement in layout `to`>
 * A statement over several lines is kept on one, its comments after it,
 * so that earlier_block finds the six lines again. False when the
 * statement has no translation. */
static bool wrap_fallback(const cp_rules *r, const struct stmt *st, int to, const struct span *sp, struct out *o)
{
	struct out alt = { 0 };

	if (!translate(r, st, to, &alt)) {
		free(alt.p);
		return false;
	}
	put(o, sp->s, sp->ind);
	puts_(o, "try:\n");
	put(o, sp->s, sp->ind);
	puts_(o, "    ");
	if (sp->multi) {
		spell(st, st->pkg, o);
		comments(sp, o);
	} else {
		put(o, sp->s + sp->ind, sp->n - sp->ind);
	}
	puts_(o, "\n");
	put(o, sp->s, sp->ind);
	puts_(o, MARKER "\n");
	put(o, sp->s, sp->ind);
	puts_(o, "    if _cypatch_e.name not in ");
	names_tuple(st, o);
	puts_(o, ":\n");
	put(o, sp->s, sp->ind);
	puts_(o, "        raise\n");
	put(o, sp->s, sp->ind);
	puts_(o, "    ");
	puts_(o, alt.p ? alt.p : "");
	free(alt.p);
	return true;
}

/* The statement rewritten in place into layout `to`, on one line, its
 * comments kept after it; false (o unchanged) when it has no translation. */
static bool rewrite_in_place(const cp_rules *r, const struct stmt *st, int to, const struct span *sp,
			     struct out *o)
{
	size_t mark = o->n;

	put(o, sp->s, sp->ind);
	if (!translate(r, st, to, o)) {
		o->n = mark;
		return false;
	}
	comments(sp, o);
	return true;
}

/* A statement that is not one cypatch translates (another shape, or
 * naming no mapped module): copied. Returns the layout it names when that
 * is not the target, else -1. */
static int copy_other(const cp_rules *r, const char *stmt_text, bool parsed, int to, const struct span *sp,
		      struct out *o, struct cp_pysource_counts *c)
{
	bool import = parsed || !strncmp(stmt_text, "from ", 5) || !strncmp(stmt_text, "import ", 7);
	int lay = import ? text_layout(r, stmt_text) : -1;

	/* an import of another shape (several modules, `;`, `import a.b.c`
	 * used through attributes) naming a mapped package is one left as
	 * it was */
	if (!parsed)
		c->left += names_mapped_package(r, stmt_text);
	put(o, sp->s, sp->n);
	return lay == to ? -1 : lay;
}

/* A logical line too long for pylines to hold: judged on its bytes. */
static int copy_long(const cp_rules *r, int to, const struct span *sp, struct out *o, struct cp_pysource_counts *c)
{
	char *raw = strndup(sp->s + sp->ind, sp->n - sp->ind);
	int lay;

	if (!raw) {
		o->oom = true;
		return -1;
	}
	lay = copy_other(r, raw, false, to, sp, o, c);
	free(raw);
	return lay;
}

/* One logical line (text: as pylines joined it, NULL when too long):
 * rewritten into o, or copied. Returns the layout of a module an import
 * statement copied as it was names, when that layout is not the target
 * (fallback: any layout); else -1. */
static int statement(const cp_rules *r, const char *layout, const struct span *sp, char *text, struct out *o,
		     struct cp_pysource_counts *c)
{
	size_t k;
	struct stmt st;
	int lay, to;
	bool fallback = !strcmp(layout, "fallback"), parsed, done;

	to = fallback ? -1 : cp_rules_layout_index(r, layout);
	if (!text)
		return copy_long(r, to, sp, o, c);
	k = strlen(text);
	while (k && text[k - 1] == ' ')
		text[--k] = '\0';
	parsed = parse(text, &st);
	if (!parsed || (lay = stmt_layout(r, &st)) < 0)
		return copy_other(r, text, parsed, to, sp, o, c);
	if (fallback)
		to = !lay;
	if (to == lay) {
		put(o, sp->s, sp->n);
		return -1;
	}
	done = fallback ? wrap_fallback(r, &st, to, sp, o) : rewrite_in_place(r, &st, to, sp, o);
	if (!done) {
		c->left++;
		put(o, sp->s, sp->n);
		return lay;
	}
	c->rewritten++;
	return -1;
}

/* The line at p without its indent, its length in *n; the next line's
 * start in *next. */
static const char *stripped(const char *p, const char *end, size_t *n, const char **next)
{
	const char *eol = memchr(p, '\n', (size_t)(end - p));

	*next = eol ? eol + 1 : end;
	while (p < *next && (*p == ' ' || *p == '\t'))
		p++;
	*n = (size_t)((eol ? eol : end) - p);
	return p;
}

/* The length of the block an earlier fallback rewrite wrote at p (try:,
 * the import, the marked except, its test, raise, the other import), or
 * 0: kept as it is, so that repairing a repaired wheel changes nothing. */
static size_t earlier_block(const char *p, const char *end)
{
	const char *q = p, *t;
	size_t n;
	int i;

	for (i = 0; i < 6 && q < end; i++) {
		t = stripped(q, end, &n, &q);
		if ((i == 0 && (n != 4 || memcmp(t, "try:", 4))) ||
		    (i == 2 && (n != strlen(MARKER) || memcmp(t, MARKER, n))))
			return 0;
	}
	return i == 6 ? (size_t)(q - p) : 0;
}

/* The indentation of the line at p (tabs count as one), or -1 when it
 * holds no statement (blank, or a comment). */
static int indent_of(const char *p, const char *end)
{
	int n = 0;

	while (p + n < end && (p[n] == ' ' || p[n] == '\t'))
		n++;
	return p + n == end || p[n] == '\n' || p[n] == '\r' || p[n] == '#' ? -1 : n;
}

static const char *line_start(const char *src, const char *p)
{
	while (p > src && p[-1] != '\n')
		p--;
	return p;
}

/* Whether the line at p (after its indent) begins with the word w. */
static bool begins(const char *p, const char *end, const char *w)
{
	size_t n = strlen(w);

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return (size_t)(end - p) >= n && !memcmp(p, w, n) &&
	       ((size_t)(end - p) == n || !cp_is_ident_byte(p[n]));
}

/* Whether the line at p holds the text w. */
static bool line_holds(const char *p, const char *end, const char *w)
{
	const char *eol = memchr(p, '\n', (size_t)(end - p));

	return memmem(p, (size_t)((eol ? eol : end) - p), w, strlen(w)) != NULL;
}

/* An except clause at p that catches a failed import: bare, or naming
 * ImportError, ModuleNotFoundError, Exception or BaseException. */
static bool catches_import_error(const char *p, const char *end)
{
	const char *eol = memchr(p, '\n', (size_t)(end - p));
	size_t n = (size_t)((eol ? eol : end) - p);
	static const char *const names[] = { "ImportError", "ModuleNotFoundError", "Exception", "BaseException" };
	char text[256];
	size_t i;

	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	if (n >= sizeof(text))
		return false;
	memcpy(text, p, n);
	text[n] = '\0';
	if (!strncmp(text, "except:", 7))
		return true;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strstr(text, names[i]))
			return true;
	return false;
}

/* Whether the block whose body starts at p (lines indented more than
 * `ind`) raises: a handler that re-raises does not save the import. */
static bool block_raises(const char *p, const char *end, int ind)
{
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		int k = indent_of(p, end);

		if (k >= 0 && k <= ind)
			return false;
		if (k >= 0 && begins(p, end, "raise"))
			return true;
		p = eol ? eol + 1 : end;
	}
	return false;
}

/*
 * Whether the statement at `at` is guarded: its enclosing block is `if
 * TYPE_CHECKING:` (never run), or the body of a `try:` one of whose
 * handlers catches the import's failure without raising again. Only the
 * innermost block is read; anything else counts as unguarded.
 */
static bool guarded(const char *src, const char *end, const char *at)
{
	const char *p = line_start(src, at), *head = NULL;
	int ind = indent_of(p, end), k;

	if (ind <= 0)
		return false;
	while (p > src) {
		p = line_start(src, p - 1);
		k = indent_of(p, end);
		if (k >= 0 && k < ind) {
			head = p;
			ind = k;
			break;
		}
	}
	if (!head)
		return false;
	if (begins(head, end, "if") && line_holds(head, end, "TYPE_CHECKING"))
		return true;
	if (!begins(head, end, "try"))
		return false;
	for (p = head; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		p = eol ? eol + 1 : end;
		k = indent_of(p, end);
		if (k < 0 || k > ind)
			continue;
		if (k < ind || !begins(p, end, "except"))
			return false;
		if (catches_import_error(p, end) && !block_raises(memchr(p, '\n', (size_t)(end - p)) ?
								 (const char *)memchr(p, '\n', (size_t)(end - p)) + 1 : end,
								 end, ind))
			return true;
	}
	return false;
}

/* The first unguarded import left that binds to a layout the output must
 * not need: what the report names. */
static void note_unhandled(const struct cp_pyline *l, const struct span *sp, int lay,
			   struct cp_pysource_counts *c)
{
	size_t n = sp->n - sp->ind;

	c->first_line = l->line;
	c->first_layout = lay;
	if (l->text)
		snprintf(c->first, sizeof(c->first), "%s", l->text);
	else
		snprintf(c->first, sizeof(c->first), "%.*s", (int)(n < sizeof(c->first) ? n : sizeof(c->first)),
			 sp->s + sp->ind);
}

cp_status cp_pysource_rewrite(const char *src, size_t len, const cp_rules *rules, const char *layout,
			      char **out, size_t *outlen, struct cp_pysource_counts *c, cp_error *err)
{
	struct out o = { 0 };
	struct cp_pylines l;
	const char *end = src + len;
	bool fallback = !strcmp(layout, "fallback");
	size_t j, done = 0; /* the bytes of src written or rewritten */
	cp_status st;

	memset(c, 0, sizeof(*c));
	st = cp_pylines_read(src, len, &l, err);
	for (j = 0; !st && j < l.n; j++) {
		struct cp_pyline *ln = &l.v[j];
		struct span sp = { src + ln->at, ln->end - ln->at, 0, false };
		size_t kept;
		int lay;

		if (ln->at < done)
			continue; /* inside a block kept as it was */
		put(&o, src + done, ln->at - done);
		kept = fallback ? earlier_block(src + ln->at, end) : 0;
		if (kept) {
			put(&o, src + ln->at, kept);
			done = ln->at + kept;
			continue;
		}
		sp.ind = (size_t)ln->indent;
		sp.multi = memchr(sp.s, '\n', sp.n) != NULL;
		lay = statement(rules, layout, &sp, ln->text, &o, c);
		if (lay >= 0 && !guarded(src, end, sp.s) && !c->unhandled++)
			note_unhandled(ln, &sp, lay, c);
		done = ln->end;
	}
	cp_pylines_free(&l);
	if (st) {
		free(o.p);
		return st;
	}
	put(&o, src + done, len - done);
	if (o.oom || (!o.p && len)) {
		free(o.p);
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	}
	*out = o.p ? o.p : strdup("");
	*outlen = o.n;
	return *out ? CP_OK : cp_fail(err, CP_E_INTERNAL, "out of memory");
}

bool cp_pysource_guarded(const char *src, size_t len, size_t at)
{
	return at < len && guarded(src, src + len, src + at);
}

int cp_pysource_name_layout(const cp_rules *r, const char *name)
{
	return name_layout(r, name);
}

size_t cp_pysource_fallback_other(const char *src, size_t len, size_t at)
{
	const char *end = src + len, *p, *q;
	size_t n;
	int i;

	if (at >= len)
		return (size_t)-1;
	p = line_start(src, src + at);
	if (p == src)
		return (size_t)-1;
	p = line_start(src, p - 1); /* the block's try: */
	if (!earlier_block(p, end))
		return (size_t)-1;
	for (q = p, i = 0; i < 5; i++)
		stripped(q, end, &n, &q);
	return (size_t)(q - src);
}
