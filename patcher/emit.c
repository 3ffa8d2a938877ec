/*
 * emit.c - writing a plan into a copy of the input (see emit.h).
 */
#include "emit.h"
#include "error.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

static void apply_edits(uint8_t *out, const struct cp_plan *p)
{
	size_t i;

	for (i = 0; i < p->nedits; i++)
		memcpy(out + p->edits[i].off, p->edits[i].bytes, p->edits[i].len);
}

/* The program headers, with the new PT_LOAD after the last PT_LOAD (they
 * must stay sorted by address) and PT_PHDR pointed at the moved table. */
static void write_phdrs(uint8_t *out, const uint8_t *in, const Elf64_Ehdr *eh, const struct cp_plan *p)
{
	Elf64_Phdr *dst = (Elf64_Phdr *)(out + p->seg_off);
	size_t i, o = 0, last_load = 0;

	for (i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, in + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD)
			last_load = i;
	}
	for (i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, in + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_PHDR) {
			ph.p_offset = p->seg_off;
			ph.p_vaddr = ph.p_paddr = p->seg_vaddr;
			ph.p_filesz = ph.p_memsz = p->phdr_size;
		}
		memcpy(&dst[o++], &ph, sizeof(ph));
		if (i == last_load) {
			Elf64_Phdr n = { PT_LOAD, PF_R, p->seg_off, p->seg_vaddr, p->seg_vaddr,
					 p->seg_size, p->seg_size, p->seg_align };

			memcpy(&dst[o++], &n, sizeof(n));
		}
	}
}

static cp_status grow(const cp_image *img, const struct cp_plan *p, uint8_t **out, size_t *outlen,
		      cp_error *err)
{
	Elf64_Ehdr eh;
	Elf64_Shdr strsh, nsh;
	uint64_t strtab_off, shdr_off, total;
	size_t i, namelen = strlen(CP_SECTION_NAME) + 1;
	uint8_t *o;

	memcpy(&eh, img->data, sizeof(eh));
	memcpy(&strsh, img->data + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(strsh));
	strtab_off = p->seg_off + p->seg_size;
	shdr_off = (strtab_off + strsh.sh_size + namelen + 7) & ~7ull;
	total = shdr_off + ((uint64_t)eh.e_shnum + 1) * sizeof(Elf64_Shdr);
	o = calloc(1, total);
	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	memcpy(o, img->data, img->size);
	apply_edits(o, p);
	write_phdrs(o, img->data, &eh, p);
	for (i = 0; i < p->nchunks; i++)
		memcpy(o + p->seg_off + p->chunks[i].seg_off, p->chunks[i].bytes, p->chunks[i].len);
	memcpy(o + strtab_off, img->data + strsh.sh_offset, strsh.sh_size);
	memcpy(o + strtab_off + strsh.sh_size, CP_SECTION_NAME, namelen);
	memcpy(o + shdr_off, img->data + eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf64_Shdr));
	strsh.sh_offset = strtab_off;
	memset(&nsh, 0, sizeof(nsh));
	nsh.sh_name = (uint32_t)strsh.sh_size;
	strsh.sh_size += namelen;
	memcpy(o + shdr_off + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), &strsh, sizeof(strsh));
	nsh.sh_type = SHT_PROGBITS;
	nsh.sh_flags = SHF_ALLOC;
	nsh.sh_addr = p->seg_vaddr + p->phdr_size;
	nsh.sh_offset = p->seg_off + p->phdr_size;
	nsh.sh_size = p->seg_size - p->phdr_size;
	nsh.sh_addralign = 1;
	memcpy(o + shdr_off + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), &nsh, sizeof(nsh));
	eh.e_phoff = p->seg_off;
	eh.e_phnum++;
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
		return grow(img, p, out, outlen, err);
	o = malloc(img->size);
	if (!o)
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", img->path);
	memcpy(o, img->data, img->size);
	apply_edits(o, p);
	*out = o;
	*outlen = img->size;
	return CP_OK;
}
