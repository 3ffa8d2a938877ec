"""CPython itself is the judge: the corpus consumers import and call through
the providers of the layout they were built against, and fail under the
other layout with the errors the upstream report quotes."""
import os
import subprocess
import sys

import pytest

from conftest import ENTRIES, LOST, MANIFEST

PY = sys.executable
OTHER = {"bindings": "legacy", "legacy": "bindings"}
CORPUS = [e for e in ENTRIES if e["kind"] == "corpus" and not e["skipped"]]
REAL = [e for e in ENTRIES if e["kind"] == "realcuda" and not e["skipped"]]

RUN_ALL = """
import importlib, json, sys
m = importlib.import_module(sys.argv[1])
out = {}
for name in sys.argv[2:]:
    try:
        out[name] = ["ok", repr(getattr(m, name)())]
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]
print(json.dumps(out))
"""


def run_module(entry, site, *calls):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(entry["so"]), site]),
               PYTHONNOUSERSITE="1")
    return subprocess.run([PY, "-c", RUN_ALL, entry["module"]] + list(calls), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def last_line(proc):
    return proc.stderr.strip().splitlines()[-1]


# what each corpus consumer's run() returns from the providers of each layout
EXPECTED = {
    "cimports": {
        "bindings": "{'cuInit': 203, 'cuDeviceGetCount': 20, 'cuGraphicsGLRegisterBuffer': (9, 2007), "
                    "'cudaCorpusLayout': 2, 'CUstreamHolder': 42, 'cudaMemcpyAsync': (0, 4), "
                    "'cudaGetDeviceCount': 40}",
        "legacy": "{'cuInit': 103, 'cuDeviceGetCount': 10, 'cuGraphicsGLRegisterBuffer': (9, 1007), "
                  "'cudaCorpusLayout': 1, 'CUstreamHolder': 41, 'cudaMemcpyAsync': (0, 4), "
                  "'cudaGetDeviceCount': 20}",
    },
}
for _name in ("pyimport", "pyimport_as", "pyfrom"):
    EXPECTED[_name] = {"bindings": "{'cuDriverGetVersion': (0, 12060), 'LAYOUT': 'bindings'}",
                       "legacy": "{'cuDriverGetVersion': (0, 12050), 'LAYOUT': 'legacy'}"}
# (its import at the top, under try/except ImportError, found the module)
EXPECTED["deferred"] = {layout: v[:-1] + ", 'top': True}" for layout, v in EXPECTED["pyimport"].items()}


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_consumer_works_under_its_layout(entry):
    proc = run_module(entry, MANIFEST["providers"][entry["layout"]], "run")
    assert proc.returncode == 0, proc.stderr
    assert '"run": ["ok", "%s"]' % EXPECTED[entry["module"]][entry["layout"]] in proc.stdout


def expected_failure(entry):
    if entry["layout"] == "bindings":
        return "ModuleNotFoundError: No module named 'cuda.bindings'"
    if entry["module"] == "pyfrom":  # from cuda import cuda: the package exists
        return "ImportError: cannot import name cuda"
    if entry["module"] in ("pyimport", "pyimport_as"):
        return "ModuleNotFoundError: No module named 'cuda.cuda'"
    return "ModuleNotFoundError: No module named 'cuda.ccuda'"


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_consumer_fails_under_the_other_layout(entry):
    proc = run_module(entry, MANIFEST["providers"][OTHER[entry["layout"]]], "run")
    assert proc.returncode != 0
    if entry.get("variant") == "module-state" and last_line(proc) == LOST % entry["module"]:
        return
    assert last_line(proc).startswith(expected_failure(entry)), proc.stderr


def tree(layout):
    return MANIFEST["cuda_python"][layout]["tree"]


CALLS = ("runtime_module", "init", "device_count", "runtime_device_count", "gl_register_buffer")


@pytest.mark.parametrize("entry", REAL, ids=[e["id"] for e in REAL])
def test_real_consumer_reaches_real_cuda_python(entry):
    import json
    proc = run_module(entry, tree(entry["layout"]), *CALLS)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    runtime = "cuda.bindings.runtime" if entry["layout"] == "bindings" else "cuda.cudart"
    assert out["runtime_module"] == ["ok", repr(runtime)]
    # No GPU here: cuda-python dlopens libcuda at the first call and raises.
    assert out["init"] == ["RuntimeError", "Failed to dlopen libcuda.so.1"]
    for name in CALLS[2:]:
        assert out[name][0] == "RuntimeError", (name, out[name])


@pytest.mark.parametrize("entry", [e for e in REAL if e["layout"] == "bindings"],
                         ids=[e["id"] for e in REAL if e["layout"] == "bindings"])
def test_bindings_build_fails_under_cuda_python_12_5(entry):
    """The upstream wontfix report, reproduced by CPython."""
    proc = run_module(entry, tree("legacy"), "init")
    assert proc.returncode != 0
    assert last_line(proc) == "ModuleNotFoundError: No module named 'cuda.bindings'"


@pytest.mark.parametrize("entry", [e for e in REAL if e["layout"] == "legacy"],
                         ids=[e["id"] for e in REAL if e["layout"] == "legacy"])
def test_legacy_build_fails_under_cuda_bindings_13(entry):
    """cuda-python 13 removed the legacy modules."""
    proc = run_module(entry, MANIFEST["cuda_bindings_13"]["tree"], "init")
    assert proc.returncode != 0
    assert last_line(proc).startswith("ModuleNotFoundError: No module named 'cuda.cc")


@pytest.mark.parametrize("entry", [e for e in REAL if e["layout"] == "legacy"],
                         ids=[e["id"] for e in REAL if e["layout"] == "legacy"])
def test_legacy_build_fails_under_the_12_6_trampolines(entry):
    """12.6.2's legacy trampolines forward cuda.ccuda to cuda.bindings.cydriver,
    but a capsule signature over a mangled type (cuGraphicsGLRegisterBuffer's
    GLuint) still names the old module: the import fails."""
    proc = run_module(entry, tree("bindings"), "init")
    assert proc.returncode != 0
    # whichever of the two mangled signatures the module binds first
    assert last_line(proc) in (
        "TypeError: C function cuda.ccuda.cuGraphicsGLRegisterBuffer has wrong signature "
        "(expected CUresult (CUgraphicsResource *, __pyx_t_4cuda_5ccuda_GLuint, unsigned int), "
        "got CUresult (CUgraphicsResource *, __pyx_t_4cuda_8bindings_8cydriver_GLuint, unsigned int))",
        "TypeError: C function cuda.ccudart.cudaStreamGetAttribute has wrong signature "
        "(expected cudaError_t (cudaStream_t, __pyx_t_4cuda_7ccudart_cudaStreamAttrID, "
        "__pyx_t_4cuda_7ccudart_cudaStreamAttrValue *), got cudaError_t (cudaStream_t, "
        "__pyx_t_4cuda_8bindings_9cyruntime_cudaStreamAttrID, __pyx_t_4cuda_8bindings_9cyruntime_cudaStreamAttrValue *))")
