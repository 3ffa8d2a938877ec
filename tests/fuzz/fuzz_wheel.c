/*
 * fuzz_wheel.c - the wheel reader (libzip, then cypatch's checks of names,
 * sizes and RECORD) on arbitrary bytes, reading every member it accepts.
 */
#include "fuzz_input.h"
#include "wheel.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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
	unlink(path);
	return 0;
}
