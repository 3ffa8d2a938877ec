"""`cypatch verify` says `verified` only for what it proved, and reports a
module that crashes the interpreter as a failure with its signal (issue 17
case 4). The corpus-wide agreement of check and verify is test_check.py."""
import os
import subprocess
import sys

from conftest import CORPUS, CYPATCH, ENTRIES, MANIFEST, ROOT

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


def test_nothing_proven_is_no_verification():
    """Issue 17 case 4: a module whose slots the scan cannot find (Cython
    3.2.9 with CYTHON_USE_MODULE_STATE: the state is allocated at import)
    imported, and verify said `0 of 0 bindings proven` and `verified`."""
    entry = next(e for e in ENTRIES if e["id"] == "3.2.9/bindings/cimports-module-state")
    env = dict(os.environ, PYTHONPATH=MANIFEST["providers"]["bindings"], PYTHONNOUSERSITE="1")
    p = subprocess.run([CYPATCH, "verify", "--python", sys.executable, entry["so"]], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "FAILED: cimports: imports cuda.bindings.cyruntime, but no binding of it can be proven" in p.stdout, \
        p.stdout


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
