/* names.c - Python identifiers and dotted module names. */
#include "util/names.h"

#include <stdint.h>

bool cp_is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool cp_is_ident_byte(char c)
{
	return cp_is_ident_start(c) || (c >= '0' && c <= '9');
}

bool cp_is_identifier(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++)
		if (!(i == 0 ? cp_is_ident_start(s[i]) : cp_is_ident_byte(s[i])))
			return false;
	return true;
}

bool cp_name_on_boundary(const char *text, size_t n, size_t pos, size_t len)
{
	char before = pos ? text[pos - 1] : 0;
	char after = pos + len < n ? text[pos + len] : 0;

	if ((before && cp_is_ident_byte(before)) || before == '.' || before == '/')
		return false;
	return !(after && cp_is_ident_byte(after));
}

bool cp_is_dotted_name(const char *s, size_t n)
{
	size_t start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (!cp_is_identifier(s + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

size_t cp_name_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
	return (size_t)h;
}
