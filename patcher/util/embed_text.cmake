# Writes a text file as a C string named VAR (run at build time).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(name ${IN} NAME)
file(WRITE ${OUT} "/* generated from ${name}; do not edit */\n"
  "const char ${VAR}[] = {${bytes}0x00};\n")
