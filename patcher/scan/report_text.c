/*
 * report_text.c - a person's view of a scan.
 */
#include "scan/scan.h"
#include "util/error.h"

static void print_loc(FILE *out, const struct cp_loc *l)
{
	if (l->blob >= 0)
		fprintf(out, "blob %d +%#llx, %llu bytes", l->blob, (unsigned long long)l->offset,
			(unsigned long long)l->length);
	else
		fprintf(out, "%s %#llx (file %#llx), %llu bytes", l->section ? l->section : "?",
			(unsigned long long)l->vaddr, (unsigned long long)l->offset,
			(unsigned long long)l->length);
}

static void print_ref(FILE *out, const cp_scan *s, const struct cp_ref *r)
{
	size_t i;

	fprintf(out, "  %-9s %-8s ", cp_ref_kind_name(r->kind),
		r->layout >= 0 ? s->rules->layout[r->layout] : "-");
	switch (r->kind) {
	case CP_K_FUNCTION:
	case CP_K_VARIABLE:
		fprintf(out, "%s.%s \"%s\"", r->module ? r->module : "?", r->name, r->signature);
		if (r->slot)
			fprintf(out, " slot %#llx", (unsigned long long)r->slot);
		break;
	case CP_K_FROMIMPORT:
		fprintf(out, "from %s import %s", r->package, r->name);
		break;
	case CP_K_TYPE:
		fprintf(out, "%s.%s", r->module, r->class_name);
		if (r->size >= 0)
			fprintf(out, " size %lld", (long long)r->size);
		break;
	default:
		fprintf(out, "\"%s\"", r->value);
	}
	fprintf(out, "\n            at ");
	print_loc(out, &r->loc);
	fputc('\n', out);
	for (i = 0; i < r->nsites; i++)
		fprintf(out, "            %-5s %#llx  %s\n", cp_site_kind_name(r->sites[i].kind),
			(unsigned long long)r->sites[i].addr, r->site_text ? r->site_text[i] : "");
}

cp_status cp_scan_write_text(const cp_scan *s, FILE *out, int all, cp_error *err)
{
	size_t i, hidden = 0;
	bool any = false;

	fprintf(out, "%s: %s, Cython %s, built against: ", s->path, s->arch,
		s->cython[0] ? s->cython : "unknown");
	for (i = 0; i < s->rules->nlayout; i++)
		if (s->layouts_seen & (1u << i)) {
			fprintf(out, "%s%s", any ? ", " : "", s->rules->layout[i]);
			any = true;
		}
	fprintf(out, "%s\n", any ? "" : "no mapped layout");
	if (s->fallback)
		fprintf(out, "  fallback stubs: binds to %s when it is installed, else to %s\n",
			s->fallback_layout[0], s->fallback_layout[1]);
	for (i = 0; i < s->nstandin; i++)
		fprintf(out, "  stands in for the %s %s where the installed release lacks it\n",
			s->standin[i].module ? "module" : "function", s->standin[i].name);
	for (i = 0; i < s->nblobs; i++) {
		const struct cp_blob *b = &s->blobs[i];

		fprintf(out, "  blob %zu: %s, %s %#llx (file %#llx), %llu bytes -> %llu bytes, "
			"%zu entries (%zu str)\n", i, cp_blob_algo_name(b->algo), b->section,
			(unsigned long long)b->vaddr, (unsigned long long)b->offset,
			(unsigned long long)b->stored_length, (unsigned long long)b->length,
			b->nentries, b->nstr);
	}
	for (i = 0; i < s->nrefs; i++) {
		if (s->refs[i].kind == CP_K_STRING && !all) {
			hidden++;
			continue;
		}
		print_ref(out, s, &s->refs[i]);
	}
	if (hidden)
		fprintf(out, "  (%zu other string%s name mapped modules: messages, docstrings; --all lists them)\n",
			hidden, hidden == 1 ? "" : "s");
	for (i = 0; i < s->nnotes; i++)
		fprintf(out, "  note: %s\n", s->notes[i]);
	fprintf(out, "%zu reference%s\n", s->nrefs, s->nrefs == 1 ? "" : "s");
	if (fflush(out))
		return cp_fail(err, CP_E_IO, "writing the report failed");
	return CP_OK;
}
