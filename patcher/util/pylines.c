/*
 * pylines.c - a Python source cut into logical lines (see pylines.h).
 * Strings are passed over by their quotes (prefixes are name bytes before
 * them, kept); an unterminated one-quote string ends at its line, as the
 * tokenizer's error would.
 */
#include "util/pylines.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>

struct buf {
	char t[CP_PYLINE_MAX];
	size_t n;
	bool over;
};

static void add(struct buf *b, char ch)
{
	if (b->n + 1 >= sizeof(b->t))
		b->over = true;
	else
		b->t[b->n++] = ch;
}

/* Passes over the string literal at src[*i] (a quote), counting its
 * lines; what is kept of it is an empty literal. */
static void skip_string(const char *src, size_t len, size_t *i, int *lineno, struct buf *b)
{
	char q = src[*i];
	bool triple = *i + 2 < len && src[*i + 1] == q && src[*i + 2] == q;
	size_t k = *i + (triple ? 3 : 1);

	for (; k < len; k++) {
		if (src[k] == '\\' && k + 1 < len) {
			*lineno += src[++k] == '\n';
			continue;
		}
		if (src[k] == '\n') {
			if (!triple)
				break; /* unterminated: the line ends it */
			(*lineno)++;
		} else if (src[k] == q && (!triple || (k + 2 < len && src[k + 1] == q && src[k + 2] == q))) {
			k += triple ? 3 : 1;
			break;
		}
	}
	*i = k < len ? k : len;
	add(b, q);
	add(b, q);
}

/* One logical line from src[*i], into b; returns its indent. *end is set
 * past its last byte (the newline that ends it, and a \r before that, left
 * out). */
static int logical(const char *src, size_t len, size_t *i, size_t *end, int *lineno, struct buf *b)
{
	int indent = 0, depth = 0;

	while (*i < len && (src[*i] == ' ' || src[*i] == '\t'))
		(*i)++, indent++;
	*end = len;
	while (*i < len) {
		char ch = src[*i];

		if (ch == '#') {
			while (*i < len && src[*i] != '\n')
				(*i)++;
		} else if (ch == '\\' && *i + 1 < len && (src[*i + 1] == '\n' || src[*i + 1] == '\r')) {
			*i += src[*i + 1] == '\r' && *i + 2 < len && src[*i + 2] == '\n' ? 3 : 2;
			(*lineno)++;
			add(b, ' ');
		} else if (ch == '\n') {
			(*i)++;
			(*lineno)++;
			if (depth <= 0) {
				*end = *i - 1 - (*i >= 2 && src[*i - 2] == '\r');
				break;
			}
			add(b, ' ');
		} else if (ch == '"' || ch == '\'') {
			skip_string(src, len, i, lineno, b);
		} else {
			depth += (ch == '(' || ch == '[' || ch == '{') - (ch == ')' || ch == ']' || ch == '}');
			add(b, ch == '\r' || ch == '\t' ? ' ' : ch);
			(*i)++;
		}
	}
	b->t[b->n] = '\0';
	return indent;
}

cp_status cp_pylines_read(const char *src, size_t len, struct cp_pylines *out, cp_error *err)
{
	struct buf *b = malloc(sizeof(*b));
	size_t i = 0;
	int lineno = 1;

	memset(out, 0, sizeof(*out));
	if (!b)
		return cp_fail(err, CP_E_INTERNAL, "out of memory");
	while (i < len) {
		struct cp_pyline l = { .at = i, .line = lineno };

		b->n = 0;
		b->over = false;
		l.indent = logical(src, len, &i, &l.end, &lineno, b);
		if (!b->n || (!b->over && strspn(b->t, " ") == b->n))
			continue;
		if (CP_GROW(out->v, out->cap, out->n + 1) || (!b->over && !(l.text = strdup(b->t)))) {
			free(b);
			return cp_fail(err, CP_E_INTERNAL, "out of memory");
		}
		out->v[out->n++] = l;
	}
	free(b);
	return CP_OK;
}

void cp_pylines_free(struct cp_pylines *l)
{
	size_t k;

	for (k = 0; k < l->n; k++)
		free(l->v[k].text);
	free(l->v);
	memset(l, 0, sizeof(*l));
}
