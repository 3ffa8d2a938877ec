"""The fallback stub under CPython 3.9, 3.10, 3.12 and 3.13 (3.11 is the
main corpus's): consumers built by each interpreter (samples/build_pythons.py),
fallback-patched, imported and called by that interpreter under both
layouts, and the two-name ImportError under neither. 3.12 and 3.13 have
immortal objects, which the stub's reference counting must leave alone."""
import json
import os
import re
import subprocess

import pytest

from conftest import CORPUS, cypatch
from test_imports import EXPECTED, RUN_ALL

INDEX = os.path.join(os.path.dirname(CORPUS), "pythons", "index.json")


def matrix():
    if not os.path.exists(INDEX):
        return [pytest.param(None, None, None, marks=pytest.mark.skip(
            reason="no %s: scripts/test builds it with samples/build_pythons.py" % INDEX))]
    out = []
    for version, info in json.load(open(INDEX)).items():
        if "missing" in info:
            out.append(pytest.param(version, None, None, id=version,
                                    marks=pytest.mark.skip(reason=info["missing"])))
            continue
        manifest = json.load(open(info["manifest"]))
        for e in manifest["entries"]:
            if not e["skipped"]:
                out.append(pytest.param(version, info["python"], dict(e, providers=manifest["providers"]),
                                        id="%s/%s" % (version, e["id"])))
    return out


def run(python, so, module, site):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.dirname(so), site) if p),
               PYTHONNOUSERSITE="1")
    return subprocess.run([python, "-c", RUN_ALL, module, "run"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.mark.parametrize("version,python,entry", matrix())
def test_fallback_stub_under_each_cpython(version, python, entry, tmp_path):
    dest = str(tmp_path / os.path.basename(entry["so"]))
    proc = cypatch("--target-layout", "fallback", "-o", dest, entry["so"], check=0)
    assert "accepts both layouts" in proc.stdout
    for layout in ("bindings", "legacy"):
        p = run(python, dest, entry["module"], entry["providers"][layout])
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["run"] == ["ok", EXPECTED[entry["module"]][layout]], layout
    p = run(python, dest, entry["module"], "")
    last = p.stderr.strip().splitlines()[-1]
    assert re.match(r"ImportError: %s: neither \S+ nor \S+ can be imported \(cypatch fallback\)$"
                    % entry["module"], last), last
