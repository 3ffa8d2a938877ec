/*
 * functions.c - where functions start, for stripped files too.
 *
 * .eh_frame_hdr holds a sorted table of every FDE's initial location; GCC and
 * clang emit it for every shared object. STT_FUNC symbols add what it lacks.
 */
#include "elf/image.h"
#include "util/error.h"
#include "util/sort.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30

static cp_status push(cp_image *img, size_t *cap, uint64_t addr, cp_error *err)
{
	if (CP_GROW(img->func, *cap, img->nfunc + 1))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	img->func[img->nfunc++] = addr;
	return CP_OK;
}

/* Reads the table when it uses the encodings every linker writes; another
 * encoding leaves the symbols as the only source, which is still correct. */
static cp_status read_eh_frame_hdr(cp_image *img, size_t *cap, cp_error *err)
{
	const struct cp_section *s = cp_image_section(img, ".eh_frame_hdr");
	const uint8_t *d;
	uint32_t count, i;
	cp_status st;

	if (!s || s->size < 12)
		return CP_OK;
	d = cp_image_bytes(img, s->offset, s->size);
	if (!d || d[0] != 1 || d[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4) ||
	    d[2] != DW_EH_PE_udata4 || d[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return CP_OK;
	memcpy(&count, d + 8, 4);
	if (count > (s->size - 12) / 8)
		return cp_fail(err, CP_E_INPUT, "%s: .eh_frame_hdr claims %u entries; the section holds %llu",
			       img->path, count, (unsigned long long)(s->size - 12) / 8);
	for (i = 0; i < count; i++) {
		int32_t loc;

		memcpy(&loc, d + 12 + (size_t)i * 8, 4);
		st = push(img, cap, s->addr + (uint64_t)(int64_t)loc, err);
		if (st)
			return st;
	}
	return CP_OK;
}

cp_status cp_functions_read(cp_image *img, cp_error *err)
{
	size_t i, cap = 0, n = 0;
	cp_status st = read_eh_frame_hdr(img, &cap, err);

	for (i = 0; !st && i < img->nsym; i++)
		if (img->sym[i].type == STT_FUNC && img->sym[i].defined && img->sym[i].value)
			st = push(img, &cap, img->sym[i].value, err);
	if (st || !img->nfunc)
		return st;
	if (!cp_sort_by_key(img->func, img->nfunc, sizeof(*img->func), 0))
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	for (i = 0; i < img->nfunc; i++)
		if (n == 0 || img->func[n - 1] != img->func[i])
			img->func[n++] = img->func[i];
	img->nfunc = n;
	return CP_OK;
}
