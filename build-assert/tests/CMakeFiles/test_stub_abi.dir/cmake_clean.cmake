file(REMOVE_RECURSE
  "CMakeFiles/test_stub_abi.dir/unit/test_stub_abi.c.o"
  "CMakeFiles/test_stub_abi.dir/unit/test_stub_abi.c.o.d"
  "test_stub_abi"
  "test_stub_abi.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_stub_abi.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
