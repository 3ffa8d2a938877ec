# Builds the fallback stub into a flat, relocation-free blob and writes it
# as C (run at build time, once per machine). Inputs: CC, LD, OBJCOPY, NM,
# READELF, SRC (fallback_stub.c), LDS (stub.ld), ARCH_STUB
# (patcher/arch/<machine>/stub.cmake: STUB_ARCH_CFLAGS, STUB_RELOCS,
# STUB_MACHINE, STUB_SYMBOL), WORK (the machine's own folder), OUT, and
# HELPER (fallback_helper.py) for the one blob that carries cp_stub_helper.
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "stub: ${ARGV} failed:\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# Every relocation of the object is one the machine allows (STUB_RELOCS), or
# the build fails: a type this does not know, of this machine or another, is
# one the flat blob cannot honour. Each row of `readelf -rW` is counted
# against the entries its section header announces, so none goes unread.
function(check_relocs text)
  string(REGEX MATCHALL "contains [0-9]+ entr" sections "${text}")
  set(announced 0)
  foreach(s ${sections})
    string(REGEX REPLACE "contains ([0-9]+) entr" "\\1" n "${s}")
    math(EXPR announced "${announced} + ${n}")
  endforeach()
  string(REGEX MATCHALL "\n[0-9a-f]+ +[0-9a-f]+ +[A-Za-z0-9_]+" rows "${text}")
  list(LENGTH rows nrows)
  if(NOT nrows EQUAL announced)
    message(FATAL_ERROR "stub: read ${nrows} of the ${announced} relocations of ${SRC}:\n${text}")
  endif()
  foreach(row ${rows})
    string(REGEX REPLACE ".* ([A-Za-z0-9_]+)$" "\\1" k "${row}")
    list(FIND STUB_RELOCS "${k}" known)
    if(known LESS 0)
      message(FATAL_ERROR "stub: ${SRC} needs a ${k} relocation; it must be position-independent "
                          "(allowed: ${STUB_RELOCS})")
    endif()
  endforeach()
endfunction()

if(NOT ARCH_STUB)
  message(FATAL_ERROR "stub: no ARCH_STUB (patcher/arch/<machine>/stub.cmake)")
endif()
include(${ARCH_STUB})
if(NOT STUB_RELOCS OR NOT STUB_SYMBOL OR NOT STUB_MACHINE)
  message(FATAL_ERROR "stub: ${ARCH_STUB} sets no STUB_RELOCS, STUB_MACHINE or STUB_SYMBOL")
endif()
get_filename_component(dir ${SRC} DIRECTORY)
run(${CC} -Os -fPIC -ffreestanding -fno-builtin -fno-stack-protector -fno-asynchronous-unwind-tables
    -fno-unwind-tables -fno-jump-tables -fno-tree-loop-distribute-patterns ${STUB_ARCH_CFLAGS}
    -fno-common -Wall -Wextra -Werror -I${dir} -c ${SRC} -o ${WORK}/fallback_stub.o)
# the object is the machine's (a list that matches no row passes anything)
run(${READELF} -hW ${WORK}/fallback_stub.o)
if(NOT out MATCHES "\n  Machine: +${STUB_MACHINE}\n")
  message(FATAL_ERROR "stub: ${CC} did not compile ${SRC} for ${STUB_MACHINE}:\n${out}")
endif()
run(${READELF} -rW ${WORK}/fallback_stub.o)
check_relocs("${out}")
run(${LD} -T ${LDS} -o ${WORK}/fallback_stub.elf ${WORK}/fallback_stub.o)
run(${OBJCOPY} -O binary -j .stub ${WORK}/fallback_stub.elf ${WORK}/fallback_stub.bin)
run(${NM} ${WORK}/fallback_stub.elf)
set(entries "")
foreach(sym cp_fb_import_module cp_fb_import_level cp_fb_capsule_isvalid cp_fb_capsule_getpointer
            cp_fb_dict_getitemstring cp_fb_dict_getitemstringref)
  string(REGEX MATCH "([0-9a-f]+) T ${sym}\n" m "${out}")
  if(NOT m)
    message(FATAL_ERROR "stub: no entry ${sym}")
  endif()
  string(APPEND entries "0x${CMAKE_MATCH_1}, ")
endforeach()
file(READ ${WORK}/fallback_stub.bin hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from patcher/stub/fallback_stub.c for ${STUB_MACHINE}; do not edit */\n"
  "#include \"arch/arch.h\"\n"
  "static const unsigned char code[] = {${bytes}};\n"
  "const struct cp_stub ${STUB_SYMBOL} = { code, sizeof(code), { ${entries}} };\n")
if(HELPER)
  file(READ ${HELPER} helper HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," helper "${helper}")
  file(APPEND ${OUT} "/* patcher/stub/fallback_helper.py */\n"
    "const char cp_stub_helper[] = {${helper}0x00};\n")
endif()
