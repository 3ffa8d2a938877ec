# Empty compiler generated dependencies file for cypatch-cli.
# This may be replaced when dependencies are built.
