/*
 * arch.c - the table of supported machines (see arch.h).
 */
#include "arch/arch.h"
#include <assert.h>
#include <stddef.h>
#include <stdio.h>

static const struct cp_arch *const arches[] = { &cp_arch_x86_64, &cp_arch_aarch64 };

const struct cp_arch *cp_arch_for_machine(unsigned e_machine)
{
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
		const struct cp_arch *a = arches[i];

		if (a->e_machine != e_machine)
			continue;
		/* the planner calls these without asking (arch.h) */
		assert(a->pcrel_put && a->field_put && a->branch_rewrite && a->thunk && a->stub && a->reach);
		return a;
	}
	return NULL;
}

const char *cp_arch_supported(char *buf, size_t n)
{
	const size_t count = sizeof(arches) / sizeof(arches[0]);
	size_t i, at = 0;

	assert(n > 0);
	buf[0] = '\0';
	for (i = 0; i < count && at < n; i++) {
		const char *sep = i == 0 ? "" : i + 1 < count ? ", " : " and ";

		at += (size_t)snprintf(buf + at, n - at, "%s%s", sep, arches[i]->name);
	}
	return buf;
}
