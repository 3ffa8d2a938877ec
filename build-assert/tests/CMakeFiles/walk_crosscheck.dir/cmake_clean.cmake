file(REMOVE_RECURSE
  "CMakeFiles/walk_crosscheck.dir/unit/so_files.c.o"
  "CMakeFiles/walk_crosscheck.dir/unit/so_files.c.o.d"
  "CMakeFiles/walk_crosscheck.dir/unit/walk_crosscheck.c.o"
  "CMakeFiles/walk_crosscheck.dir/unit/walk_crosscheck.c.o.d"
  "walk_crosscheck"
  "walk_crosscheck.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/walk_crosscheck.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
