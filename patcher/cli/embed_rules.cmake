# Writes the bundled rules file as a C string (run at build time).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(name ${IN} NAME)
file(WRITE ${OUT} "/* generated from rules/${name}; do not edit */\n"
  "const char cypatch_builtin_rules_name[] = \"<built-in>/${name}\";\n"
  "const char cypatch_builtin_rules[] = {${bytes}0x00};\n")
