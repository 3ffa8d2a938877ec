file(REMOVE_RECURSE
  "CMakeFiles/test_arch_x86_64_encode.dir/unit/test_arch_x86_64_encode.c.o"
  "CMakeFiles/test_arch_x86_64_encode.dir/unit/test_arch_x86_64_encode.c.o.d"
  "test_arch_x86_64_encode"
  "test_arch_x86_64_encode.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_arch_x86_64_encode.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
