# The fallback stub on x86-64, for patcher/stub/embed_stub.cmake: the flags
# that keep it plain integer code without CET's endbr64, the relocations
# the position-independent object may hold (PC-relative: the link into one
# flat .stub resolves them, so the blob runs wherever it lands), its machine
# as readelf -h names it, and the name of the struct cp_stub it becomes
# (arch/x86_64/encode.h).
set(STUB_ARCH_CFLAGS -fcf-protection=none -mgeneral-regs-only)
set(STUB_RELOCS R_X86_64_PC32 R_X86_64_PLT32)
set(STUB_MACHINE "Advanced Micro Devices X86-64")
set(STUB_SYMBOL cp_stub_x86_64)
