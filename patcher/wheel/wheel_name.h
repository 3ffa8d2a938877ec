/*
 * wheel_name.h - a wheel's file name: whether a path names a wheel, the
 * CPython its tags name, and the name against its .dist-info directory,
 * as pip compares them before it installs: the same project name (PEP 503
 * normalized) and the same version.
 */
#ifndef CP_WHEEL_NAME_H
#define CP_WHEEL_NAME_H

#include "cypatch.h"

#include <stdbool.h>

/* Whether path names a wheel (its file name ends in ".whl"). */
bool cp_wheel_name_is(const char *path);

/* The CPython 3.minor a wheel's python tag names (cp311-...), and whether
 * its abi tag is abi3; false when its tags name no CPython (py3-none). */
bool cp_wheel_name_python(const char *path, unsigned *minor, bool *abi3);

/* The CPython a consumer is built for, from its file name: a wheel's python
 * and abi tags (cp311-cp311, cp311-abi3) or an extension's suffix
 * (.cpython-311-x86_64-linux-gnu.so, .abi3.so: 3.2 on); false when it says
 * none. */
bool cp_consumer_python(const char *path, unsigned *minor, bool *abi3);

/* path's file name is {name}-{version}[-{build}]-{python}-{abi}-{platform}.whl
 * with the name and version of dist_info ("pkg-1.0.dist-info"). */
cp_status cp_wheel_name_check(const char *path, const char *dist_info, cp_error *err);

#endif
