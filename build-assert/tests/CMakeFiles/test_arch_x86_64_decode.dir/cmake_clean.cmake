file(REMOVE_RECURSE
  "CMakeFiles/test_arch_x86_64_decode.dir/unit/test_arch_x86_64_decode.c.o"
  "CMakeFiles/test_arch_x86_64_decode.dir/unit/test_arch_x86_64_decode.c.o.d"
  "test_arch_x86_64_decode"
  "test_arch_x86_64_decode.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_arch_x86_64_decode.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
