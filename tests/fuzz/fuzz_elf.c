/*
 * fuzz_elf.c - the ELF loader (validation, sections, relocations,
 * functions) and the scanner, with both reports, on arbitrary bytes; and
 * LIEF on every input the validation passes, since the test suite hands
 * those files to LIEF (tests/unit/lief_crosscheck.c) and LIEF 0.9 aborts or
 * crashes on some malformed files.
 */
/* As in lief_crosscheck.c: C's bool, not LIEF's `typedef int bool`. */
#define LIEF_C_TYPES_H_
#include <stdbool.h>
#include <stdint.h>
#include <LIEF/ELF.h>

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
		Elf_Binary_t *b = elf_parse(path);

		if (b)
			elf_binary_destroy(b);
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
