/*
 * arch.c - the table of supported machines (see arch.h).
 */
#include "arch/arch.h"
#include <stddef.h>

static const struct cp_arch *const arches[] = { &cp_arch_x86_64 };

const struct cp_arch *cp_arch_for_machine(unsigned e_machine)
{
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
		if (arches[i]->e_machine == e_machine)
			return arches[i];
	return NULL;
}

const char *cp_arch_supported(void)
{
	return "x86-64";
}
