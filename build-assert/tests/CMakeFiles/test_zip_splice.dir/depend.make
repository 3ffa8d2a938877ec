# Empty dependencies file for test_zip_splice.
# This may be replaced when dependencies are built.
