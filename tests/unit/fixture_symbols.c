/* fixture_symbols.c - see fixture_symbols.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fixture_symbols.h"

uint64_t fixture_symbol(const cp_image *img, const char *name)
{
	size_t i;

	for (i = 0; i < img->nsym; i++)
		if (!strcmp(img->sym[i].name, name))
			return img->sym[i].value;
	fail_msg("no symbol %s in %s", name, img->path);
	return 0;
}
