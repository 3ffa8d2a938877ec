"""What cypatch reads as a provider's exports (`show --exports`, the code
path `check` uses) against what CPython sees in the module's __pyx_capi__,
for every release of cuda-python and cuda-bindings in the corpus
(samples/build_corpus.py: PROVIDER_RELEASES, downloaded into
provider-releases/). Each release's extension modules are imported by a
child interpreter with the release's unpacked wheel on sys.path (no GPU
needed); a module that fails to import fails the test with its reason.

What cypatch knows of each release (rules/releases.txt, compiled in;
`cypatch releases --release DIST==VERSION`) must be what the release's
wheel gives: its modules, its Requires-Python, and for each module the
capsules `show --exports` reads here (which CPython confirms), so that the
file, regenerated from this corpus by scripts/releases, is the same."""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import CORPUS, ROOT, cypatch

sys.path.insert(0, os.path.join(ROOT, "samples"))
from build_corpus import PROVIDER_RELEASES, PROVIDER_RELEASES_LISTED  # noqa: E402


def _generator():
    """scripts/releases, the generator of rules/releases.txt, as a module."""
    loader = importlib.machinery.SourceFileLoader("releases", os.path.join(ROOT, "scripts", "releases"))
    spec = importlib.util.spec_from_loader("releases", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


GENERATOR = _generator()

TOP = os.path.join(CORPUS, "provider-releases")

# Modules of which cypatch reads no export while CPython sees some: none
# now (issue 17: in Cython 3.2+ providers, scan_blob.c tied the module's
# own export-list constant to an import whose code the export code is laid
# out after; a constant is now tied only by a load reached from the import
# with no call, jmp or ret on the way, scan_code.c). Release versions
# (cuda-bindings) -> the modules' names under cuda.bindings. The test fails
# on any other difference, and on any listed module that is read (then
# strike it).
NOT_READ = {}

# The child: imports every extension module of the tree, and reports, for
# those with __pyx_capi__, each key, its capsule's name (the signature) and
# whether the pointer lies in executable memory (a function) or not (a
# variable), and the first module whose __pyx_capi__ is the same dict (a
# trampoline such as 12.6.2's cuda.ccuda passes on cuda.bindings.cydriver's).
CHILD = r'''
import ctypes, importlib, json, sys
tree, names = sys.argv[1], sys.argv[2:]
api = ctypes.pythonapi
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
out, dicts = {}, {}
for name in names:
    try:
        mod = importlib.import_module(name)
    except BaseException as e:
        out[name] = {"error": "%s: %s" % (type(e).__name__, e)}
        continue
    d = getattr(mod, "__pyx_capi__", None)
    if d is None:
        continue
    if not isinstance(d, dict):
        out[name] = {"error": "__pyx_capi__ is a %s" % type(d).__name__}
        continue
    out[name] = {"group": dicts.setdefault(id(d), name), "capi": [[k, api.PyCapsule_GetName(v).decode(), api.PyCapsule_GetPointer(v, api.PyCapsule_GetName(v))]
                          for k, v in d.items()]}
execs = []
with open("/proc/self/maps") as f:
    for line in f:
        addrs, perms = line.split()[:2]
        if "x" in perms:
            lo, hi = (int(a, 16) for a in addrs.split("-"))
            execs.append((lo, hi))
for m in out.values():
    for e in m.get("capi", []):
        e[2] = "function" if any(lo <= e[2] < hi for lo, hi in execs) else "variable"
json.dump(out, sys.stdout)
'''


def release_entry(name, version):
    path = os.path.join(TOP, "manifest.json")
    if not os.path.exists(path):
        pytest.fail("no %s: run samples/build_corpus.py (scripts/test does)" % path)
    with open(path) as f:
        manifest = json.load(f)
    for r in manifest["releases"]:
        if (r["name"], r["version"]) == (name, version):
            return r, manifest
    pytest.fail("%s %s is not in %s: run samples/build_corpus.py" % (name, version, path))


def extension_modules(tree):
    """{dotted name: file} of every extension module under tree/cuda but
    the wheels' own tests (cuda/tests: they need a GPU to import)."""
    out = {}
    for root, _, files in os.walk(os.path.join(tree, "cuda")):
        if os.path.relpath(root, tree).split(os.sep)[:2] == ["cuda", "tests"]:
            continue
        for f in files:
            if f.endswith(".so") and ".cpython-" in f:
                rel = os.path.relpath(os.path.join(root, f.split(".")[0]), tree)
                out[rel.replace(os.sep, ".")] = os.path.join(root, f)
    return out


def cpython_view(release, manifest, modules):
    path = [release["tree"], manifest["deps"]["tree"]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path[:0] = %r; exec(%r)" % (path, CHILD),
                           release["tree"]] + sorted(modules),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def cypatch_view(path):
    proc = cypatch("show", "--exports", "--json", path)
    assert proc.returncode == 0, (path, proc.returncode, proc.stderr)
    return json.loads(proc.stdout)


def compare(seen, read):
    """The differences between CPython's entries [key, signature, kind] and
    cypatch's [{kind, name, signature}], as lines."""
    diffs = []
    by_key = {k: (sig, kind) for k, sig, kind in seen}
    named = {e["name"]: e for e in read if e["name"] is not None}
    unnamed = sorted((e["signature"], e["kind"]) for e in read if e["name"] is None)
    left = []
    for key, (sig, kind) in sorted(by_key.items()):
        e = named.get(key)
        if e is None:
            left.append((sig, kind, key))
        elif (e["signature"], e["kind"]) != (sig, kind):
            diffs.append("%s: CPython has %s %r, cypatch reads %s %r" % (key, kind, sig, e["kind"], e["signature"]))
    for name in sorted(set(named) - set(by_key)):
        diffs.append("%s: cypatch reads %s %r, CPython has no such key" % (name, named[name]["kind"],
                                                                           named[name]["signature"]))
    # variables whose key cypatch cannot read: by signature, as a multiset
    for sig, kind, key in left:
        if kind == "variable" and (sig, kind) in unnamed:
            unnamed.remove((sig, kind))
        else:
            diffs.append("%s: CPython has %s %r, cypatch does not read it" % (key, kind, sig))
    for sig, kind in unnamed:
        diffs.append("?: cypatch reads %s %r that CPython does not have" % (kind, sig))
    return diffs


@pytest.mark.parametrize("name,version", PROVIDER_RELEASES, ids=["%s-%s" % r for r in PROVIDER_RELEASES])
def test_provider_exports(name, version):
    release, manifest = release_entry(name, version)
    modules = extension_modules(release["tree"])
    assert modules, "%s %s: no extension module under %s" % (name, version, release["tree"])
    seen = cpython_view(release, manifest, modules)
    failures = ["%s: cannot be imported: %s" % (m, v["error"]) for m, v in sorted(seen.items()) if "error" in v]
    reads = {mod: cypatch_view(modules[mod]) for mod, v in seen.items() if "error" not in v}
    groups = {}
    for mod, v in seen.items():
        if "error" not in v:
            groups.setdefault(v["group"], []).append(mod)
    checked = 0
    not_read = NOT_READ.get(version, set()) if name == "cuda-bindings" else set()
    for mod, v in sorted(seen.items()):
        if "error" in v:
            continue
        read = reads[mod]
        if mod in not_read:
            if read or not v["capi"]:
                failures.append("%s: listed in NOT_READ, but cypatch reads %d exports and CPython sees %d" % (
                    mod, len(read), len(v["capi"])))
            continue
        owners = [m for m in groups[v["group"]] if reads[m] or m in not_read]
        if not read and len(groups[v["group"]]) > 1 and owners:
            # a trampoline: its own file exports nothing, its __pyx_capi__
            # is the dict of its counterpart in the other layout, which
            # check reads instead (predict.c)
            continue
        failures += ["%s: %s" % (mod, d) for d in compare(v["capi"], read)]
        if mod.split(".")[-1].startswith("cy") and not read:
            failures.append("%s: cypatch reads no export" % mod)
        checked += 1
    assert checked, "%s %s: no module with __pyx_capi__" % (name, version)
    failures += known_differences(release, reads)
    assert not failures, "%s %s (%d modules with __pyx_capi__):\n%s" % (
        name, version, checked, "\n".join(failures[:40] + (["..."] if len(failures) > 40 else [])))


def known_differences(release, reads):
    """Where `cypatch releases --release` differs from the release's wheel
    (its modules and Requires-Python) and from the exports read here."""
    spec = "%s==%s" % (release["name"], release["version"])
    proc = cypatch("releases", "--json", "--release", spec)
    if proc.returncode != 0:
        return ["cypatch releases --release %s: exit %d: %s" % (spec, proc.returncode, proc.stderr.strip())]
    known = json.loads(proc.stdout)
    with zipfile.ZipFile(release["wheel"]) as z:
        modules, requires = GENERATOR.modules(z.namelist()), GENERATOR.requires_python(z)
    out = []
    if known["requires_python"] != requires:
        out.append("releases.txt: Requires-Python %s, the wheel's %s" % (known["requires_python"], requires))
    for m in sorted(set(modules) | set(known["modules"])):
        if modules.get(m) != known["modules"].get(m):
            out.append("releases.txt: module %s is %s, in the wheel %s" % (m, known["modules"].get(m), modules.get(m)))
    capsules = {}
    for c in known["capsules"]:
        capsules.setdefault(c["module"], set()).add((c["kind"], c["name"], c["signature"]))
    for m, read in sorted(reads.items()):
        want = {(e["kind"], e["name"], e["signature"]) for e in read}
        if capsules.pop(m, set()) != want:
            out.append("releases.txt: the capsules of %s differ from what show --exports reads" % m)
    out += ["releases.txt: capsules of %s, which exports nothing here" % m for m in sorted(capsules)]
    return out


def test_the_known_releases_are_the_corpus_releases():
    """`cypatch releases` lists every release of PROVIDER_RELEASES, in its
    order, with the day they were listed."""
    proc = cypatch("releases", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["date"] == PROVIDER_RELEASES_LISTED
    assert [(r["distribution"], r["version"]) for r in doc["releases"]] == PROVIDER_RELEASES


# Issue 17's three shapes in cuda-bindings 13.5.0, read without importing
# anything: cynvrtc holds its own export list and the one of its import from
# _internal.nvrtc, both of 29 names (the export list was tied to that
# import); nvvm's export code is laid out after the failure path of `import
# builtins`, _internal.utils' after the calls of its type imports (the
# export list was tied to `builtins`). What is read must be the module's
# own list, never the import's (_nvrtcGetErrorString, ...).
@pytest.mark.parametrize("module,count,first", [
    ("cynvrtc", 29, "nvrtcGetErrorString"),
    ("nvvm", 13, "ir_version"),
    ("_internal.utils", 15, "is_nested_sequence"),
])
def test_export_list_laid_out_after_an_import(module, count, first):
    release, _ = release_entry("cuda-bindings", "13.5.0")
    path = extension_modules(release["tree"])["cuda.bindings." + module]
    read = cypatch_view(path)
    names = [e["name"] for e in read]
    assert len(read) == count and first in names, (path, names)
    assert not [n for n in names if n and n.startswith("_nvrtc")], names


def test_a_release_it_does_not_know_is_refused_in_one_line():
    proc = cypatch("releases", "--release", "cuda-python==12.6.2")  # yanked: not in the file
    assert proc.returncode == 2 and proc.stderr == (
        "cypatch: cuda-python==12.6.2: not a release cypatch knows (see 'cypatch releases')\n"), proc.stderr
    proc = cypatch("releases", "--release", "cuda-python")
    assert proc.returncode == 64 and "DIST==VERSION" in proc.stderr, proc.stderr
