"""Real wheels from PyPI (samples/build_corpus.py REAL_CORPUS): what `show`
finds in them, and `repair` in every mode judged by pip installing the
output next to a real cuda-python and CPython importing every extension
module and calling through it, against the original in the layout it was
built for. A repair either exits 0 with a wheel that behaves like the
original, or exits 2 with one line and nothing written (docs/real-wheels.md).
The tables of `check` and `verify` against what importing does, over every
wheel as shipped and repaired, share this file's environments, repairs and
import runs (one file: a second would make them all again).
"""
import glob
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
import uv

from conftest import CHECK_REAL_TABLE, CYPATCH, MANIFEST, REAL_TABLE, cypatch, show_json

PY = sys.executable
# the environments' installer: uv's pip installs a wheel as pip does, in a
# fraction of pip's time (no bytecode compiled; the test installs hundreds)
UV = uv.find_uv_bin()
REAL = MANIFEST.get("real_corpus", [])
WHEELS = os.path.join(os.path.dirname(MANIFEST["real_wheels"]["numpy"]))
NUMPY = "numpy==2.1.3"

# the cuda-python environments a wheel meets, by what pip installs, and the
# layouts each provides (12.6.2.post1 also ships the legacy modules as
# trampolines to the bindings ones; 13.x has none)
ENVIRONMENTS = {
    "cuda-python 12.5.0": (["cuda-python==12.5.0"], {"legacy"}),
    "cuda-python 12.6.2.post1": (["cuda-python==12.6.2.post1"], {"bindings", "legacy"}),
    "cuda-bindings 12.9.4": (MANIFEST["cuda_bindings_129"]["requirements"], {"bindings"}),
    "cuda-bindings 12.9.10": (MANIFEST["newest_bindings"]["12.9"], {"bindings"}),
    "cuda-bindings 13.0.3": (MANIFEST["cuda_bindings_13"]["requirements"], {"bindings"}),
    "cuda-bindings 13.5.0": (MANIFEST["newest_bindings"]["13"], {"bindings"}),
}
# where each mode is judged
TARGET_ENVS = {
    "legacy": ["cuda-python 12.5.0", "cuda-python 12.6.2.post1"],
    "bindings": ["cuda-python 12.6.2.post1", "cuda-bindings 12.9.10", "cuda-bindings 13.5.0"],
    "fallback": ["cuda-python 12.5.0", "cuda-python 12.6.2.post1", "cuda-bindings 12.9.10",
                 "cuda-bindings 13.5.0"],
}
# where an original built against a layout is judged when an environment
# lacks that layout (rmm 26.08 needs cuda-bindings 12.9.2 or later)
HOME = {"legacy": "cuda-python 12.5.0", "bindings": "cuda-bindings 12.9.4"}


def oracle_env(w, env_name):
    """The environment whose run of the original wheel the repaired one
    must match under env_name: env_name itself when it provides the layout
    the wheel was built for (or the wheel tries either), else HOME's."""
    if w["built"] == "either" or w["built"] in ENVIRONMENTS[env_name][1]:
        return env_name
    return HOME[w["built"]]


# What a call through the package reaches without a GPU: cuda-python's
# dlopen of the driver (or the runtime's error for it).
CALLS = {
    "rmm-cu12": "import rmm\nrmm.DeviceBuffer(size=8)\n",
    # (cuda-core 0.5 moved the API from cuda.core.experimental to cuda.core)
    "cuda-core": "import importlib.util\n"
                 "if importlib.util.find_spec('cuda.core.experimental'):\n"
                 "    from cuda.core.experimental import Device\n"
                 "else:\n"
                 "    from cuda.core import Device\n"
                 "Device()\n",
    # (common/handle's `from .cuda import CudaRuntimeError` and ndbuffer's
    # str "cuda" were read as `from cuda import cuda`, issue 16 case 4, and
    # those modules got fallback stubs; they must behave as built however
    # they are repaired)
    "pylibraft-cu12": "from pylibraft.common import cuda, handle\n"
                      "assert handle.CudaRuntimeError is cuda.CudaRuntimeError, handle.CudaRuntimeError\n"
                      "from pylibraft.common import Stream\nStream()\n",
    "nvmath-python": "from nvmath.internal.ndbuffer import ndbuffer\n"
                     "assert ndbuffer.NDBuffer().device == 'cuda', ndbuffer.NDBuffer().device\n"
                     "from nvmath.internal import bindings\nbindings.stream_sync(0)\n",
}
# Python run before the extension modules are imported: pylibraft's modules
# link against librmm.so, which rmm's own __init__ loads (libraft, which
# pylibraft's __init__ loads when installed, is left out: 2 of its 6
# modules then fail to import alike in every run).
PRELUDES = {
    "pylibraft-cu12": "import rmm\n",
}

# How each cuda-python says that the call reached it and found no driver.
# (cuda-bindings 12.9.10 and 13.x load libcuda through cuda-pathfinder.)
NO_DRIVER = ("Failed to dlopen libcuda.so.1", "cudaErrorInsufficientDriver", "CUDA_ERROR_NO_DEVICE",
             "cudaErrorNoDevice", "CUDA_ERROR_NOT_FOUND",
             '"cuda" is an NVIDIA driver library and can only be found via system search')


def observed(outcomes):
    """The outcomes with the call's no-driver error, which differs between
    cuda-python releases, reduced to the fact that the call reached one."""
    out = dict(outcomes)
    if any(s in out["call"] for s in NO_DRIVER):
        out["call"] = "reached cuda-python, which found no driver"
    return out


OUTCOMES = r"""
import importlib, json, sys
out = {}
try:
    exec(compile(sys.argv[1], "prelude", "exec"), {})
except BaseException as e:
    out["prelude"] = "%s: %s" % (type(e).__name__, e)
for m in sys.argv[2:]:
    try:
        importlib.import_module(m)
        out[m] = "imported"
    except BaseException as e:
        out[m] = "%s: %s" % (type(e).__name__, e)
try:
    exec(compile(sys.stdin.read(), "call", "exec"), {})
    out["call"] = "returned"
except BaseException as e:
    out["call"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out, sort_keys=True))
"""


def wheel_id(w):
    return "%s-%s" % (w["name"], w["version"])


def extension_modules(wheel):
    """The dotted names of the wheel's extension modules."""
    out = []
    for name in zipfile.ZipFile(wheel).namelist():
        base = os.path.basename(name)
        if base.endswith(".so") and "." in base[:-3] and not name.startswith(("/", "..")):
            out.append(os.path.dirname(name).replace("/", ".") + "." + base.split(".")[0])
    return sorted(out)


class Env:
    """A venv with one cuda-python environment, numpy and a wheel's deps."""

    def __init__(self, path, reqs, cache):
        self.path = path
        self.cache = str(cache)  # uv's cache, inside the test's own folder
        subprocess.run([PY, "-m", "venv", str(path)], check=True)
        self.py = str(path / "bin" / "python")
        self.site = str(path / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages")
        self.seen = {}
        self.deps = None      # the wheel dependencies installed last
        self.wheel = None     # the wheel installed last
        self.pip("--find-links", WHEELS, NUMPY, *reqs)

    def install_deps(self, real, deps=None):
        """The wheel's dependencies (as given, else its own) installed, for
        verify, which imports the wheel from a copy of its own."""
        want = tuple(real["deps"] if deps is None else deps)
        if want and self.deps != want:
            self.pip("--no-deps", "--force-reinstall", *want)
        self.deps = want

    def install(self, real, wheel, deps):
        """The wheel and its dependencies (as given, else its own) installed,
        unless they are what was installed last: pip's reinstall of the same
        files costs seconds and changes nothing."""
        want = tuple(real["deps"] if deps is None else deps)
        if (self.wheel, self.deps) != (wheel, want):
            self.pip("--no-deps", "--force-reinstall", *want, wheel)
        self.wheel, self.deps = wheel, want

    def pip(self, *args):
        subprocess.run([UV, "pip", "install", "-q", "--no-index", "--python", self.py] + list(args), check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, UV_CACHE_DIR=self.cache))

    def outcomes(self, real, wheel, cwd, deps=None):
        """What importing each extension module of the wheel, installed with
        deps, does, then the call; the same install is run once."""
        key = (wheel, tuple(real["deps"] if deps is None else deps))
        if key not in self.seen:
            self.seen[key] = self._outcomes(real, wheel, cwd, deps)
        return self.seen[key]

    def alone(self, real, wheel, cwd, deps, module, prelude=True):
        """What importing one module does in an interpreter of its own: the
        one-process run imports every module in turn, and a package whose
        __init__ failed can leave submodules behind in sys.modules that a
        later import then finds (nvmath.internal). Without the prelude when
        prelude is false."""
        self.install(real, wheel, deps)
        proc = subprocess.run([self.py, "-c", OUTCOMES, PRELUDES.get(real["name"], "") if prelude else "", module],
                              cwd=str(cwd),
                              input="", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                              env=dict(os.environ, PYTHONNOUSERSITE="1"))
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])[module]

    def _outcomes(self, real, wheel, cwd, deps):
        self.install(real, wheel, deps)
        proc = subprocess.run([self.py, "-c", OUTCOMES, PRELUDES.get(real["name"], "")] + extension_modules(wheel),
                              cwd=str(cwd),
                              input=CALLS[real["name"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=300, env=dict(os.environ, PYTHONNOUSERSITE="1"))
        assert proc.returncode == 0, proc.stderr
        return observed(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    made, cache = {}, tmp_path_factory.mktemp("uv-cache")

    def get(name):
        if name not in made:
            made[name] = Env(tmp_path_factory.mktemp(name.replace(" ", "-")), ENVIRONMENTS[name][0], cache)
        return made[name]
    return get


def extract(wheel, member, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        return z.extract(member, str(tmp_path))


def real(name, version):
    for w in REAL:
        if w["name"] == name and w["version"] == version:
            return w
    pytest.fail("%s %s is not in the real corpus: rerun samples/build_corpus.py" % (name, version))


def refs(path):
    return show_json(path, "--all")["references"]


# -- what show finds --------------------------------------------------------

def test_python_imports_are_found_in_a_cxx_module_with_thread_locals(tmp_path):
    """rmm 25.06's memory_resource.pyx line 32, `from cuda.bindings import
    driver, runtime`: its string table lies in .data.rel.ro, at addresses
    that .tbss (the C++ thread_local template) also spans; the table's
    entries were read as bytes of .tbss, which has none, and the import was
    reported as a mere string (repair then passed it by)."""
    so = extract(real("rmm-cu12", "25.6.0")["wheel"],
                 "rmm/pylibrmm/memory_resource.cpython-311-x86_64-linux-gnu.so", tmp_path)
    found = {(r["kind"], r.get("package"), r.get("name")) for r in refs(so)}
    assert ("fromimport", "cuda.bindings", "driver") in found, found
    assert ("fromimport", "cuda.bindings", "runtime") in found, found
    assert ("pyimport", None, None) in found or any(k == "pyimport" for k, _, _ in found), found


@pytest.mark.parametrize("name, version, member", [
    ("rmm-cu12", "24.12.1", "rmm/_cuda/stream.cpython-311-x86_64-linux-gnu.so"),       # from numba import cuda
    ("rmm-cu12", "26.8.0", "rmm/pylibrmm/stream.abi3.so"),                              # the same, Cython 3.2
    ("pylibraft-cu12", "25.6.0", "pylibraft/common/handle.cpython-311-x86_64-linux-gnu.so"),  # from .cuda import X
    ("nvmath-python", "0.6.0", "nvmath/internal/ndbuffer/ndbuffer.cpython-311-x86_64-linux-gnu.so"),  # "cuda" a str
])
def test_a_name_cuda_that_no_import_passes_is_no_from_cuda_import_cuda(name, version, member, tmp_path):
    """Issue 16 case 4: the names "cuda" and "cuda" fit `from cuda import
    cuda`; these modules import numba, or .cuda relative to their package,
    or hold "cuda" as a value. They were reported as built against legacy
    and patched for nothing; they reference no mapped module."""
    so = extract(real(name, version)["wheel"], member, tmp_path)
    doc = show_json(so)
    assert doc["layouts"] == [] and doc["references"] == [], doc["references"]


def test_a_module_that_names_no_version_but_decompresses_strings_is_no_029_one(tmp_path):
    """rmm 26.08's helper.abi3.so (limited API, no CyFunction) names no
    _cython_3_2_9 ABI module; it was reported as Cython 0.29, and a 0.29
    module has no string blob to miss, so nothing said its names were
    unseen. Its message for a failed decompression marks it 3.2 or later."""
    so = extract(real("rmm-cu12", "26.8.0")["wheel"], "rmm/pylibrmm/helper.abi3.so", tmp_path)
    assert show_json(so)["cython"] == "3.2+"


def test_the_blob_of_a_module_inside_a_package_is_recovered(tmp_path):
    """rmm 26.08's memory_resource/_memory_resource.abi3.so imports
    cuda.bindings inside its string blob. The scan wanted the module's own
    name among the str constants as PyInit_ spells it, "_memory_resource",
    where Cython keeps the qualified "rmm.pylibrmm...._memory_resource": no
    blob of a module inside a package was recovered (issue 16 case 3), and
    repair refused the wheel. (A blob that is not recovered is still refused:
    conftest.VARIANT_REFUSALS, -mcmodel=large.)"""
    so = extract(real("rmm-cu12", "26.8.0")["wheel"],
                 "rmm/pylibrmm/memory_resource/_memory_resource.abi3.so", tmp_path)
    report = show_json(so)
    assert len(report["blobs"]) == 1, report["blobs"]
    found = {(r["kind"], r.get("package"), r.get("name")) for r in report["references"]}
    assert ("fromimport", "cuda.bindings", "driver") in found, found
    assert ("fromimport", "cuda.bindings", "runtime") in found, found


READ_ONLY = MANIFEST.get("read_only_wheels", [])


@pytest.mark.parametrize("wheel", READ_ONLY, ids=[os.path.basename(w).split("-cp")[0] for w in READ_ONLY])
def test_every_extension_of_the_newest_wheels_is_read(wheel, tmp_path):
    """The newest field wheels that cannot be imported here (samples/
    build_corpus.py READ_ONLY_WHEELS): every extension's strings are read,
    and repair gives its verdict in every mode: the wheel written, or exit 2
    with one line naming the mode and nothing written; a wheel that
    references nothing the rules map is copied in every mode. cuvs-cu12
    26.10.0's preprocessing/pca keeps a 9-bit length of 256 with
    `or ah, 0x1`: the frame evaluator took a high-byte register as unknown,
    the blob was not recovered and the whole wheel was refused (issue 37
    case 8). cudf-cu12 25.6.0's gpu_utils.py opens a parenthesised,
    multi-line `from cuda.bindings.runtime import (` (case 9)."""
    unread, mapped = [], False
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.namelist() if re.search(r"\.(cpython-[^/]*|abi3)\.so$", m)]  # not its C++ libraries
        z.extractall(tmp_path / "tree", members)
        sources = [z.read(m).decode() for m in z.namelist() if m.endswith(".py")]
    assert members
    for m in members:
        report = show_json(str(tmp_path / "tree" / m))
        if report["notes"] or (report["cython"] >= "3.2" and not report["blobs"]):
            unread.append("%s: %s" % (m, report["notes"] or "no blob"))
        mapped = mapped or any(r["kind"] != "unmapped" for r in report["references"])
    assert not unread, "\n".join(unread)
    mapped = mapped or any(re.search(r"^\s*(from|import) cuda[\s.]", text, re.M)
                           for text in sources)
    for mode in ("legacy", "bindings", "fallback"):
        out = tmp_path / mode
        p = cypatch("repair", "-t", mode, "-w", str(out), wheel)
        written = out / os.path.basename(wheel)
        if p.returncode == 2:
            assert mapped and p.stderr.count("\n") == 1 and mode in p.stderr, (mode, p.stderr)
            assert not written.exists()
            continue
        assert p.returncode == 0 and written.exists(), (mode, p.stdout, p.stderr)
        assert mapped or "needs nothing" in p.stdout, (mode, p.stdout)


def _c_literal(text):
    out, i = bytearray(), 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif text[i + 1] in "01234567":
            j = i + 1
            while j < len(text) and j < i + 4 and text[j] in "01234567":
                j += 1
            out.append(int(text[i + 1:j], 8))
            i = j
        else:
            out += {"n": b"\n", "t": b"\t", "r": b"\r", '"': b'"', "\\": b"\\", "'": b"'",
                    "?": b"?", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}[text[i + 1]]
            i += 2
    return bytes(out)


def cimported_functions(source):
    """What a Cython 3.2 module imports, from the C it was generated as: the
    blob's uncompressed literal split by its length index, and each
    import-signature constant (signatures, then names) loaded after
    PyImport_ImportModule("M")."""
    lens = [int(x) for x in re.findall(r"\{(\d+)\}", re.search(r"index\[\] = \{(.*?)\};", source).group(1))]
    lit = re.search(r'/\* compression: none \(\d+ bytes\) \*/\s*const char\* const bytes = ((?:"(?:[^"\\]|\\.)*"\s*)+);',
                    source).group(1)
    data = b"".join(_c_literal(x) for x in re.findall(r'"((?:[^"\\]|\\.)*)"', lit))
    assert sum(lens) == len(data)
    offs = [sum(lens[:k]) for k in range(len(lens) + 1)]
    tab = dict((a, int(b)) for a, b in re.findall(r"#define (__pyx_kp_b_\w+) __pyx_string_tab\[(\d+)\]", source))
    found = set()
    for m in re.finditer(r'PyImport_ImportModule\("([^"]+)"\);[^\n]*\n[^\n]*\n\s*const char \* __pyx_import_signature = '
                         r"__Pyx_PyBytes_AsString\(__pyx_mstate_global->(\w+)\);", source):
        k = tab[m.group(2)]
        pieces = data[offs[k]:offs[k + 1]].split(b"\0")
        sig = None
        for n in range(len(pieces) // 2):
            sig = pieces[n].decode() or sig
            found.add((m.group(1), pieces[len(pieces) // 2 + n].decode(), sig))
    return found


@pytest.mark.parametrize("member", ["cuda/core/experimental/%s/%s" % (cu, m) for cu in ("cu12", "cu13") for m in
                                    ("_device", "_event", "_memory", "_stream", "_utils/cuda_utils")])
def test_cuda_core_042_lists_what_it_cimports_from_cydriver(member, tmp_path):
    """cuda-core 0.4.2 (Cython 3.2.1, g++ 14) ships the C++ each module was
    generated as: every function a module cimports from cuda.bindings.cydriver
    must be reported, with its signature. None was (issue 16 case 3): its
    modules live in a package (see above); cuda_utils also has a bytes
    constant b" " right after its str ones, which the str bound took in as
    `i <= n - 1`, and besides its import-signature constant two for its own
    exports, one of which mapped onto the load after the inlined `import
    zlib` as well as the real one did onto the load after cydriver's."""
    wheel = real("cuda-core", "0.4.2")["wheel"]
    with zipfile.ZipFile(wheel) as z:
        source = z.read(member + ".cpp").decode("utf-8", "surrogateescape")
    so = extract(wheel, member + ".cpython-311-x86_64-linux-gnu.so", tmp_path)
    report = show_json(so)
    want = {f for f in cimported_functions(source) if f[0] == "cuda.bindings.cydriver"}
    got = {(r["module"], r["name"], r["signature"]) for r in report["references"]
           if r["kind"] in ("function", "variable") and r["module"] == "cuda.bindings.cydriver"}
    assert want and got == want, (sorted(want - got), sorted(got - want))


@pytest.mark.parametrize("mode", ["legacy", "fallback"])
def test_a_module_only_the_bindings_layout_has_is_refused(mode, tmp_path):
    """cuda-core 1.2.2's _resource_handles imports cuda.bindings.cynvvm and
    cynvjitlink (Python-level, for their __pyx_capi__), which the legacy
    layout never had and the rules do not map: `show` lists them as
    unmapped, and a retarget to legacy or fallback exited 0 with an output
    that cannot import under cuda-python 12.5.0. Refused, naming the module,
    nothing written."""
    so = extract(real("cuda-core", "1.2.2")["wheel"],
                 "cuda/core/_resource_handles.cpython-311-x86_64-linux-gnu.so", tmp_path)
    unmapped = {r["value"] for r in show_json(so)["references"] if r["kind"] == "unmapped"}
    assert {"cuda.bindings.cynvvm", "cuda.bindings.cynvjitlink"} <= unmapped, unmapped
    outdir = tmp_path / "out"
    outdir.mkdir()
    p = cypatch("--target-layout", mode, "-o", str(outdir / "x.so"), so)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert re.search(r"imports cuda\.bindings\.cynv\w+, which the legacy layout does not have", p.stderr), p.stderr
    assert ("fallback must serve it too" in p.stderr) == (mode == "fallback"), p.stderr
    assert os.listdir(outdir) == []


def test_a_retarget_through_the_stub_owes_nothing_to_the_other_layout(tmp_path):
    """cuda-core 0.6.0's cuda_utils imports cuda.bindings.cynvvm and, under
    `except ImportError`, `from cuda import cudart` (a leaf the bindings
    layout names `runtime`: strings cannot say it, the stub binds it at
    import). `-t bindings` refused it as fallback would ("the legacy layout
    does not have cynvvm, and --target-layout fallback must serve it too"),
    though the output owes the legacy layout nothing; it now patches it
    with the stub (and test_repair_works_or_refuses_with_nothing_written
    imports the repaired wheel under every bindings environment)."""
    so = extract(real("cuda-core", "0.6.0")["wheel"],
                 "cuda/core/cu12/_utils/cuda_utils.cpython-311-x86_64-linux-gnu.so", tmp_path)
    p = cypatch("--target-layout", "bindings", "-o", str(tmp_path / "out.so"), so)
    assert p.returncode == 0 and "the fallback stub covers it" in p.stdout, (p.returncode, p.stdout, p.stderr)
    p = cypatch("--target-layout", "legacy", "-o", str(tmp_path / "legacy.so"), so)
    assert p.returncode == 2 and "cynvvm, which the legacy layout does not have" in p.stderr, p.stderr


# -- check ------------------------------------------------------------------

def test_check_finds_the_providers_of_an_abi3_wheel():
    """Issue 17 case 2: rmm 26.08's modules are .abi3.so, and the providers
    were looked for with the consumer's own suffix (cyruntime.abi3.so):
    `check` said `cannot import name driver` under cuda-bindings 12.9.4,
    where the wheel imports. The lookup takes the interpreter's suffix."""
    p = subprocess.run([CYPATCH, "check", "--json", "--against", MANIFEST["cuda_bindings_129"]["tree"],
                        real("rmm-cu12", "26.8.0")["wheel"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["ok"], [(e["file"], e["failures"]) for e in doc["extensions"]]
    assert len(doc["extensions"]) >= 2


@pytest.mark.parametrize("name, version", [("rmm-cu12", "25.4.0"), ("rmm-cu12", "25.6.0"),
                                           ("pylibraft-cu12", "25.6.0")])
def test_check_reads_the_exports_of_a_cython_32_provider(name, version, envs):
    """Issue 17 case 1: cuda-bindings 12.9.10's cyruntime (Cython 3.2) keeps
    the names and signatures of its exports in its string blob, not at the
    calls that make the capsules: `check` said `does not export expected C
    function cudaMemcpyAsync` where the wheel imports (test_repair_works...
    imports it there)."""
    site = glob.glob(str(envs("cuda-bindings 12.9.10").path / "lib" / "python3*" / "site-packages"))[0]
    p = subprocess.run([CYPATCH, "check", "--json", "--against", site, real(name, version)["wheel"]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["ok"], [(e["file"], e["failures"]) for e in doc["extensions"]]


@pytest.mark.parametrize("env_name, tree, other", [("cuda-bindings 12.9.10", "cu12", "cu13"),
                                                    ("cuda-bindings 13.5.0", "cu13", "cu12")])
def test_verify_proves_the_tree_the_environment_selects(env_name, tree, other, envs):
    """Issue 17 case 5: cuda-core 0.4.2 ships cu12/ and cu13/ trees and its
    package imports the one for the installed cuda-bindings. verify imported
    both (one failing) and proved nothing; it now proves the selected tree's
    bindings and says which tree it skipped and why."""
    env = envs(env_name)
    p = subprocess.run([CYPATCH, "verify", "--python", env.py, real("cuda-core", "0.4.2")["wheel"]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600,
                       env=dict(os.environ, PYTHONNOUSERSITE="1"))
    assert p.returncode == 0 and p.stdout.rstrip().endswith("verified"), (p.returncode, p.stdout, p.stderr)
    proven = [l for l in p.stdout.splitlines() if ".%s." % tree in l and "bindings proven" in l]
    assert len(proven) == 5 and not any(" 0 of " in l for l in proven), p.stdout
    skipped = [l for l in p.stdout.splitlines() if ".%s." % other in l]
    assert len(skipped) == 5 and all("skipped: cuda.core.experimental imported" in l for l in skipped), p.stdout


@pytest.mark.parametrize("env_name, tree", [("cuda-bindings 12.9.10", "cu12"), ("cuda-bindings 13.5.0", "cu13")])
def test_verify_proves_cuda_core_122(env_name, tree, envs):
    """cuda-core 1.2.2 (Cython 3.2.9, g++) as shipped: verify said "imports
    cuda.bindings.driver, but no binding of it can be proven" (a type-only
    cimport) and proved 0 of 0 bindings in most modules (g++ builds the
    import-pointer array from .data.rel.ro with movq xmm, [rip + X]). Every
    module of the selected tree now imports with every binding proven; the
    one failure is _tensor_bridge's, which CPython's import has too: it
    needs libtorch's symbols loaded first."""
    env = envs(env_name)
    p = subprocess.run([CYPATCH, "verify", "--python", env.py, real("cuda-core", "1.2.2")["wheel"]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600,
                       env=dict(os.environ, PYTHONNOUSERSITE="1"))
    lines = p.stdout.splitlines()
    assert p.returncode == 1 and "can be proven" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert p.stdout.rstrip().endswith("undefined symbol: aoti_torch_dtype_float32"), p.stdout
    failed = [l for l in lines if "import failed" in l]
    assert len(failed) == 1 and "cuda.core.%s._tensor_bridge" % tree in failed[0], p.stdout
    proven = [re.search(r"(\d+) of (\d+) bindings proven", l) for l in lines if ".%s." % tree in l]
    proven = [m for m in proven if m]
    assert len(proven) >= 30 and all(m.group(1) == m.group(2) for m in proven), p.stdout
    assert sum(int(m.group(1)) > 0 for m in proven) >= 25, p.stdout


def test_verify_imports_the_wheel_not_the_installed_copy(envs):
    """cuda-python 12.6.2.post1's `cuda` is a regular package (it has an
    __init__.py), which hid the unpacked wheel's `cuda` directory: verify of
    cuda-core 0.3.2 imported the cuda-core 1.2.2 installed there and failed
    with its `No module named 'cuda.bindings.cynvvm'` (a fresh clone's run
    of the verify table). The wheel's directory now comes first in the
    package's __path__, where installing it would put its files."""
    env = envs("cuda-python 12.6.2.post1")
    env.install(real("cuda-core", "1.2.2"), real("cuda-core", "1.2.2")["wheel"], None)
    p = subprocess.run([CYPATCH, "verify", "--python", env.py, real("cuda-core", "0.3.2")["wheel"]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600,
                       env=dict(os.environ, PYTHONNOUSERSITE="1"))
    assert p.returncode == 0 and p.stdout.rstrip().endswith("verified"), (p.returncode, p.stdout, p.stderr)
    assert "cuda.core.experimental._event: imported" in p.stdout, p.stdout


# -- repair: exit 0 and working, or exit 2 and nothing written ---------------

class Repair:
    """`cypatch repair -t mode` of a wheel into a folder of its own, and
    its dependencies repaired alike (see repaired_deps)."""

    def __init__(self, w, mode, tmp_path):
        self.out = tmp_path / "out"
        self.out.mkdir()
        self.proc = cypatch("repair", "-w", str(self.out), "-t", mode, w["wheel"])
        self.written = os.listdir(str(self.out))
        self.wheel = str(self.out / self.written[0]) if self.proc.returncode == 0 and self.written else None
        self.deps, self.kept = repaired_deps(w, mode, tmp_path) if self.wheel else (None, None)


@pytest.fixture(scope="module")
def repairs(tmp_path_factory):
    """Each wheel is repaired once in each mode for every test here."""
    made = {}

    def get(w, mode):
        key = (wheel_id(w), mode)
        if key not in made:
            made[key] = Repair(w, mode, tmp_path_factory.mktemp("%s-%s" % key))
        return made[key]
    return get


@pytest.mark.parametrize("mode", ["legacy", "bindings", "fallback"])
@pytest.mark.parametrize("w", REAL, ids=[wheel_id(w) for w in REAL])
def test_repair_works_or_refuses_with_nothing_written(w, mode, envs, repairs, tmp_path):
    r = repairs(w, mode)
    if r.proc.returncode != 0:
        assert r.proc.returncode == 2, (r.proc.returncode, r.proc.stderr)
        assert r.written == [], r.written
        assert len(r.proc.stderr.strip().splitlines()) == 1, r.proc.stderr
        REAL_TABLE.append((wheel_id(w), mode, "refused: " + r.proc.stderr.strip().split(": ", 1)[-1]))
        return
    assert r.written == [os.path.basename(w["wheel"])], r.written
    for env_name in TARGET_ENVS[mode]:
        home = oracle_env(w, env_name)
        want = envs(home).outcomes(w, w["wheel"], tmp_path)
        got = envs(env_name).outcomes(w, r.wheel, tmp_path, r.deps)
        diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
        assert not diff, "%s repaired -t %s, under %s, against the original under %s: %s" % (
            wheel_id(w), mode, env_name, home, diff)
    REAL_TABLE.append((wheel_id(w), mode, "repaired; behaves as built under %s%s" % (
        ", ".join(TARGET_ENVS[mode]), "".join("; %s kept as is (refused)" % k for k in r.kept))))


# Where check's verdict and the import's differ, by cause, while it is
# open: the test fails on any other disagreement, and on any listed here
# that no longer happens. (wheel, form, env): (cause, modules)
_TORCH = ("_tensor_bridge needs libtorch's symbols (aoti_torch_*) loaded before it, which check does not judge")
_NVML = ("`from cuda.bindings import nvml`: a from-import of a module the rules do not map is not read, so a "
         "release without cuda.bindings.nvml is not caught")


def _cuda_core_known():
    """cuda-core 0.6.0, 1.0.0 and 1.2.2, as shipped and repaired for bindings
    (the stub's output, which behaves as the original): their `system`
    modules under the releases without cuda.bindings.nvml, and 1.0.0's and
    1.2.2's _tensor_bridge everywhere; but 1.0.0 under 13.0.3, where its
    whole cu13 tree fails as check says (cuDevSmResourceSplit)."""
    out = {}
    for version, torch in (("0.6.0", False), ("1.0.0", True), ("1.2.2", True)):
        for env, tree, nvml in (("cuda-bindings 12.9.4", "cu12", True), ("cuda-bindings 12.9.10", "cu12", False),
                                ("cuda-bindings 13.0.3", "cu13", True), ("cuda-bindings 13.5.0", "cu13", False)):
            if (version, env) == ("1.0.0", "cuda-bindings 13.0.3"):
                continue
            mods = ["cuda.core.%s._tensor_bridge" % tree] if torch else []
            if nvml:
                mods += ["cuda.core.%s.system.%s" % (tree, m) for m in ("_device", "_nvml_context", "_system_events")]
            causes = ([_TORCH] if torch else []) + ([_NVML] if nvml else [])
            for form in ("as shipped", "-t bindings"):
                if mods:
                    out[("cuda-core-" + version, form, env)] = ("; ".join(causes), tuple(mods))
    return out


CHECK_KNOWN = _cuda_core_known()


# every environment check is judged in (issue 17's acceptance)
CHECK_ENVS = ["cuda-python 12.5.0", "cuda-python 12.6.2.post1", "cuda-bindings 12.9.4", "cuda-bindings 12.9.10",
              "cuda-bindings 13.0.3", "cuda-bindings 13.5.0"]


def verdicts(extensions):
    """check's verdict on each extension module it reports about:
    "imported", the first failure it predicts, or why it skips the module
    (a per-CUDA-major tree the package does not import there)."""
    out = {}
    for e in extensions:
        name = e["file"][:-3].split(".")[0].replace("/", ".")
        out[name] = ("skipped: " + e["skipped"] if "skipped" in e else
                     e["failures"][0] if e["failures"] else "imported")
    return out


def predicted(wheel, site):
    """`check --against site`'s verdicts (verdicts())."""
    p = subprocess.run([CYPATCH, "check", "--json", "--against", site, wheel], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode in (0, 1), (wheel, site, p.returncode, p.stderr)
    return verdicts(json.loads(p.stdout)["extensions"])


def predicted_per_release(wheel):
    """`check --release all`'s verdicts, by release ("cuda-bindings 12.9.4"),
    and the releases, (distribution, version), under which it binds."""
    p = subprocess.run([CYPATCH, "check", "--json", "--release", "all", wheel], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode in (0, 1), (wheel, p.returncode, p.stderr)
    cells = json.loads(p.stdout)["releases"]
    return ({"%s %s" % (c["distribution"], c["version"]): verdicts(c["extensions"]) for c in cells},
            {(c["distribution"], c["version"]): c["ok"] for c in cells})


def our_requirements(lines):
    """The Requires-Dist lines naming cuda-python or cuda-bindings, parsed."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    reqs = [Requirement(l) for l in lines]
    return [r for r in reqs if canonicalize_name(r.name) in ("cuda-python", "cuda-bindings")]


def metadata_requires(wheel):
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        head = z.read(meta).decode().split("\n\n", 1)[0]
    return re.findall(r"^Requires-Dist: (.*?)\r?$", head, re.M)


def line_admits(r, dist, version):
    """pip's view, as docs/repair.md states it: a cuda-python line admits
    the cuda-python release of a version and the cuda-bindings release of
    it (cuda-python from 11.8.6 and 12.8.0 on installs it); a cuda-bindings
    line admits no cuda-python release."""
    from packaging.utils import canonicalize_name
    python = canonicalize_name(r.name) == "cuda-python"
    return (python or dist == "cuda-bindings") and r.specifier.contains(version, prereleases=True)


def extras_of(reqs):
    """The ways to install: no extra (where a line needs none, or none has
    a marker naming one), and each extra a marker names."""
    named = sorted({m for r in reqs if r.marker for m in re.findall(r"extra == ['\"]([^'\"]+)", str(r.marker))})
    plain = not reqs or any(not r.marker or "extra" not in str(r.marker) for r in reqs)
    return ([""] if plain or not named else []) + named


def applies(r, extra):
    return not r.marker or r.marker.evaluate({"extra": extra})


def requires_are_exact(before, after, binds):
    """The lines `after` admit, for each way to install, exactly the
    releases that bind (binds: {(dist, version): ok}) of the CUDA majors
    the lines `before` admitted; [] when so, else what differs."""
    old, new, wrong = our_requirements(before), our_requirements(after), []
    for extra in extras_of(old):
        majors = None
        for r in (r for r in old if applies(r, extra)):
            m = {int(v.split(".")[0]) for (d, v) in binds if line_admits(r, d, v)}
            majors = m if majors is None else majors & m
        want = {k for k, ok in binds.items() if ok and (majors is None or int(k[1].split(".")[0]) in majors)}
        got = {k for k in binds if all(line_admits(r, *k) for r in new if applies(r, extra))}
        if got != want:
            wrong.append("[%s] %s: admits %s where it fails, forbids %s where it binds" % (
                extra, after, sorted(got - want), sorted(want - got)))
    return wrong


@pytest.mark.parametrize("w", REAL, ids=[wheel_id(w) for w in REAL])
def test_check_predicts_what_the_import_does(w, envs, repairs, tmp_path):
    """Issue 17: for the wheel as shipped and as repaired in every mode,
    under every cuda-python environment, `check`'s verdict on each module
    (binds, or would fail) equals what importing it does (imports, or
    raises), except the disagreements CHECK_KNOWN lists with their cause;
    `check --release` says for that release what `check --against` says.
    Every module is first imported in one process (Env.outcomes); where
    that disagrees, the module alone in a fresh interpreter is the judge.
    Messages that differ where both fail are printed, not asserted: the
    import reports the first failure in its own order."""
    forms = [("as shipped", w["wheel"], None)]
    for mode in ("legacy", "bindings", "fallback"):
        r = repairs(w, mode)
        if r.wheel:
            forms.append(("-t " + mode, r.wheel, r.deps))
    wrong, stale = [], []
    shipped = metadata_requires(w["wheel"])
    for form, wheel, deps in forms:
        per_release, binds = predicted_per_release(wheel)
        # the requirement repair wrote (and, as shipped, the one `cypatch
        # requires` would write) admits exactly the releases that bind
        if form == "as shipped":
            p = cypatch("requires", "--json", wheel)
            written = [l["after"] for l in json.loads(p.stdout)["lines"]]
            written += [l for l in shipped if not our_requirements([l])]
        else:
            written = metadata_requires(wheel)
        wrong += ["%s %s: Requires-Dist %s" % (wheel_id(w), form, x)
                  for x in requires_are_exact(shipped, written, binds)]
        for env_name in CHECK_ENVS:
            env = envs(env_name)
            did = env.outcomes(w, wheel, tmp_path, deps)
            cause, known = CHECK_KNOWN.get((wheel_id(w), form, env_name), ("", ()))
            said_here = predicted(wheel, env.site)
            # check --release, from what cypatch knows of the release, says
            # what check --against says from its files
            if per_release[env_name] != said_here:
                wrong.append("%s %s: check --release said %s under %s, check --against %s" % (
                    wheel_id(w), form, per_release[env_name], env_name, said_here))
            for module, said in sorted(said_here.items()):
                # (a skipped module is one the import cannot find)
                agree = (said == "imported") == (did[module] == "imported")
                note = "" if said == did[module] else did[module]
                if not agree:
                    alone = env.alone(w, wheel, tmp_path, deps, module)
                    agree = (said == "imported") == (alone == "imported")
                    note = "alone: %s (with the others: %s)" % (alone, did[module])
                if not agree and module in known:
                    note = "KNOWN (%s): %s" % (cause, note)
                CHECK_REAL_TABLE.append((wheel_id(w), form, env_name, module, said, note))
                if agree and module in known:
                    stale.append("%s %s under %s: %s: now agrees; strike it from CHECK_KNOWN" % (
                        wheel_id(w), form, env_name, module))
                elif not agree and module not in known:
                    wrong.append("%s %s under %s: %s: check said %r, the import %s" % (
                        wheel_id(w), form, env_name, module, said, note))
    assert not wrong and not stale, "\n".join(wrong + stale)


# -- verify: its verdict is what the import does -----------------------------
# (beside the check table: the same environments, repairs and import runs)

def verified(env, wheel):
    """verify's verdict on each module it imports: "imported" when the
    import went through and every binding was proven, else why not; and
    its exit status and the module it blames for a failure ("" when it
    names none). The wheel's dependencies must be installed."""
    p = subprocess.run([CYPATCH, "verify", "--json", "--python", env.py, wheel], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600, env=dict(os.environ, PYTHONNOUSERSITE="1"))
    assert p.returncode in (0, 1, 2) and p.stdout, (wheel, env.py, p.returncode, p.stderr)
    doc, out = json.loads(p.stdout), {}
    blamed = doc.get("why", "").split(":")[0] if p.returncode else ""
    for e in doc.get("extensions", []):
        if "skipped" in e:
            continue
        imp = e.get("import", {})
        unbound = [b["name"] for b in e.get("bindings", []) if not b.get("bound")]
        if "ok" not in imp:
            out[e["module"]] = "import failed: %s" % imp
        elif unbound:
            out[e["module"]] = "not proven: " + ", ".join(unbound)
        else:
            out[e["module"]] = "imported"
    return out, p.returncode, blamed


@pytest.mark.parametrize("w", REAL, ids=[wheel_id(w) for w in REAL])
def test_verify_says_what_the_import_does(w, envs, repairs, tmp_path):
    """For the wheel as shipped and as repaired in every mode, under every
    environment of the check table: verify's verdict on each module it
    imports (imported with every binding proven, or not) equals what
    importing the module does, judged alone in a fresh interpreter where
    the one-process run disagrees; its exit status is 0 exactly when every
    module it imports does, and a failure it reports names a module whose
    import fails. A module verify skips (the other CUDA tree) is not
    counted. verify runs no prelude: pylibraft's modules need librmm.so,
    which `import rmm` loads in the import runs (libraft, through which
    pylibraft's own __init__ would load it, is left out), so there the
    import alone without the prelude is the judge."""
    forms = [("as shipped", w["wheel"], None)]
    for mode in ("legacy", "bindings", "fallback"):
        r = repairs(w, mode)
        if r.wheel:
            forms.append(("-t " + mode, r.wheel, r.deps))
    wrong, prelude = [], w["name"] not in PRELUDES
    for form, wheel, deps in forms:
        for env_name in CHECK_ENVS:
            env = envs(env_name)
            did = env.outcomes(w, wheel, tmp_path, deps)
            env.install_deps(w, deps)
            said, rc, blamed = verified(env, wheel)
            for module, v in sorted(said.items()):
                if prelude and (v == "imported") == (did[module] == "imported"):
                    continue
                alone = env.alone(w, wheel, tmp_path, deps, module, prelude)
                if (v == "imported") != (alone == "imported"):
                    wrong.append("%s %s under %s: %s: verify said %r, the import %s" % (
                        wheel_id(w), form, env_name, module, v, alone))
            if said and (rc == 0) != all(v == "imported" for v in said.values()):
                wrong.append("%s %s under %s: verify exited %d for %s" % (wheel_id(w), form, env_name, rc, said))
            elif blamed in said and (did[blamed] == "imported" or not prelude) and \
                    env.alone(w, wheel, tmp_path, deps, blamed, prelude) == "imported":
                wrong.append("%s %s under %s: verify blamed %s, which imports: %s" % (
                    wheel_id(w), form, env_name, blamed, said[blamed]))
    assert not wrong, "\n".join(wrong)


def repaired_deps(w, mode, tmp_path):
    """The wheel's dependencies repaired in the same mode, as one would
    install a retargeted stack (pylibraft's rmm must be retargeted too);
    one whose repair is refused is installed as it is, and named."""
    out = tmp_path / "deps"
    out.mkdir()
    deps, kept = [], []
    for dep in w["deps"]:
        proc = cypatch("repair", "-w", str(out), "-t", mode, dep)
        if proc.returncode == 0:
            deps.append(str(out / os.path.basename(dep)))
        else:
            assert proc.returncode == 2, (dep, proc.returncode, proc.stderr)
            deps.append(dep)
            kept.append("-".join(os.path.basename(dep).split("-")[:2]))
    return deps, kept
