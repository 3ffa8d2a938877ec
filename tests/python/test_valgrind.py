"""Where AddressSanitizer cannot look: the fallback stub cypatch injects runs
inside CPython, in code no compiler instrumented. memcheck watches it: a
fallback-patched consumer imports and calls through both providers under
valgrind, with CPython's allocator off (PYTHONMALLOC=malloc), and any error
whose innermost frame lies outside libpython fails the test
(tests/sanitize/cpython.supp holds the libpython-only suppressions)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ENTRIES, MANIFEST, ROOT, cypatch
from test_imports import EXPECTED, RUN_ALL

VALGRIND = shutil.which("valgrind")
PICKED = [e for e in ENTRIES if e["kind"] == "corpus" and not e.get("variant") and
          e["cython"] in ("0.29.37", "3.3.1") and e["id"].split("/")[-1] in ("cimports", "pyimport")]


@pytest.mark.skipif(not VALGRIND, reason="valgrind is not installed (scripts/setup installs it)")
@pytest.mark.parametrize("entry", PICKED, ids=[e["id"] for e in PICKED])
def test_fallback_stub_under_memcheck(entry, tmp_path):
    dest = str(tmp_path / os.path.basename(entry["so"]))
    cypatch("--target-layout", "fallback", "-o", dest, entry["so"], check=0)
    for layout in ("bindings", "legacy"):
        env = dict(os.environ, PYTHONMALLOC="malloc", PYTHONNOUSERSITE="1",
                   PYTHONPATH=os.pathsep.join([str(tmp_path), MANIFEST["providers"][layout]]))
        proc = subprocess.run(
            [VALGRIND, "-q", "--error-exitcode=99", "--leak-check=no",
             "--suppressions=" + os.path.join(ROOT, "tests", "sanitize", "cpython.supp"),
             sys.executable, "-c", RUN_ALL, entry["module"], "run"],
            env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert json.loads(proc.stdout)["run"] == ["ok", EXPECTED[entry["module"]][layout]]
