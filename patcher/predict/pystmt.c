/*
 * pystmt.c - the import statements a module runs at import time (see
 * pystmt.h). The source's logical lines (util/pylines.h: a docstring's
 * text or a parenthesized name list is not misread) are parsed; which of
 * them run is decided block by block, upwards, with pysource's notion of a
 * guard. A line too long to hold is no import statement we read.
 */
#include "predict/pystmt.h"
#include "util/error.h"
#include "util/names.h"
#include "repair/pysource.h"
#include "util/pylines.h"

#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* Whether p begins with the keyword w (then not a name character). */
static bool keyword(const char *p, const char *w)
{
	size_t n = strlen(w);

	return !strncmp(p, w, n) && !cp_is_ident_byte(p[n]);
}

/* An identifier at *p into buf; false when there is none. */
static bool ident(const char **p, char *buf, size_t n)
{
	size_t k = 0;

	*p = ws(*p);
	if (!cp_is_ident_start(**p))
		return false;
	while (cp_is_ident_byte(**p) && k + 1 < n)
		buf[k++] = *(*p)++;
	buf[k] = '\0';
	return !cp_is_ident_byte(**p);
}

/* A dotted name at *p (identifiers joined by dots). */
static bool dotted(const char **p, char *buf, size_t n)
{
	size_t k;

	if (!ident(p, buf, n))
		return false;
	for (;;) {
		const char *q = ws(*p);

		if (*q != '.')
			return true;
		k = strlen(buf);
		if (k + 2 >= n)
			return false;
		buf[k] = '.';
		*p = q + 1;
		if (!ident(p, buf + k + 1, n - k - 1))
			return false;
	}
}

/* An optional `as NAME` at *p. */
static bool alias(const char **p)
{
	char a[128];
	const char *q = ws(*p);

	if (!keyword(q, "as"))
		return true;
	*p = q + 2;
	return ident(p, a, sizeof(a));
}

static cp_status push(struct cp_pystmts *out, const struct cp_pystmt *st, cp_error *err)
{
	if (CP_GROW(out->v, out->cap, out->n + 1))
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	out->v[out->n++] = *st;
	return CP_OK;
}

/* `import a.b [as x], c`: one statement per module; false when the text
 * is not that. */
static bool parse_import(const char *p, int line, struct cp_pystmts *out, cp_status *st, cp_error *err)
{
	struct cp_pystmt s;
	size_t first = out->n;

	memset(&s, 0, sizeof(s));
	s.line = line;
	do {
		if (!dotted(&p, s.module, sizeof(s.module)) || !alias(&p)) {
			out->n = first;
			return false;
		}
		if ((*st = push(out, &s, err)) != CP_OK)
			return true;
		p = ws(p);
	} while (*p == ',' && p++);
	if (*ws(p)) {
		out->n = first;
		return false;
	}
	return true;
}

static void free_names(struct cp_pystmt *s)
{
	size_t i;

	for (i = 0; i < s->nnames; i++)
		free(s->names[i]);
	free(s->names);
	s->names = NULL;
	s->nnames = 0;
}

static bool add_name(struct cp_pystmt *s, const char *name)
{
	char **v = realloc(s->names, (s->nnames + 1) * sizeof(*v));

	if (!v)
		return false;
	s->names = v;
	return (v[s->nnames] = strdup(name)) != NULL && ++s->nnames;
}

/* The names after `import` of a from-import: `*`, or a list, maybe in
 * parentheses; false when the text is not that (or memory runs out). */
static bool parse_names(const char *p, struct cp_pystmt *s)
{
	char name[128];
	bool paren;

	p = ws(p);
	if (*p == '*')
		return !*ws(p + 1) && add_name(s, "*");
	if ((paren = *p == '('))
		p++;
	for (;;) {
		if (!ident(&p, name, sizeof(name)) || !alias(&p) || !add_name(s, name))
			return false;
		p = ws(p);
		if (*p != ',')
			break;
		p = ws(p + 1);
		if (paren && *p == ')')
			break;
	}
	if (paren && *p++ != ')')
		return false;
	return !*ws(p);
}

/* `from [.]P import names`; false when the text is not that. */
static bool parse_from(const char *p, int line, struct cp_pystmts *out, cp_status *st, cp_error *err)
{
	struct cp_pystmt s;

	memset(&s, 0, sizeof(s));
	s.line = line;
	s.from = true;
	p = ws(p);
	while (*p == '.')
		s.level++, p = ws(p + 1);
	if (!keyword(p, "import") && !dotted(&p, s.module, sizeof(s.module)))
		return false;
	p = ws(p);
	if ((!s.level && !s.module[0]) || !keyword(p, "import") || !parse_names(p + 6, &s)) {
		free_names(&s);
		return false;
	}
	if ((*st = push(out, &s, err)) != CP_OK)
		free_names(&s);
	return true;
}

/* The statements of one logical line (`;` separates them) into out. */
static cp_status parse_line(char *text, int line, struct cp_pystmts *out, cp_error *err)
{
	char *p = text, *semi;
	cp_status st = CP_OK;

	for (; p && !st; p = semi ? semi + 1 : NULL) {
		const char *q = ws(p);

		if ((semi = strchr(p, ';')) != NULL)
			*semi = '\0';
		if (keyword(q, "import"))
			parse_import(q + 6, line, out, &st, err);
		else if (keyword(q, "from"))
			parse_from(q + 4, line, out, &st, err);
	}
	return st;
}

/* Whether logical line j runs when the module is imported: no function
 * body or except clause holds it, and no block up to the top guards it. */
static bool runs(const char *src, size_t len, const struct cp_pylines *l, size_t j)
{
	size_t cur = j, k;

	while (l->v[cur].indent > 0) {
		for (k = cur; k > 0 && l->v[k - 1].indent >= l->v[cur].indent; k--)
			;
		if (!k)
			return true; /* an indented first line: Python would refuse it */
		k--;
		const char *head = l->v[k].text ? l->v[k].text : "";

		if (keyword(head, "def") || keyword(head, "async") || keyword(head, "except") ||
		    cp_pysource_guarded(src, len, l->v[cur].at))
			return false;
		cur = k;
	}
	return true;
}

/* The statements of the fallback block's other import (at offset `at`),
 * after those of out, marked as alternatives of statement `of`. */
static cp_status add_other(const struct cp_pylines *l, size_t at, size_t of, struct cp_pystmts *out, cp_error *err)
{
	size_t k, first = out->n;
	cp_status st = CP_OK;

	for (k = 0; k < l->n && l->v[k].at != at; k++)
		;
	if (k == l->n || !l->v[k].text)
		return CP_OK;
	st = parse_line(l->v[k].text, l->v[k].line, out, err);
	for (k = first; k < out->n; k++)
		out->v[k].alt = true;
	out->v[of].alt_at = first;
	out->v[of].nalt = out->n - first;
	return st;
}

cp_status cp_pystmt_read(const char *src, size_t len, struct cp_pystmts *out, cp_error *err)
{
	struct cp_pylines l;
	cp_status st = cp_pylines_read(src, len, &l, err);
	size_t j;

	for (j = 0; !st && j < l.n; j++) {
		size_t first = out->n, other;

		if (!l.v[j].text || !runs(src, len, &l, j))
			continue;
		st = parse_line(l.v[j].text, l.v[j].line, out, err);
		other = cp_pysource_fallback_other(src, len, l.v[j].at);
		if (!st && out->n == first + 1 && other != (size_t)-1)
			st = add_other(&l, other, first, out, err);
	}
	cp_pylines_free(&l);
	return st;
}

void cp_pystmt_free(struct cp_pystmts *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free_names(&s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}
