# Empty compiler generated dependencies file for test_stub_abi.
# This may be replaced when dependencies are built.
