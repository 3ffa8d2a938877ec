"""The aarch64 corpus (samples/build_corpus_aarch64.py) judged by the
emulated aarch64 CPython 3.11 (scripts/aarch64_sysroot), before any patching:
every consumer imports and calls through its cimported slots with its own
layout's providers, and fails under the other layout's with the errors the
x86-64 corpus fails with (test_imports.py's expectations, reused); and the
ELF facts the aarch64 tests of cypatch rely on (machine 183, little-endian
LP64, 64 KiB segment alignment, LLD's four PT_LOADs).

Each start of the emulator costs about 0.7 s, so the imports are batched:
one guest interpreter per half of the jobs forks a child per import (each
child a clean slate: the parent imports only json, os and sys)."""
import json
import os
import shutil
import struct
import subprocess

import pytest

from conftest import CORPUS, LOST, ROOT
from test_imports import CALLS, EXPECTED, OTHER, expected_failure

MANIFEST_PATH = os.path.join(CORPUS, "aarch64", "manifest.json")
if not os.path.exists(MANIFEST_PATH):
    missing = [t for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64-static") if not shutil.which(t)]
    if missing:
        pytest.skip("no aarch64 corpus and it cannot be built here (%s missing: scripts/setup installs it)"
                    % ", ".join(missing), allow_module_level=True)
    pytest.exit("no aarch64 corpus at %s: run scripts/aarch64_sysroot and samples/build_corpus_aarch64.py %s "
                "(scripts/test does)" % (MANIFEST_PATH, CORPUS), 2)
with open(MANIFEST_PATH) as _f:
    MANIFEST = json.load(_f)
ENTRIES = MANIFEST["entries"]
BUILT = [e for e in ENTRIES if not e["skipped"]]
CONSUMERS = [e for e in BUILT if e["kind"] in ("corpus", "deferred", "shared")]
REAL = [e for e in BUILT if e["kind"] == "realcuda"]
PYTHON = os.environ.get("AARCH64_PYTHON", os.path.join(ROOT, "build", "aarch64", "python3"))

# Runs in the guest: reads [{"path": [...], "module": m, "calls": [...]}] on
# stdin and prints one result per job: {"calls": {name: [outcome, value]}}
# or {"error": "Type: message"} when the import failed.
GUEST = r"""
import json, os, sys
results = []
for job in json.load(sys.stdin):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        sys.path[:0] = job["path"]
        try:
            import importlib
            m = importlib.import_module(job["module"])
            out = {}
            for name in job["calls"]:
                try:
                    out[name] = ["ok", repr(getattr(m, name)())]
                except Exception as e:
                    out[name] = [type(e).__name__, str(e)]
            res = {"calls": out}
        except BaseException as e:
            res = {"error": "%s: %s" % (type(e).__name__, e)}
        os.write(w, json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    results.append(json.loads(data) if data else {"error": "child died, wait status %d" % status})
print(json.dumps(results))
"""


def job(entry, site, *calls):
    return {"path": [os.path.dirname(entry["so"]), site], "module": entry["module"], "calls": list(calls)}


def run_guest(jobs, parts=2):
    """Runs jobs in `parts` guest interpreters side by side; their results in order."""
    if not os.access(PYTHON, os.X_OK):
        pytest.fail("no aarch64 CPython at %s: run scripts/aarch64_sysroot (scripts/test does)" % PYTHON)
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    chunks = [jobs[i::parts] for i in range(parts)]
    procs = [subprocess.Popen([PYTHON, "-c", GUEST], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in chunks]
    outs = [p.communicate(json.dumps(c), timeout=900) for p, c in zip(procs, chunks)]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    parts_results = [json.loads(out) for out, _ in outs]
    return [parts_results[i % parts][i // parts] for i in range(len(jobs))]


def tree(layout):
    return MANIFEST["cuda_python"][layout]["tree"]


@pytest.fixture(scope="module")
def imports():
    """(entry id, what) -> the guest's result, for every import the tests judge."""
    keys, jobs = [], []
    for e in CONSUMERS:
        keys += [(e["id"], "own"), (e["id"], "other")]
        jobs += [job(e, MANIFEST["providers"][e["layout"]], "run"),
                 job(e, MANIFEST["providers"][OTHER[e["layout"]]], "run")]
    for e in REAL:
        keys.append((e["id"], "own"))
        jobs.append(job(e, tree(e["layout"]), *CALLS))
        # bindings builds under cuda-python 12.5.0; legacy builds under cuda-bindings 13
        keys.append((e["id"], "other"))
        jobs.append(job(e, tree("legacy") if e["layout"] == "bindings" else MANIFEST["cuda_bindings_13"]["tree"],
                        "init"))
    return dict(zip(keys, run_guest(jobs)))


@pytest.mark.parametrize("entry", CONSUMERS, ids=[e["id"] for e in CONSUMERS])
def test_consumer_works_under_its_layout(entry, imports):
    res = imports[(entry["id"], "own")]
    assert res.get("calls", {}).get("run") == ["ok", EXPECTED[entry["module"]][entry["layout"]]], res


@pytest.mark.parametrize("entry", CONSUMERS, ids=[e["id"] for e in CONSUMERS])
def test_consumer_fails_under_the_other_layout(entry, imports):
    res = imports[(entry["id"], "other")]
    if entry["module"] == "deferred":
        # it imports under either layout (its top-level import is guarded);
        # run()'s `from <parent> import <leaf>` fails as pyfrom's does
        outcome = res.get("calls", {}).get("run", ["", ""])
        assert outcome[0] != "ok" and "%s: %s" % tuple(outcome) == \
            expected_failure(dict(entry, module="pyfrom")), res
        return
    assert "error" in res, res
    if entry.get("variant") == "module-state" and res["error"] == LOST % entry["module"]:
        return
    assert res["error"].startswith(expected_failure(entry)), res


@pytest.mark.parametrize("entry", REAL, ids=[e["id"] for e in REAL])
def test_real_consumer_reaches_real_cuda_python(entry, imports):
    out = imports[(entry["id"], "own")].get("calls")
    assert out, imports[(entry["id"], "own")]
    runtime = "cuda.bindings.runtime" if entry["layout"] == "bindings" else "cuda.cudart"
    assert out["runtime_module"] == ["ok", repr(runtime)]
    # No GPU here: cuda-python dlopens libcuda at the first call and raises.
    assert out["init"] == ["RuntimeError", "Failed to dlopen libcuda.so.1"]
    for name in CALLS[2:]:
        assert out[name][0] == "RuntimeError", (name, out[name])


@pytest.mark.parametrize("entry", REAL, ids=[e["id"] for e in REAL])
def test_real_consumer_fails_under_the_other_cuda_python(entry, imports):
    """Bindings builds under cuda-python 12.5.0 (the upstream report), legacy
    builds under cuda-bindings 13 (no legacy modules)."""
    res = imports[(entry["id"], "other")]
    want = "ModuleNotFoundError: No module named 'cuda.bindings'" if entry["layout"] == "bindings" else \
        "ModuleNotFoundError: No module named 'cuda.cc"
    assert res.get("error", "").startswith(want), res


def elf_facts(path):
    """(e_machine, EI_CLASS, EI_DATA, [(p_type, p_flags, p_align)]) from the
    ELF header and program headers, read with struct."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF", path
    cls, endian = data[4], data[5]
    machine, = struct.unpack_from("<H", data, 18)
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    phdrs = []
    for i in range(phnum):
        p_type, p_flags = struct.unpack_from("<II", data, phoff + i * phentsize)
        p_align, = struct.unpack_from("<Q", data, phoff + i * phentsize + 48)
        phdrs.append((p_type, p_flags, p_align))
    return machine, cls, endian, phdrs


PT_LOAD = 1
MODULES = [e["so"] for e in BUILT] + MANIFEST["provider_modules"]


@pytest.mark.parametrize("path", MODULES, ids=[os.path.relpath(p, os.path.dirname(MANIFEST_PATH)) for p in MODULES])
def test_module_is_aarch64_with_64k_segments(path):
    assert path.endswith(MANIFEST["ext_suffix"]) and MANIFEST["ext_suffix"] == ".cpython-311-aarch64-linux-gnu.so"
    machine, cls, endian, phdrs = elf_facts(path)
    assert (machine, cls, endian) == (183, 2, 1)  # EM_AARCH64, ELFCLASS64, little-endian
    loads = [p for p in phdrs if p[0] == PT_LOAD]
    assert loads and all(align == 0x10000 for _, _, align in loads), loads


# the PT_LOADs' flags (R=4, W=2, X=1) each linker gives a module
SEGMENTS = {
    "ld": [5, 6],             # GNU ld on aarch64: code and read-only data in one R+X segment, then RW
    "ld-separate-code": [4, 5, 4, 6],  # -z separate-code: R, R+X, R, RW
    "lld": [4, 5, 6, 6],      # LLD: R, R+X, RW (relro), RW; no padding after the code
}


def linker(entry):
    return {"clang-lld": "lld", "separate-code": "ld-separate-code"}.get(entry.get("variant"), "ld")


def test_linkers_lay_out_segments_as_real_wheels_do():
    seen = {}
    for e in BUILT:
        flags = [f for t, f, _ in elf_facts(e["so"])[3] if t == PT_LOAD]
        assert flags == SEGMENTS[linker(e)], (e["id"], flags)
        seen[linker(e)] = seen.get(linker(e), 0) + 1
    assert set(seen) == set(SEGMENTS), seen


def test_real_cuda_python_wheels_are_aarch64_with_64k_segments():
    trees = [MANIFEST["cuda_python"][k]["tree"] for k in MANIFEST["cuda_python"]] + \
        [MANIFEST["cuda_bindings_13"]["tree"]]
    found = 0
    for top in trees:
        for root, _, files in os.walk(top):
            for f in files:
                if f.endswith(MANIFEST["ext_suffix"]):
                    machine, _, _, phdrs = elf_facts(os.path.join(root, f))
                    assert machine == 183 and {a for t, _, a in phdrs if t == PT_LOAD} == {0x10000}, f
                    found += 1
    assert found > 10, found


def test_every_cython_and_variant_is_built():
    """Nothing skipped; every Cython has every consumer in both layouts."""
    assert [e["id"] for e in ENTRIES if e["skipped"]] == []
    have = {(e["cython"], e["layout"], e["module"]) for e in BUILT if "variant" not in e and "compression" not in e}
    for cy in MANIFEST["cythons"]:
        for layout in ("bindings", "legacy"):
            for module in ("cimports", "pyimport", "pyimport_as", "pyfrom", "deferred", "rmm_like"):
                assert (cy, layout, module) in have
    for tag, cythons in MANIFEST["variants"].items():
        for cy in cythons:
            assert {e["layout"] for e in BUILT if e.get("variant") == tag and e["cython"] == cy} == \
                {"bindings", "legacy"}, (tag, cy)
