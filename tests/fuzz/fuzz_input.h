/*
 * fuzz_input.h - what the libFuzzer harnesses share: the fuzzer's bytes
 * as a file (cypatch and LIEF read paths, not buffers), and the bundled
 * rules.
 */
#ifndef CP_FUZZ_INPUT_H
#define CP_FUZZ_INPUT_H
#include <stddef.h>
#include <stdint.h>
#include "cypatch.h"

/* Writes data to a memory file; returns its descriptor (or -1) and its
 * path (/proc/self/fd/N) in path. */
int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t pathlen);

/* Writes data to dir/name (a directory of our own on a tmpfs); 0 or -1. */
int fuzz_write_file(const char *path, const uint8_t *data, size_t size);

/* A directory of our own for files that must have a real name. */
const char *fuzz_dir(void);

/* The bundled rules, loaded once; aborts when they do not load. */
const cp_rules *fuzz_rules(void);

#endif
