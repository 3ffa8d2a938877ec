/* error.c - error reporting and array growth. */
#include "util/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cp_status cp_fail(cp_error *err, cp_status code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

cp_status cp_fail_about_member(cp_error *err, cp_status st, const char *file, const char *wheel,
				const char *member)
{
	char msg[sizeof(err->msg) + 8192];
	size_t n = strlen(file), m = strlen(member);
	const char *rest = !strncmp(err->msg, file, n)	   ? err->msg + n
			   : !strncmp(err->msg, member, m) ? err->msg + m
							   : err->msg;

	snprintf(msg, sizeof(msg), "%s: %s%s%s", wheel, member, rest == err->msg ? ": " : "", rest);
	memcpy(err->msg, msg, sizeof(err->msg) - 1);
	err->msg[sizeof(err->msg) - 1] = '\0';
	return st;
}

size_t cp_grow_capacity(size_t cap, size_t need, size_t size, size_t slack)
{
	size_t ncap = cap ? cap : 8;

	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return 0;
		ncap *= 2;
	}
	return ncap > (SIZE_MAX - slack) / size ? 0 : ncap;
}

int cp_grow(void *array, size_t *cap, size_t need, size_t size)
{
	void **p = array;
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	if (!(ncap = cp_grow_capacity(*cap, need, size, 0)))
		return -1;
	n = realloc(*p, ncap * size);
	if (!n)
		return -1;
	*p = n;
	*cap = ncap;
	return 0;
}
