# Empty dependencies file for test_zip_deflated.
# This may be replaced when dependencies are built.
