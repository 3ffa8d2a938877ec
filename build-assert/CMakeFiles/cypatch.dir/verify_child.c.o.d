CMakeFiles/cypatch.dir/verify_child.c.o: \
 /work/main/build-assert/verify_child.c /usr/include/stdc-predef.h
