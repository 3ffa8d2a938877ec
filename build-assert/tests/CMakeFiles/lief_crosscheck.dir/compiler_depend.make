# Empty compiler generated dependencies file for lief_crosscheck.
# This may be replaced when dependencies are built.
