file(REMOVE_RECURSE
  "CMakeFiles/test_zip_splice.dir/unit/test_zip_splice.c.o"
  "CMakeFiles/test_zip_splice.dir/unit/test_zip_splice.c.o.d"
  "test_zip_splice"
  "test_zip_splice.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_zip_splice.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
