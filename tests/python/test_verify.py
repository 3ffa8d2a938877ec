"""`cypatch verify` says `verified` only for what it proved, and reports a
module that crashes the interpreter as a failure with its signal (issue 17
case 4). The corpus-wide agreement of check and verify is test_check.py."""
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, CYPATCH, ENTRIES, MANIFEST, ROOT, scan_incomplete

# cimports a provider function, then dereferences NULL at import time
CRASH = ("from cuda.bindings.cydriver cimport cuInit\n\ncdef int *p = NULL\n\n"
         "def init():\n    return cuInit(0)\n\np[0] = 1\n")


def test_a_module_that_crashes_at_import_fails_verify_with_its_signal(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    site = MANIFEST["providers"]["bindings"]
    so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path), "crashes", CRASH, "3.1.8", [site])
    assert not why, why
    env = dict(os.environ, PYTHONPATH=site, PYTHONNOUSERSITE="1")
    p = subprocess.run([CYPATCH, "verify", "--python", sys.executable, so], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "killed by signal 11" in p.stdout, p.stdout


def test_a_module_state_build_is_proven_binding_by_binding():
    """Cython 3.2.9 with CYTHON_USE_MODULE_STATE reads its import-signature
    constants through PyModule_GetState: the scan tied them to no import,
    verify proved no binding and said FAILED for a module that imports and
    binds (issue 37 case 2). The scan now ties each import to the state
    word it reads (scan_state.c): every binding proven."""
    entry = next(e for e in ENTRIES if e["id"] == "3.2.9/bindings/cimports-module-state")
    env = dict(os.environ, PYTHONPATH=MANIFEST["providers"]["bindings"], PYTHONNOUSERSITE="1")
    p = subprocess.run([CYPATCH, "verify", "--python", sys.executable, entry["so"]], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert "cimports: imported; 6 of 6 bindings proven" in p.stdout, p.stdout


def test_a_module_the_scan_cannot_follow_is_refused_with_the_reason():
    """gcc -mcmodel=large: the scan cannot follow the code to the names (it
    says so), and verify said "references no module the rules map", which
    is untrue. It refuses as check does, with the scan's reason."""
    entry = next(e for e in ENTRIES if e["id"] == "3.2.9/bindings/cimports-mcmodel-large")
    env = dict(os.environ, PYTHONPATH=MANIFEST["providers"]["bindings"], PYTHONNOUSERSITE="1")
    p = subprocess.run([CYPATCH, "verify", "--python", sys.executable, entry["so"]], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("cypatch: %s: " % entry["so"]) and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.endswith(scan_incomplete(entry) + "\n"), p.stderr


def test_a_wheel_that_references_nothing_mapped_is_refused_alike(tmp_path):
    """ucxx 0.45.1: `check` exited 2 (nothing to check) and `verify` 1
    (`FAILED: no extension references a mapped module`) for one meaning.
    Both refuse it (docs/exit-codes.md): exit 2, one line, nothing proven
    or predicted. The wheel holds a Cython module that cimports nothing."""
    from test_check import wheel_of
    plain = MANIFEST["unmapped"]
    files = {"demo/__init__.py": b"x = 1\n", "demo/" + os.path.basename(plain): open(plain, "rb").read()}
    wheel = wheel_of(str(tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"), files)
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    for args, word in ((["verify", "--python", sys.executable], "verify"),
                       (["check", "--against", MANIFEST["providers"]["bindings"]], "check")):
        p = subprocess.run([CYPATCH] + args + [wheel], env=env, capture_output=True, text=True)
        assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
        assert p.stderr == "cypatch: %s: references no module the rules map; nothing to %s\n" % (wheel, word), \
            p.stderr


# binds a runtime function, but none of the GPU probe's three
RUNTIME_ONLY = ("from cuda.bindings.cyruntime cimport cudaMemcpyAsync, cudaStream_t, cudaMemcpyDefault\n\n"
                "def copy():\n    cdef char a[2]\n    cdef char b[2]\n"
                "    return <int>cudaMemcpyAsync(a, b, 2, cudaMemcpyDefault, <cudaStream_t>NULL)\n")


def test_the_gpu_probe_calls_what_the_extension_binds(tmp_path):
    """rmm 24.12 to 26.2, which do 16 MiB round trips on an H100, failed
    `verify --gpu` with `gpu cuInit: the extension binds no cuInit`. The
    probe calls each function through the extension's slot where it binds
    it, else through the provider module its proven bindings came from
    (here cudaGetDeviceCount through cuda.bindings.cyruntime: the corpus
    provider counts 40 devices, no GPU needed), names what it called
    through, and makes no call its providers do not offer (cuInit: the
    module binds nothing of the driver)."""
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    import build_corpus
    site = MANIFEST["providers"]["bindings"]
    so, _, why = build_corpus.build_ext(CORPUS, str(tmp_path), "runtime_only", RUNTIME_ONLY, "3.3.1", [site])
    assert not why, why
    env = dict(os.environ, PYTHONPATH=site, PYTHONNOUSERSITE="1")
    p = subprocess.run([CYPATCH, "verify", "--gpu", "--python", sys.executable, so], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert "gpu cudaGetDeviceCount (through cuda.bindings.cyruntime): status 0, count 40" in p.stdout, p.stdout
    assert "gpu cuInit: not called: it binds nothing of a module that exports cuInit" in p.stdout, p.stdout
    assert p.stdout.endswith("verified\n"), p.stdout


def test_an_interpreter_of_another_machine_is_refused(tmp_path):
    """`verify --python` with an x86-64 interpreter and an aarch64 module
    said `No module named ...` and FAILED: a wrong interpreter, not a
    failure of the module. One line naming both machines, exit 2."""
    aarch64 = os.path.join(CORPUS, "aarch64", "manifest.json")
    if not os.path.exists(aarch64):
        pytest.skip("no aarch64 corpus (samples/build_corpus_aarch64.py)")
    import json
    so = next(e["so"] for e in json.load(open(aarch64))["entries"] if e.get("so") and "cimports" in e["so"])
    p = subprocess.run([CYPATCH, "verify", "--python", sys.executable, so], capture_output=True, text=True)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stderr == "cypatch: %s: an aarch64 extension (aarch64-linux-gnu), and %s runs x86_64-linux-gnu " \
                       "code: give --python an aarch64 interpreter\n" % (so, sys.executable), p.stderr
