file(REMOVE_RECURSE
  "CMakeFiles/cypatch-rules.dir/builtin_rules.c.o"
  "CMakeFiles/cypatch-rules.dir/builtin_rules.c.o.d"
  "builtin_rules.c"
  "libcypatch-rules.a"
  "libcypatch-rules.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/cypatch-rules.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
