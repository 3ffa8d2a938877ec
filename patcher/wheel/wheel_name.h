/*
 * wheel_name.h - a wheel's file name against its .dist-info directory,
 * as pip compares them before it installs: the same project name (PEP 503
 * normalized) and the same version.
 */
#ifndef CP_WHEEL_NAME_H
#define CP_WHEEL_NAME_H

#include "cypatch.h"

/* path's file name is {name}-{version}[-{build}]-{python}-{abi}-{platform}.whl
 * with the name and version of dist_info ("pkg-1.0.dist-info"). */
cp_status cp_wheel_name_check(const char *path, const char *dist_info, cp_error *err);

#endif
