# Empty compiler generated dependencies file for walk_crosscheck.
# This may be replaced when dependencies are built.
