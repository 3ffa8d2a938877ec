"""`cypatch show` as a command: the largest real cuda-python extension, the
text and JSON forms, user rules, help, version and usage errors."""
import json
import os
import resource
import subprocess
import sys
import time

import pytest

from conftest import CORPUS, ENTRIES, MANIFEST, ROOT, cypatch, show_json, CYPATCH

DRIVER = os.path.join(MANIFEST["cuda_python"]["bindings"]["tree"], "cuda", "bindings",
                      "driver" + MANIFEST["ext_suffix"])
CIMPORTS = next(e["so"] for e in ENTRIES if e["id"] == "3.3.1/bindings/cimports")


def test_largest_cuda_python_extension_reports_its_cydriver_cimports():
    doc = show_json(DRIVER)
    assert os.path.getsize(DRIVER) > 30 << 20
    assert doc["cython"] == "3.0.11" and doc["layouts"] == ["bindings"]
    cimports = {r["value"] for r in doc["references"] if r["kind"] == "cimport"}
    assert "cuda.bindings.cydriver" in cimports
    funcs = [r for r in doc["references"] if r["kind"] == "function"]
    assert len(funcs) > 400
    init = [r for r in funcs if r["name"] == "cuInit"]
    assert init and init[0]["module"] == "cuda.bindings.cydriver"
    assert init[0]["signature"] == "CUresult (unsigned int)" and init[0]["slot"]
    gl = [r for r in funcs if r["name"] == "cuGraphicsGLRegisterBuffer"][0]
    assert "__pyx_t_4cuda_8bindings_8cydriver_GLuint" in gl["signature"]


def test_json_form_is_complete_and_stable():
    doc = show_json(CIMPORTS)
    assert list(doc) == ["cypatch", "schema", "file", "arch", "cython", "layouts", "fallback",
                         "standins", "blobs", "references", "notes"]
    assert doc["fallback"] is None and doc["standins"] == []
    assert doc["schema"] == 1 and doc["arch"] == "x86-64" and doc["file"] == CIMPORTS
    blob = doc["blobs"][0]
    assert blob["algorithm"] == "lzss" and blob["decoded_length"] > blob["stored_length"]
    for r in doc["references"]:
        assert {"kind", "layout", "module", "value", "location", "sites"} <= set(r)
        for s in r["sites"]:
            assert s["kind"] in ("code", "reloc", "table", "index") and s["address"] > 0
    cuinit = [r for r in doc["references"] if r.get("name") == "cuInit"][0]
    assert cuinit["location"]["blob"] == 0  # the signature lives in the blob
    assert show_json(CIMPORTS) == doc  # same input, same output


def test_text_form_lists_each_reference_with_its_sites():
    out = cypatch("show", CIMPORTS, check=0).stdout
    assert out.splitlines()[0] == "%s: x86-64, Cython 3.3.1, built against: bindings" % CIMPORTS
    assert '  cimport   bindings "cuda.bindings.cydriver"' in out
    assert "  function  bindings cuda.bindings.cydriver.cuInit \"CUresult (unsigned int)\" slot 0x" in out
    assert "            code  0x" in out and "lea " in out
    assert out.rstrip().endswith("references")


def test_all_lists_the_other_strings():
    plain = cypatch("show", DRIVER, check=0).stdout
    assert "other strings name mapped modules" in plain
    full = cypatch("show", "--all", DRIVER, check=0).stdout
    assert full.count("\n  string ") > 100


def test_user_rules_add_mappings(tmp_path):
    rules = tmp_path / "extra.rules"
    rules.write_text("[modules legacy bindings]\nasyncio.coroutines = asyncio.new_coroutines\n")
    doc = show_json(CIMPORTS, "--rules", str(rules))
    hits = [r for r in doc["references"] if r["value"] == "asyncio.coroutines"]
    assert hits and hits[0]["kind"] == "pyimport" and hits[0]["layout"] == "legacy"


def test_bad_rules_file_is_exit_3_with_file_and_line(tmp_path):
    rules = tmp_path / "bad.rules"
    rules.write_text("[modules legacy bindings]\ncuda.ccuda = cuda.elsewhere\n")
    proc = cypatch("show", "--rules", str(rules), CIMPORTS)
    assert proc.returncode == 3
    assert proc.stderr.startswith("cypatch: %s:2: module 'cuda.ccuda' is already mapped at "
                                  "<built-in>/cuda-python.rules:" % rules)


def test_help_version_and_usage_errors():
    assert cypatch("--version", check=0).stdout == "cypatch 0.1.0\n"
    assert "usage: cypatch show" in cypatch("show", "--help", check=0).stdout
    assert "commands:" in cypatch("--help", check=0).stdout
    proc = cypatch("show")
    assert proc.returncode == 64 and "expects exactly one EXT.so" in proc.stderr
    proc = cypatch("frobnicate")
    assert proc.returncode == 64 and "'frobnicate' is not a command" in proc.stderr
    proc = cypatch("show", "--bogus", CIMPORTS)
    assert proc.returncode == 64


def test_driver_scan_cost_is_recorded():
    """Not a timed test: prints the figures docs/performance-notes.md records."""
    start = time.perf_counter()
    proc = subprocess.run([CYPATCH, "show", "--json", DRIVER], stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert proc.returncode == 0
    print("\ncypatch show %s (%d bytes): %.2f s, children's peak RSS %d KiB"
          % (os.path.basename(DRIVER), os.path.getsize(DRIVER), wall, peak))


# `from numba import cuda` and `cp.cuda.X` (rmm's stream.pyx, pylibraft,
# cuml, ucxx) leave the name "cuda" as `from cuda import cuda` does.
NOT_CUDA = ("import sys\n\ndef numba_cuda():\n    from numba import cuda\n    return cuda\n\n"
            "def cupy_stream(cp):\n    return cp.cuda.Stream()\n\nMODULE = sys.__name__\n")


@pytest.mark.parametrize("cy", ["0.29.37", "3.0.12", "3.1.8", "3.2.9", "3.3.1"])
def test_from_numba_import_cuda_is_not_from_cuda_import_cuda(cy, tmp_path):
    """The pair is an import only when an import passes the package's
    string: PyImport_ImportModuleLevelObject's name is followed back (over
    the function's branches, through __Pyx_Import) to the slot it loads,
    and that slot is the one of the string "cuda" (0.29: the table's
    pointer; 3.0: the entries built in code; 3.1, 3.2+: every table base
    that puts each import on a dotted name)."""
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path), "notcuda", NOT_CUDA, cy, [])
    assert not why, why
    doc = show_json(so)
    assert not [r for r in doc["references"] if r["kind"] == "fromimport"], doc["references"]
    assert doc["layouts"] == []


@pytest.mark.parametrize("cy", ["0.29.37", "3.0.12", "3.1.8", "3.2.9", "3.3.1"])
def test_from_cuda_import_cuda_beside_numba_is_still_reported(cy, tmp_path):
    """The same module with a real `from cuda import cuda` too: the import
    passes "cuda", and the pair is reported."""
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    src = NOT_CUDA + "\ndef driver():\n    from cuda import cuda\n    return cuda\n"
    so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path), "bothcuda", src, cy, [])
    assert not why, why
    found = [(r["package"], r["name"]) for r in show_json(so)["references"] if r["kind"] == "fromimport"]
    assert found == [("cuda", "cuda")], found
