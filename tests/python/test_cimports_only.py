"""A module that only cimports: cydriver, cyruntime and cynvrtc of real
cuda-python, each with a function whose capsule signature carries a mangled
type of its module (GLuint, cudaStreamAttrID), no Python-level import and no
Python-visible function or class, so that its own name is not among its
string constants. Cython 3.2.9 and 3.3.1 keep such a small blob as a plain
literal; built in C and C++ against both layouts.

Every mode's output must behave, under cuda-python 12.5.0 (legacy) and
12.6.2.post1 (bindings, whose cuda.ccuda carries the bindings' signatures),
exactly as the module built against the target layout does: the last line
of the import, which reaches the installed cuda-python (no GPU driver here)
only once every capsule of the three modules has bound.
"""
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, MANIFEST, ROOT, cypatch, show_json

sys.path.insert(0, os.path.join(ROOT, "samples"))
import build_corpus  # noqa: E402

PY = sys.executable
CYTHONS = ("3.2.9", "3.3.1")
MODES = ("c", "cplus")
SOURCE = {
    "bindings": ("from cuda.bindings.cydriver cimport cuInit, cuGraphicsGLRegisterBuffer, CUgraphicsResource, GLuint\n"
                 "from cuda.bindings.cyruntime cimport cudaStreamGetAttribute, cudaStreamAttrID, cudaStream_t\n"
                 "from cuda.bindings.cynvrtc cimport nvrtcVersion\n"),
    "legacy": ("from cuda.ccuda cimport cuInit, cuGraphicsGLRegisterBuffer, CUgraphicsResource, GLuint\n"
               "from cuda.ccudart cimport cudaStreamGetAttribute, cudaStreamAttrID, cudaStream_t\n"
               "from cuda.cnvrtc cimport nvrtcVersion\n"),
}
BODY = ("cdef CUgraphicsResource res = NULL\n"
        "cdef GLuint buf = 7\n"
        "cdef int a = 0, b = 0\n"
        "R = (cuInit(3), cuGraphicsGLRegisterBuffer(&res, buf, 9),\n"
        "     <int>cudaStreamGetAttribute(<cudaStream_t>NULL, <cudaStreamAttrID>1, NULL), <int>nvrtcVersion(&a, &b))\n")
OTHER = {"bindings": "legacy", "legacy": "bindings"}
FUNCTIONS = {("cuInit", "cydriver"), ("cuGraphicsGLRegisterBuffer", "cydriver"),
             ("cudaStreamGetAttribute", "cyruntime"), ("nvrtcVersion", "cynvrtc")}
PROVIDERS = {"legacy": {"cydriver": "cuda.ccuda", "cyruntime": "cuda.ccudart", "cynvrtc": "cuda.cnvrtc"},
             "bindings": {m: "cuda.bindings." + m for m in ("cydriver", "cyruntime", "cynvrtc")}}
CASES = [(cy, mode, layout) for cy in CYTHONS for mode in MODES for layout in ("bindings", "legacy")]


def tree(layout):
    return MANIFEST["cuda_python"][layout]["tree"]


@pytest.fixture(scope="module")
def built():
    """(cython, mode, layout) -> the .so, built once into the corpus."""
    out = {}
    for cy, mode, layout in CASES:
        so, _, why = build_corpus.build_ext(CORPUS, os.path.join(CORPUS, "cimports-only", cy, mode, layout), "three",
                                            SOURCE[layout] + BODY, cy, [tree(layout)], cplus=mode == "cplus")
        assert so, why
        out[cy, mode, layout] = so
    return out


def last_line(so, layout):
    """What importing the module under a layout's cuda-python ends with."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(so), tree(layout)]), PYTHONNOUSERSITE="1")
    proc = subprocess.run([PY, "-c", "import three; print(three.R)"], env=env, capture_output=True, text=True,
                          timeout=120)
    return (proc.stdout + proc.stderr).strip().splitlines()[-1]


@pytest.mark.parametrize("cy,mode,layout", CASES)
def test_show_lists_every_cimported_function_with_its_signature(built, cy, mode, layout):
    """The plain literal blob is recovered without the module's name among
    its str constants: its import-signature constants tie it."""
    report = show_json(built[cy, mode, layout])
    functions = {(r["name"], r["module"]) for r in report["references"] if r["kind"] == "function"}
    assert functions == {(name, PROVIDERS[layout][m]) for name, m in FUNCTIONS}, report["references"]
    assert report["notes"] == [], report["notes"]
    assert len(report["blobs"]) == 1, report["blobs"]


@pytest.mark.parametrize("cy,mode,layout", CASES)
@pytest.mark.parametrize("target", ("retarget", "fallback"))
def test_the_output_behaves_as_the_module_built_for_the_target(built, tmp_path, cy, mode, layout, target):
    source = built[cy, mode, layout]
    want = OTHER[layout] if target == "retarget" else "fallback"
    dest = str(tmp_path / os.path.basename(source))
    cypatch("--target-layout", want, "-o", dest, source, check=0)
    reached = "RuntimeError: Failed to dlopen libcuda.so.1"
    for site in ("legacy", "bindings"):
        if target == "fallback":
            expected = reached  # either cuda-python, whichever layout it has
        else:
            expected = last_line(built[cy, mode, OTHER[layout]], site)
        assert last_line(dest, site) == expected, (site, dest)
    # the original under the target's own cuda-python does not bind
    if target == "retarget":
        assert last_line(source, OTHER[layout]) != reached
