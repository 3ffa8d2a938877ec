"""`cypatch check` predicts exactly what `cypatch verify` then observes:
every corpus consumer, as built and fallback-patched, against each
environment (our providers of both layouts and one that lacks a function;
cuda-python 12.5.0, 12.6.2.post1, cuda-bindings 12.9.4 and 13.0.3 for the
consumers of real cuda-python). The table goes to the test output."""
import json
import os
import subprocess
import sys

import pytest

import conftest
from conftest import CYPATCH, ENTRIES, LOST, MANIFEST, cypatch, scan_incomplete, variant_refusal

BUILT = [e for e in ENTRIES if not e["skipped"]]
# what the scan cannot vouch for cannot be predicted: check refuses it
UNSEEN = [e for e in BUILT if scan_incomplete(e)]
CASES = [(e, form) for e in BUILT if e not in UNSEEN for form in ("as built", "fallback")
         if form == "as built" or not variant_refusal(e, "fallback")]
ENVS = {
    "corpus": {"bindings": MANIFEST["providers"]["bindings"], "legacy": MANIFEST["providers"]["legacy"],
               "bindings, no cuDeviceGetCount": MANIFEST["providers"]["bindings-partial"]},
    "shared": {"bindings": MANIFEST["providers"]["bindings"], "legacy": MANIFEST["providers"]["legacy"]},
    # Python-level imports that do not run at import time (issue 17 case 3)
    "deferred": {"bindings": MANIFEST["providers"]["bindings"], "legacy": MANIFEST["providers"]["legacy"]},
    "realcuda": {"cuda-python 12.5.0": MANIFEST["cuda_python"]["legacy"]["tree"],
                 "cuda-python 12.6.2.post1": MANIFEST["cuda_python"]["bindings"]["tree"],
                 "cuda-bindings 12.9.4": MANIFEST["cuda_bindings_129"]["tree"],
                 "cuda-bindings 13.0.3": MANIFEST["cuda_bindings_13"]["tree"]},
}
TABLE = conftest.CHECK_TABLE


def check(so, site):
    p = subprocess.run([CYPATCH, "check", "--json", "--against", site, so], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    assert (p.returncode == 0) == doc["ok"]
    return doc["ok"], [f for e in doc["extensions"] for f in e["failures"]]


def verify(so, site):
    env = dict(os.environ, PYTHONPATH=site, PYTHONNOUSERSITE="1", PYTHONWARNINGS="ignore")
    p = subprocess.run([CYPATCH, "verify", "--json", "--python", sys.executable, so], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    ext = doc["extensions"][0]
    observed = ext["import"].get("error")
    return doc["ok"], observed


@pytest.mark.parametrize("entry", UNSEEN, ids=[e["id"] for e in UNSEEN])
def test_check_refuses_to_guess_what_the_scan_cannot_see(entry):
    p = subprocess.run([CYPATCH, "check", "--against", MANIFEST["providers"][entry["layout"]], entry["so"]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, (p.returncode, p.stderr)
    assert scan_incomplete(entry) in p.stderr, p.stderr


@pytest.mark.parametrize("entry,form", CASES, ids=["%s-%s" % (e["id"], f) for e, f in CASES])
def test_check_predicts_what_verify_observes(entry, form, tmp_path):
    so = entry["so"]
    if form == "fallback":
        so = str(tmp_path / os.path.basename(entry["so"]))
        cypatch("--target-layout", "fallback", "-o", so, entry["so"], check=0)
    for env, site in ENVS[entry["kind"]].items():
        predicted_ok, failures = check(so, site)
        observed_ok, observed = verify(so, site)
        TABLE.append((entry["id"], form, env, "binds" if observed_ok else observed))
        assert predicted_ok == observed_ok, (env, failures, observed)
        if not observed_ok:
            # module state loses the failed import's exception (conftest.LOST)
            assert observed in failures or (entry.get("variant") == "module-state" and
                                            observed == LOST % entry["module"]), (env, failures, observed)


DEFERRED = [e for e in BUILT if e["kind"] == "deferred" and e not in UNSEEN]


@pytest.mark.parametrize("entry", DEFERRED, ids=[e["id"] for e in DEFERRED])
def test_a_stripped_module_is_judged_as_with_its_symbols(entry, tmp_path):
    """Stripped, a multi-phase module names no exec function: it is read
    from its PyModuleDef's Py_mod_exec slot, and each import is judged as
    with the symbols (deferred ones included)."""
    stripped = str(tmp_path / os.path.basename(entry["so"]))
    subprocess.run(["strip", "-o", stripped, entry["so"]], check=True)
    for site in ENVS["deferred"].values():
        docs = [json.loads(subprocess.run([CYPATCH, "check", "--json", "--against", site, so],
                                          stdout=subprocess.PIPE, text=True).stdout) for so in (entry["so"], stripped)]
        judged = [[(e["failures"], e["deferred"]) for e in d["extensions"]] for d in docs]
        assert judged[0] == judged[1], judged


def test_a_hostile_provider_is_refused_in_one_line(tmp_path):
    """Issue 17 case 6: providers are input too. A provider whose section
    header table lies outside the file: one line naming it, exit 2, no
    crash."""
    import shutil
    import struct
    site = tmp_path / "site"
    shutil.copytree(MANIFEST["providers"]["bindings"], str(site))
    victim = next((site / "cuda" / "bindings").glob("cydriver.cpython*.so"))
    data = bytearray(victim.read_bytes())
    struct.pack_into("<Q", data, 0x28, len(data) + 4096)  # e_shoff
    victim.write_bytes(bytes(data))
    entry = next(e for e in BUILT if e["id"] == "3.1.8/bindings/cimports")
    p = subprocess.run([CYPATCH, "check", "--against", str(site), entry["so"]], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, (p.returncode, p.stderr)
    assert str(victim) in p.stderr and "section headers lie outside the file" in p.stderr, p.stderr


# -- the Python code a wheel's import runs first (issue 17, "package") -------

def wheel_of(path, files, method=None, comment=b""):
    """A wheel of our own: files {name: bytes}, RECORD made right (members
    deflated unless `method` says otherwise, the archive comment given)."""
    import base64
    import hashlib
    import zipfile
    dist = "demo-1.0.dist-info"
    files = dict(files)
    files[dist + "/METADATA"] = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
    files[dist + "/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"
    rows = ["%s,sha256=%s,%d" % (n, base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode(),
                                 len(d)) for n, d in files.items()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if method is None else method) as z:
        for n, d in files.items():
            z.writestr(n, d)
        z.writestr(dist + "/RECORD", "\n".join(rows + [dist + "/RECORD,,"]) + "\n")
        z.comment = comment
    return path


UNGUARDED = "from cuda import cudart\n"
# what each package makes of `from cuda import cudart` under cuda-bindings
# 13 (no legacy modules): the failure check must name, or None
PACKAGES = {
    "unguarded": ({"demo/__init__.py": UNGUARDED},
                  "ImportError: cannot import name 'cudart' from 'cuda' (demo/__init__.py line 1)"),
    "swallowed": ({"demo/__init__.py": "try:\n    from cuda import cudart\nexcept ImportError:\n    pass\n"}, None),
    # cuda-core 0.4's __init__: the handler raises again
    "re-raised": ({"demo/__init__.py": "try:\n    from cuda import cudart\nexcept ImportError:\n"
                                       "    raise ImportError('cuda-python 12 must be installed') from None\n"},
                  "ImportError: cannot import name 'cudart' from 'cuda' (demo/__init__.py line 2)"),
    # through a module of the wheel the package imports, in a cycle
    "imported": ({"demo/__init__.py": "from . import util\n",
                  "demo/util.py": "import demo\nfrom demo.sub import (\n    helper,\n)\n",
                  "demo/sub/__init__.py": "", "demo/sub/helper.py": '"""\nimport cuda.ccudart\n"""\n' + UNGUARDED},
                 "ImportError: cannot import name 'cudart' from 'cuda' (demo/sub/helper.py line 4)"),
    # in a function body: not run at import time
    "deferred": ({"demo/__init__.py": "def load():\n    " + UNGUARDED}, None),
}


@pytest.mark.parametrize("case", sorted(PACKAGES))
def test_check_of_a_wheel_reads_the_python_its_import_runs_first(case, tmp_path):
    """Importing demo.rmm_like runs demo/__init__.py first: its failure is
    the extension's, named with its file and line, unless a handler
    swallows it or it does not run at import time."""
    entry = next(e for e in BUILT if e["id"] == "3.1.8/bindings/rmm_like")
    site = MANIFEST["cuda_bindings_13"]["tree"]
    files, want = PACKAGES[case]
    files = {n: t.encode() for n, t in files.items()}
    files["demo/" + os.path.basename(entry["so"])] = open(entry["so"], "rb").read()
    wheel = wheel_of(str(tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"), files)
    ok, failures = check(wheel, site)
    assert ok == (want is None) and failures == ([want] if want else []), failures
    p = subprocess.run([CYPATCH, "check", "--against", site, wheel], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode == (0 if want is None else 1), p.stderr
    assert want is None or ("would fail: " + want) in p.stdout, p.stdout
