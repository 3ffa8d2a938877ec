
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/patcher/cli/check.c" "CMakeFiles/cypatch-cli.dir/patcher/cli/check.c.o" "gcc" "CMakeFiles/cypatch-cli.dir/patcher/cli/check.c.o.d"
  "/work/main/patcher/cli/common.c" "CMakeFiles/cypatch-cli.dir/patcher/cli/common.c.o" "gcc" "CMakeFiles/cypatch-cli.dir/patcher/cli/common.c.o.d"
  "/work/main/patcher/cli/main.c" "CMakeFiles/cypatch-cli.dir/patcher/cli/main.c.o" "gcc" "CMakeFiles/cypatch-cli.dir/patcher/cli/main.c.o.d"
  "/work/main/patcher/cli/repair.c" "CMakeFiles/cypatch-cli.dir/patcher/cli/repair.c.o" "gcc" "CMakeFiles/cypatch-cli.dir/patcher/cli/repair.c.o.d"
  "/work/main/patcher/cli/retarget.c" "CMakeFiles/cypatch-cli.dir/patcher/cli/retarget.c.o" "gcc" "CMakeFiles/cypatch-cli.dir/patcher/cli/retarget.c.o.d"
  "/work/main/patcher/cli/show.c" "CMakeFiles/cypatch-cli.dir/patcher/cli/show.c.o" "gcc" "CMakeFiles/cypatch-cli.dir/patcher/cli/show.c.o.d"
  "/work/main/patcher/cli/verify.c" "CMakeFiles/cypatch-cli.dir/patcher/cli/verify.c.o" "gcc" "CMakeFiles/cypatch-cli.dir/patcher/cli/verify.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-assert/CMakeFiles/cypatch.dir/DependInfo.cmake"
  "/work/main/build-assert/CMakeFiles/cypatch-rules.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
