# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-assert/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test(unit_rules "/work/main/build-assert/tests/test_rules" "/work/main/rules/cuda-python.rules")
set_tests_properties(unit_rules PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;9;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(unit_zip_splice "/work/main/build-assert/tests/test_zip_splice")
set_tests_properties(unit_zip_splice PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(unit_zip_deflated "/work/main/build-assert/tests/test_zip_deflated")
set_tests_properties(unit_zip_deflated PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;11;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(unit_find "/work/main/build-assert/tests/test_find")
set_tests_properties(unit_find PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;12;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(unit_arch_x86_64_decode "/work/main/build-assert/tests/test_arch_x86_64_decode")
set_tests_properties(unit_arch_x86_64_decode PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;13;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(unit_arch_x86_64_encode "/work/main/build-assert/tests/test_arch_x86_64_encode")
set_tests_properties(unit_arch_x86_64_encode PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;18;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(unit_stub_abi "/work/main/build-assert/tests/test_stub_abi")
set_tests_properties(unit_stub_abi PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;31;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(lzss_vectors "/usr/bin/cmake" "-E" "env" "PYTHONPATH=/work/main/build/corpus/cython/3.3.1" "/work/main/.venv/bin/python" "/work/main/tests/unit/make_lzss_vectors.py" "/work/main/build-assert/tests/lzss")
set_tests_properties(lzss_vectors PROPERTIES  FIXTURES_SETUP "lzss" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;33;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(unit_blob "/work/main/build-assert/tests/test_blob" "/work/main/build-assert/tests/lzss")
set_tests_properties(unit_blob PROPERTIES  FIXTURES_REQUIRED "lzss" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;38;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(lief_crosscheck "/work/main/build-assert/tests/lief_crosscheck" "/work/main/build/corpus/consumers" "/work/main/build/corpus/site" "/work/main/build/corpus/cython" "/work/main/build/corpus/realcuda" "/work/main/build/corpus/unmapped")
set_tests_properties(lief_crosscheck PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;46;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(walk_crosscheck "/work/main/build-assert/tests/walk_crosscheck" "/work/main/rules/cuda-python.rules" "/work/main/build/corpus/consumers" "/work/main/build/corpus/realcuda")
set_tests_properties(walk_crosscheck PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;54;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(layout "/work/main/.venv/bin/python" "/work/main/tests/layout/check_layout.py" "/work/main/build-assert/libcypatch.a" "/work/main/patcher")
set_tests_properties(layout PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;59;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(corpus "/usr/bin/cmake" "-E" "env" "CYPATCH=/work/main/build-assert/cypatch" "CORPUS_DIR=/work/main/build/corpus" "/work/main/.venv/bin/python" "-m" "pytest" "-q" "-p" "no:cacheprovider" "/work/main/tests/python")
set_tests_properties(corpus PROPERTIES  TIMEOUT "1800" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;62;add_test;/work/main/tests/CMakeLists.txt;0;")
