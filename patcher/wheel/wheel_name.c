/*
 * wheel_name.c - a wheel's file name: what it names (a wheel, a CPython)
 * and whether it matches its .dist-info (see wheel_name.h). pip refuses a wheel whose name and metadata disagree; a
 * repaired one keeps its file name, so one accepted here would be written
 * only for pip to refuse it, or installed under a name it does not hold.
 */
#include "wheel/wheel_name.h"
#include "util/error.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A project name's character as PEP 503 normalizes it: lower case, and
 * any run of '-', '_' and '.' one '-' (the caller folds the runs). */
static bool separator(char c)
{
	return c == '-' || c == '_' || c == '.';
}

/* Whether a[0..an) and b[0..bn) are one project name once normalized. */
static bool same_project(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0, k = 0;

	while (i < an && k < bn) {
		if (separator(a[i]) && separator(b[k])) {
			while (i < an && separator(a[i]))
				i++;
			while (k < bn && separator(b[k]))
				k++;
			continue;
		}
		if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[k]))
			return false;
		i++, k++;
	}
	return i == an && k == bn;
}

/* Whether two versions are one: case aside (PEP 440 versions are case
 * blind; "1.0RC1" is "1.0rc1"). The other spellings PEP 440 folds
 * ("1.0-rc1", "v1.0") are not folded here: wheel tools write the
 * normalized form in both places. */
static bool same_version(const char *a, size_t an, const char *b, size_t bn)
{
	return an == bn && !strncasecmp(a, b, an);
}

bool cp_wheel_name_is(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcmp(path + n - 4, ".whl");
}

bool cp_wheel_name_python(const char *path, unsigned *minor, bool *abi3)
{
	const char *dash[3] = { NULL, NULL, NULL }, *p;
	size_t n = strlen(path);
	int k = 0;

	*abi3 = false;
	if (!cp_wheel_name_is(path))
		return false;
	/* {name}-{version}[-{build}]-{python}-{abi}-{platform}.whl, from the end */
	for (p = path + n - 4; p > path && p[-1] != '/' && k < 3; p--)
		if (p[-1] == '-')
			dash[k++] = p; /* platform, abi, python */
	*abi3 = k == 3 && !strncmp(dash[1], "abi3-", 5);
	return k == 3 && sscanf(dash[2], "cp3%u", minor) == 1;
}

cp_status cp_wheel_name_check(const char *path, const char *dist_info, cp_error *err)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t len = strlen(base), dl = strlen(dist_info), dashes = 0, i;
	const char *d1 = strchr(base, '-'), *v1, *dd = memchr(dist_info, '-', dl), *dv;

	for (i = 0; i < len; i++)
		dashes += base[i] == '-';
	if (!cp_wheel_name_is(base) || (dashes != 4 && dashes != 5) || !d1)
		return cp_fail(err, CP_E_INPUT, "%s: not a wheel's file name "
			       "(name-version[-build]-python-abi-platform.whl)", path);
	v1 = strchr(d1 + 1, '-');
	dl -= strlen(".dist-info"); /* the caller's dist_info ends so */
	dv = dd ? dd + 1 : NULL;
	if (!dd || !same_project(base, (size_t)(d1 - base), dist_info, (size_t)(dd - dist_info)) ||
	    !same_version(d1 + 1, (size_t)(v1 - d1 - 1), dv, (size_t)(dist_info + dl - dv)))
		return cp_fail(err, CP_E_INPUT, "%s: the file name does not match %s (pip refuses such a wheel)",
			       path, dist_info);
	return CP_OK;
}

bool cp_consumer_python(const char *path, unsigned *minor, bool *abi3)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	if (cp_wheel_name_is(base))
		return cp_wheel_name_python(base, minor, abi3);
	*abi3 = false;
	p = strstr(base, ".cpython-3");
	if (p)
		return sscanf(p + 10, "%u", minor) == 1;
	*abi3 = strstr(base, ".abi3.") != NULL;
	*minor = 2; /* abi3 from CPython 3.2 on */
	return *abi3;
}
