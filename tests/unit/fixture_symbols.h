/* fixture_symbols.h - a fixture's symbols, for the unit tests that walk a
 * shared object built here (test_walk_points, test_walk_args). */
#ifndef CP_TEST_FIXTURE_SYMBOLS_H
#define CP_TEST_FIXTURE_SYMBOLS_H

#include <stdint.h>
#include "elf/image.h"

/* The value of the symbol name in img; fails the running test without one. */
uint64_t fixture_symbol(const cp_image *img, const char *name);

#endif
