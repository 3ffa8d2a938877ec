CMakeFiles/cypatch-rules.dir/builtin_rules.c.o: \
 /work/main/build-assert/builtin_rules.c /usr/include/stdc-predef.h
