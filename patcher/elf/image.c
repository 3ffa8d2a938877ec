/*
 * image.c - bounds-checked access to an opened ELF file's bytes and view
 * (load.c opens it).
 */
#include "elf/image.h"
#include "util/error.h"
#include "util/find.h"
#include "util/map_guard.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

cp_status cp_image_intact(const cp_image *img, cp_error *err)
{
	struct stat now;

	if (!cp_map_guard_intact(img->data) || fstat(img->fd, &now) || (size_t)now.st_size < img->size)
		return cp_fail(err, CP_E_INPUT, "%s: the file was truncated while cypatch read it", img->path);
	if ((size_t)now.st_size != img->size || now.st_mtim.tv_sec != img->mtime.tv_sec ||
	    now.st_mtim.tv_nsec != img->mtime.tv_nsec)
		return cp_fail(err, CP_E_INPUT, "%s: the file changed while cypatch read it", img->path);
	return CP_OK;
}

cp_status cp_image_settle(const cp_image *img, cp_status st, cp_error *err)
{
	/* none opened: nothing was read to doubt */
	if (!img || cp_image_intact(img, NULL) == CP_OK)
		return st;
	return cp_image_intact(img, err);
}

void cp_image_done_with(const cp_image *img, uint64_t off, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), from, to;

	if (off > img->size || len > img->size - off)
		return;
	from = (off + page - 1) & ~(page - 1);
	to = (off + len) & ~(page - 1);
	/* an unwritten private file mapping: dropping it loses nothing */
	if (to > from)
		madvise((void *)(img->data + from), to - from, MADV_DONTNEED);
}

const uint8_t *cp_image_search(const cp_image *img, const struct cp_section *sec, uint64_t from,
			       const void *needle, size_t n)
{
	const uint64_t window = CP_SEARCH_WINDOW;
	const uint8_t *d = cp_image_bytes(img, sec->offset, sec->size), *hit;
	uint64_t to;

	if (!d || sec->type == SHT_NOBITS || !n)
		return NULL;
	for (; from < sec->size; from = to) {
		to = sec->size - from > window ? from + window : sec->size;
		/* a match may start in this window and end in the next */
		hit = cp_find_first(d + from, (to + n - 1 < sec->size ? to + n - 1 : sec->size) - from, needle, n);
		if (hit)
			return hit;
		if (sec->size > window)
			cp_image_done_with(img, sec->offset + from, to - from);
	}
	return NULL;
}

const uint8_t *cp_image_bytes(const cp_image *img, uint64_t off, uint64_t len)
{
	if (off > img->size || len > img->size - off)
		return NULL;
	return img->data + off;
}

bool cp_section_is_code(const struct cp_section *s)
{
	return (s->flags & SHF_ALLOC) && (s->flags & SHF_EXECINSTR) && s->type == SHT_PROGBITS;
}

bool cp_section_is_rodata(const struct cp_section *s)
{
	return (s->flags & SHF_ALLOC) && !(s->flags & (SHF_EXECINSTR | SHF_WRITE)) &&
	       s->type == SHT_PROGBITS;
}

bool cp_section_is_device_code(const struct cp_section *s)
{
	return s->name && (strcmp(s->name, ".nv_fatbin") == 0 || strcmp(s->name, "__nv_relfatbin") == 0);
}

bool cp_section_is_data(const struct cp_section *s)
{
	return (s->flags & SHF_ALLOC) && !(s->flags & SHF_EXECINSTR) && s->type == SHT_PROGBITS &&
	       !cp_section_is_device_code(s);
}

bool cp_section_is_writable(const struct cp_section *s)
{
	return (s->flags & SHF_ALLOC) && (s->flags & SHF_WRITE);
}

/* Whether the section owns its addresses in the process image. A TLS
 * section without file bytes (.tbss) has addresses in the file, usually
 * those of the sections after it (.init_array, .data.rel.ro in C++
 * modules), but its memory is allocated per thread elsewhere. */
bool cp_section_is_mapped(const struct cp_section *s)
{
	return (s->flags & SHF_ALLOC) && !((s->flags & SHF_TLS) && s->type == SHT_NOBITS);
}

/* The mapped section holding va, the first in the section table where
 * several do: from the last one that starts at or below va, back over
 * those that may still reach it. */
const struct cp_section *cp_image_section_at(const cp_image *img, uint64_t va)
{
	const struct cp_mapped_section *m = img->mapped;
	size_t lo = 0, hi = img->nmapped, best = SIZE_MAX;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m[mid].addr <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo > 0 && m[lo - 1].reach >= va; lo--)
		if (va - m[lo - 1].addr < m[lo - 1].size && m[lo - 1].sec < best)
			best = m[lo - 1].sec;
	return best == SIZE_MAX ? NULL : &img->sec[best];
}

const struct cp_section *cp_image_section(const cp_image *img, const char *name)
{
	size_t i;

	for (i = 0; i < img->nsec; i++)
		if (strcmp(img->sec[i].name, name) == 0)
			return &img->sec[i];
	return NULL;
}

bool cp_image_va_to_off(const cp_image *img, uint64_t va, uint64_t len, uint64_t *off)
{
	const struct cp_section *s = cp_image_section_at(img, va);

	if (!s || s->type == SHT_NOBITS || len > s->size - (va - s->addr))
		return false;
	*off = s->offset + (va - s->addr);
	return cp_image_bytes(img, *off, len) != NULL;
}

const uint8_t *cp_image_va_bytes(const cp_image *img, uint64_t va, uint64_t len)
{
	uint64_t off;

	return cp_image_va_to_off(img, va, len, &off) ? img->data + off : NULL;
}

const char *cp_image_cstring(const cp_image *img, uint64_t va, size_t max)
{
	const struct cp_section *s = cp_image_section_at(img, va);
	uint64_t avail, off;
	const uint8_t *p;

	if (!s || s->type == SHT_NOBITS)
		return NULL;
	avail = s->size - (va - s->addr);
	if (avail > max)
		avail = max;
	if (!cp_image_va_to_off(img, va, avail, &off))
		return NULL;
	p = img->data + off;
	return memchr(p, 0, avail) ? (const char *)p : NULL;
}

static const char *find_slot(const struct cp_import_slot *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].addr == addr ? v[lo].name : NULL;
}

const char *cp_image_plt_name(const cp_image *img, uint64_t addr)
{
	return find_slot(img->plt, img->nplt, addr);
}

const char *cp_image_got_name(const cp_image *img, uint64_t addr)
{
	return find_slot(img->got, img->ngot, addr);
}

const struct cp_symbol *cp_image_symbol_at(const cp_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->nsym;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->sym[mid].value < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < img->nsym && img->sym[lo].value == addr; lo++)
		if (img->sym[lo].defined)
			return &img->sym[lo];
	return NULL;
}

const struct cp_symbol *cp_image_symbol(const cp_image *img, const char *name)
{
	size_t i;

	for (i = 0; i < img->nsym; i++)
		if (img->sym[i].defined && strcmp(img->sym[i].name, name) == 0)
			return &img->sym[i];
	return NULL;
}

size_t cp_image_func_after(const cp_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->nfunc;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->func[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool cp_image_function(const cp_image *img, uint64_t addr, uint64_t *start, uint64_t *end)
{
	size_t lo = cp_image_func_after(img, addr);
	const struct cp_section *s;

	if (lo == 0)
		return false;
	s = cp_image_section_at(img, addr);
	if (!s)
		return false;
	*start = img->func[lo - 1];
	*end = lo < img->nfunc ? img->func[lo] : s->addr + s->size;
	if (*end > s->addr + s->size)
		*end = s->addr + s->size;
	return *start >= s->addr;
}
