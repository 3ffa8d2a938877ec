# Empty dependencies file for cypatch.
# This may be replaced when dependencies are built.
