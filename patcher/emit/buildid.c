/*
 * buildid.c - the GNU build-id of a patched file, derived from the old one and the delta.
 */
#include "emit/buildid.h"
#include "util/error.h"

#include <elf.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* The descriptor of the build-id note: its file offset and size. */
static bool find_note(const cp_image *img, uint64_t *off, uint32_t *size)
{
	const struct cp_section *s = cp_image_section(img, ".note.gnu.build-id");
	const uint8_t *p;
	uint32_t namesz, descsz, type;

	if (!s || s->type != SHT_NOTE || s->size < 12 || !(p = cp_image_bytes(img, s->offset, s->size)))
		return false;
	memcpy(&namesz, p, 4);
	memcpy(&descsz, p + 4, 4);
	memcpy(&type, p + 8, 4);
	if (type != NT_GNU_BUILD_ID || namesz != 4 || memcmp(p + 12, "GNU", 4) || descsz == 0 ||
	    descsz > 32 || 16 + (uint64_t)descsz > s->size)
		return false;
	*off = s->offset + 16;
	*size = descsz;
	return true;
}

/*
 * The new id hashes what identifies the output: the old id (the linker's
 * hash of the input), the input's size, and every byte the delta writes,
 * with its offset. Hashing the whole output, as ld does, cost 0.5 s per
 * GiB on its own; this costs what the edit does. The same input and plan
 * still give the same id, and no two different outputs of one input share
 * one.
 */
static int hash_u64(EVP_MD_CTX *c, uint64_t v)
{
	uint8_t le[8];
	int i;

	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return EVP_DigestUpdate(c, le, sizeof(le));
}

static cp_status digest(const uint8_t *old, uint32_t size, const struct cp_delta *d, uint8_t *md,
			cp_error *err)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int n = 0;
	size_t i;
	int ok = c && EVP_DigestInit_ex(c, size <= 20 ? EVP_sha1() : EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(c, "cypatch build-id 1", 18) && EVP_DigestUpdate(c, old, size) &&
		 hash_u64(c, d->in_size) && hash_u64(c, d->size);

	for (i = 0; ok && i < d->nrun; i++)
		ok = hash_u64(c, d->run[i].off) && hash_u64(c, d->run[i].len) &&
		     EVP_DigestUpdate(c, d->run[i].bytes, d->run[i].len);
	ok = ok && EVP_DigestUpdate(c, d->tail, d->size - d->in_size) && EVP_DigestFinal_ex(c, md, &n);
	EVP_MD_CTX_free(c);
	if (!ok)
		return cp_fail(err, CP_E_INTERNAL, "hashing the output for its build-id failed");
	return CP_OK;
}

/* Inserts an edit where the sorted order wants it (the check searches them). */
static cp_status insert_edit(const cp_image *img, struct cp_plan *p, uint64_t off, const uint8_t *bytes,
			     uint32_t len, cp_error *err)
{
	size_t i = 0;

	if (CP_GROW(p->edits, p->capedits, p->nedits + 1))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	while (i < p->nedits && p->edits[i].off < off)
		i++;
	if (i < p->nedits && p->edits[i].off < off + len)
		return cp_fail(err, CP_E_INTERNAL, "%s: the build-id overlaps an edit", img->path);
	memmove(&p->edits[i + 1], &p->edits[i], (p->nedits - i) * sizeof(*p->edits));
	memset(&p->edits[i], 0, sizeof(p->edits[i]));
	p->edits[i].kind = CP_EDIT_WORD;
	p->edits[i].off = off;
	p->edits[i].len = len;
	memcpy(p->edits[i].bytes, bytes, len);
	snprintf(p->edits[i].what, sizeof(p->edits[i].what), "GNU build-id recomputed");
	p->nedits++;
	return CP_OK;
}

cp_status cp_buildid_resign(const cp_image *img, struct cp_plan *plan, const struct cp_delta *d,
			    bool *done, cp_error *err)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	uint64_t off;
	uint32_t size;
	cp_status st;

	*done = false;
	if (!find_note(img, &off, &size) || off + size > d->in_size)
		return CP_OK;
	st = digest(img->data + off, size, d, md, err);
	if (!st)
		st = insert_edit(img, plan, off, md, size, err);
	*done = !st;
	return st;
}
