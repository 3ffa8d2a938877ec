/*
 * forms.c - what a string becomes in the target layout: the forms of every
 * mapped name (dotted, path, mangled prefix) and the rewrite of a text
 * through them (see plan_internal.h).
 */
#include "plan/plan_internal.h"
#include "util/error.h"
#include "util/names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One form of a mapped name, from -> to. */
static cp_status add_form(struct planner *pl, const char *from, const char *to, bool mangled)
{
	struct cp_name_form *f;

	if (CP_GROW(pl->forms, pl->capforms, pl->nforms + 1))
		return cp_plan_oom(pl);
	f = &pl->forms[pl->nforms];
	f->from = strdup(from);
	f->to = strdup(to);
	if (!f->from || !f->to) {
		free(f->from);
		free(f->to);
		return cp_plan_oom(pl);
	}
	f->flen = strlen(from);
	f->mangled = mangled;
	pl->nforms++;
	return CP_OK;
}

static void slashes(char *s)
{
	for (; *s; s++)
		if (*s == '.')
			*s = '/';
}

/* The forms ordered by their first byte (a counting sort, which keeps the
 * rules' order among those of one byte), and where each byte's begin:
 * match_at runs at every byte of every rewritten string, and thousands of
 * strings are rewritten in a module that cimports thousands of functions. */
static cp_status index_forms(struct planner *pl)
{
	struct cp_name_form *v = malloc((pl->nforms ? pl->nforms : 1) * sizeof(*v));
	size_t count[257] = { 0 }, k, c;

	if (!v)
		return cp_plan_oom(pl);
	for (k = 0; k < pl->nforms; k++)
		count[(uint8_t)pl->forms[k].from[0] + 1]++;
	for (c = 1; c < 257; c++)
		count[c] += count[c - 1];
	memcpy(pl->form_at, count, sizeof(count));
	for (k = 0; k < pl->nforms; k++)
		v[count[(uint8_t)pl->forms[k].from[0]]++] = pl->forms[k];
	free(pl->forms);
	pl->forms = v;
	pl->capforms = pl->nforms ? pl->nforms : 1;
	return CP_OK;
}

/* Every name that moves towards the target, in its three forms: dotted,
 * path (a/b/c) and Cython's mangled prefix; made once, since match_at runs
 * at every byte of every rewritten string. */
cp_status cp_plan_make_forms(struct planner *pl)
{
	const cp_rules *r = pl->rules;
	char from[512], to[512];
	cp_status st = CP_OK;
	size_t k;
	int side;

	for (k = 0; !st && k < r->nmod; k++) {
		const struct cp_module_pair *m = &r->mod[k];

		for (side = 0; !st && side < 2; side++) {
			if (m->layout[side] == pl->p->target || m->layout[!side] != pl->p->target)
				continue;
			snprintf(from, sizeof(from), "%s", m->name[side]);
			snprintf(to, sizeof(to), "%s", m->name[!side]);
			st = add_form(pl, from, to, false);
			slashes(from);
			slashes(to);
			if (!st)
				st = add_form(pl, from, to, false);
			if (!st && cp_mangle_prefix(m->name[side], from, sizeof(from)) >= 0 &&
			    cp_mangle_prefix(m->name[!side], to, sizeof(to)) >= 0)
				st = add_form(pl, from, to, true);
		}
	}
	return st ? st : index_forms(pl);
}

void cp_plan_free_forms(struct planner *pl)
{
	size_t i;

	for (i = 0; i < pl->nforms; i++) {
		free(pl->forms[i].from);
		free(pl->forms[i].to);
	}
	free(pl->forms);
}

/* The longest source-layout name at text[i] (module, path form or mangled
 * prefix) on its boundaries; its target form in *repl. */
static size_t match_at(const struct planner *pl, const char *text, size_t n, size_t i,
		       const char **repl)
{
	size_t best = 0, k, c = (uint8_t)text[i];

	for (k = pl->form_at[c]; k < pl->form_at[c + 1]; k++) {
		const struct cp_name_form *f = &pl->forms[k];

		if (f->flen <= best || f->flen > n - i || memcmp(text + i, f->from, f->flen) != 0)
			continue;
		if (!f->mangled && !cp_name_on_boundary(text, n, i, f->flen))
			continue;
		best = f->flen;
		*repl = f->to;
	}
	return best;
}

/* Rewrites every source-layout name in text; returns the replacements made
 * or -1 when the result would not fit out. */
int cp_plan_map_text(const struct planner *pl, const char *text, size_t n, char *out, size_t outsz,
		     size_t *outlen)
{
	size_t i = 0, o = 0;
	int count = 0;

	while (i < n) {
		const char *repl = NULL;
		size_t m = match_at(pl, text, n, i, &repl), rl;

		if (m) {
			rl = strlen(repl);
			if (o + rl >= outsz)
				return -1;
			memcpy(out + o, repl, rl);
			o += rl;
			i += m;
			count++;
			continue;
		}
		if (o + 1 >= outsz)
			return -1;
		out[o++] = text[i++];
	}
	out[o] = '\0';
	if (outlen)
		*outlen = o;
	return count;
}
