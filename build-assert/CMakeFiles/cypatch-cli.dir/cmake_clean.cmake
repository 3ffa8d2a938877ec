file(REMOVE_RECURSE
  "CMakeFiles/cypatch-cli.dir/patcher/cli/check.c.o"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/check.c.o.d"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/common.c.o"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/common.c.o.d"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/main.c.o"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/main.c.o.d"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/repair.c.o"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/repair.c.o.d"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/retarget.c.o"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/retarget.c.o.d"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/show.c.o"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/show.c.o.d"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/verify.c.o"
  "CMakeFiles/cypatch-cli.dir/patcher/cli/verify.c.o.d"
  "cypatch"
  "cypatch.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/cypatch-cli.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
