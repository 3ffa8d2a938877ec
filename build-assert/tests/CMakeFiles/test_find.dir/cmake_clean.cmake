file(REMOVE_RECURSE
  "CMakeFiles/test_find.dir/unit/test_find.c.o"
  "CMakeFiles/test_find.dir/unit/test_find.c.o.d"
  "test_find"
  "test_find.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_find.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
