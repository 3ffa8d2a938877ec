# CMAKE generated file: DO NOT EDIT!
# Timestamp file for compiler generated dependencies management for test_arch_x86_64_encode.
