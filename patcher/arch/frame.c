/*
 * frame.c - reading what a frame evaluation found (see frame.h); the
 * evaluation itself is the architecture's (cp_arch.frame_eval).
 */
#include "arch/frame.h"
#include "arch/frame_build.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void cp_frame_free(struct cp_frame *f)
{
	size_t i;

	for (i = 0; i < f->nsnap; i++) {
		free(f->snap[i].val);
		free(f->snap[i].known);
		free(f->snap[i].src);
	}
	if (f->src)
		munmap(f->src, CP_FRAME_MAP);
	free(f->loads);
	free(f->imms);
	free(f->cmps);
	free(f->leas);
	free(f->addrs);
	free(f->lea_insn);
	free(f->arglens);
	free(f->calls);
	free(f->cmpvals);
	free(f->astores);
	memset(f, 0, sizeof(*f));
}

static const struct cp_frame_snap *snap_of(const struct cp_frame *f, int64_t base)
{
	size_t i;

	for (i = 0; i < f->nsnap; i++)
		if (f->snap[i].base == base)
			return &f->snap[i];
	return NULL;
}

bool cp_frame_cell(const struct cp_frame *f, int64_t base, size_t i, unsigned nbits, uint32_t *out)
{
	const struct cp_frame_snap *sn = snap_of(f, base);
	uint32_t v = 0, k = 0, mask;
	unsigned b;

	if (!sn || nbits == 0 || nbits > 32 || i > (sn->len - 4) / 4 || sn->len < 4)
		return false;
	for (b = 0; b < 4; b++) {
		v |= (uint32_t)sn->val[4 * i + b] << (8 * b);
		k |= (uint32_t)sn->known[4 * i + b] << (8 * b);
	}
	mask = nbits == 32 ? ~0u : ((1u << nbits) - 1);
	if ((k & mask) != mask)
		return false;
	*out = v & mask;
	return true;
}

bool cp_frame_has_imm(const struct cp_frame *f, uint64_t v)
{
	size_t i = cp_first_key_at_least(f->imms, f->nimms, sizeof(*f->imms), 0, v);

	return i < f->nimms && f->imms[i] == v;
}

const struct cp_frame_src *cp_frame_src_at(const struct cp_frame *f, int64_t base, size_t i)
{
	const struct cp_frame_snap *sn = snap_of(f, base);

	if (!sn || sn->len < 4 || i > (sn->len - 4) / 4)
		return NULL;
	return &sn->src[4 * i];
}
