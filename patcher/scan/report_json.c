/*
 * report_json.c - the stable JSON form of a scan (docs/json.md).
 */
#include "scan/scan.h"
#include "util/error.h"

#include <jansson.h>

static json_t *location(const struct cp_loc *l)
{
	if (l->blob >= 0)
		return json_pack("{s:i, s:I, s:I}", "blob", l->blob, "offset", (json_int_t)l->offset,
				 "length", (json_int_t)l->length);
	return json_pack("{s:s?, s:I, s:I, s:I}", "section", l->section, "vaddr",
			 (json_int_t)l->vaddr, "offset", (json_int_t)l->offset, "length",
			 (json_int_t)l->length);
}

static json_t *site(const struct cp_site *t, const char *text)
{
	json_t *o = json_pack("{s:s, s:I, s:s}", "kind", cp_site_kind_name(t->kind), "address",
			      (json_int_t)t->addr, "text", text);

	if (o && t->len_addr)
		json_object_set_new(o, t->kind == CP_SITE_INDEX ? "template" : "length_at",
				    json_integer((json_int_t)t->len_addr));
	return o;
}

static json_t *nullable_addr(uint64_t v)
{
	return v ? json_integer((json_int_t)v) : json_null();
}

static json_t *reference(const cp_scan *s, const struct cp_ref *r)
{
	const char *layout = r->layout >= 0 ? s->rules->layout[r->layout] : NULL;
	json_t *o = json_pack("{s:s, s:s?, s:s?, s:s?, s:o}", "kind", cp_ref_kind_name(r->kind),
			      "layout", layout, "module", r->module, "value", r->value,
			      "location", location(&r->loc));
	json_t *sites = json_array();
	size_t i;

	if (!o || !sites) {
		json_decref(o);
		json_decref(sites);
		return NULL;
	}
	if (r->kind == CP_K_FUNCTION || r->kind == CP_K_VARIABLE) {
		json_object_set_new(o, "name", json_string(r->name));
		json_object_set_new(o, "signature", json_string(r->signature));
		json_object_set_new(o, "slot", nullable_addr(r->slot));
	}
	if (r->kind == CP_K_FROMIMPORT) {
		json_object_set_new(o, "package", json_string(r->package));
		json_object_set_new(o, "name", json_string(r->name));
	}
	if (r->kind == CP_K_TYPE) {
		json_object_set_new(o, "class", json_string(r->class_name));
		json_object_set_new(o, "size", r->size >= 0 ? json_integer(r->size) : json_null());
	}
	for (i = 0; i < r->nsites; i++)
		json_array_append_new(sites, site(&r->sites[i], r->site_text ? r->site_text[i] : ""));
	json_object_set_new(o, "sites", sites);
	return o;
}

static json_t *blob(const struct cp_blob *b, size_t i)
{
	bool templ = b->nentries && b->entry[0].cell_va;

	return json_pack("{s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:I, s:s}",
			 "index", (int)i, "algorithm", cp_blob_algo_name(b->algo), "section",
			 b->section, "vaddr", (json_int_t)b->vaddr, "offset", (json_int_t)b->offset,
			 "stored_length", (json_int_t)b->stored_length, "decoded_length",
			 (json_int_t)b->length, "entries", (json_int_t)b->nentries, "str_entries",
			 (json_int_t)b->nstr, "str_bits", (int)b->str_bits, "bytes_bits",
			 (int)b->bytes_bits, "code", (json_int_t)b->code, "index_storage",
			 templ ? "template" : "immediates");
}

static json_t *document(const cp_scan *s)
{
	json_t *doc, *layouts = json_array(), *refs = json_array(), *blobs = json_array(),
	       *notes = json_array(), *standins = json_array();
	size_t i;

	for (i = 0; i < s->rules->nlayout; i++)
		if (s->layouts_seen & (1u << i))
			json_array_append_new(layouts, json_string(s->rules->layout[i]));
	for (i = 0; i < s->nrefs; i++)
		json_array_append_new(refs, reference(s, &s->refs[i]));
	for (i = 0; i < s->nblobs; i++)
		json_array_append_new(blobs, blob(&s->blobs[i], i));
	for (i = 0; i < s->nnotes; i++)
		json_array_append_new(notes, json_string(s->notes[i]));
	for (i = 0; i < s->nstandin; i++)
		json_array_append_new(standins, json_pack("{s:s, s:s}", "kind", s->standin[i].module ? "module" : "function",
							   "name", s->standin[i].name));
	doc = json_pack("{s:s, s:i, s:s, s:s, s:s?, s:o, s:o, s:o, s:o, s:o, s:o}", "cypatch",
			CYPATCH_VERSION, "schema", 1, "file", s->path, "arch", s->arch, "cython",
			s->cython[0] ? s->cython : NULL, "layouts", layouts, "fallback",
			s->fallback ? json_pack("[s, s]", s->fallback_layout[0], s->fallback_layout[1]) : json_null(),
			"standins", standins, "blobs", blobs, "references", refs, "notes", notes);
	return doc;
}

cp_status cp_scan_write_json(const cp_scan *s, FILE *out, cp_error *err)
{
	json_t *doc = document(s);
	int rc;

	if (!doc)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", s->path);
	rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (rc || fputc('\n', out) == EOF || fflush(out))
		return cp_fail(err, CP_E_IO, "writing the report failed");
	return CP_OK;
}
