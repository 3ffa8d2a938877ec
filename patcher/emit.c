/*
 * emit.c - writing a plan into a copy of the input (see emit.h).
 */
#include "emit.h"
#include "error.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

static void apply(uint8_t *out, const struct cp_plan *p)
{
	size_t i;

	for (i = 0; i < p->nedits; i++)
		memcpy(out + p->edits[i].off, p->edits[i].bytes, p->edits[i].len);
	for (i = 0; i < p->nchunks; i++)
		memcpy(out + p->seg_off + p->chunks[i].seg_off, p->chunks[i].bytes, p->chunks[i].len);
}

/* The section header table again, with ".cypatch" over the new space, and
 * its name table, after everything else. */
static cp_status add_section(const cp_image *img, const struct cp_plan *p, uint8_t **out,
			     size_t *outlen, cp_error *err)
{
	Elf64_Ehdr eh;
	Elf64_Shdr strsh, nsh;
	uint64_t base, strtab_off, shdr_off, total;
	size_t namelen = strlen(CP_SECTION_NAME) + 1;
	uint8_t *o;

	memcpy(&eh, img->data, sizeof(eh));
	memcpy(&strsh, img->data + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(strsh));
	base = p->seg_off + p->seg_size > img->size ? p->seg_off + p->seg_size : img->size;
	strtab_off = base;
	shdr_off = (strtab_off + strsh.sh_size + namelen + 7) & ~7ull;
	total = shdr_off + ((uint64_t)eh.e_shnum + 1) * sizeof(Elf64_Shdr);
	o = calloc(1, total);
	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	memcpy(o, img->data, img->size);
	apply(o, p);
	memcpy(o + strtab_off, img->data + strsh.sh_offset, strsh.sh_size);
	memcpy(o + strtab_off + strsh.sh_size, CP_SECTION_NAME, namelen);
	memcpy(o + shdr_off, img->data + eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf64_Shdr));
	memset(&nsh, 0, sizeof(nsh));
	nsh.sh_name = (uint32_t)strsh.sh_size;
	nsh.sh_type = SHT_PROGBITS;
	nsh.sh_flags = SHF_ALLOC;
	nsh.sh_addr = p->seg_vaddr;
	nsh.sh_offset = p->seg_off;
	nsh.sh_size = p->seg_size;
	nsh.sh_addralign = 16;
	strsh.sh_offset = strtab_off;
	strsh.sh_size += namelen;
	memcpy(o + shdr_off + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), &strsh, sizeof(strsh));
	memcpy(o + shdr_off + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), &nsh, sizeof(nsh));
	memcpy(&eh, o, sizeof(eh)); /* the edits may have changed nothing here, but read them */
	eh.e_shoff = shdr_off;
	eh.e_shnum++;
	memcpy(o, &eh, sizeof(eh));
	*out = o;
	*outlen = total;
	return CP_OK;
}

cp_status cp_emit(const cp_image *img, const struct cp_plan *p, uint8_t **out, size_t *outlen,
		  cp_error *err)
{
	uint8_t *o;

	if (p->nchunks)
		return add_section(img, p, out, outlen, err);
	o = malloc(img->size);
	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	memcpy(o, img->data, img->size);
	apply(o, p);
	*out = o;
	*outlen = img->size;
	return CP_OK;
}
