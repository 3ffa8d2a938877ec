file(REMOVE_RECURSE
  "CMakeFiles/lief_crosscheck.dir/unit/lief_crosscheck.c.o"
  "CMakeFiles/lief_crosscheck.dir/unit/lief_crosscheck.c.o.d"
  "CMakeFiles/lief_crosscheck.dir/unit/so_files.c.o"
  "CMakeFiles/lief_crosscheck.dir/unit/so_files.c.o.d"
  "lief_crosscheck"
  "lief_crosscheck.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/lief_crosscheck.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
