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
	size_t i, k;

	for (i = 0; i < p->nedits; i++)
		memcpy(out + p->edits[i].off, p->edits[i].bytes, p->edits[i].len);
	for (k = 0; k < CP_NSPACES; k++)
		for (i = 0; i < p->space[k].nchunks; i++)
			memcpy(out + p->space[k].seg_off + p->space[k].chunks[i].seg_off,
			       p->space[k].chunks[i].bytes, p->space[k].chunks[i].len);
}

static const char *const section_name[CP_NSPACES] = { CP_SECTION_NAME, CP_CODE_SECTION_NAME };

/* The section header table again, with a section over each new space
 * (".cypatch", ".cypatch.text"), and its name table, after everything. */
static cp_status add_sections(const cp_image *img, const struct cp_plan *p, uint8_t **out,
			      size_t *outlen, cp_error *err)
{
	Elf64_Ehdr eh;
	Elf64_Shdr strsh, nsh;
	uint64_t base = img->size, strtab_off, shdr_off, total, names = 0;
	size_t k, added = 0;
	uint8_t *o;

	memcpy(&eh, img->data, sizeof(eh));
	memcpy(&strsh, img->data + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(strsh));
	for (k = 0; k < CP_NSPACES; k++) {
		const struct cp_space *sp = &p->space[k];

		if (sp->nchunks && sp->seg_off + sp->size > base)
			base = sp->seg_off + sp->size;
		if (sp->nchunks)
			names += strlen(section_name[k]) + 1;
	}
	strtab_off = base;
	shdr_off = (strtab_off + strsh.sh_size + names + 7) & ~7ull;
	total = shdr_off + ((uint64_t)eh.e_shnum + CP_NSPACES) * sizeof(Elf64_Shdr);
	o = calloc(1, total);
	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	memcpy(o, img->data, img->size);
	apply(o, p);
	memcpy(o + strtab_off, img->data + strsh.sh_offset, strsh.sh_size);
	memcpy(o + shdr_off, img->data + eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf64_Shdr));
	for (k = 0; k < CP_NSPACES; k++) {
		const struct cp_space *sp = &p->space[k];
		size_t len = strlen(section_name[k]) + 1;

		if (!sp->nchunks)
			continue;
		memset(&nsh, 0, sizeof(nsh));
		nsh.sh_name = (uint32_t)strsh.sh_size;
		nsh.sh_type = SHT_PROGBITS;
		nsh.sh_flags = SHF_ALLOC | (k == CP_SPACE_CODE ? SHF_EXECINSTR : 0);
		nsh.sh_addr = sp->seg_vaddr;
		nsh.sh_offset = sp->seg_off;
		nsh.sh_size = sp->size;
		nsh.sh_addralign = 16;
		memcpy(o + strtab_off + strsh.sh_size, section_name[k], len);
		strsh.sh_size += len;
		memcpy(o + shdr_off + ((uint64_t)eh.e_shnum + added++) * sizeof(Elf64_Shdr), &nsh, sizeof(nsh));
	}
	strsh.sh_offset = strtab_off;
	memcpy(o + shdr_off + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), &strsh, sizeof(strsh));
	memcpy(&eh, o, sizeof(eh)); /* the edits may have changed nothing here, but read them */
	eh.e_shoff = shdr_off;
	eh.e_shnum = (uint16_t)(eh.e_shnum + added);
	memcpy(o, &eh, sizeof(eh));
	*out = o;
	*outlen = shdr_off + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr);
	return CP_OK;
}

cp_status cp_emit(const cp_image *img, const struct cp_plan *p, uint8_t **out, size_t *outlen,
		  cp_error *err)
{
	uint8_t *o;

	if (cp_plan_new_bytes(p))
		return add_sections(img, p, out, outlen, err);
	o = malloc(img->size);
	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	memcpy(o, img->data, img->size);
	apply(o, p);
	*out = o;
	*outlen = img->size;
	return CP_OK;
}
