"""`cypatch --target-layout fallback`: one patched file that imports and
works under either layout, judged by CPython importing it and calling
through it, and the two-name ImportError when neither is installed."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import (ENTRIES, LOST, MANIFEST, RULES, assert_clean_elf, assert_refused, cypatch, show_json,
                      variant_refusal)
from test_imports import EXPECTED, RUN_ALL

PY = sys.executable
BUILT = [e for e in ENTRIES if not e["skipped"]]
REFUSED = [e for e in BUILT if variant_refusal(e, "fallback")]
BUILT = [e for e in BUILT if e not in REFUSED]
CORPUS = [e for e in BUILT if e["kind"] in ("corpus", "shared")]
REAL = [e for e in BUILT if e["kind"] == "realcuda"]

# every cuda-python environment a wheel on PyPI meets, oldest first
ENVIRONMENTS = {
    "cuda-python 12.5.0": MANIFEST["cuda_python"]["legacy"]["tree"],
    "cuda-python 12.6.2.post1": MANIFEST["cuda_python"]["bindings"]["tree"],
    "cuda-bindings 12.9.4": MANIFEST["cuda_bindings_129"]["tree"],
    "cuda-bindings 13.0.3": MANIFEST["cuda_bindings_13"]["tree"],
}


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(so, module, site, *calls):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.dirname(so), site) if p),
               PYTHONNOUSERSITE="1", PYTHONWARNINGS="ignore")
    return subprocess.run([PY, "-c", RUN_ALL, module] + list(calls), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    """Every built consumer, fallback-patched once."""
    out = {}
    root = tmp_path_factory.mktemp("fallback")
    for e in BUILT:
        d = root / e["id"].replace("/", "_")
        d.mkdir()
        dest = str(d / os.path.basename(e["so"]))
        out[e["id"]] = (cypatch("--target-layout", "fallback", "-o", dest, e["so"]), dest)
    return out


@pytest.mark.parametrize("entry", REFUSED, ids=[e["id"] for e in REFUSED])
def test_variants_the_stub_cannot_serve_are_refused(entry, tmp_path):
    """Single-phase init imports neither PyErr_Clear nor
    PyErr_ExceptionMatches, which the stub's import path calls; -mcmodel=large
    modules hold references the scan cannot follow."""
    dest = str(tmp_path / os.path.basename(entry["so"]))
    assert_refused(cypatch("--target-layout", "fallback", "-o", dest, entry["so"]),
                   variant_refusal(entry, "fallback"), dest)


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_one_file_works_under_both_layouts_and_names_both_when_neither(entry, patched):
    proc, dest = patched[entry["id"]]
    assert proc.returncode == 0, proc.stderr
    assert "now go through the fallback stub, which accepts both layouts" in proc.stdout
    for layout in ("bindings", "legacy"):
        p = run(dest, entry["module"], MANIFEST["providers"][layout], "run")
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["run"] == ["ok", EXPECTED[entry["module"]][layout]], layout
    p = run(dest, entry["module"], entry.get("shared_dir", ""))  # no provider (the shared module stays)
    last = p.stderr.strip().splitlines()[-1]
    if entry.get("variant") == "module-state" and last == LOST % entry["module"]:
        return  # as the original does under the other layout
    m = re.match(r"ImportError: (\w+): neither (\S+) nor (\S+) can be imported \(cypatch fallback\)$", last)
    assert m, last
    assert m.group(1) == entry["module"]
    assert RULES.layout_of[m.group(2)] == entry["layout"] and RULES.is_mapped(m.group(3))
    assert RULES.layout_of[m.group(3)] != entry["layout"]


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_the_original_fails_under_the_other_layout(entry):
    """The baseline the fallback repairs (every corpus consumer)."""
    other = "legacy" if entry["layout"] == "bindings" else "bindings"
    p = run(entry["so"], entry["module"], MANIFEST["providers"][other], "run")
    last = p.stderr.strip().splitlines()[-1]
    assert p.returncode != 0
    assert last.startswith("ModuleNotFoundError: No module named 'cuda.") or \
        last == "ImportError: cannot import name cuda" or \
        (entry.get("variant") == "module-state" and last == LOST % entry["module"]), last


@pytest.mark.parametrize("env", list(ENVIRONMENTS))
@pytest.mark.parametrize("entry", REAL, ids=[e["id"] for e in REAL])
def test_real_cuda_python_consumer_reaches_every_release(entry, env, patched):
    proc, dest = patched[entry["id"]]
    assert proc.returncode == 0, proc.stderr
    p = run(dest, "rmm_like", ENVIRONMENTS[env], "runtime_module", "init", "gl_register_buffer",
            "memcpy_host_to_host", "stream_attribute")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["runtime_module"][0] == "ok"
    assert out["runtime_module"][1] in ("'cuda.cudart'", "'cuda.bindings.runtime'")
    # cuInit reaches the installed cuda-python, which finds no driver here
    assert out["init"] == ["RuntimeError", "Failed to dlopen libcuda.so.1"]
    # bound although its signature carries a mangled type (GLuint)
    assert out["gl_register_buffer"][0] == "RuntimeError"
    assert out["memcpy_host_to_host"][0] in ("ok", "RuntimeError")
    assert out["stream_attribute"][0] in ("ok", "RuntimeError")


@pytest.mark.parametrize("entry", REAL, ids=[e["id"] for e in REAL])
def test_real_consumer_fails_before_the_patch_where_upstream_says(entry):
    if entry["layout"] == "bindings":
        p = run(entry["so"], "rmm_like", ENVIRONMENTS["cuda-python 12.5.0"], "init")
        assert "No module named 'cuda.bindings'" in p.stderr
    else:
        p = run(entry["so"], "rmm_like", ENVIRONMENTS["cuda-bindings 13.0.3"], "init")
        assert "No module named 'cuda.ccudart'" in p.stderr
        # and under the trampolines, a mangled signature does not match (the
        # first one bound: cudaStreamGetAttribute or cuGraphicsGLRegisterBuffer)
        p = run(entry["so"], "rmm_like", ENVIRONMENTS["cuda-python 12.6.2.post1"], "init")
        assert re.search(r"TypeError: C function cuda\.ccuda(rt)?\.(cudaStreamGetAttribute|"
                         r"cuGraphicsGLRegisterBuffer) has wrong signature", p.stderr), p.stderr


@pytest.mark.parametrize("entry", BUILT, ids=[e["id"] for e in BUILT])
def test_patched_file_is_clean_elf_recognised_by_show_and_a_second_run_is_a_no_op(entry, patched, tmp_path):
    _, dest = patched[entry["id"]]
    assert_clean_elf(dest)
    other = "legacy" if entry["layout"] == "bindings" else "bindings"
    doc = show_json(dest)
    assert doc["fallback"] == [entry["layout"], other]
    assert doc["layouts"] == [entry["layout"]]
    assert "fallback stubs: binds to %s when it is installed, else to %s" % (entry["layout"], other) in \
        cypatch("show", dest, check=0).stdout
    # the scan still pairs every import through the thunks
    orig = show_json(entry["so"])
    kinds = lambda d: sorted((r["kind"], r.get("name") or r["value"]) for r in d["references"])
    assert kinds(doc) == kinds(orig)
    before = digest(dest)
    proc = cypatch("--target-layout", "fallback", dest, check=0)
    assert "already fallback-patched" in proc.stdout and digest(dest) == before


STRIP = [e for e in CORPUS if e["cython"] in ("0.29.37", "3.3.1")]


@pytest.mark.parametrize("entry", STRIP, ids=[e["id"] for e in STRIP])
def test_patched_file_works_after_strip_and_with_lazy_binding_off(entry, patched, tmp_path):
    _, dest = patched[entry["id"]]
    stripped = str(tmp_path / os.path.basename(dest))
    subprocess.run(["strip", "-o", stripped, dest], check=True)
    os.environ["LD_BIND_NOW"] = "1"
    try:
        for layout in ("bindings", "legacy"):
            p = run(stripped, entry["module"], MANIFEST["providers"][layout], "run")
            assert p.returncode == 0, p.stderr
            assert json.loads(p.stdout)["run"] == ["ok", EXPECTED[entry["module"]][layout]]
    finally:
        del os.environ["LD_BIND_NOW"]


def test_a_provider_whose_own_import_fails_is_not_masked(tmp_path):
    """Only a ModuleNotFoundError for the module or a parent falls back: a
    provider that is there but fails its own import propagates its error."""
    e = next(x for x in CORPUS if x["id"] == "3.3.1/bindings/cimports")
    dest = str(tmp_path / "m" / os.path.basename(e["so"]))
    os.makedirs(os.path.dirname(dest))
    cypatch("--target-layout", "fallback", "-o", dest, e["so"], check=0)
    site = tmp_path / "site"
    shutil.copytree(MANIFEST["providers"]["bindings"], site)
    with open(site / "cuda" / "bindings" / "__init__.py", "w") as f:
        f.write("import cuda_pathfinder_is_missing\n")
    p = run(dest, "cimports", str(site), "run")
    assert p.returncode != 0
    assert p.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'cuda_pathfinder_is_missing'"


def test_a_capsule_signature_that_differs_otherwise_still_fails(tmp_path):
    """Signatures equal up to the mapped prefixes bind; any other mismatch
    fails as Cython fails it."""
    e = next(x for x in CORPUS if x["id"] == "3.1.8/bindings/cimports")
    dest = str(tmp_path / "m" / os.path.basename(e["so"]))
    os.makedirs(os.path.dirname(dest))
    cypatch("--target-layout", "fallback", "-o", dest, e["so"], check=0)
    data = bytearray(open(dest, "rb").read())
    sig = b"CUresult (unsigned int)"
    at = data.find(sig)
    assert at > 0
    data[at:at + len(sig)] = b"CUresult (unsigned long)"[:len(sig)]  # same length, other type
    with open(dest, "wb") as f:
        f.write(data)
    p = run(dest, "cimports", MANIFEST["providers"]["legacy"], "run")
    assert "TypeError: C function cuda.ccuda.cuInit has wrong signature" in p.stderr


def test_dry_run_lists_every_redirected_call_and_writes_nothing(tmp_path):
    e = next(x for x in CORPUS if x["id"] == "3.3.1/legacy/cimports")
    work = tmp_path / os.path.basename(e["so"])
    shutil.copyfile(e["so"], work)
    before = digest(work)
    out = cypatch("--target-layout", "fallback", "--dry-run", str(work), check=0).stdout
    assert digest(work) == before and os.listdir(tmp_path) == [work.name]
    assert "the plan for the fallback layout:" in out and "build-id: recomputed" in out
    assert "PyImport_ImportModule call -> fallback stub" in out
    assert "PyCapsule_IsValid call -> fallback stub" in out
    assert "new code: " in out and "new read-only data: " in out


def test_fallback_refuses_a_file_without_mapped_references():
    proc = cypatch("--target-layout", "fallback", MANIFEST["foreign"]["x86_64"])
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


def test_build_id_is_recomputed_reproducibly_unless_kept(tmp_path):
    e = next(x for x in CORPUS if x["id"] == "3.3.1/bindings/cimports")

    def build_id(path):
        out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, text=True, check=True).stdout
        return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)

    a, b, kept = (str(tmp_path / n / os.path.basename(e["so"])) for n in ("a", "b", "kept"))
    for p in (a, b, kept):
        os.makedirs(os.path.dirname(p))
    out = cypatch("--target-layout", "fallback", "-o", a, e["so"], check=0).stdout
    assert "build-id recomputed" in out
    cypatch("--target-layout", "fallback", "-o", b, e["so"], check=0)
    cypatch("--target-layout", "fallback", "--keep-build-id", "-o", kept, e["so"], check=0)
    assert build_id(a) != build_id(e["so"]) and len(build_id(a)) == len(build_id(e["so"]))
    assert digest(a) == digest(b)  # same input, same bytes
    assert build_id(kept) == build_id(e["so"])
