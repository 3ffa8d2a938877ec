/*
 * load.c - opening an ELF file: mapped, checked (validate.c), then read
 * into the view (elf_view.c, relocs.c, fallback_view.c, functions.c).
 * The readers use image.c's accessors; only this file calls them all.
 */
#include "elf/image.h"
#include "util/error.h"
#include "util/map_guard.h"
#include "elf/open_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static cp_status map_file(cp_image *img, cp_error *err)
{
	struct stat st;
	void *p;
	int fd = cp_open_regular(img->path, &st);

	if (fd < 0 && errno == ENOTSUP)
		return cp_fail(err, CP_E_INPUT, "%s: not a regular file", img->path);
	if (fd < 0)
		return cp_fail(err, CP_E_INPUT, "%s: cannot open: %s", img->path, strerror(errno));
	img->size = (size_t)st.st_size;
	img->mtime = st.st_mtim;
	if (img->size == 0) {
		close(fd);
		return cp_fail(err, CP_E_INPUT, "%s: empty file", img->path);
	}
	p = mmap(NULL, img->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return cp_fail(err, CP_E_INPUT, "%s: cannot map: %s", img->path, strerror(errno));
	}
	if (!cp_map_guard_add(p, img->size)) {
		munmap(p, img->size);
		close(fd);
		return cp_fail(err, CP_E_INTERNAL, "%s: too many files mapped at once", img->path);
	}
	img->data = p;
	img->fd = fd;
	return CP_OK;
}

cp_status cp_image_open(const char *path, cp_image **out, cp_error *err)
{
	cp_image *img = calloc(1, sizeof(*img));
	cp_status st;

	*out = NULL;
	if (!img || !(img->path = strdup(path))) {
		free(img);
		return cp_fail(err, CP_E_INTERNAL, "%s: out of memory", path);
	}
	img->fd = -1;
	st = map_file(img, err);
	if (!st)
		st = cp_validate_elf(path, img->data, img->size, &img->arch, err);
	if (!st)
		st = cp_elf_read(img, err);
	if (!st)
		st = cp_relocs_read(img, err);
	if (!st)
		st = cp_fallback_read(img, err);
	if (!st)
		st = cp_functions_read(img, err);
	if (img->data)
		st = cp_image_settle(img, st, err);
	if (st) {
		cp_image_close(img);
		return st;
	}
	*out = img;
	return CP_OK;
}

void cp_image_close(cp_image *img)
{
	if (!img)
		return;
	if (img->data) {
		cp_map_guard_remove(img->data);
		munmap((void *)img->data, img->size);
	}
	if (img->fd >= 0)
		close(img->fd);
	free(img->sec);
	free(img->mapped);
	free(img->seg);
	free(img->sym);
	free(img->rel);
	free(img->got);
	free(img->plt);
	free(img->fallback.standin);
	free(img->func);
	free(img->dynnames);
	free(img->path);
	free(img);
}

