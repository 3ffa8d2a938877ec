/*
 * fuzz_elf.c - the ELF loader (validation, LIEF, relocations, functions)
 * and the scanner, with both reports, on arbitrary bytes.
 */
#include "fuzz_input.h"

#include <stdio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	cp_image *img;
	cp_scan *scan;
	cp_error err;
	FILE *sink;
	int fd = fuzz_memfile(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (cp_image_open(path, &img, &err) == CP_OK) {
		if (cp_scan_run(img, fuzz_rules(), &scan, &err) == CP_OK) {
			sink = fopen("/dev/null", "w");
			if (sink) {
				cp_scan_write_text(scan, sink, 1, &err);
				cp_scan_write_json(scan, sink, &err);
				fclose(sink);
			}
			cp_scan_free(scan);
		}
		cp_image_close(img);
	}
	close(fd);
	return 0;
}
