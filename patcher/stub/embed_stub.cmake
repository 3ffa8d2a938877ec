# Builds the fallback stub into a flat, relocation-free blob and writes it
# as C (run at build time). Inputs: CC, LD, OBJCOPY, NM, READELF, SRC
# (fallback_stub.c), LDS (stub.ld), HELPER (fallback_helper.py), WORK, OUT.
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "stub: ${ARGV} failed:\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

get_filename_component(dir ${SRC} DIRECTORY)
run(${CC} -Os -fPIC -ffreestanding -fno-builtin -fno-stack-protector -fno-asynchronous-unwind-tables
    -fno-unwind-tables -fno-jump-tables -fno-tree-loop-distribute-patterns -fcf-protection=none
    -mgeneral-regs-only -fno-common -Wall -Wextra -Werror -I${dir} -c ${SRC} -o ${WORK}/fallback_stub.o)
# Only PC-relative references may remain: the blob runs wherever it lands.
run(${READELF} -rW ${WORK}/fallback_stub.o)
string(REGEX MATCHALL "R_X86_64_[A-Z0-9_]+" kinds "${out}")
foreach(k ${kinds})
  if(NOT k MATCHES "^R_X86_64_(PC32|PLT32)$")
    message(FATAL_ERROR "stub: ${SRC} needs a ${k} relocation; it must be position-independent")
  endif()
endforeach()
run(${LD} -T ${LDS} -o ${WORK}/fallback_stub.elf ${WORK}/fallback_stub.o)
run(${OBJCOPY} -O binary -j .stub ${WORK}/fallback_stub.elf ${WORK}/fallback_stub.bin)
run(${NM} ${WORK}/fallback_stub.elf)
set(entries "")
foreach(sym cp_fb_import_module cp_fb_import_level cp_fb_capsule_isvalid cp_fb_capsule_getpointer)
  string(REGEX MATCH "([0-9a-f]+) T ${sym}\n" m "${out}")
  if(NOT m)
    message(FATAL_ERROR "stub: no entry ${sym}")
  endif()
  string(APPEND entries "const unsigned long cp_stub_entry_${sym} = 0x${CMAKE_MATCH_1};\n")
endforeach()
file(READ ${WORK}/fallback_stub.bin hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(READ ${HELPER} helper HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," helper "${helper}")
file(WRITE ${OUT} "/* generated from patcher/stub/fallback_stub.c and fallback_helper.py; do not edit */\n"
  "const unsigned char cp_stub_code[] = {${bytes}};\n"
  "const unsigned long cp_stub_code_size = sizeof(cp_stub_code);\n"
  "${entries}"
  "const char cp_stub_helper[] = {${helper}0x00};\n")
