file(REMOVE_RECURSE
  "CMakeFiles/test_blob.dir/unit/test_blob.c.o"
  "CMakeFiles/test_blob.dir/unit/test_blob.c.o.d"
  "test_blob"
  "test_blob.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_blob.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
