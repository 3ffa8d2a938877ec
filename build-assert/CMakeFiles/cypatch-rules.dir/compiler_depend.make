# Empty compiler generated dependencies file for cypatch-rules.
# This may be replaced when dependencies are built.
