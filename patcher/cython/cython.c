/*
 * cython.c - which Cython generated the module.
 *
 * Cython names its shared ABI module "_cython_<major>_<minor>_<patch>" (with
 * suffixes for limited-API builds) and keeps the name in .rodata.
 */
#include "cython/cython.h"

#include <ctype.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

static bool parse_abi(const char *p, size_t avail, cp_scan *s)
{
	int major, minor, patch, n = 0;
	char tail;

	if (avail < 14 || sscanf(p, "_cython_%d_%d_%d%n", &major, &minor, &patch, &n) != 3 || n == 0)
		return false;
	tail = p[n];
	if (tail && tail != '.' && tail != '\0' && tail != 'l' && tail != 'a' && tail != 'v' &&
	    tail != 'n')
		return false;
	s->cy_major = major;
	s->cy_minor = minor;
	s->cy_patch = patch;
	snprintf(s->cython, sizeof(s->cython), "%d.%d.%d", major, minor, patch);
	return true;
}

/* A number of at most three digits at *p, moved past; -1 when none. */
static int small_number(const char **p)
{
	int v = 0, n = 0;

	while (n < 3 && isdigit((unsigned char)**p))
		v = v * 10 + (*(*p)++ - '0'), n++;
	return n && !isdigit((unsigned char)**p) ? v : -1;
}

/* Cython's import helpers carry the version: __Pyx_ImportType_0_29_37,
 * __Pyx_ImportType_CheckSize_Warn_3_3_1, __Pyx_ImportFunction_3_3_1;
 * mangled in C++ mode (..._0_29_37P7_object) or cloned by the compiler
 * (....constprop.0), the version is followed by no digit. The first "_"
 * after "__Pyx_Import" that starts MAJOR_MINOR_PATCH is read. */
static bool version_suffix(const char *name, int *major, int *minor, int *patch)
{
	const char *p = strstr(name, "__Pyx_Import"), *q;

	for (q = p; q && (q = strchr(q + 1, '_')) != NULL;) {
		const char *r = q + 1;

		if ((*major = small_number(&r)) < 0 || *r++ != '_' || (*minor = small_number(&r)) < 0 ||
		    *r++ != '_' || (*patch = small_number(&r)) < 0)
			continue;
		if ((*major == 0 && *minor == 29) || *major == 3)
			return true;
	}
	return false;
}

static bool from_symbols(cp_scan *s)
{
	size_t i;
	int major, minor, patch;

	for (i = 0; i < s->img->nsym; i++) {
		if (!version_suffix(s->img->sym[i].name, &major, &minor, &patch))
			continue;
		s->cy_major = major;
		s->cy_minor = minor;
		s->cy_patch = patch;
		snprintf(s->cython, sizeof(s->cython), "%d.%d.%d", major, minor, patch);
		return true;
	}
	return false;
}

/* Whether a read-only data section holds the needle. */
static bool rodata_holds(const cp_scan *s, const char *needle, size_t n)
{
	size_t i;

	for (i = 0; i < s->img->nsec; i++) {
		const struct cp_section *sec = &s->img->sec[i];
		const uint8_t *d = cp_image_bytes(s->img, sec->offset, sec->size);

		if (d && cp_section_is_rodata(sec) && !cp_section_is_device_code(sec) &&
		    cp_image_search(s->img, sec, 0, needle, n))
			return true;
	}
	return false;
}

/* A module without CyFunctions may name no ABI module (0.29 always, and
 * 3.x limited-API builds: rmm 26.08's helper.abi3.so); "cython_runtime"
 * (the module it registers) still marks it. */
static bool has_runtime_marker(const cp_scan *s)
{
	static const char marker[] = "\0cython_runtime\0";

	return rodata_holds(s, marker, sizeof(marker) - 1);
}

/* Cython 3.2+ decompresses its string blob at import and says so when it
 * cannot ("... cannot initialise module strings. String compression was
 * configured ..."): such a module is no 0.29 one, whatever else it lacks. */
static bool has_blob_marker(const cp_scan *s)
{
	static const char marker[] = "cannot initialise module strings";

	return rodata_holds(s, marker, sizeof(marker) - 1);
}

void cp_cython_version(cp_scan *s)
{
	size_t i;

	for (i = 0; i < s->img->nsec; i++) {
		const struct cp_section *sec = &s->img->sec[i];
		const uint8_t *d, *p;

		if (!cp_section_is_data(sec))
			continue;
		d = cp_image_bytes(s->img, sec->offset, sec->size);
		for (p = d; d && (p = cp_image_search(s->img, sec, (uint64_t)(p - d), "_cython_", 8)) != NULL; p++) {
			if ((p == d || p[-1] == 0) &&
			    parse_abi((const char *)p, sec->size - (size_t)(p - d), s)) {
				s->is_cython = true;
				return;
			}
		}
	}
	if (!has_runtime_marker(s))
		return;
	s->is_cython = true;
	if (from_symbols(s))
		return;
	if (has_blob_marker(s)) {
		/* the version is not written down; 3.2 is the least it can be */
		s->cy_major = 3;
		s->cy_minor = 2;
		s->cy_patch = -1;
		snprintf(s->cython, sizeof(s->cython), "3.2+");
	} else {
		s->cy_major = 0;
		s->cy_minor = 29;
		s->cy_patch = -1;
		snprintf(s->cython, sizeof(s->cython), "0.29");
	}
}

bool cp_cython_at_least(const cp_scan *s, int major, int minor)
{
	return s->cy_major > major || (s->cy_major == major && s->cy_minor >= minor);
}

bool cp_cython_is(const cp_scan *s, int major, int minor)
{
	return s->cy_major == major && s->cy_minor == minor;
}
