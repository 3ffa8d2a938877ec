"""The bad-input corpus: every damaged or unsuitable file gets exit code 2,
one line on stderr naming the file and the problem, nothing on stdout, the
input byte-identical afterwards and no output at all (no partial file, no
temporary left beside it) - from `show`, from each `--target-layout` mode
with -o, and from `--in-place`.

The damaged files are made here from a real corpus build by one documented
change each (a cut, a moved offset, a huge count); the foreign ones are
real (MarkupSafe's wheels for aarch64, i686 and x86-64, the system's libz);
the fuzzers' crash reproducers live in tests/bad_input/fuzz/."""
import glob
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import pytest

from conftest import BUILDS, CORPUS, CYPATCH, ENTRIES, MANIFEST, ROOT, SANITIZED, build_env, cypatch

SAMPLE = next(e["so"] for e in ENTRIES if e["id"] == "3.3.1/bindings/cimports")
FUZZ_REPRODUCERS = os.path.join(ROOT, "tests", "bad_input", "fuzz")


class Elf:
    """The sample's headers, read with struct (independently of cypatch)."""

    def __init__(self, path):
        self.data = open(path, "rb").read()
        d = self.data
        self.phoff, self.shoff = struct.unpack_from("<QQ", d, 0x20)
        self.phnum, self.shentsize, self.shnum, self.shstrndx = struct.unpack_from("<HHHH", d, 0x38)
        self.sec = [struct.unpack_from("<IIQQQQIIQQ", d, self.shoff + 64 * i) for i in range(self.shnum)]
        names = self.sec[self.shstrndx][4]
        self.names = [d[names + s[0]:d.index(b"\0", names + s[0])].decode() for s in self.sec]

    def index(self, name):
        return self.names.index(name)

    def hdr(self, name):
        """File offset of section `name`'s header."""
        return self.shoff + 64 * self.index(name)

    def with_changes(self, *changes):
        d = bytearray(self.data)
        for off, fmt, value in changes:
            struct.pack_into(fmt, d, off, value)
        return bytes(d)

    def cut_keeping_sections(self, length):
        """The first `length` bytes, with the section header table copied
        after them (so that the table survives and what it describes does not)."""
        length &= ~7
        d = bytearray(self.data[:length] + self.data[self.shoff:self.shoff + 64 * self.shnum])
        struct.pack_into("<Q", d, 0x28, length)
        return bytes(d)


ELF = Elf(SAMPLE)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def listing(d):
    return sorted(os.listdir(d))


def commands(path, out):
    yield ["show", path]
    yield ["show", "--json", path]
    yield ["--target-layout", "legacy", "-o", os.path.join(out, "legacy.so"), path]
    yield ["--target-layout", "fallback", "-o", os.path.join(out, "fallback.so"), path]
    yield ["--target-layout", "bindings", "--in-place", path]


def measured(build, *args):
    """One build run under /usr/bin/time: (the finished process, its peak
    resident memory in bytes). Not wait4 from here: a child forked from
    this process starts with its high-water mark (hundreds of MiB after the
    large repair tests), and exec keeps it."""
    proc = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", build] + list(args), capture_output=True, text=True,
                          env=build_env(build))
    lines = proc.stderr.splitlines()
    err = "".join(line + "\n" for line in lines[:-1])
    return subprocess.CompletedProcess(proc.args[4:], proc.returncode, proc.stdout, err), int(lines[-1]) * 1024


def refused(path, message, tmp_path, show=True, max_rss=None):
    """Every command refuses path with exit 2 and `message` on one line
    (using at most max_rss bytes of memory, when given)."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    before, beside = digest(path), listing(os.path.dirname(path))
    for args in commands(path, str(out)):
        if not show and args[0] == "show":
            continue
        if max_rss is None:
            procs = [cypatch(*args)]
        else:  # memory is a build's own: each build measured alone
            procs = []
            for build in BUILDS:
                proc, rss = measured(build, *args)
                assert rss <= max_rss(build), (build, args, proc.returncode, "peak %d MiB" % (rss >> 20))
                procs.append(proc)
        for proc in procs:
            assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
            assert proc.stdout == "", (args, proc.stdout)
            lines = proc.stderr.splitlines()
            assert len(lines) == 1, (args, proc.stderr)
            assert lines[0].startswith("cypatch: %s: " % path), (args, lines[0])
            assert message in lines[0], (args, lines[0])
    assert digest(path) == before
    assert listing(str(out)) == []
    assert listing(os.path.dirname(path)) == beside


def write(tmp_path, name, data):
    d = tmp_path / "in"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_bytes(data)
    return str(p)


# --- truncated at every table ---------------------------------------------

def test_empty_file(tmp_path):
    refused(write(tmp_path, "empty.so", b""), "empty file", tmp_path)


def test_text_file(tmp_path):
    refused(write(tmp_path, "notes.so", b"this is not an extension module\n"), "not an ELF file", tmp_path)


@pytest.mark.parametrize("where,length,message", [
    ("ident", 12, "truncated ELF header (12 bytes)"),
    ("elf-header", 40, "truncated ELF header (40 bytes)"),
    ("program-headers", ELF.phoff + ELF.phnum * 56 // 2, "truncated: program headers lie outside the file"),
    ("section-headers", ELF.shoff + ELF.shnum * 64 // 2, "truncated: section headers lie outside the file"),
    ("last-byte", len(ELF.data) - 1, "truncated: section headers lie outside the file"),
])
def test_truncated_in_a_header_table(tmp_path, where, length, message):
    refused(write(tmp_path, where + ".so", ELF.data[:length]), message, tmp_path)


# Sections whose second half reaches past the cut file (the header table
# copied after the cut included): all but the last few small ones.
DATA_SECTIONS = [n for n, s in zip(ELF.names, ELF.sec)
                 if s[1] not in (0, 8) and s[5] > 16 and s[4] + s[5] > (s[4] + s[5] // 2) + 64 * ELF.shnum]


@pytest.mark.parametrize("name", DATA_SECTIONS)
def test_truncated_in_each_section(tmp_path, name):
    """Cut in the middle of the section, its header kept: whatever reaches
    past the end (a segment or the section) is named."""
    s = ELF.sec[ELF.index(name)]
    data = ELF.cut_keeping_sections(s[4] + s[5] // 2)
    refused(write(tmp_path, "cut%s.so" % name, data), "lies outside the file", tmp_path)


# --- tables pointing elsewhere ---------------------------------------------

def test_overlapping_sections(tmp_path):
    dynsym, dynstr = ELF.index(".dynsym"), ELF.index(".dynstr")
    off = ELF.sec[dynsym][4] + 8
    data = ELF.with_changes((ELF.hdr(".dynstr") + 24, "<Q", off))
    refused(write(tmp_path, "overlap.so", data), "sections %d and %d overlap in the file" % (dynsym, dynstr),
            tmp_path)


@pytest.mark.parametrize("name", [".text", ".rodata", ".dynstr", ".symtab"])
def test_section_outside_the_file(tmp_path, name):
    far = len(ELF.data) + 0x1000
    data = ELF.with_changes((ELF.hdr(name) + 24, "<Q", far))
    refused(write(tmp_path, "outside%s.so" % name, data),
            "section %d lies outside the file (offset %#x" % (ELF.index(name), far), tmp_path)


def test_stripped_section_headers(tmp_path):
    data = ELF.with_changes((0x28, "<Q", 0), (0x3c, "<H", 0), (0x3e, "<H", 0))
    refused(write(tmp_path, "noshdr.so", data),
            "no section headers; cypatch needs them to find the module's data", tmp_path)


def dynamic_entry(tag):
    s = ELF.sec[ELF.index(".dynamic")]
    for k in range(s[5] // 16):
        if struct.unpack_from("<q", ELF.data, s[4] + 16 * k)[0] == tag:
            return s[4] + 16 * k + 8
    raise AssertionError("no dynamic tag %d" % tag)


@pytest.mark.parametrize("tag,name", [(6, "DT_SYMTAB"), (5, "DT_STRTAB"), (0x6ffffef5, "DT_GNU_HASH"),
                                      (7, "DT_RELA"), (23, "DT_JMPREL")])
def test_dynamic_entry_pointing_outside(tmp_path, tag, name):
    data = ELF.with_changes((dynamic_entry(tag), "<Q", 0x7fffffff0000))
    refused(write(tmp_path, "dyn-%s.so" % name, data),
            "dynamic entry %s (0x7fffffff0000) points outside the loaded segments" % name, tmp_path)


def repair_refuses(tmp_path, wheel, message, start="cypatch: "):
    """`repair` to legacy and to fallback exits 2 with one line starting
    with `start` and holding `message`, and writes nothing."""
    before, wheelhouse = digest(wheel), tmp_path / "wheelhouse"
    wheelhouse.mkdir(exist_ok=True)
    for mode in ("legacy", "fallback"):
        proc = cypatch("repair", "-w", str(wheelhouse), "-t", mode, wheel)
        assert proc.returncode == 2, (mode, proc.returncode, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(start) and message in lines[0], (mode, proc.stderr)
        assert listing(str(wheelhouse)) == [], mode
    assert digest(wheel) == before


def refused_everywhere(path, message, tmp_path):
    """refused(), and then by `repair` of a wheel holding it (the message
    names the wheel and the member; nothing is left in the output folder)
    and by `check --against` (one line naming the file)."""
    from test_check import wheel_of
    refused(path, message, tmp_path)
    member = "demo/bad" + MANIFEST["ext_suffix"]
    wheel = wheel_of(str(tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"), {member: open(path, "rb").read()})
    repair_refuses(tmp_path, wheel, message, "cypatch: %s: %s: " % (wheel, member))
    proc = cypatch("check", "--against", MANIFEST["providers"]["bindings"], path)
    assert proc.returncode == 2, ("check", proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cypatch: %s: " % path) and message in lines[0], proc.stderr


# Section header 0 given a type and an offset past the end, and for the
# typed tables the entry size and string table link those tables need (so
# that only its being section 0 is wrong). The loops over sections skip
# header 0 when they check offsets; the gABI has it all zero.
NULL_SECTION = [
    ("symtab", 2, 24, ".dynstr"),
    ("dynsym", 11, 24, ".dynstr"),
    ("dynamic", 6, 16, None),
    ("progbits", 1, 0, None),
]


@pytest.mark.parametrize("name,sh_type,entsize,link", NULL_SECTION, ids=[n[0] for n in NULL_SECTION])
def test_section_0_that_is_not_null(tmp_path, name, sh_type, entsize, link):
    far = len(ELF.data) + 0x100000
    changes = [(ELF.shoff + 4, "<I", sh_type), (ELF.shoff + 24, "<Q", far), (ELF.shoff + 32, "<Q", 0x1800),
               (ELF.shoff + 56, "<Q", entsize)]
    if link:
        changes.append((ELF.shoff + 40, "<I", ELF.index(link)))
    refused_everywhere(write(tmp_path, "null-%s.so" % name, ELF.with_changes(*changes)),
                       "section 0 is not the null section (type %d, offset %#x" % (sh_type, far), tmp_path)


def load_headers():
    """File offsets of the PT_LOAD entries, in table order."""
    return [ELF.phoff + 56 * i for i in range(ELF.phnum)
            if struct.unpack_from("<I", ELF.data, ELF.phoff + 56 * i)[0] == 1]


def test_overlapping_load_segments(tmp_path):
    """The second PT_LOAD moved onto the first's addresses (its offset moved
    with it, so that only the overlap is wrong)."""
    first, second = load_headers()[:2]
    data = ELF.with_changes((second + 8, "<Q", 0x1000), (second + 16, "<Q", 0x1000), (second + 24, "<Q", 0x1000))
    i, k = [(h - ELF.phoff) // 56 for h in (first, second)]
    refused_everywhere(write(tmp_path, "overlap-load.so", data),
                       "segments %d and %d: PT_LOAD entries overlap or are out of order" % (i, k), tmp_path)


def test_load_segments_out_of_order(tmp_path):
    """The first two PT_LOAD entries swapped."""
    first, second = load_headers()[:2]
    d = bytearray(ELF.data)
    d[first:first + 56], d[second:second + 56] = ELF.data[second:second + 56], ELF.data[first:first + 56]
    i, k = [(h - ELF.phoff) // 56 for h in (first, second)]
    refused_everywhere(write(tmp_path, "swapped-load.so", bytes(d)),
                       "segments %d and %d: PT_LOAD entries overlap or are out of order" % (i, k), tmp_path)


@pytest.mark.parametrize("align", [0x1018, 0x800, 0])
def test_load_alignment_ld_so_refuses(tmp_path, align):
    """ld.so: "ELF load command alignment not page-aligned"."""
    h = load_headers()[1]
    refused_everywhere(write(tmp_path, "align-%#x.so" % align, ELF.with_changes((h + 48, "<Q", align))),
                       ("segment %d: PT_LOAD alignment %#x is not a power of two of at least a page"
                       % ((h - ELF.phoff) // 56, align)) if align else "PT_LOAD alignment 0 is not", tmp_path)


RETYPED = [("3.3.1/bindings/cimports", 3), ("3.3.1/bindings/cimports", 0), ("3.3.1/bindings/cimports", 4),
           ("3.1.8/bindings/pyimport_as", 3)]


@pytest.mark.parametrize("module,p_type", RETYPED, ids=["%s-%d" % r for r in RETYPED])
def test_load_segment_retyped(tmp_path, module, p_type):
    """Each PT_LOAD in turn given another type (PT_INTERP 3, PT_NULL 0,
    PT_NOTE 4): the sections it held are mapped by no segment. On
    pyimport_as the re-scan of the output failed (exit 70, `the instruction
    at 0xa0a0 does not reach 0xa0e0`, naming the temporary file); on
    cimports most were patched."""
    elf = Elf(next(e["so"] for e in ENTRIES if e["id"] == module))
    loads = [elf.phoff + 56 * i for i in range(elf.phnum)
             if struct.unpack_from("<I", elf.data, elf.phoff + 56 * i)[0] == 1]
    for n, h in enumerate(loads):
        d = tmp_path / str(n)
        d.mkdir()
        refused_everywhere(write(d, "retyped-%d.so" % n, elf.with_changes((h, "<I", p_type))),
                           "lies in no PT_LOAD segment", d)


@pytest.mark.parametrize("command", ["show", "fallback", "check"])
def test_truncated_while_read(tmp_path, command):
    """Another process cuts the input to one page while cypatch reads it (a
    race: each run is cut at a random moment of its first milliseconds).
    The mapped input faulted with SIGBUS; now every run either finishes
    before the cut or refuses the file in one line, and leaves no temporary.
    The line says the file was truncated while cypatch read it (issue 40
    case 7: it blamed what the shrinking file showed), unless cypatch opened
    it after the cut: then it is what the cut file itself gets."""
    import random
    import time
    rng = random.Random(18)
    out = tmp_path / "out"
    out.mkdir()
    target = str(out / "cut.so")
    p = write(tmp_path, "cut.so", ELF.data[:4096])
    args = {"show": ["show", p], "fallback": ["--target-layout", "fallback", "-o", target, p],
            "check": ["check", "--against", MANIFEST["providers"]["bindings"], p]}[command]
    cut = cypatch(*args)
    assert cut.returncode == 2 and len(cut.stderr.splitlines()) == 1, cut.stderr
    said = {cut.stderr} | {"cypatch: %s: the file %s while cypatch read it\n" % (p, how) for how in ("was truncated", "changed")}
    for build, k in ((b, k) for b in BUILDS for k in range(60)):  # a race: each build on its own
        p = write(tmp_path, "cut.so", ELF.data)
        proc = subprocess.Popen([build] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=build_env(build))
        time.sleep(rng.uniform(0, 0.004))
        os.truncate(p, 4096)
        err = proc.communicate()[1]
        assert proc.returncode in (0, 2), (build, k, proc.returncode, err)
        if proc.returncode == 2:
            assert err in said, (build, k, err)
            assert listing(str(out)) == [], (build, k)
        if os.path.exists(target):
            os.unlink(target)
        assert listing(os.path.dirname(p)) == ["cut.so"], (build, k)


# --- huge counts --------------------------------------------------------------

def modes_refuse(path, message, tmp_path):
    """--target-layout legacy and fallback each exit 2 with one line
    holding message, write nothing and leave path as it was."""
    out, before = tmp_path / "out", digest(path)
    out.mkdir()
    for mode in ("legacy", "fallback"):
        proc = cypatch("--target-layout", mode, "-o", str(out / "x.so"), path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, (mode, proc.stderr)
    assert listing(str(out)) == [] and digest(path) == before


def text_site(opcode, imm):
    """The file offset of the immediate of the one instruction in the
    sample's .text that is `opcode` followed by the immediate's bytes."""
    text = ELF.sec[ELF.index(".text")]
    start, end = text[4], text[4] + text[5]
    pattern = opcode + imm
    found = [i for i in range(start, end - len(pattern)) if ELF.data[i:i + len(pattern)] == pattern]
    assert len(found) == 1, (opcode, imm, found)
    return found[0] + len(opcode)


def lzss_length_site(opcode, value):
    """Where the sample's LZSS decoder holds one of its blob's lengths as
    an imm32 after opcode."""
    return text_site(opcode, struct.pack("<I", value))


def lzss_blob():
    blob = json.loads(cypatch("show", "--json", SAMPLE, check=0).stdout)["blobs"][0]
    assert blob["algorithm"] == "lzss"
    return blob


# A lying header of the sample's LZSS blob (Cython 3.3.1 -O2): the decoded
# length one more or one less, both where it sizes the output (`mov esi, LEN`
# before PyBytes_FromStringAndSize: be + imm32) and where the decode loop
# stops (`cmp rdx, LEN - 1`: 48 81 fa + imm32); or the input consumed that
# the decoder compares one less (`cmp rcx, STORED`: 48 81 f9 + imm32).
ALLOC, LOOP, CONSUMED = b"\xbe", b"\x48\x81\xfa", b"\x48\x81\xf9"
LYING_LZSS = [("decoded-plus-one", 1, [(ALLOC, 0), (LOOP, -1)], "reaches PyBytes_FromStringAndSize from no immediate"),
              ("decoded-minus-one", -1, [(ALLOC, 0), (LOOP, -1)], "reaches PyBytes_FromStringAndSize from no immediate"),
              ("stored-minus-one", -1, [(CONSUMED, "stored")], "check of the input consumed"),
              # the loop alone: `cmp rdx, LEN; jbe` decodes one byte more than the blob
              ("loop-plus-one", 1, [(LOOP, -1)], "loop at 0x")]


@pytest.mark.parametrize("name,delta,sites,message", LYING_LZSS, ids=[c[0] for c in LYING_LZSS])
def test_an_lzss_blob_whose_header_lies(tmp_path, name, delta, sites, message):
    """The module fails at import (the decompression fails), so every mode
    refuses it: fallback, which rewrites no blob, exited 0 with an output
    that failed the same way (issue 40 case 1)."""
    blob = lzss_blob()
    changes = []
    for opcode, rel in sites:
        value = blob["stored_length"] if rel == "stored" else blob["decoded_length"] + rel
        changes.append((lzss_length_site(opcode, value), "<I", value + delta))
    path = write(tmp_path, os.path.basename(SAMPLE), ELF.with_changes(*changes))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(path), MANIFEST["providers"]["bindings"]]))
    imp = subprocess.run([sys.executable, "-c", "import cimports"], capture_output=True, text=True, env=env)
    assert imp.returncode and "LZSS string data decompression failed" in imp.stderr, imp.stderr
    modes_refuse(path, message, tmp_path)


# The sample's str decode loop (`cmp r13, NSTR; jne`: 49 83 fd + imm8)
# one more or one less than its length array: the loop decodes other
# strings than the blob holds (an "expected C variable" the provider does
# not have; the import raises nothing and the module is not there).
@pytest.mark.parametrize("delta", [1, -1], ids=["plus-one", "minus-one"])
def test_a_str_count_that_lies(tmp_path, delta):
    """Every mode exited 0 and the output failed as the input does (issue
    40 case 2); the scan now notes it and every mode refuses, naming the
    count."""
    nstr = lzss_blob()["str_entries"]
    path = write(tmp_path, os.path.basename(SAMPLE),
                 ELF.with_changes((text_site(b"\x49\x83\xfd", bytes([nstr])), "<B", nstr + delta)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(path), MANIFEST["providers"]["bindings"]]))
    imp = subprocess.run([sys.executable, "-c", "import cimports; cimports.run"], capture_output=True, text=True,
                         env=env)
    assert imp.returncode, imp.stdout + imp.stderr
    message = "holds %d str constants, and no loop of its decoder runs %d times" % (nstr, nstr)
    shown = json.loads(cypatch("show", "--json", path, check=0).stdout)
    assert any(message in n for n in shown["notes"]), shown["notes"]
    modes_refuse(path, message, tmp_path)


HUGE = [
    ("e_phnum", (0x38, "<H", 0xffff), "bad program header table (e_phnum 65535, e_phentsize 56)"),
    ("e_shnum-ffff", (0x3c, "<H", 0xffff), "bad section header table (e_shnum 65535"),
    ("e_shnum-feff", (0x3c, "<H", 0xfeff), "truncated: section headers lie outside the file"),
    ("dynsym-size", (ELF.hdr(".dynsym") + 32, "<Q", 1 << 40), "section %d lies outside the file" % ELF.index(".dynsym")),
    ("rela-size", (ELF.hdr(".rela.dyn") + 32, "<Q", (1 << 40) * 24), "section %d lies outside the file" % ELF.index(".rela.dyn")),
    ("symtab-size", (ELF.hdr(".symtab") + 32, "<Q", 0xffffffffffffffe8), "section %d lies outside the file" % ELF.index(".symtab")),
    ("eh-frame-hdr-count", (ELF.sec[ELF.index(".eh_frame_hdr")][4] + 8, "<I", 0x7fffffff),
     ".eh_frame_hdr claims 2147483647 entries"),
    ("symbol-name", (ELF.sec[ELF.index(".dynsym")][4] + 24, "<I", 0xfffffff0),
     "section %d: symbol 1 has a bad name" % ELF.index(".dynsym")),
]


@pytest.mark.parametrize("name,change,message", HUGE, ids=[h[0] for h in HUGE])
def test_huge_count(tmp_path, name, change, message):
    refused(write(tmp_path, name + ".so", ELF.with_changes(change)), message, tmp_path)


# --- SHT_RELR: relocations bounded by the file -----------------------------

def with_relr_section(words):
    """The sample with a SHT_RELR section `.relr.dyn` appended (not
    allocated, outside every segment: the reader reads every SHT_RELR), its
    name appended to a copy of the section name table, and the section
    header table moved after both."""
    d = bytearray(ELF.data)
    shstr = ELF.sec[ELF.shstrndx]
    names = ELF.data[shstr[4]:shstr[4] + shstr[5]] + b".relr.dyn\0"
    names_off = len(d)
    d += names
    d += b"\0" * (-len(d) % 8)
    relr_off = len(d)
    d += words
    d += b"\0" * (-len(d) % 8)
    table = bytearray(ELF.data[ELF.shoff:ELF.shoff + 64 * ELF.shnum])
    struct.pack_into("<QQ", table, 64 * ELF.shstrndx + 24, names_off, len(names))
    # sh_name, SHT_RELR (19), flags, addr, offset, size, link, info, align, entsize
    table += struct.pack("<IIQQQQIIQQ", shstr[5], 19, 0, 0, relr_off, len(words), 0, 0, 8, 8)
    shoff = len(d)
    d += table
    struct.pack_into("<Q", d, 0x28, shoff)
    struct.pack_into("<H", d, 0x3c, ELF.shnum + 1)
    return bytes(d)


def writable_data():
    """The address and file size of the sample's writable PT_LOAD."""
    for i in range(ELF.phnum):
        p_type, flags, _, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", ELF.data, ELF.phoff + 56 * i)
        if p_type == 1 and flags & 2:
            return vaddr, filesz
    raise AssertionError("no writable PT_LOAD")


def rss_bound(size):
    """64 MiB and the file: what `show` of a file of `size` bytes may use
    (the sanitized build, with AddressSanitizer's shadow memory and
    quarantine, 320 MiB more), for each build."""
    return lambda build: (64 << 20) + size + ((320 << 20) if build == SANITIZED or "ASAN_OPTIONS" in os.environ else 0)


def test_relr_all_ones_is_bounded(tmp_path):
    """Issue 18 case 3: 4 MiB of all-ones bitmap words stood for 63
    relocations each (33 million, 1 GiB of memory for `show`; 32 MiB of
    them exited 70). The first bitmap word has no address entry before it,
    so its places start at 0, where no writable segment is."""
    data = with_relr_section(b"\xff" * (4 << 20))
    refused(write(tmp_path, "relr-ones.so", data),
            ".relr.dyn: a relocation at 0x0 lies outside the writable segments", tmp_path,
            max_rss=rss_bound(len(data)))


def test_relr_running_past_the_writable_segment(tmp_path):
    """An address entry inside the writable segment, then all-ones bitmaps:
    the places are accepted until they leave the segment's file bytes."""
    vaddr, filesz = writable_data()
    start = vaddr + 8 - vaddr % 8
    ones = (filesz // (63 * 8)) + 2
    data = with_relr_section(struct.pack("<Q", start) + b"\xff" * 8 * ones)
    first_out = start  # the first place whose word reaches past the segment's file bytes
    while first_out + 8 <= vaddr + filesz:
        first_out += 8
    refused(write(tmp_path, "relr-past.so", data),
            ".relr.dyn: a relocation at %#x lies outside the writable segments" % first_out, tmp_path,
            max_rss=rss_bound(len(data)))


def test_relr_places_not_ascending(tmp_path):
    vaddr, _ = writable_data()
    start = vaddr + 8 - vaddr % 8
    data = with_relr_section(struct.pack("<QQ", start + 16, start))
    refused(write(tmp_path, "relr-descending.so", data),
            ".relr.dyn: the relocation at %#x is not above the one before it" % start, tmp_path)


# --- not what cypatch handles ------------------------------------------------

def test_32_bit_elf(tmp_path):
    p = write(tmp_path, "i686.so", open(MANIFEST["foreign"]["i686"], "rb").read())
    refused(p, "32-bit ELF; cypatch handles x86-64 and aarch64 extensions only", tmp_path)


def test_aarch64_non_cython_shared_library(tmp_path):
    """aarch64 is read now: MarkupSafe's aarch64 C extension is refused for
    what it is, not for its machine."""
    p = write(tmp_path, "aarch64.so", open(MANIFEST["foreign"]["aarch64"], "rb").read())
    refused(p, "not a Cython extension module (no _cython_X_Y_Z ABI name in its data)", tmp_path)


A64_MANIFEST = os.path.join(CORPUS, "aarch64", "manifest.json")


def a64_sample():
    with open(A64_MANIFEST) as f:
        m = json.load(f)
    return next(e["so"] for e in m["entries"] if e["id"] == "3.3.1/bindings/cimports")


def test_an_import_whose_add_writes_another_register(tmp_path):
    """The aarch64 sample's import of cuda.bindings.cyruntime takes `adrp x0,
    PAGE; add x0, x0, #OFF`; with the ADD's destination x1 (its Rd field,
    bits 4:0), PyImport_ImportModule gets the page's first bytes, code that
    reads as the empty name ("ValueError: Empty module name" under the
    emulated CPython, test_aarch64_corpus.py's). The module's imports are
    not what its strings say: every mode refused nothing and exited 0 with
    an output that failed the same way (issue 40 case 3); now each refuses,
    naming the import, and show says so."""
    if not os.path.exists(A64_MANIFEST):
        pytest.fail("%s: missing (scripts/test builds the aarch64 corpus)" % A64_MANIFEST)
    sample = a64_sample()
    report = json.loads(cypatch("show", "--json", sample, check=0).stdout)
    ref = next(r for r in report["references"] if r["kind"] == "cimport" and r["module"] == "cuda.bindings.cyruntime")
    (site,) = [x for x in ref["sites"] if x["text"].startswith("add x0, x0, #")]
    elf = Elf(sample)
    sec = next(h for h in elf.sec if h[3] <= site["address"] < h[3] + h[5] and h[1] == 1)
    off = sec[4] + site["address"] - sec[3]
    word = struct.unpack_from("<I", elf.data, off)[0]
    assert word & 31 == 0, hex(word)
    path = write(tmp_path, os.path.basename(sample), elf.with_changes((off, "<I", word | 1)))
    shown = json.loads(cypatch("show", "--json", path, check=0).stdout)
    assert any("which is no module name" in n for n in shown["notes"]), shown["notes"]
    modes_refuse(path, 'PyImport_ImportModule) names "" at %#x, which is no module name' % (ref["location"]["vaddr"] & ~0xfff),
                 tmp_path)


def test_wrong_machine_in_a_corpus_build(tmp_path):
    refused(write(tmp_path, "ppc.so", ELF.with_changes((0x12, "<H", 21))),
            "ELF for ppc64 (e_machine 21); cypatch handles x86-64 and aarch64 extensions only", tmp_path)


def test_non_cython_shared_library(tmp_path):
    p = write(tmp_path, "speedups.so", open(MANIFEST["foreign"]["x86_64"], "rb").read())
    refused(p, "not a Cython extension module (no _cython_X_Y_Z ABI name in its data)", tmp_path)


def test_shared_library_without_pyinit(tmp_path):
    libz = next((p for p in ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1")
                 if os.path.exists(p)), None)
    if not libz:
        pytest.skip("no libz.so.1 on this machine to stand for a plain shared library")
    p = write(tmp_path, "libz.so", open(libz, "rb").read())
    refused(p, "not a Cython extension module (no PyInit_ function is exported)", tmp_path)


def test_cython_extension_with_no_mapped_reference(tmp_path):
    """`show` describes it (0 references, exit 0); every patch mode refuses it."""
    p = write(tmp_path, "unmapped.so", open(MANIFEST["unmapped"], "rb").read())
    assert cypatch("show", p, check=0).stdout.splitlines()[-1] == "0 references"
    refused(p, "references no module the rules map; nothing to retarget", tmp_path, show=False)


def test_directory_and_missing_file(tmp_path):
    proc = cypatch("show", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr == "cypatch: %s: not a regular file\n" % tmp_path
    missing = str(tmp_path / "nope.so")
    proc = cypatch("show", missing)
    assert proc.returncode == 2
    assert proc.stderr == "cypatch: %s: cannot open: No such file or directory\n" % missing


# --- outputs that cannot be written --------------------------------------------

def mount_tmpfs(path, options):
    """A small tmpfs at path, or None with the reason it cannot be had."""
    os.makedirs(path, exist_ok=True)
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path], capture_output=True, text=True)
    return None if proc.returncode == 0 else "mount -t tmpfs failed: %s" % proc.stderr.strip()


def umount(path):
    subprocess.run(["umount", path], check=True)


def output_refused(args, target, message_part, inputs):
    before = {p: digest(p) for p in inputs}
    proc = cypatch(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cypatch: %s: " % target), proc.stderr
    assert message_part in lines[0], lines[0]
    assert {p: digest(p) for p in inputs} == before


def test_read_only_output_directory(tmp_path):
    ro = str(tmp_path / "ro")
    why = mount_tmpfs(ro, "ro,size=1m")
    if why and os.geteuid() == 0:
        pytest.skip("no read-only directory for root here: " + why)
    if why:  # an ordinary user: permissions are enough
        os.chmod(ro, 0o555)
    try:
        src = write(tmp_path, "in.so", ELF.data)
        for mode in ("legacy", "fallback"):
            target = os.path.join(ro, "out.so")
            output_refused(["--target-layout", mode, "-o", target, src], target,
                           "Read-only file system" if not why else "Permission denied", [src])
        assert os.listdir(ro) == []
    finally:
        if not why:
            umount(ro)


def test_full_file_system(tmp_path):
    """-o and --in-place on a tmpfs with room for the input but not for a
    second copy, and a repaired wheel on a tmpfs too small for it."""
    full = str(tmp_path / "full")
    size = (len(ELF.data) * 3 // 2 + 4095) // 4096 * 4096
    why = mount_tmpfs(full, "size=%d" % size)
    if why:
        pytest.skip("no small file system to fill: " + why)
    try:
        src = os.path.join(full, "in.so")
        shutil.copyfile(SAMPLE, src)
        target = os.path.join(full, "out.so")
        output_refused(["--target-layout", "legacy", "-o", target, src], target,
                       "No space left on device", [src])
        output_refused(["--target-layout", "fallback", "--in-place", src], src,
                       "No space left on device", [src])
        assert os.listdir(full) == ["in.so"]
    finally:
        umount(full)
    wheel = MANIFEST["real_wheels"]["rmm-cu12"]
    why = mount_tmpfs(full, "size=1m")
    if why:
        pytest.skip("no small file system to fill: " + why)
    try:
        # each build on its own: which member's unpacking finds the disk
        # full first is a race between repair's workers
        for build in BUILDS:
            proc = subprocess.run([build, "repair", "-t", "legacy", "-w", full, wheel], capture_output=True,
                                  text=True, env=build_env(build))
            assert proc.returncode == 2, (build, proc.stderr)
            lines = [l for l in proc.stderr.splitlines() if l.startswith("cypatch: ")]
            assert len(lines) == 1 and "No space left on device" in lines[0], (build, proc.stderr)
            assert os.listdir(full) == [], build
    finally:
        umount(full)


# --- what the fuzzers found ---------------------------------------------------

REPRODUCERS = sorted(glob.glob(os.path.join(FUZZ_REPRODUCERS, "elf", "*")) +
                     glob.glob(os.path.join(FUZZ_REPRODUCERS, "patch", "*")) +
                     glob.glob(os.path.join(FUZZ_REPRODUCERS, "elf_fields", "*")))


@pytest.mark.skipif(not REPRODUCERS, reason="the fuzzers have found no crash to keep a reproducer of")
@pytest.mark.parametrize("path", REPRODUCERS, ids=[os.path.relpath(p, FUZZ_REPRODUCERS) for p in REPRODUCERS])
def test_fuzz_reproducer(tmp_path, path):
    """A file that once crashed cypatch: now it is refused cleanly, or (for a
    patch-pipeline find that is a valid module) handled without a crash."""
    src = write(tmp_path, "repro.so", open(path, "rb").read())
    out = tmp_path / "out"
    out.mkdir()
    before = digest(src)
    for args in commands(src, str(out)):
        proc = subprocess.run([CYPATCH] + args, capture_output=True, text=True)
        assert proc.returncode in (0, 2), (args, proc.returncode, proc.stderr)
        if proc.returncode == 2:
            assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("cypatch: "), proc.stderr
        if args[-2] != "--in-place":
            assert digest(src) == before


def rela_plt(n):
    """File offset of entry n of the sample's .rela.plt."""
    return ELF.sec[ELF.index(".rela.plt")][4] + 24 * n


# fuzz_elf_fields' finds, replayed by scripts/fuzz_replay_elf: inputs that
# import (or happened to), whose outputs cypatch wrote with exit 0 and
# CPython then crashed in one import out of six. The reproducer holds all
# three changes; each case below makes one of them alone.
GOT_CASES = [
    ("place-outside", lambda: [(rela_plt(3), "<Q", len(ELF.data) + 0x10000)],
     "a relocation writes at %#x, outside the loaded segments" % (len(ELF.data) + 0x10000)),
    ("binding-addend", lambda: [(rela_plt(3) + 16, "<q", 0x8000000)], "has an addend (0x8000000)"),
    ("slot-twice", lambda: [(rela_plt(3), "<Q", struct.unpack_from("<Q", ELF.data, rela_plt(4))[0])],
     "two relocations bind the GOT slot at"),
]


@pytest.mark.parametrize("name,changes,message", GOT_CASES, ids=[c[0] for c in GOT_CASES])
def test_symbol_bindings_ld_so_would_apply_differently(tmp_path, name, changes, message):
    """A JUMP_SLOT moved outside the segments (ld.so writes into whatever
    is mapped there, and a patch that adds a segment changes what is), given
    an addend (lazy binding ignores it, eager binding adds it), or moved
    onto another's slot (the slot holds whichever function was called
    last)."""
    refused(write(tmp_path, name + ".so", ELF.with_changes(*changes())), message, tmp_path)


@pytest.mark.parametrize("name", ["", ".fini"], ids=["no-name", "named-fini"])
def test_a_plt_without_its_name(tmp_path, name):
    """fuzz_elf_fields: .plt's sh_name pointed elsewhere. The code walk knows
    the PLT by its name, walked it as code, and the plan's redirect of a
    PLT entry failed the check (exit 70, `the instruction at 0x2270 does not
    reach 0x4800`). The lazy GOT values say where the PLT is."""
    h = ELF.hdr(".plt")
    value = struct.unpack_from("<I", ELF.data, ELF.hdr(name))[0] if name else 0
    refused(write(tmp_path, "plt.so", ELF.with_changes((h, "<I", value))), "lies in no .plt section", tmp_path)


def last_load():
    return load_headers()[-1]


def test_a_fallback_stub_beyond_a_huge_bss(tmp_path):
    """fuzz_elf_fields: the writable segment's p_memsz grown to 2 GiB. The
    stub's context went after it, out of its thunks' 32-bit reach, and the
    check failed (exit 70, `the instruction at 0x47f0 does not reach
    0x80008db0`). A bss that large is legal; the fallback is refused."""
    h = last_load()
    src = write(tmp_path, "bss.so", ELF.with_changes((h + 40, "<Q", 0x80000000)))
    out = tmp_path / "out"
    out.mkdir()
    proc = cypatch("--target-layout", "fallback", "-o", str(out / "x.so"), src)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(proc.stderr.splitlines()) == 1 and "cannot reach its context" in proc.stderr, proc.stderr
    assert listing(str(out)) == []


def test_a_segment_past_the_address_space(tmp_path):
    h = last_load()
    refused_everywhere(write(tmp_path, "huge.so", ELF.with_changes((h + 40, "<Q", 1 << 62))),
                       "segment %d: PT_LOAD ends past the address space" % ((h - ELF.phoff) // 56), tmp_path)


def test_the_fuzzers_got_find_is_refused(tmp_path):
    path = os.path.join(FUZZ_REPRODUCERS, "elf_fields", "flaky-symbol-bindings")
    refused(write(tmp_path, "got.so", open(path, "rb").read()), "the symbol binding at 0x6fa0 has an addend (0x1000)",
            tmp_path)


# --- relative relocations that point outside the image ------------------------

def image_end():
    """The end of the sample's highest PT_LOAD (one past its last byte)."""
    return max(struct.unpack_from("<Q", ELF.data, h + 16)[0] + struct.unpack_from("<Q", ELF.data, h + 40)[0]
               for h in load_headers())


def first_relative():
    """File offset of the first R_X86_64_RELATIVE (8) entry of the sample's .rela.dyn."""
    s = ELF.sec[ELF.index(".rela.dyn")]
    return next(s[4] + 24 * i for i in range(s[5] // 24)
                if struct.unpack_from("<Q", ELF.data, s[4] + 24 * i + 8)[0] & 0xffffffff == 8)


OUTSIDE = [("below", -1), ("past-the-end", image_end() + 1), ("far", 1 << 40)]


@pytest.mark.parametrize("name,target", OUTSIDE, ids=[c[0] for c in OUTSIDE])
def test_a_relative_relocation_outside_the_image(tmp_path, name, target):
    """fuzz_elf_fields (tests/bad_input/fuzz/elf_fields/exit0-relative-below-the-image):
    the addend of a RELATIVE relocation (the first name of Cython's getset
    table) set to -1. The input imported by the chance of what ld.so had
    mapped below the image; `-t fallback` exited 0 and its output, with a
    segment added, failed under bindings. Refused by every command."""
    rela = first_relative()
    place = struct.unpack_from("<Q", ELF.data, rela)[0]
    refused_everywhere(write(tmp_path, name + ".so", ELF.with_changes((rela + 16, "<q", target))),
                       ".rela.dyn: the relative relocation at %#x points at %#x, outside the loaded segments"
                       % (place, target & (1 << 64) - 1), tmp_path)


def test_a_relative_relocation_one_past_the_image(tmp_path):
    """A pointer one past the image's last byte (the end of an array that
    closes .bss) is C's to make: read, not refused."""
    rela = first_relative()
    proc = cypatch("show", write(tmp_path, "end.so", ELF.with_changes((rela + 16, "<q", image_end()))))
    assert proc.returncode == 0, proc.stderr


def test_a_relr_word_outside_the_image(tmp_path):
    """RELR's addend is the word at its place: a word of the writable
    segment made to point below the image, named by an appended RELR."""
    for i in range(ELF.phnum):
        h = ELF.phoff + 56 * i
        p_type, flags, offset, vaddr = struct.unpack_from("<IIQQ", ELF.data, h)
        if p_type == 1 and flags & 2:
            break
    place = vaddr + 8 - vaddr % 8
    data = bytearray(with_relr_section(struct.pack("<Q", place)))
    struct.pack_into("<Q", data, offset + place - vaddr, (1 << 64) - 16)
    refused(write(tmp_path, "relr-below.so", bytes(data)),
            ".relr.dyn: the relative relocation at %#x points at 0xfffffffffffffff0, outside the loaded segments"
            % place, tmp_path)


# --- issue 18 case 12: --in-place keeps the replaced file's owner ---------------

NOBODY = 65534


def as_nobody():
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@pytest.fixture
def open_folder():
    """A 0777 folder that nobody can reach (pytest's tmp_path is root's 0700)."""
    if os.geteuid() != 0:
        pytest.skip("changing owners and running as nobody needs root")
    d = tempfile.mkdtemp(prefix="cypatch-owner-", dir="/tmp")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d)


def test_in_place_keeps_another_users_file_theirs(open_folder):
    """Root patching nobody's 0640 file in place leaves it nobody's, 0640."""
    p = os.path.join(open_folder, "theirs.so")
    shutil.copyfile(SAMPLE, p)
    os.chown(p, NOBODY, NOBODY)
    os.chmod(p, 0o640)
    proc = cypatch("--target-layout", "legacy", "--in-place", p)
    assert proc.returncode == 0, proc.stderr
    sb = os.stat(p)
    assert (sb.st_uid, sb.st_gid, sb.st_mode & 0o7777) == (NOBODY, NOBODY, 0o640)
    assert listing(open_folder) == ["theirs.so"]


def test_in_place_refuses_a_file_the_caller_cannot_write(open_folder):
    """nobody may rename over root's 0444 file in a 0777 folder; cypatch
    must not: refused, one line, nothing written."""
    p = os.path.join(open_folder, "roots.so")
    shutil.copyfile(SAMPLE, p)
    os.chmod(p, 0o444)
    before = digest(p)
    proc = subprocess.run([CYPATCH, "--target-layout", "legacy", "--in-place", p], preexec_fn=as_nobody,
                          capture_output=True, text=True)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cypatch: %s: not writable" % p), proc.stderr
    sb = os.stat(p)
    assert (sb.st_uid, sb.st_mode & 0o7777) == (0, 0o444)
    assert digest(p) == before
    assert listing(open_folder) == ["roots.so"]


# --- issue 18 case 13: FIFOs, stdout, rules folders, long rules lines ----------

def one_line(proc, code, start):
    lines = proc.stderr.splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith(start), proc.stderr
    return lines[0]


@pytest.mark.parametrize("name", ["ext.so", "pkg-1.0-cp311-cp311-linux_x86_64.whl"])
def test_fifo_without_a_writer(tmp_path, name):
    fifo = str(tmp_path / name)
    os.mkfifo(fifo)
    if name.endswith(".whl"):
        commands = [["repair", "-w", str(tmp_path / "w"), "-t", "legacy", fifo]]
    else:
        commands = [["show", fifo], ["--target-layout", "legacy", "-o", str(tmp_path / "o.so"), fifo]]
    for args in commands:
        try:
            proc = subprocess.run([CYPATCH] + args, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("%s blocks on a FIFO with no writer" % args[0])
        one_line(proc, 2, "cypatch: %s: not a regular file" % fifo)
    assert listing(str(tmp_path)) in ([name], sorted([name, "w"]))
    assert listing(str(tmp_path / "w")) == [] if os.path.isdir(tmp_path / "w") else True


def test_stdout_write_error(tmp_path):
    """Output lost on stdout is a failure, as in git: exit 2, one line."""
    out = str(tmp_path / "o.so")
    for build, args in ((b, a) for b in BUILDS for a in (["show", SAMPLE], ["--target-layout", "legacy", "-o", out, SAMPLE])):
        with open("/dev/full", "w") as full:  # each build on its own: twin.py would hold stdout
            proc = subprocess.run([build] + args, stdout=full, stderr=subprocess.PIPE, text=True, env=build_env(build))
        one_line(proc, 2, "cypatch: ")
        assert "No space left on device" in proc.stderr or "failed" in proc.stderr, proc.stderr


def test_rules_naming_a_folder(tmp_path):
    proc = cypatch("show", "--rules", str(tmp_path), SAMPLE)
    one_line(proc, 3, "cypatch: %s: " % tmp_path)
    assert proc.stdout == ""


def test_long_rules_line_named_by_its_number(tmp_path):
    rules = tmp_path / "long.ini"
    rules.write_text("[layouts]\nlegacy = a\n; %s\nbad line\n" % ("x" * 250))
    proc = cypatch("show", "--rules", str(rules), SAMPLE)
    one_line(proc, 3, "cypatch: %s:3: " % rules)


def test_directory_member_with_data(tmp_path):
    """A member named as a directory ("x/") that carries bytes: it is never
    read nor listed in RECORD, so its bytes (and a wrong CRC-32) went
    unchecked into the repaired wheel (found by fuzz_zip_fields; Python's
    testzip() reported the output corrupt)."""
    import base64
    import zipfile
    dist = "demo-1.0.dist-info"
    files = {dist + "/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
             dist + "/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"}
    rows = ["%s,sha256=%s,%d" % (n, base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode(),
                                 len(d)) for n, d in files.items()]
    wheel = str(tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl")
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("demo/hidden_", b"anything at all " * 64)
        for n, d in files.items():
            z.writestr(n, d)
        z.writestr(dist + "/RECORD", "\n".join(rows + [dist + "/RECORD,,"]) + "\n")
    data = open(wheel, "rb").read().replace(b"demo/hidden_", b"demo/hidden/")
    open(wheel, "wb").write(data)
    before, wheelhouse = digest(wheel), tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    for mode in ("legacy", "fallback"):
        proc = cypatch("repair", "-w", str(wheelhouse), "-t", mode, wheel)
        assert proc.returncode == 2, (mode, proc.returncode, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and "a directory member holds data" in lines[0], (mode, proc.stderr)
        assert listing(str(wheelhouse)) == [], mode
    assert digest(wheel) == before


def small_wheel(path, files=(), comment=b""):
    """A wheel of METADATA, WHEEL and files {name: bytes}, stored, RECORD made right."""
    import zipfile
    from test_check import wheel_of
    return wheel_of(path, dict(files), zipfile.ZIP_STORED, comment)




def test_end_record_in_the_comment(tmp_path):
    """A second end record in the archive comment whose own comment length
    runs past the file: libzip and zip_layout.c skip it, CPython's zipfile
    (pip) takes it and reads another central directory (found by
    fuzz_zip_fields through fuzz_replay_zip)."""
    wheel = small_wheel(str(tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"),
                        comment=b"PK\x05\x06" + b"\0" * 16 + b"\xff\xff")
    repair_refuses(tmp_path, wheel, "an end of central directory record in the archive comment")


def test_unknown_compression_method(tmp_path):
    """An empty member of compression method 0x7fff: libzip reads its no
    bytes, CPython's zipfile (pip) refuses it; repair copied it (found by
    fuzz_zip_fields)."""
    import zipfile
    wheel = small_wheel(str(tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"), {"demo/empty.py": b""})
    with zipfile.ZipFile(wheel) as z:
        local, cd = z.getinfo("demo/empty.py").header_offset, z.start_dir
    data = bytearray(open(wheel, "rb").read())
    struct.pack_into("<H", data, local + 8, 0x7fff)
    struct.pack_into("<H", data, data.index(b"demo/empty.py", cd) - 46 + 10, 0x7fff)
    open(wheel, "wb").write(data)
    repair_refuses(tmp_path, wheel, "compression method is not stored, deflate, bzip2 or LZMA")


def test_record_row_of_one_field(tmp_path):
    """A RECORD row with no hash and no size ("45321"): never compared with
    a member, so a row for a file the wheel lacks passed (found by
    fuzz_replay_zip)."""
    import zipfile
    wheel = small_wheel(str(tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"))
    with zipfile.ZipFile(wheel) as z:
        files = {n: z.read(n) for n in z.namelist()}
    record = "demo-1.0.dist-info/RECORD"
    files[record] = files[record] + b"45321\n"
    with zipfile.ZipFile(wheel, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    repair_refuses(tmp_path, wheel, "line 4 has not three fields")


ZIP_REPRODUCERS = sorted(glob.glob(os.path.join(FUZZ_REPRODUCERS, "zip_fields", "*")))


@pytest.mark.parametrize("path", ZIP_REPRODUCERS, ids=[os.path.basename(p) for p in ZIP_REPRODUCERS])
def test_zip_fields_reproducers_are_refused(path, tmp_path):
    """Each fuzz_zip_fields find, as a wheel, refused by repair in one line."""
    wheel = str(tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl")
    shutil.copyfile(path, wheel)
    for mode in ("legacy", "fallback"):
        proc = cypatch("repair", "-w", str(tmp_path / "out"), "-t", mode, wheel)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, (mode, proc.returncode, proc.stderr)
        assert listing(str(tmp_path / "out")) == [], mode
