file(REMOVE_RECURSE
  "CMakeFiles/test_zip_deflated.dir/unit/test_zip_deflated.c.o"
  "CMakeFiles/test_zip_deflated.dir/unit/test_zip_deflated.c.o.d"
  "test_zip_deflated"
  "test_zip_deflated.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_zip_deflated.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
