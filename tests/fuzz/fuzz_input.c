/*
 * fuzz_input.c - the harnesses' files and rules (see fuzz_input.h).
 */
#include "fuzz_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern const char cypatch_builtin_rules[];
extern const char cypatch_builtin_rules_name[];

static int write_all(int fd, const uint8_t *data, size_t size)
{
	while (size) {
		ssize_t n = write(fd, data, size);
		if (n <= 0)
			return -1;
		data += n;
		size -= (size_t)n;
	}
	return 0;
}

int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t pathlen)
{
	int fd = memfd_create("cypatch-fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (write_all(fd, data, size) < 0) {
		close(fd);
		return -1;
	}
	snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

int fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, size, f) == size;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* The harness process owns this directory for its lifetime; libFuzzer
 * runs inputs one at a time, so one fixed name inside it is enough. */
const char *fuzz_dir(void)
{
	static char dir[64];

	if (!dir[0]) {
		strcpy(dir, "/dev/shm/cypatch-fuzz-XXXXXX");
		if (!mkdtemp(dir)) {
			strcpy(dir, "/tmp/cypatch-fuzz-XXXXXX");
			if (!mkdtemp(dir))
				abort();
		}
	}
	return dir;
}

const cp_rules *fuzz_rules(void)
{
	static cp_rules *rules;
	cp_error err;

	if (!rules) {
		rules = cp_rules_new();
		if (!rules || cp_rules_load_string(rules, cypatch_builtin_rules_name,
						   cypatch_builtin_rules, &err)) {
			fprintf(stderr, "fuzz: bundled rules do not load\n");
			abort();
		}
	}
	return rules;
}
