# The fallback stub on aarch64, for patcher/stub/embed_stub.cmake: the flags
# that keep it plain integer code without BTI/PAC landing pads or calls to
# libgcc's outline atomics, and the tiny code model, whose ADR reaches the
# stub's constants PC-relatively from any 4-aligned address (the small
# model's ADRP + :lo12: pairs would tie the blob to a 4 KiB-aligned place,
# so ADR_PREL_PG_HI21 and ADD_ABS_LO12_NC are refused); the relocations the
# object may hold: ADR_PREL_LO21 (what it holds), CALL26 and JUMP26 (a
# call or tail call of another entry, as x86-64 allows PLT32); its machine
# as readelf -h names it; the name of its struct cp_stub (arch/aarch64/encode.h).
set(STUB_ARCH_CFLAGS -mcmodel=tiny -mgeneral-regs-only -mbranch-protection=none -mno-outline-atomics)
set(STUB_RELOCS R_AARCH64_ADR_PREL_LO21 R_AARCH64_CALL26 R_AARCH64_JUMP26)
set(STUB_MACHINE AArch64)
set(STUB_SYMBOL cp_stub_aarch64)
