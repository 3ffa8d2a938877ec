/*
 * fuzz_wheel.c - the wheel reader (libzip, then cypatch's checks of names,
 * sizes and RECORD) on arbitrary bytes, reading every member it accepts;
 * and the zip layout reader on the same bytes, every member it measures
 * spliced into a new archive (offsets in zip64 fields for odd sizes).
 */
#include "fuzz_input.h"
#include "wheel/wheel.h"
#include "wheel/zip_layout.h"
#include "wheel/zip_splice.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void splice_all(const char *path, uint64_t zip64_at)
{
	struct cp_zip_layout l;
	cp_zip_splice *z = NULL;
	cp_error err;
	char out[512];
	int fd = open(path, O_RDONLY), o;
	size_t i;

	snprintf(out, sizeof(out), "%s.out", path);
	o = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0 && o >= 0 && cp_zip_layout_read(fd, path, &l, &err) == CP_OK) {
		if (cp_zip_splice_new(o, out, zip64_at, &z, &err) == CP_OK) {
			for (i = 0; i < l.n && cp_zip_splice_add(z, fd, &l.m[i], &err) == CP_OK; i++)
				;
			if (i == l.n)
				cp_zip_splice_finish(z, &err);
		}
		cp_zip_splice_free(z);
		cp_zip_layout_free(&l);
	}
	if (fd >= 0)
		close(fd);
	if (o >= 0)
		close(o);
	unlink(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[512];
	struct cp_wheel *w;
	cp_error err;
	uint8_t *buf;
	size_t i, len;

	snprintf(path, sizeof(path), "%s/pkg-1.0-cp311-cp311-linux_x86_64.whl", fuzz_dir());
	if (fuzz_write_file(path, data, size) < 0)
		return 0;
	if (cp_wheel_open(path, &w, &err) == CP_OK) {
		for (i = 0; i < w->n; i++) {
			if (w->m[i].dir)
				continue;
			if (cp_wheel_read(w, i, &buf, &len, &err) == CP_OK)
				free(buf);
		}
		cp_wheel_close(w);
	}
	splice_all(path, size & 1 ? 0 : CP_ZIP64_AT);
	unlink(path);
	return 0;
}
