"""`cypatch --target-layout`: every corpus consumer retargeted to the other
layout, judged by CPython importing it and calling through it."""
import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig

import pytest

from conftest import (CORPUS, ENTRIES, MANIFEST, ROOT, assert_clean_elf, assert_refused, cypatch, disk_waits, show_json,
                      variant_refusal)
from test_imports import EXPECTED, OTHER, RUN_ALL

PY = sys.executable
BUILT = [e for e in ENTRIES if not e["skipped"]]


def expressible(e):
    """What strings can retarget. `import a.b.c` reaches the module through
    package attributes (and Cython 3.0+ keeps them for `import a.b.c as x`);
    `from cuda import cuda` has one string for package and name. Both need
    the next issue's import stubs; everything else must work."""
    if e.get("variant") in ("O0", "abi3") and e["cython"] >= "3.2" and e["layout"] == "legacy":
        # unoptimised and limited-API code add the names' offset in an 8-bit
        # immediate (add rax, 0x74), which the longer bindings signatures outgrow
        return False
    if variant_refusal(e, "retarget"):
        return False
    if e["module"] in ("rmm_like", "pyfrom"):
        # `from cuda.bindings import runtime` / `import driver`: the leaf is
        # renamed (cudart, cuda), and its string is also every other use of
        # that text in the module (a constant 'driver'); the stub imports it
        return False
    if e["module"] == "cimports":
        return True
    if e["module"] == "pyimport_as":
        return e["cython"].startswith("0.29")
    return False


def site_for(entry, layout):
    if entry["kind"] == "realcuda":
        return MANIFEST["cuda_python"]["legacy"]["tree"] if layout == "legacy" else \
            MANIFEST["cuda_bindings_13"]["tree"]
    return MANIFEST["providers"][layout]


def import_and_call(so, module, site, *calls):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(so), site]),
               PYTHONNOUSERSITE="1")
    proc = subprocess.run([PY, "-c", RUN_ALL, module] + list(calls), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def check_works(entry, so, layout):
    if entry["kind"] == "realcuda":
        out = import_and_call(so, "rmm_like", site_for(entry, layout), "runtime_module", "init",
                              "gl_register_buffer", "runtime_device_count", "stream_attribute")
        assert out["runtime_module"] == ["ok", repr("cuda.cudart" if layout == "legacy"
                                                    else "cuda.bindings.runtime")]
        # reaches the installed cuda-python, which finds no GPU driver here
        assert out["init"] == ["RuntimeError", "Failed to dlopen libcuda.so.1"]
        assert out["gl_register_buffer"][0] == "RuntimeError"  # bound: cuGraphicsGL* (mangled type)
        # the runtime answers with an error code or raises, by release
        assert out["runtime_device_count"][0] in ("ok", "RuntimeError")
        # bound: cudaStreamGetAttribute's signature carries a mangled type that
        # sorts after unmangled signatures in Cython 3.2+'s import constant
        assert out["stream_attribute"][0] in ("ok", "RuntimeError")
    else:
        out = import_and_call(so, entry["module"], site_for(entry, layout), "run")
        assert out["run"] == ["ok", EXPECTED[entry["module"]][layout]]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def retargeted(tmp_path_factory):
    """Every expressible corpus binary, retargeted to its other layout."""
    out = {}
    root = tmp_path_factory.mktemp("retargeted")
    for e in BUILT:
        if not expressible(e):
            continue
        d = root / e["id"].replace("/", "_")
        d.mkdir()
        dest = str(d / os.path.basename(e["so"]))
        proc = cypatch("--target-layout", OTHER[e["layout"]], "-o", dest, e["so"])
        out[e["id"]] = (proc, dest)
    return out


EXPRESSIBLE = [e for e in BUILT if expressible(e)]
REFUSED = [e for e in BUILT if not expressible(e) and not variant_refusal(e, "retarget")]
VARIANT_REFUSED = [e for e in BUILT if variant_refusal(e, "retarget")]


@pytest.mark.parametrize("entry", VARIANT_REFUSED, ids=[e["id"] for e in VARIANT_REFUSED])
def test_variants_the_scan_cannot_vouch_for_are_refused(entry, tmp_path):
    """-mcmodel=large modules were passed as referencing nothing mapped
    (repair copied them as needing nothing)."""
    dest = str(tmp_path / os.path.basename(entry["so"]))
    before = digest(entry["so"])
    proc = cypatch("--target-layout", OTHER[entry["layout"]], "-o", dest, entry["so"])
    assert_refused(proc, variant_refusal(entry, "retarget"), dest)
    assert digest(entry["so"]) == before


@pytest.mark.parametrize("entry", EXPRESSIBLE, ids=[e["id"] for e in EXPRESSIBLE])
def test_retargeted_consumer_works_under_the_other_layout(entry, retargeted):
    proc, dest = retargeted[entry["id"]]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("%s: " % entry["so"]) and "now bind to the %s layout" % OTHER[entry["layout"]] in proc.stdout
    check_works(entry, dest, OTHER[entry["layout"]])
    doc = show_json(dest)
    assert doc["layouts"] == [OTHER[entry["layout"]]]


@pytest.mark.parametrize("entry", EXPRESSIBLE, ids=[e["id"] for e in EXPRESSIBLE])
def test_retargeted_file_is_clean_elf_survives_strip_and_a_second_run(entry, retargeted, tmp_path):
    _, dest = retargeted[entry["id"]]
    assert_clean_elf(dest)
    before = digest(dest)
    proc = cypatch("--target-layout", OTHER[entry["layout"]], dest, check=0)
    assert "already binds to the %s layout; nothing to do" % OTHER[entry["layout"]] in proc.stdout
    assert digest(dest) == before
    stripped = tmp_path / os.path.basename(dest)
    subprocess.run(["strip", "-o", str(stripped), dest], check=True)
    check_works(entry, str(stripped), OTHER[entry["layout"]])


# `from cuda.bindings import driver` retargeted is `from cuda import cuda`
# with two strings "cuda"; which is the package cannot be told from the
# strings, so going back needs the next issue's stubs.
ROUND_TRIP = [e for e in EXPRESSIBLE if e["kind"] == "corpus" and e["module"] != "pyfrom"]


@pytest.mark.parametrize("entry", ROUND_TRIP, ids=[e["id"] for e in ROUND_TRIP])
def test_round_trip_behaves_like_the_original(entry, retargeted, tmp_path):
    _, there = retargeted[entry["id"]]
    back = str(tmp_path / os.path.basename(entry["so"]))
    cypatch("--target-layout", entry["layout"], "-o", back, there, check=0)
    check_works(entry, back, entry["layout"])
    assert show_json(back)["layouts"] == [entry["layout"]]


@pytest.mark.parametrize("entry", REFUSED, ids=[e["id"] for e in REFUSED])
def test_inexpressible_rewrites_are_covered_by_the_fallback_stub(entry, tmp_path):
    """What strings cannot express binds to the target through the stubs."""
    dest = tmp_path / os.path.basename(entry["so"])
    proc = cypatch("--target-layout", OTHER[entry["layout"]], "-o", str(dest), entry["so"], check=0)
    first = proc.stdout.splitlines()[0]
    assert first.startswith("%s: " % entry["so"]) and first.endswith("; the fallback stub covers it")
    assert "strings alone cannot" in first or "re-encoding it would move code" in first
    check_works(entry, str(dest), OTHER[entry["layout"]])
    before = digest(dest)
    proc = cypatch("--target-layout", OTHER[entry["layout"]], str(dest), check=0)
    assert "already fallback-patched" in proc.stdout and digest(dest) == before


@pytest.mark.parametrize("entry", REFUSED, ids=[e["id"] for e in REFUSED])
def test_inexpressible_rewrites_are_refused_with_no_fallback(entry, tmp_path):
    dest = tmp_path / os.path.basename(entry["so"])
    before = digest(entry["so"])
    proc = cypatch("--target-layout", OTHER[entry["layout"]], "--no-fallback", "-o", str(dest), entry["so"])
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cypatch: %s: " % entry["so"])
    assert "strings alone cannot" in lines[0] or "re-encoding it would move code" in lines[0]
    assert not dest.exists() and os.listdir(tmp_path) == []
    assert digest(entry["so"]) == before


def sample(kind="corpus", module="cimports", cython="3.3.1", layout="bindings"):
    return next(e for e in BUILT if e["kind"] == kind and e["module"] == module and
                e["cython"] == cython and e["layout"] == layout and "compression" not in e)


def test_dry_run_prints_every_edit_and_writes_nothing(tmp_path):
    e = sample(layout="legacy")
    work = tmp_path / os.path.basename(e["so"])
    shutil.copyfile(e["so"], work)
    before = digest(work)
    out = cypatch("--target-layout", "bindings", "--dry-run", str(work), check=0).stdout
    assert digest(work) == before and os.listdir(tmp_path) == [work.name]
    assert "the plan for the bindings layout:" in out
    assert "disp32" in out and "new read-only data: " in out and "string blob 0 (lzss" in out
    assert "offset of the cimported names in their signature constant" in out


def test_in_place_keeps_the_mode_and_replaces_atomically(tmp_path):
    e = sample(layout="bindings", cython="3.1.8")
    work = tmp_path / os.path.basename(e["so"])
    shutil.copyfile(e["so"], work)
    os.chmod(work, 0o750)
    ino = os.stat(work).st_ino
    cypatch("--target-layout", "legacy", "--in-place", str(work), check=0)
    st = os.stat(work)
    assert stat.S_IMODE(st.st_mode) == 0o750
    assert st.st_ino != ino  # a new file renamed over the old one
    assert os.listdir(tmp_path) == [work.name]  # no temporary left
    check_works(e, str(work), "legacy")


@pytest.mark.parametrize("layout", ["legacy", "fallback"])
def test_no_fsync_writes_the_same_bytes_without_waiting_for_the_disk(layout, tmp_path):
    e = sample(layout="bindings", cython="3.1.8")
    name = os.path.basename(e["so"])  # the module's name: check_works imports it
    os.mkdir(tmp_path / "durable")
    os.mkdir(tmp_path / "quick")
    durable, quick = str(tmp_path / "durable" / name), str(tmp_path / "quick" / name)
    rc, waits = disk_waits("--target-layout", layout, "-o", durable, e["so"])
    assert rc == 0 and "fsync" in waits, waits
    rc, waits = disk_waits("--target-layout", layout, "--no-fsync", "-o", quick, e["so"])
    assert rc == 0 and waits == []
    assert digest(durable) == digest(quick)
    assert stat.S_IMODE(os.stat(quick).st_mode) == stat.S_IMODE(os.stat(e["so"]).st_mode)
    assert os.listdir(tmp_path / "quick") == [name]  # no temporary left
    check_works(e, quick, layout if layout != "fallback" else "legacy")


FATBIN = """.section .nv_fatbin,"a"
.balign 8
.asciz "cuda.bindings.cydriver"
.asciz "cuda/bindings/cydriver.pxd"
.asciz "__pyx_t_4cuda_8bindings_8cydriver_CUstream"
.section .note.GNU-stack,"",@progbits
"""


def section_bytes(so, name):
    out = subprocess.run(["objcopy", "-O", "binary", "--only-section=" + name, so, "/dev/stdout"],
                         stdout=subprocess.PIPE, check=True).stdout
    assert out, "%s has no %s" % (so, name)
    return out


def test_device_code_is_neither_searched_nor_rewritten(tmp_path):
    """A .nv_fatbin section (nvcc's device code, most of a RAPIDS module)
    that happens to hold mapped names: show does not count them, legacy
    leaves the section's bytes alone, and the module works."""
    e = sample(layout="bindings", cython="3.1.8")
    asm, fat = tmp_path / "fatbin.S", tmp_path / "fatbin.o"
    asm.write_text(FATBIN)
    subprocess.run(["cc", "-c", str(asm), "-o", str(fat)], check=True)
    os.mkdir(tmp_path / "in")
    os.mkdir(tmp_path / "out")
    so, out = [str(tmp_path / d / os.path.basename(e["so"])) for d in ("in", "out")]
    ldshared = shlex.split(sysconfig.get_config_var("LDSHARED"))
    subprocess.run(ldshared + [e["c"][:-2] + ".o", str(fat), "-o", so], check=True)

    def refs(path):
        return sorted((r["kind"], r["module"], r["value"], r["location"]["section"])
                      for r in show_json(path)["references"])

    assert refs(so) == refs(e["so"])
    assert all(section != ".nv_fatbin" for _, _, _, section in refs(so))
    cypatch("--target-layout", "legacy", "-o", out, so, check=0)
    assert section_bytes(out, ".nv_fatbin") == section_bytes(so, ".nv_fatbin")
    assert b"cuda.bindings.cydriver" in section_bytes(out, ".nv_fatbin")
    assert show_json(out)["layouts"] == ["legacy"]
    check_works(e, out, "legacy")


def test_no_mapped_reference_and_unknown_layout(tmp_path):
    e = sample()
    proc = cypatch("--target-layout", "sideways", e["so"])
    assert proc.returncode == 64 and "no layout named 'sideways'" in proc.stderr
    proc = cypatch("--target-layout", "legacy", MANIFEST["foreign"]["x86_64"])
    assert proc.returncode == 2
    proc = cypatch("--target-layout", "legacy", "-o", "x", "--in-place", e["so"])
    assert proc.returncode == 64
    assert "usage: cypatch --target-layout" in cypatch("--target-layout", "--help", check=0).stdout


def test_from_cuda_import_cuda_and_cudart_is_not_half_rewritten(tmp_path):
    """`from cuda import cuda, cudart` leaves the strings "cuda" and "cudart";
    the scan reports `from cuda import cudart` only, and the retarget rewrote
    the one string "cuda" into the package "cuda.bindings", which is also
    the name imported: `No module named 'cuda.bindings.cuda'`, after exit 0.
    Strings cannot tell it from `from cuda import cudart`: the stub decides."""
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    src = "from cuda import cuda, cudart\n\ndef runtime_module():\n    return (cuda.__name__, cudart.__name__)\n"
    so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path / "build"), "fromboth", src, "3.1.8",
                                        [MANIFEST["cuda_python"]["legacy"]["tree"]])
    assert not why, why
    dest = tmp_path / "out" / os.path.basename(so)
    dest.parent.mkdir()
    proc = cypatch("--target-layout", "bindings", "-o", str(dest), so, check=0)
    assert "the fallback stub covers it" in proc.stdout
    out = import_and_call(str(dest), "fromboth", MANIFEST["cuda_bindings_13"]["tree"], "runtime_module")
    assert out["runtime_module"] == ["ok", repr(("cuda.bindings.driver", "cuda.bindings.runtime"))]


def test_an_immediate_that_only_equals_the_blob_length_is_left_alone(tmp_path):
    """A Cython 3.2.9 module whose zlib blob is 248 bytes, as its module-exec
    frame is: `sub rsp, 0xf8` and `add rsp, 0xf8` were rewritten with the
    new length as "blob length checked by its decoder", and CPython crashed
    (SIGSEGV) importing the output; only `mov esi, 0xf8` carries it."""
    import random
    import re
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    chars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    rng = random.Random(9)
    fill = "".join(rng.choice(chars) for _ in range(4000))[:35]
    src = build_corpus.substitute(open(os.path.join(ROOT, "samples", "consumers", "pyfrom.pyx.in")).read(),
                                  "bindings") + "\nFILL = %r\n" % fill
    so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path / "build"), "pyfrom", src, "3.2.9",
                                        [MANIFEST["providers"]["bindings"]])
    assert not why, why
    stored = show_json(so)["blobs"][0]["stored_length"]
    dis = subprocess.run(["objdump", "-d", "-M", "intel", so], stdout=subprocess.PIPE, text=True).stdout
    assert re.search(r"sub\s+rsp,%#x\b" % stored, dis), "the frame no longer matches the blob: retune FILL"
    dest = tmp_path / "out" / os.path.basename(so)
    dest.parent.mkdir()
    cypatch("--target-layout", "legacy", "-o", str(dest), so, check=0)
    out = import_and_call(str(dest), "pyfrom", MANIFEST["providers"]["legacy"], "run")
    assert out["run"] == ["ok", EXPECTED["pyfrom"]["legacy"]]


def test_an_int_constant_equal_to_the_blob_length_is_left_alone(tmp_path):
    """A Cython 3.2.9 module with `M = L`, L its zlib blob's stored length:
    `mov edi, L; call PyLong_FromLong` makes the constant, and the filter
    that took a `mov` into an argument register for the decoder's length
    rewrote it (M changed after exit 0). Only the length argument of
    PyMemoryView_FromMemory, followed by data flow, may change."""
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    base = build_corpus.substitute(open(os.path.join(ROOT, "samples", "consumers", "pyfrom.pyx.in")).read(),
                                   "bindings")

    def build(m, d):
        src = base + "\nM = %d\n\ndef int_constant():\n    return M\n" % m
        so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path / d), "pyfrom", src, "3.2.9",
                                            [MANIFEST["providers"]["bindings"]])
        assert not why, why
        return so, show_json(so)["blobs"][0]["stored_length"]

    _, stored = build(100000, "probe")
    so, again = build(stored, "build")
    assert again == stored, "M no longer equals the blob's length: retune"
    dest = tmp_path / "out" / os.path.basename(so)
    dest.parent.mkdir()
    cypatch("--target-layout", "legacy", "-o", str(dest), so)
    out = import_and_call(str(dest), "pyfrom", MANIFEST["providers"]["legacy"], "run", "int_constant")
    assert out["run"] == ["ok", EXPECTED["pyfrom"]["legacy"]]
    assert out["int_constant"] == ["ok", repr(stored)]


@pytest.mark.parametrize("flags", [None, "gcc -O0", "gcc -O3", "clang -O2"], ids=["default", "O0", "O3", "clang"])
def test_cython_30_strings_that_grow_keep_their_whole_text(tmp_path, flags):
    """Cython 3.0 keeps each string's length in the code that builds its
    string table: strings that grew under -t bindings were moved and
    redirected with their old length, and read 'cuda.bindi', 'see
    cuda.bindi'; importlib asked for 'cuda.bind' (after exit 0). The
    length is changed with the string, or the stub serves it."""
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    extra = ("\nimport importlib\nMOD = \"cuda.cuda\"\nSEE = \"see cuda.ccuda\"\n"
             "SEE2 = \"see cuda.ccuda for details\"\n\n"
             "def constants():\n    return (MOD, SEE, SEE2)\n\n"
             "def load():\n    return importlib.import_module(MOD).__name__\n")
    src = build_corpus.substitute(open(os.path.join(ROOT, "samples", "consumers", "cimports.pyx.in")).read(),
                                  "legacy") + extra
    so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path / "build"), "cimports", src, "3.0.12",
                                        [MANIFEST["providers"]["legacy"]],
                                        flags=flags.split() if flags else None)
    assert not why, why
    dest = tmp_path / "out" / os.path.basename(so)
    dest.parent.mkdir()
    cypatch("--target-layout", "bindings", "-o", str(dest), so)
    out = import_and_call(str(dest), "cimports", MANIFEST["providers"]["bindings"], "run", "constants", "load")
    assert out["run"] == ["ok", EXPECTED["cimports"]["bindings"]]
    assert out["constants"] == ["ok", repr(("cuda.bindings.driver", "see cuda.bindings.cydriver",
                                            "see cuda.bindings.cydriver for details"))]
    assert out["load"] == ["ok", repr("cuda.bindings.driver")]


# cimports only: no def function, so no CyFunction type and no
# _cython_X_Y_Z name in the module; a mangled type (GLuint) in a signature
NO_DEF = ("from @CYDRIVER@ cimport cuInit, cuGraphicsGLRegisterBuffer, CUgraphicsResource, GLuint\n"
          "cdef CUgraphicsResource res = NULL\ncdef GLuint buf = 7\n"
          "R = (cuInit(3), cuGraphicsGLRegisterBuffer(&res, buf, 9))\n")
NO_DEF_FORMS = {"c": {}, "c-abi3": {"defines": ["Py_LIMITED_API=0x030B0000"]}, "cplus": {"cplus": True}}


@pytest.mark.parametrize("form", sorted(NO_DEF_FORMS))
def test_a_module_without_def_functions_is_read_as_the_cython_that_made_it(form, tmp_path):
    """A Cython 3.3.1 module that cimports from cuda.bindings.cydriver and
    defines no Python function names no _cython_3_3_1 ABI module; it was
    taken for Cython 0.29, its string blob was not read, and
    `--target-layout legacy` exited 0 with an output whose import failed
    (`TypeError: C function cuda.ccuda.cuInit has wrong signature (expected
    CUresult (CUgraphicsResource *, __pyx_t_4cuda_5ccuda_GLuint, ...`): a
    rename inside the blob's bytes had moved every later constant. The
    version is read from its versioned helpers (__Pyx_ImportFunction_3_3_1).
    The retarget then works, or is refused in one line; never an exit 0
    whose output fails."""
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    built = {}
    for layout in ("bindings", "legacy"):
        so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path / layout), "nodef",
                                            build_corpus.substitute(NO_DEF, layout), "3.3.1",
                                            [MANIFEST["providers"][layout]], **NO_DEF_FORMS[form])
        assert not why, why
        built[layout] = so
    assert "Cython 3.3.1" in cypatch("show", built["bindings"]).stdout.splitlines()[0]
    dest = tmp_path / "out" / os.path.basename(built["bindings"])
    dest.parent.mkdir()
    proc = cypatch("--target-layout", "legacy", "-o", str(dest), built["bindings"])
    if proc.returncode:
        assert_refused(proc, "", str(dest))
        return
    run = "import nodef; print(nodef.R)"
    want = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(built["legacy"]),
                                                                           MANIFEST["providers"]["legacy"]])))
    got = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(dest.parent),
                                                                          MANIFEST["providers"]["legacy"]])))
    assert want.returncode == 0, want.stderr
    assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr
