# Empty dependencies file for test_find.
# This may be replaced when dependencies are built.
