"""Bad input: one clear line naming the file and the problem, exit code 2,
and the file untouched. The foreign binaries are real (MarkupSafe's wheels
for aarch64, i686 and x86-64), the broken ones cut from corpus builds."""
import hashlib
import os
import shutil

import pytest

from conftest import ENTRIES, MANIFEST, cypatch

SAMPLE = next(e["so"] for e in ENTRIES if e["id"] == "3.3.1/bindings/cimports")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_refused(path, message):
    before = digest(path)
    for extra in ([], ["--json"]):
        proc = cypatch("show", *extra, path)
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert lines == ["cypatch: %s: %s" % (path, message)], proc.stderr
    assert digest(path) == before


def cut(tmp_path, name, length):
    out = tmp_path / name
    with open(SAMPLE, "rb") as f:
        out.write_bytes(f.read(length))
    return str(out)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.so"
    p.write_bytes(b"")
    check_refused(str(p), "empty file")


def test_text_file(tmp_path):
    p = tmp_path / "notes.so"
    p.write_text("this is not an extension module\n")
    check_refused(str(p), "not an ELF file")


def test_truncated_in_the_header(tmp_path):
    check_refused(cut(tmp_path, "h.so", 40), "truncated ELF header (40 bytes)")


def test_truncated_in_the_program_headers(tmp_path):
    check_refused(cut(tmp_path, "p.so", 100), "truncated: program headers lie outside the file")


def test_truncated_before_the_section_headers(tmp_path):
    size = os.path.getsize(SAMPLE)
    check_refused(cut(tmp_path, "s.so", size - 100), "truncated: section headers lie outside the file")


def test_truncated_in_the_middle(tmp_path):
    """The section headers survive at the end, the sections they describe don't."""
    data = open(SAMPLE, "rb").read()
    half = len(data) // 2
    import struct
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum = struct.unpack_from("<H", data, 0x3c)[0]
    shdrs = data[shoff:shoff + shnum * 64]
    patched = bytearray(data[:half] + shdrs)
    struct.pack_into("<Q", patched, 0x28, half)  # e_shoff now points at the copy
    p = tmp_path / "m.so"
    p.write_bytes(bytes(patched))
    proc = cypatch("show", str(p))
    assert proc.returncode == 2
    assert proc.stderr.startswith("cypatch: %s: truncated: " % p)
    assert len(proc.stderr.splitlines()) == 1


def test_32_bit_elf():
    check_refused(MANIFEST["foreign"]["i686"], "32-bit ELF; cypatch handles x86-64 extensions only")


def test_aarch64_elf():
    check_refused(MANIFEST["foreign"]["aarch64"],
                  "ELF for aarch64 (e_machine 183); cypatch handles x86-64 extensions only")


def test_non_cython_shared_library():
    check_refused(MANIFEST["foreign"]["x86_64"],
                  "not a Cython extension module (no _cython_X_Y_Z ABI name in its data)")


def test_shared_library_without_pyinit():
    libz = next((p for p in ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1")
                 if os.path.exists(p)), None)
    if not libz:
        pytest.skip("no libz.so.1 on this machine to stand for a plain shared library")
    check_refused(libz, "not a Cython extension module (no PyInit_ function is exported)")


def test_directory_and_missing_file(tmp_path):
    proc = cypatch("show", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr == "cypatch: %s: not a regular file\n" % tmp_path
    missing = str(tmp_path / "nope.so")
    proc = cypatch("show", missing)
    assert proc.returncode == 2
    assert proc.stderr == "cypatch: %s: cannot open: No such file or directory\n" % missing


def test_bad_section_table(tmp_path):
    """e_shnum 0xffff (what crashes LIEF) is refused before LIEF sees it."""
    import struct
    data = bytearray(open(SAMPLE, "rb").read())
    struct.pack_into("<H", data, 0x3c, 0xffff)
    p = tmp_path / "shnum.so"
    p.write_bytes(bytes(data))
    check_refused(str(p), "bad section header table (e_shnum 65535, e_shentsize 64, e_shstrndx %d)"
                  % struct.unpack_from("<H", data, 0x3e)[0])


def test_stripped_section_headers(tmp_path):
    import struct
    data = bytearray(open(SAMPLE, "rb").read())
    struct.pack_into("<Q", data, 0x28, 0)          # e_shoff
    struct.pack_into("<HH", data, 0x3c, 0, 0)      # e_shnum, e_shstrndx
    p = tmp_path / "noshdr.so"
    p.write_bytes(bytes(data))
    check_refused(str(p), "no section headers; cypatch needs them to find the module's data")
