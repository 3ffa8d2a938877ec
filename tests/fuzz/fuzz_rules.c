/*
 * fuzz_rules.c - the rules loader on arbitrary text.
 */
#include "fuzz_input.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	cp_rules *rules = cp_rules_new();
	cp_error err;

	if (text && rules) {
		memcpy(text, data, size);
		text[size] = 0;
		cp_rules_load_string(rules, "fuzz.rules", text, &err);
	}
	cp_rules_free(rules);
	free(text);
	return 0;
}
