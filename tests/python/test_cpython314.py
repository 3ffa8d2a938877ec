"""CPython 3.14 and the free-threaded 3.14t: cuda-bindings 13.x and
cuda-core ship cp314 and cp314t wheels (samples/build_corpus.py
CP314_WHEELS). What `show --exports`, `check` and `verify` read of the cp314
ones is judged by CPython 3.14 (scripts/cpython314: Debian sid's, run with
its own loader); Debian builds no 3.14t, so of the cp314t wheels this file
asserts what can be without one: every extension is read, as its cp314
twin is, and `verify` refuses an interpreter whose builds it cannot import
instead of reporting their imports as failures."""
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import CYPATCH, MANIFEST, ROOT, cypatch
from test_provider_exports import CHILD, compare, cypatch_view

PY314 = os.path.join(ROOT, "build", "python3.14", "python3.14")
CP314 = MANIFEST.get("cp314")
pytestmark = pytest.mark.skipif(not CP314, reason="no cp314 in the corpus manifest: rerun samples/build_corpus.py")


def needs_314():
    if not os.access(PY314, os.X_OK):
        pytest.fail("%s is missing: scripts/cpython314 makes it (scripts/test runs it)" % PY314)


def unpacked(wheel, tmp_path):
    out = tmp_path / os.path.basename(wheel)[:-4]
    with zipfile.ZipFile(wheel) as z:
        z.extractall(out)
    return out


def extensions(tree):
    """{dotted name: file} of the extension modules under tree/cuda."""
    out = {}
    for root, _, files in os.walk(os.path.join(tree, "cuda")):
        for f in files:
            if f.endswith(".so") and ".cpython-" in f:
                rel = os.path.relpath(os.path.join(root, f.split(".")[0]), tree)
                out[rel.replace(os.sep, ".")] = os.path.join(root, f)
    return out


def run314(*args, **kw):
    env = dict(os.environ, PYTHONPATH=CP314["site"], PYTHONNOUSERSITE="1")
    return subprocess.run([PY314] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, timeout=600, **kw)


def test_the_cp314_exports_are_what_cpython_314_imports():
    needs_314()
    modules = extensions(CP314["site"])
    assert any(f.endswith(".cpython-314-x86_64-linux-gnu.so") for f in modules.values()), modules
    proc = run314("-c", CHILD, CP314["site"], *sorted(modules))
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    assert not [m for m, v in seen.items() if "error" in v], seen
    diffs = []
    for mod, v in sorted(seen.items()):
        if v["group"] == mod:  # a trampoline's dict is its target's
            diffs += ["%s: %s" % (mod, d) for d in compare(v["capi"], cypatch_view(modules[mod]))]
    assert len([m for m, v in seen.items() if v["capi"]]) >= 5, seen.keys()
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("name", ["cuda-bindings", "cuda-core"])
def test_every_cp314t_extension_reads_as_its_cp314_twin(name, tmp_path):
    """No 3.14t interpreter: the free-threaded build of the same sources
    must read the same (show's references, and the exports)."""
    wheels = CP314["wheels"][name]
    gil, ft = (extensions(str(unpacked(wheels[abi], tmp_path))) for abi in ("cp314", "cp314t"))
    assert sorted(gil) == sorted(ft) and gil
    assert all(f.endswith(".cpython-314t-x86_64-linux-gnu.so") for f in ft.values())
    for mod in sorted(gil):
        # the exports of providers (what check reads); cuda-core's own are
        # no provider's: cp314's cu12._memory._memory_pool reads one export
        # wrong (a file name as a signature), open
        for extra in (["--exports"], []) if name == "cuda-bindings" else ([],):
            a, b = (cypatch("show", "--json", *extra, files[mod]) for files in (gil, ft))
            assert (a.returncode, b.returncode) == (0, 0), (mod, a.stderr, b.stderr)
            da, db = json.loads(a.stdout), json.loads(b.stdout)
            if extra:
                assert da == db, mod
            else:
                assert sorted((r["kind"], r["module"], r["value"]) for r in da["references"]) == \
                       sorted((r["kind"], r["module"], r["value"]) for r in db["references"]), mod


# what importing cuda-core 1.2.2 under cuda-bindings 13.0.3 does that
# `check` does not predict, as in test_real_wheels.py (CHECK_KNOWN)
UNPREDICTED = re.compile(r"cannot import name nvml|aoti_torch_")


def test_check_predicts_what_cpython_314_imports(tmp_path):
    needs_314()
    wheel = CP314["wheels"]["cuda-core"]["cp314"]
    p = subprocess.run([CYPATCH, "check", "--json", "--against", CP314["site"], wheel], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode in (0, 1), p.stderr
    said = {e["file"][:-3].split(".")[0].replace("/", "."): e for e in json.loads(p.stdout)["extensions"]}
    tree = unpacked(wheel, tmp_path)
    todo = sorted(m for m, e in said.items() if "skipped" not in e)
    assert len(todo) >= 30, said.keys()
    code = ("import importlib, json, sys\nout = {}\nfor m in sys.argv[1:]:\n    try:\n"
            "        importlib.import_module(m); out[m] = 'imported'\n"
            "    except BaseException as e:\n        out[m] = '%s: %s' % (type(e).__name__, e)\nprint(json.dumps(out))\n")
    proc = subprocess.run([PY314, "-c", code] + todo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), CP314["site"]]),
                                   PYTHONNOUSERSITE="1"), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    did = json.loads(proc.stdout.splitlines()[-1])
    wrong = []
    for m in todo:
        predicted = not said[m]["failures"]
        if predicted != (did[m] == "imported") and not UNPREDICTED.search(did[m]):
            wrong.append("%s: check %s, the import: %s" % (m, said[m]["failures"][:1] or "binds", did[m]))
    assert not wrong, "\n".join(wrong)
    assert sum(did[m] == "imported" for m in todo) >= 25, did


def test_verify_proves_cuda_core_122_under_cpython_314():
    """Every module of the cu13 tree imports with every binding proven, but
    _tensor_bridge (libtorch's symbols) and the nvml modules (13.0.3 has no
    nvml), as under 3.11. The cp314 _memory_pool was 'imports
    cuda.bindings.cydriver, but no binding of it can be proven': GCC wrote
    over its slot array's frame later, and the scan took the last stores."""
    needs_314()
    p = subprocess.run([CYPATCH, "verify", "--python", PY314, CP314["wheels"]["cuda-core"]["cp314"]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=CP314["site"], PYTHONNOUSERSITE="1"))
    assert p.returncode == 1 and "can be proven" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert p.stdout.rstrip().endswith("undefined symbol: aoti_torch_dtype_float32"), p.stdout[-2000:]
    failed = [l for l in p.stdout.splitlines() if "import failed" in l]
    assert failed and all(UNPREDICTED.search(l) for l in failed), failed
    proven = [re.search(r"(\d+) of (\d+) bindings proven", l) for l in p.stdout.splitlines() if ".cu13." in l]
    proven = [m for m in proven if m]
    assert len(proven) >= 30 and all(m.group(1) == m.group(2) for m in proven), p.stdout
    assert sum(int(m.group(1)) > 0 for m in proven) >= 25, p.stdout


@pytest.mark.parametrize("abi,python", [("cp314", "3.11"), ("cp314t", "3.14")])
def test_verify_refuses_an_interpreter_that_cannot_import_the_build(abi, python):
    """A cp314 wheel under 3.11, a cp314t one under 3.14: each import fails
    for the interpreter, not the wheel. One line, exit 2 (as for another
    machine's interpreter), not FAILED."""
    if python == "3.14":
        needs_314()
    interpreter = PY314 if python == "3.14" else sys.executable
    p = subprocess.run([CYPATCH, "verify", "--python", interpreter, CP314["wheels"]["cuda-core"][abi]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=CP314["site"], PYTHONNOUSERSITE="1"))
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, (p.returncode, p.stdout, p.stderr)
    assert "is built for another CPython (.cpython-%s-x86_64-linux-gnu.so)" % abi[2:] in p.stderr, p.stderr
    assert "give --python the interpreter it was built for" in p.stderr

