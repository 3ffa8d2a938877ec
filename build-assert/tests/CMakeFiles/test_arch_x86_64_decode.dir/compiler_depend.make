# Empty compiler generated dependencies file for test_arch_x86_64_decode.
# This may be replaced when dependencies are built.
