/*
 * frame_build.c - writing a struct cp_frame, for every architecture's frame
 * evaluator (see frame_build.h).
 */
#include "arch/frame_build.h"
#include "util/error.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SNAP_MAX (1u << 18)

bool cp_frame_build_alloc(struct cp_frame *f)
{
	uint8_t *m = mmap(NULL, CP_FRAME_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return false;
	f->src = (struct cp_frame_src *)m;
	f->val = m + CP_FRAME_BYTES * sizeof(*f->src);
	f->known = f->val + CP_FRAME_BYTES;
	return true;
}

bool cp_frame_index(int64_t off, unsigned len, size_t *idx)
{
	int64_t i = off + (int64_t)CP_FRAME_SIZE;

	if (i < 0 || i + (int64_t)len > (int64_t)CP_FRAME_BYTES)
		return false;
	*idx = (size_t)i;
	return true;
}

void cp_frame_put(struct cp_frame *f, int64_t off, const uint8_t *v, const uint8_t *k, unsigned len,
		  uint64_t va, uint64_t insn)
{
	size_t idx;
	unsigned i;

	if (!cp_frame_index(off, len, &idx))
		return;
	for (i = 0; i < len; i++) {
		f->val[idx + i] = v[i] & k[i];
		f->known[idx + i] = k[i];
		f->src[idx + i].insn = insn;
		f->src[idx + i].va = va ? va + i : 0;
	}
}

bool cp_frame_get(const struct cp_frame *f, int64_t off, unsigned size, uint64_t *v, uint64_t *known)
{
	size_t idx;
	unsigned i;

	*v = *known = 0;
	if (size > 8 || !cp_frame_index(off, size, &idx))
		return false;
	for (i = 0; i < size; i++) {
		*v |= (uint64_t)f->val[idx + i] << (8 * i);
		*known |= (uint64_t)f->known[idx + i] << (8 * i);
	}
	return true;
}

void cp_frame_copy_in(struct cp_frame *f, const cp_image *img, int64_t off, uint64_t va, uint64_t len,
		      uint64_t insn)
{
	const uint8_t *p = cp_image_va_bytes(img, va, len);
	uint8_t ones[256];
	uint64_t done;

	if (!p || len > CP_FRAME_SIZE)
		return;
	memset(ones, 0xff, sizeof(ones));
	for (done = 0; done < len; done += sizeof(ones)) {
		unsigned n = len - done < sizeof(ones) ? (unsigned)(len - done) : sizeof(ones);

		cp_frame_put(f, off + (int64_t)done, p + done, ones, n, va + done, insn);
	}
}

void cp_frame_fill(struct cp_frame *f, int64_t off, uint8_t byte, uint64_t len, uint64_t insn)
{
	uint8_t v[256], ones[256];
	uint64_t done;

	if (len > CP_FRAME_SIZE)
		return;
	memset(v, byte, sizeof(v));
	memset(ones, 0xff, sizeof(ones));
	for (done = 0; done < len; done += sizeof(v)) {
		unsigned n = len - done < sizeof(v) ? (unsigned)(len - done) : sizeof(v);

		cp_frame_put(f, off + (int64_t)done, v, ones, n, 0, insn);
	}
}

void cp_frame_snap_fill(struct cp_frame *f, int64_t off, size_t len)
{
	size_t i, k, idx;

	for (i = 0; i < f->nsnap; i++) {
		struct cp_frame_snap *sn = &f->snap[i];

		for (k = 0; k < len; k++) {
			int64_t o = off + (int64_t)k;
			size_t at;

			if (o < sn->base || (size_t)(o - sn->base) >= sn->len || !cp_frame_index(o, 1, &idx))
				continue;
			at = (size_t)(o - sn->base);
			if (sn->known[at] || !f->known[idx])
				continue;
			sn->val[at] = f->val[idx];
			sn->known[at] = f->known[idx];
			sn->src[at] = f->src[idx];
		}
	}
}

bool cp_frame_snapshot(struct cp_frame *f, int64_t base)
{
	struct cp_frame_snap *sn;
	size_t i, idx, len;

	for (i = 0; i < f->nsnap; i++)
		if (f->snap[i].base == base) {
			cp_frame_snap_fill(f, base, f->snap[i].len);
			return true;
		}
	if (f->nsnap == sizeof(f->snap) / sizeof(f->snap[0]) || !cp_frame_index(base, 1, &idx))
		return true;
	len = CP_FRAME_BYTES - idx < SNAP_MAX ? CP_FRAME_BYTES - idx : SNAP_MAX;
	sn = &f->snap[f->nsnap];
	sn->val = malloc(len);
	sn->known = malloc(len);
	sn->src = malloc(len * sizeof(*sn->src));
	if (!sn->val || !sn->known || !sn->src) {
		free(sn->val);
		free(sn->known);
		free(sn->src);
		return false;
	}
	memcpy(sn->val, f->val + idx, len);
	memcpy(sn->known, f->known + idx, len);
	memcpy(sn->src, f->src + idx, len * sizeof(*sn->src));
	sn->base = base;
	sn->len = len;
	f->nsnap++;
	return true;
}

bool cp_frame_note_astore(struct cp_frame *f, int64_t off, uint64_t va, uint64_t insn)
{
	struct cp_frame_astore *a;

	if (!va)
		return true;
	if (CP_GROW(f->astores, f->capastores, f->nastores + 1))
		return false;
	a = &f->astores[f->nastores++];
	memset(a, 0, sizeof(*a));
	a->off = off;
	a->va = va;
	a->insn = insn;
	return true;
}

void cp_frame_resolve_astores(struct cp_frame *f)
{
	size_t i, idx;
	unsigned b;

	for (i = f->nastores; i-- > 0 && !f->astores[i].resolved;) {
		struct cp_frame_astore *a = &f->astores[i];
		bool ok = true;

		a->resolved = true;
		if (!cp_frame_index(a->off + 8, 8, &idx))
			continue;
		a->next = 0;
		for (b = 0; b < 8 && ok; b++) {
			ok = f->known[idx + b] == 0xff && f->src[idx + b].insn == f->src[idx].insn &&
			     !f->src[idx + b].va;
			a->next |= (uint64_t)f->val[idx + b] << (8 * b);
		}
		a->next_known = ok && f->src[idx].insn;
		a->next_insn = a->next_known ? f->src[idx].insn : 0;
	}
}

bool cp_frame_note_addr(struct cp_frame *f, uint64_t va)
{
	size_t i;

	for (i = f->naddrs; i-- > 0 && i + 8 >= f->naddrs;)
		if (f->addrs[i] == va)
			return true;
	if (CP_GROW(f->addrs, f->capaddrs, f->naddrs + 1))
		return false;
	f->addrs[f->naddrs++] = va;
	return true;
}

void cp_bits_logic(enum cp_bit_op op, uint64_t av, uint64_t ak, uint64_t bv, uint64_t bk, uint64_t *v,
		   uint64_t *k)
{
	switch (op) {
	case CP_BIT_AND: /* a known 0 on either side makes a known 0 */
		*v = av & bv;
		*k = (ak & bk) | (ak & ~av) | (bk & ~bv);
		break;
	case CP_BIT_OR: /* a known 1 on either side makes a known 1 */
		*v = av | bv;
		*k = (ak & bk) | (ak & av) | (bk & bv);
		break;
	default:
		*v = av ^ bv;
		*k = ak & bk;
		break;
	}
	*v &= *k;
}

void cp_frame_unique(uint64_t *v, size_t *count)
{
	size_t i, n = 0;

	if (!*count)
		return;
	/* a module's init function gives tens of thousands: the radix sort,
	 * or qsort in place where it cannot have its buffer */
	if (!cp_sort_by_key(v, *count, sizeof(*v), 0))
		qsort(v, *count, sizeof(*v), cp_cmp_u64);
	for (i = 0; i < *count; i++)
		if (n == 0 || v[n - 1] != v[i])
			v[n++] = v[i];
	*count = n;
}
