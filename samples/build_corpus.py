#!/usr/bin/env python3
"""Builds cypatch's sample corpus from real parts.

Every extension here is produced by real Cython from PyPI and compiled the
way setuptools compiles extensions (the interpreter's own CC, CFLAGS and
LDSHARED):

* providers of our own (samples/providers) in both cuda-python layouts under
  the real module names, built into site/<layout>/;
* consumers (samples/consumers/*.pyx.in) built against each layout with every
  Cython version in CYTHONS;
* consumers of real cuda-python (samples/realcuda) built against the wheels
  of cuda-python 12.5.0 (legacy) and 12.6.2.post1 (bindings), with the CUDA
  headers under /usr/local/cuda;
* foreign binaries for the bad-input tests: MarkupSafe's C extension (not
  Cython) for x86-64, aarch64 and i686, from its PyPI wheels.

The result is a cache under the build tree with manifest.json describing every
artifact; a second run rebuilds only what changed. Nothing outside the given
directory is written.

With --small, under any CPython: only our providers and the four corpus
consumers (Cython 0.29.37 and 3.3.1), for checking the fallback stub under
other interpreters (samples/build_pythons.py).

With --gpu: the rmm-like consumers against cuda-python 12.5.0 and
12.6.2.post1 for this interpreter (samples/gpu-proof).

With --provider-releases: only the provider-releases/ step (part of every
full run): every release of cuda-python and cuda-bindings in
PROVIDER_RELEASES, as cp311 manylinux x86_64 wheels, each unpacked
(tests/python/test_provider_exports.py).

usage: build_corpus.py [--small | --gpu | --provider-releases] OUTDIR
"""

import concurrent.futures
import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
CYTHONS = ["0.29.37", "3.0.12", "3.1.8", "3.2.9", "3.3.1"]
PROVIDER_CYTHON = "3.1.8"
CUDA_PYTHON = {"legacy": ("cuda-python", "12.5.0"), "bindings": ("cuda-python", "12.6.2.post1")}
# The runtime-only environment of cuda-python 13 (no legacy modules at all).
CUDA_BINDINGS_13 = [("cuda-bindings", "13.0.3"), ("cuda-pathfinder", "1.3.3")]
# A real wheel from PyPI built against the bindings layout (rmm 25.02 cimports
# cuda.bindings.cyruntime, imports cuda.bindings at Python level), and what
# installing it next to cuda-python 12.5.0 needs besides.
REAL_WHEELS = [("rmm-cu12", "25.2.0"), ("numpy", "2.1.3")]
# The real-wheel corpus (tests/python/test_real_wheels.py, docs/real-wheels.md):
# releases of RAPIDS and NVIDIA packages that cimport cuda-python, as PyPI
# ships them for this interpreter, each with what importing it needs besides
# cuda-python (installed with pip --no-deps next to each cuda-python), and the
# layout its sources import (from the project's own sources at that tag:
# "either" tries the bindings layout and falls back to the legacy one).
REAL_CORPUS = [
    # Cython 3.0.11, built against the legacy layout
    (("rmm-cu12", "24.12.1"), "legacy", []),
    # Cython 3.0.12, bindings: `from cuda.bindings import driver, runtime`
    (("rmm-cu12", "25.4.0"), "bindings", [("librmm-cu12", "25.4.0"), ("rapids-logger", "0.1.19")]),
    # Cython 3.1.1, C++ with thread_local (.tbss over .data.rel.ro)
    (("rmm-cu12", "25.6.0"), "bindings", [("librmm-cu12", "25.6.0"), ("rapids-logger", "0.1.19")]),
    # Cython 3.2.9, abi3, string blobs
    (("rmm-cu12", "26.8.0"), "bindings", [("librmm-cu12", "26.8.0"), ("rapids-logger", "0.2.3")]),
    # Cython 3.3.0, abi3, LZSS blobs (RAPIDS 26.04 on)
    (("rmm-cu12", "26.10.0"), "bindings", [("librmm-cu12", "26.10.0"), ("rapids-logger", "0.3.0")]),
    # Cython 3.1.2: imports under try/except ImportError
    (("cuda-core", "0.3.2"), "either", []),
    # Cython 3.2.1 blobs, per-CUDA-major trees cu12/ and cu13/
    (("cuda-core", "0.4.2"), "bindings", []),
    # Cython 3.2.4: `from cuda import cudart` under except ImportError
    # beside `from cuda.bindings import runtime`, cuda.bindings.cynvvm
    (("cuda-core", "0.6.0"), "bindings", []),
    # Cython 3.2.9: type-only `cimport cuda.bindings.driver` beside the
    # cydriver functions, its own C exports, imports of modules only the
    # bindings layout has (cuda.bindings.cynvvm); cuda.core without
    # experimental; it needs cuda-pathfinder 1.4.2 or later
    (("cuda-core", "1.2.2"), "bindings", [("cuda-pathfinder", "1.9.1")]),
    # Cython 3.2.4: its cu13 tree cimports cuDevSmResourceSplit (13.1.1
    # on), `from cuda import cudart` under except ImportError beside the
    # bindings imports (docs/tolerate.md)
    (("cuda-core", "1.0.0"), "bindings", [("cuda-pathfinder", "1.9.1")]),
    # Cython 3.0.12, 6 cyruntime functions in pylibraft/common/cuda; rmm's
    # librmm.so is loaded by `import rmm`, libraft is left out (its
    # __init__ skips it when missing)
    (("pylibraft-cu12", "25.6.0"), "bindings",
     [("rmm-cu12", "25.6.0"), ("librmm-cu12", "25.6.0"), ("rapids-logger", "0.1.19")]),
    # Cython 3.3.0, abi3 (the same, RAPIDS 26.10)
    (("pylibraft-cu12", "26.10.0"), "bindings",
     [("rmm-cu12", "26.10.0"), ("librmm-cu12", "26.10.0"), ("rapids-logger", "0.3.0")]),
    # Cython 3.1.3, 11 cydriver functions and cuda.bindings.driver in
    # nvmath/internal/bindings (cuda-pathfinder 1.9.1 satisfies every
    # cuda-bindings of the matrix, so it can replace theirs)
    (("nvmath-python", "0.6.0"), "bindings", [("cuda-core", "0.3.2"), ("cuda-pathfinder", "1.9.1")]),
]
# The newest field wheels that are read and repaired but not imported
# (importing them needs their C++ libraries, libcuvs-cu12 and libcudf-cu12
# hundreds of MB each): cuvs and pylibcudf 26.10 (Cython 3.3.0, limited API,
# LZSS blobs), cudf 25.6.0 (a parenthesised `from cuda.bindings.runtime
# import (`); tests/python/test_real_wheels.py.
READ_ONLY_WHEELS = [("cuvs-cu12", "26.10.0"), ("pylibcudf-cu12", "26.10.2"), ("cudf-cu12", "25.6.0")]
# The newest releases of each line, for the real-wheel corpus's matrix.
NEWEST_BINDINGS = {"12.9": [("cuda-bindings", "12.9.10"), ("cuda-pathfinder", "1.9.1")],
                   "13": [("cuda-bindings", "13.5.0"), ("cuda-pathfinder", "1.9.1")]}
# The last 12.x line: the cuda-bindings wheel, `cuda` a namespace package.
CUDA_BINDINGS_129 = [("cuda-bindings", "12.9.4"), ("cuda-pathfinder", "1.3.3")]
CUDA_INCLUDE = os.environ.get("CUDA_INCLUDE", "/usr/local/cuda/include")
# Every release of cuda-python and cuda-bindings that PyPI has as a cp311
# manylinux x86_64 wheel, as listed by PyPI's JSON API on 2026-12-04, for
# tests/python/test_provider_exports.py (the exports cypatch reads from each
# provider module against the __pyx_capi__ CPython sees). A fixed list, so a
# run is reproducible; a new release is added here by hand.
PROVIDER_RELEASES_LISTED = "2026-12-04"  # the day of that listing (rules/releases.txt's date)
PROVIDER_RELEASES = [
    ("cuda-python", v) for v in (
        "11.8.3", "11.8.5.post1", "12.1.0", "12.2.0", "12.2.1", "12.3.0", "12.4.0", "12.5.0",
        "12.6.0", "12.6.2.post1")
] + [
    ("cuda-bindings", v) for v in (
        "11.8.6", "11.8.7", "12.8.0", "12.9.0", "12.9.1", "12.9.2", "12.9.3", "12.9.4", "12.9.5",
        "12.9.6", "12.9.7", "12.9.8", "12.9.9", "12.9.10", "13.0.0", "13.0.1", "13.0.2", "13.0.3",
        "13.1.0", "13.1.1", "13.2.0", "13.3.0", "13.3.1", "13.4.1", "13.4.2", "13.4.3", "13.4.4",
        "13.5.0")
]
# The releases left out, and why (the same listing).
PROVIDER_RELEASES_SKIPPED = {
    "cuda-python 11.8.4": "yanked (https://github.com/NVIDIA/cuda-python/issues/215)",
    "cuda-python 11.8.5": "yanked (https://github.com/NVIDIA/cuda-python/issues/226)",
    "cuda-python 12.6.1": "yanked (https://github.com/NVIDIA/cuda-python/issues/215)",
    "cuda-python 12.6.2": "yanked (https://github.com/NVIDIA/cuda-python/issues/226)",
    "cuda-python 11.5.0 to 11.8.2, 12.0.0": "no cp311 wheel",
    "cuda-python 11.8.6, 11.8.7, 12.8.0 to 12.9.10, 13.0.0 to 13.4.4":
        "a metapackage (one py3-none-any wheel, no extension) that depends on cuda-bindings",
    "cuda-bindings 13.4.0b1, 13.4.1a0": "pre-releases",
}
PROVIDER_PYTHON = "3.11"
PROVIDER_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
# what importing the releases' modules needs besides: cuda-bindings 12.9+
# and 13 import cuda-pathfinder (1.9.1 satisfies all of them), some of
# 13.x's modules numpy
PROVIDER_DEPS = [("cuda-pathfinder", "1.9.1"), ("numpy", "2.1.3")]

NAMES = {
    "bindings": {
        "CYDRIVER": "cuda.bindings.cydriver", "CYRUNTIME": "cuda.bindings.cyruntime",
        "CYNVRTC": "cuda.bindings.cynvrtc", "DRIVER": "cuda.bindings.driver", "DRIVER_PARENT": "cuda.bindings",
        "DRIVER_LEAF": "driver", "PYPARENT": "cuda.bindings", "PYRUNTIME": "runtime",
    },
    "legacy": {
        "CYDRIVER": "cuda.ccuda", "CYRUNTIME": "cuda.ccudart", "CYNVRTC": "cuda.cnvrtc",
        "DRIVER": "cuda.cuda", "DRIVER_PARENT": "cuda",
        "DRIVER_LEAF": "cuda", "PYPARENT": "cuda", "PYRUNTIME": "cudart",
    },
}
PROVIDER_FILES = {  # provider source -> module path per layout
    # cynvrtc before cyruntime, whose .pxd cimports it
    "bindings": {"cydriver": "cuda/bindings/cydriver", "cynvrtc": "cuda/bindings/cynvrtc",
                 "cyruntime": "cuda/bindings/cyruntime", "driver": "cuda/bindings/driver"},
    "legacy": {"cydriver": "cuda/ccuda", "cynvrtc": "cuda/cnvrtc", "cyruntime": "cuda/ccudart",
               "driver": "cuda/cuda"},
}
EXT = sysconfig.get_config_var("EXT_SUFFIX")


class Target:
    """What extensions are compiled for: the configuration variables of a
    CPython (CC, CXX, CFLAGS, CCSHARED, LDSHARED, EXT_SUFFIX), the flags that
    find its headers, link flags added to every link, and what else goes
    into a module's cache key (nothing for this interpreter, so its keys
    stay what they were)."""

    def __init__(self, config_vars, include_flags, link_flags=(), key=()):
        self.vars = config_vars
        self.ext = config_vars["EXT_SUFFIX"]
        self.include_flags = list(include_flags)
        self.link_flags = list(link_flags)
        self.key = tuple(key)

    def var(self, name):
        return self.vars.get(name) or ""


HOST = Target(sysconfig.get_config_vars(), ["-I" + sysconfig.get_paths()["include"]])


def target_of(python):
    """The Target of another CPython of this machine (its executable)."""
    code = "import json, sysconfig; print(json.dumps([sysconfig.get_config_vars(), sysconfig.get_paths()['include']]))"
    proc = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, text=True, check=True)
    config, include = json.loads(proc.stdout)
    return Target(config, ["-I" + include], key=("python", config["EXT_SUFFIX"], include))


def log(msg):
    print("corpus: " + msg, flush=True)


def run(cmd, cwd=None, env=None):
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()


def pip(*args):
    rc, out = run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"] + list(args))
    if rc:
        raise SystemExit("corpus: pip %s failed:\n%s" % (" ".join(args), out))


def ensure_cython(cache, version):
    target = os.path.join(cache, "cython", version)
    if not os.path.exists(os.path.join(target, ".done")):
        log("installing Cython %s from PyPI" % version)
        shutil.rmtree(target, ignore_errors=True)
        pip("install", "--no-deps", "--only-binary=:all:", "--target", target, "cython==" + version)
        open(os.path.join(target, ".done"), "w").close()
    return target


def download_wheel(cache, name, version):
    """A wheel for this interpreter in cache/wheels, downloaded once."""
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    norm = name.replace("-", "_")
    found = [w for w in os.listdir(wheels) if w.startswith("%s-%s-" % (norm, version))]
    if not found:
        log("downloading %s %s from PyPI" % (name, version))
        pip("download", "--no-deps", "--only-binary=:all:", "-d", wheels, "%s==%s" % (name, version))
        found = [w for w in os.listdir(wheels) if w.startswith("%s-%s-" % (norm, version))]
    return os.path.join(wheels, sorted(found)[0])


def ensure_wheel(cache, name, version, tree=None, wheel=None):
    """Downloads a wheel for this interpreter (unless given one) and unpacks
    it (into tree, or a directory of its own); returns both."""
    wheel = wheel or download_wheel(cache, name, version)
    norm = name.replace("-", "_")
    tree = tree or os.path.join(cache, "site", "%s-%s" % (norm, version))
    done = os.path.join(tree, ".done-" + norm)
    if not os.path.exists(done):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tree)
        for root, _, files in os.walk(tree):  # zipfile drops the mode bits
            for f in files:
                if f.endswith(".so") or ".so." in f:
                    os.chmod(os.path.join(root, f), 0o755)
        open(done, "w").close()
    return wheel, tree


def ensure_provider_releases(cache):
    """PROVIDER_RELEASES: each wheel downloaded once into
    provider-releases/wheels and unpacked into a tree of its own; writes
    provider-releases/manifest.json and returns its path."""
    top = os.path.join(cache, "provider-releases")
    wheels = os.path.join(top, "wheels")
    os.makedirs(wheels, exist_ok=True)
    platforms = [a for p in PROVIDER_PLATFORMS for a in ("--platform", p)]
    releases = []
    for name, version in PROVIDER_RELEASES:
        norm = name.replace("-", "_")
        prefix = "%s-%s-cp311-" % (norm, version)
        found = [w for w in os.listdir(wheels) if w.startswith(prefix) and w.endswith(".whl")]
        if not found:
            log("downloading %s %s (cp311 manylinux x86_64) from PyPI" % (name, version))
            pip("download", "--no-deps", "--only-binary=:all:", "--python-version", PROVIDER_PYTHON,
                *platforms, "-d", wheels, "%s==%s" % (name, version))
            found = [w for w in os.listdir(wheels) if w.startswith(prefix) and w.endswith(".whl")]
        if len(found) != 1:
            raise SystemExit("corpus: expected one cp311 wheel of %s %s, found %r" % (name, version, found))
        wheel = os.path.join(wheels, found[0])
        tree = os.path.join(top, "site", "%s-%s" % (norm, version))
        ensure_wheel(cache, name, version, tree=tree, wheel=wheel)
        with zipfile.ZipFile(wheel) as z:
            meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
            requires = [l.split(":", 1)[1].strip() for l in z.read(meta[0]).decode().splitlines()
                        if l.startswith("Requires-Dist:")]
        releases.append({"name": name, "version": version, "wheel": wheel, "tree": tree,
                         "size": os.path.getsize(wheel), "requires": requires})
    deps = os.path.join(top, "site", "deps")
    for name, version in PROVIDER_DEPS:
        ensure_wheel(cache, name, version, tree=deps)
    manifest = {"python": PROVIDER_PYTHON, "listed": PROVIDER_RELEASES_LISTED, "releases": releases,
                "skipped": PROVIDER_RELEASES_SKIPPED,
                "deps": {"requirements": ["%s==%s" % d for d in PROVIDER_DEPS], "tree": deps}}
    path = os.path.join(top, "manifest.json")
    with open(path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(path + ".tmp", path)
    write_lines(os.path.join(top, "reference-inputs.txt"), [r["tree"] for r in reference_releases(releases)] + [deps])
    log("%d provider releases (%d MB of wheels) in %s" % (len(releases), sum(r["size"] for r in releases) >> 20, top))
    return path


def compilers(tree):
    """The compilers named in the .comment sections of a tree's modules."""
    out = set()
    for d, _, files in os.walk(tree):
        for f in files:
            if f.endswith(".so"):
                r = subprocess.run(["readelf", "-p", ".comment", os.path.join(d, f)], capture_output=True, text=True)
                out.update(l.split("]", 1)[1].strip() for l in r.stdout.splitlines() if "]" in l)
    return tuple(sorted(out))


def reference_releases(releases):
    """What the x86-64 reference tests read of the provider releases (the
    decoders and evaluators compared instruction by instruction, over 1.3 GB
    in all): the newest release of each run of consecutive releases of one
    distribution and major version built by the same compilers. Its
    neighbours in the run come from the same generator and compiler, so
    they hold the same kinds of instruction and code; each change of either
    stays in."""
    keys = [(r["name"], r["version"].split(".")[0], compilers(r["tree"])) for r in releases]
    return [r for i, r in enumerate(releases) if i + 1 == len(releases) or keys[i + 1] != keys[i]]


def write_lines(path, lines):
    with open(path + ".tmp", "w") as f:
        f.write("".join(l + "\n" for l in lines))
    os.replace(path + ".tmp", path)


# CPython 3.14: the cp314 and free-threaded cp314t wheels of cuda-bindings
# 13.x and cuda-core (read by show and check in both builds; imported under
# scripts/cpython314's 3.14, for Debian has no 3.14t), and a 3.14 site of
# cuda-bindings with what cuda.core imports (tests/python/test_cpython314.py)
CP314_WHEELS = [("cuda-bindings", "13.0.3"), ("cuda-core", "1.2.2")]
CP314_ABIS = ("cp314", "cp314t")
CP314_SITE = [("cuda-bindings", "13.0.3"), ("numpy", "2.3.5")]


def download_for(wheels_dir, name, version, python, abi):
    """The manylinux x86-64 wheel of name==version for CPython `python`
    ("3.14") and abi ("cp314t"), downloaded into wheels_dir once."""
    os.makedirs(wheels_dir, exist_ok=True)
    platforms = [a for p in PROVIDER_PLATFORMS + ("manylinux_2_27_x86_64",) for a in ("--platform", p)]
    tag = "%s-%s-cp%s-%s-" % (name.replace("-", "_"), version, python.replace(".", ""), abi)
    found = [w for w in os.listdir(wheels_dir) if w.startswith(tag) and w.endswith(".whl")]
    if not found:
        log("downloading %s %s (%s manylinux x86_64) from PyPI" % (name, version, abi))
        pip("download", "--no-deps", "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
            "--abi", abi, *platforms, "-d", wheels_dir, "%s==%s" % (name, version))
        found = [w for w in os.listdir(wheels_dir) if w.startswith(tag) and w.endswith(".whl")]
    if len(found) != 1:
        raise SystemExit("corpus: expected one %s wheel of %s %s, found %r" % (abi, name, version, found))
    return os.path.join(wheels_dir, found[0])


# cuda-bindings releases for CPython 3.13 (tests/python/test_tolerate.py:
# Cython 3.1+ builds for 3.13 look capsules up with PyDict_GetItemStringRef)
CP313_RELEASES = [("cuda-bindings", "13.0.0"), ("cuda-bindings", "13.0.3")]


def ensure_cp313_releases(cache):
    """CP313_RELEASES' cp313 wheels, each unpacked into a site of its own
    under cp313/site: {version: site}."""
    out = {}
    for name, version in CP313_RELEASES:
        wheel = download_for(os.path.join(cache, "cp313", "wheels"), name, version, "3.13", "cp313")
        out[version] = os.path.join(cache, "cp313", "site", "%s-%s" % (name.replace("-", "_"), version))
        ensure_wheel(cache, name, version, tree=out[version], wheel=wheel)
    return out


def ensure_cp314(cache):
    """CP314_WHEELS for each of CP314_ABIS into cp314/wheels, downloaded
    once, and cp314/site: CP314_SITE's cp314 wheels and cuda-pathfinder."""
    top = os.path.join(cache, "cp314")
    wheels_dir = os.path.join(top, "wheels")

    def get(name, version, abi):
        return download_for(wheels_dir, name, version, "3.14", abi)

    out = {"wheels": {name: {abi: get(name, version, abi) for abi in CP314_ABIS} for name, version in CP314_WHEELS},
           "site": os.path.join(top, "site")}
    for name, version in CP314_SITE:
        ensure_wheel(cache, name, version, tree=out["site"], wheel=get(name, version, "cp314"))
    ensure_wheel(cache, *PROVIDER_DEPS[0], tree=out["site"])
    return out


FOREIGN = {  # bad-input samples: a real non-Cython extension per machine
    "x86_64": "manylinux_2_17_x86_64",
    "aarch64": "manylinux_2_17_aarch64",
    "i686": "manylinux_2_17_i686",
}
FOREIGN_PKG = ("markupsafe", "3.0.2")


def ensure_foreign(cache):
    """MarkupSafe's _speedups extension for each machine in FOREIGN."""
    out = {}
    pyver = "%d.%d" % sys.version_info[:2]
    for machine, platform in FOREIGN.items():
        d = os.path.join(cache, "foreign", machine)
        so = [f for f in os.listdir(d) if f.endswith(".so")] if os.path.isdir(d) else []
        if not so:
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            log("downloading %s %s for %s from PyPI" % (FOREIGN_PKG + (machine,)))
            pip("download", "--no-deps", "--only-binary=:all:", "--python-version", pyver,
                "--platform", platform, "-d", d, "%s==%s" % FOREIGN_PKG)
            wheel = [f for f in os.listdir(d) if f.endswith(".whl")][0]
            with zipfile.ZipFile(os.path.join(d, wheel)) as z:
                for name in z.namelist():
                    if name.endswith(".so"):
                        with open(os.path.join(d, os.path.basename(name)), "wb") as f:
                            f.write(z.read(name))
            so = [f for f in os.listdir(d) if f.endswith(".so")]
        out[machine] = os.path.join(d, so[0])
    return out


# flags a variant passes to the link as well as to the compiler
LINK_TOO = ("-flto", "-mcmodel=large")


def compile_cmds(c_file, so_file, includes, defines=(), flags=None, target=HOST):
    cc = shlex.split(target.var("CC"))
    cflags = shlex.split(target.var("CFLAGS"))
    ldflags = [f for f in (flags or []) if f.startswith(("-Wl,", "--target=", "-fuse-ld=")) or f in LINK_TOO]
    ldshared = shlex.split(target.var("LDSHARED"))
    if flags:  # a compiler variant: its own compiler, optimisation and linker flags
        cc = [flags[0]]
        cflags = [f for f in cflags if not f.startswith("-O")] + \
                 [f for f in flags[1:] if not f.startswith(("-Wl,", "-fuse-ld="))]
        if any(f.startswith("-fuse-ld=") for f in flags):  # its own linker: the variant's driver links
            ldshared = [cc[0]] + ldshared[1:]
    if c_file.endswith(".cpp"):  # C++ mode: the C++ compiler and its runtime, as setuptools does
        cc = [target.var("CXX").split()[0] if cc[0] in ("gcc", "cc", target.var("CC").split()[0]) else cc[0]]
        cflags = [f for f in cflags if f not in ("-std=c11", "-Wstrict-prototypes")]
        ldshared = [cc[0]] + ldshared[1:]
    ccshared = shlex.split(target.var("CCSHARED"))
    obj = c_file.rsplit(".", 1)[0] + ".o"
    incs = ["-I" + i for i in includes] + target.include_flags
    defs = ["-D" + d for d in defines]
    return [cc + cflags + ccshared + defs + incs + ["-c", c_file, "-o", obj],
            ldshared + ldflags + target.link_flags + [obj, "-o", so_file]]


def cythonize_and_compile(cwd, pyx_rel, c_rel, so, cython_path, includes, c_includes, key,
                          defines=(), flags=None, post=(), cython_args=(), target=HOST):
    """Runs Cython on cwd/pyx_rel (C++ when c_rel ends in .cpp) and compiles
    the C into so for target, then runs each command of post on it, unless
    so was built from the same key. Returns an error text, or None."""
    stamp = so[:-len(target.ext)] + ".key"
    if os.path.exists(so) and os.path.exists(stamp) and open(stamp).read() == key:
        return None
    env = dict(os.environ, PYTHONPATH=cython_path)
    args = [sys.executable, "-m", "cython", "-3"] + (["--cplus"] if c_rel.endswith(".cpp") else []) + \
        list(cython_args)
    for inc in includes:
        args += ["-I", inc]
    rc, out = run(args + [pyx_rel, "-o", c_rel], cwd=cwd, env=env)
    if rc:
        return "Cython cannot compile it: %s" % last_error(out)
    for cmd in compile_cmds(os.path.join(cwd, c_rel), so, list(c_includes), defines, flags, target) + \
            [list(p) + [so] for p in post]:
        rc, out = run(cmd, cwd=cwd)
        if rc:
            return "the C compiler failed: %s" % last_error(out)
    with open(stamp, "w") as f:
        f.write(key)
    return None


@functools.lru_cache(maxsize=None)
def pxd_digest(include):
    """The .pxd files under an include directory (a provider site), so that
    a consumer built against other declarations is built again."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(include):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".pxd"):
                h.update(os.path.relpath(os.path.join(root, f), include).encode() + b"\0")
                h.update(open(os.path.join(root, f), "rb").read())
    return h.hexdigest()


def build_ext(cache, out_dir, name, source, cython, includes, c_includes=(), defines=(), flags=None,
              cplus=False, post=(), cython_args=(), target=HOST):
    """Cythonizes and compiles source (text) as top-level module `name` in
    out_dir (as C++ when cplus) for target, then runs each command of post
    on the .so. Returns (so_path, c_path, None) or (None, None, reason)."""
    os.makedirs(out_dir, exist_ok=True)
    so = os.path.join(out_dir, name + target.ext)
    c_rel = name + (".cpp" if cplus else ".c")
    with open(os.path.join(out_dir, name + ".pyx"), "w") as f:
        f.write(source)
    key = digest(source, cython, repr(includes), repr(c_includes), repr(defines), repr(flags), repr(cplus),
                 repr(post), repr(cython_args), sys.version, sysconfig.get_config_var("CFLAGS") or "",
                 *target.key, *map(pxd_digest, includes))
    err = cythonize_and_compile(out_dir, name + ".pyx", c_rel, so, ensure_cython(cache, cython),
                                includes, c_includes, key, defines, flags, post, cython_args, target)
    if err:
        return None, None, "Cython %s: %s" % (cython, err)
    return so, os.path.join(out_dir, c_rel), None


def last_error(out):
    lines = [l for l in out.splitlines() if l.strip() and not l.startswith("warning")]
    errs = [l for l in lines if "rror" in l] or lines
    return errs[-1].strip() if errs else "no output"


def substitute(text, layout):
    for k, v in NAMES[layout].items():
        text = text.replace("@%s@" % k, v)
    return text


def drop_function(text, name):
    """The provider source without the cdef function `name` (its
    declaration line, or its definition up to the next blank line)."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("cdef ") and (" %s(" % name) in line:
            skipping = line.rstrip().endswith(":")
            continue
        if skipping:
            skipping = bool(line.strip())
            continue
        out.append(line)
    return "".join(out)


def build_provider_site(cache, layout, site_name=None, drop=None, target=HOST):
    """Our own providers under the real module names of one layout (with
    drop: without that function, for the missing-export case), built for
    target."""
    site = os.path.join(cache, "providers", site_name or layout)
    os.makedirs(site, exist_ok=True)
    pkgs = ["cuda"] + (["cuda/bindings"] if layout == "bindings" else [])
    for pkg in pkgs:
        os.makedirs(os.path.join(site, pkg), exist_ok=True)
        for init in ("__init__.py", "__init__.pxd"):
            open(os.path.join(site, pkg, init), "a").close()
    built = []
    for src, modpath in PROVIDER_FILES[layout].items():
        pkg_dir = os.path.join(site, os.path.dirname(modpath))
        base = os.path.basename(modpath)
        if src == "driver":
            shutil.copyfile(os.path.join(HERE, "providers", "driver.py"), os.path.join(pkg_dir, base + ".py"))
            continue
        pxd = substitute(open(os.path.join(HERE, "providers", src + ".pxd")).read(), layout)
        pyx = substitute(open(os.path.join(HERE, "providers", src + ".pyx")).read(), layout)
        if drop:
            pxd, pyx = drop_function(pxd, drop), drop_function(pyx, drop)
        with open(os.path.join(pkg_dir, base + ".pxd"), "w") as f:
            f.write(pxd)
        # Providers compile in place so that Cython names them by their package.
        so, _, err = build_package_module(cache, site, modpath, pyx, target)
        if err:
            raise SystemExit("corpus: provider %s (%s): %s" % (modpath, layout, err))
        built.append(so)
    return site, built


def build_package_module(cache, site, modpath, source, target=HOST):
    """Compiles a provider in place, so that Cython names it by its package."""
    so = os.path.join(site, modpath + target.ext)
    with open(os.path.join(site, modpath + ".pyx"), "w") as f:
        f.write(source)
    key = digest(source, open(os.path.join(site, modpath + ".pxd")).read(), PROVIDER_CYTHON, sys.version,
                 *target.key)
    err = cythonize_and_compile(site, modpath + ".pyx", modpath + ".c", so,
                                ensure_cython(cache, PROVIDER_CYTHON), ["."], [], key, target=target)
    return so, None, err


def consumer_jobs(cache, sites, cy, layout):
    """The four import forms of the corpus, one Cython, one layout."""
    for name in ("cimports", "pyimport", "pyimport_as", "pyfrom"):
        src = substitute(open(os.path.join(HERE, "consumers", name + ".pyx.in")).read(), layout)
        out = os.path.join(cache, "consumers", cy, layout)
        yield ({"id": "%s/%s/%s" % (cy, layout, name), "kind": "corpus", "cython": cy,
                "layout": layout, "module": name, "provider_site": sites[layout]},
               dict(out_dir=out, name=name, source=src, cython=cy, includes=[sites[layout]]))


def realcuda_job(cache, cy, layout, cuda_trees, variant=None):
    """The rmm-like consumer of the real cuda-python of a layout (in one of
    BUILD_VARIANTS when variant is given)."""
    real = substitute(open(os.path.join(HERE, "realcuda", "rmm_like.pyx.in")).read(), layout)
    out = os.path.join(cache, "realcuda", cy, layout, *([variant] if variant else []))
    meta = {"id": "%s/%s/rmm_like%s" % (cy, layout, "-" + variant if variant else ""), "kind": "realcuda",
            "cython": cy, "layout": layout, "module": "rmm_like",
            "cuda_python": "%s==%s" % CUDA_PYTHON[layout], "provider_site": cuda_trees[layout]}
    kw = {}
    if variant:
        meta["variant"] = variant
        kw = {k: v for k, v in BUILD_VARIANTS[variant].items() if k != "since"}
    return (meta, dict(out_dir=out, name="rmm_like", source=real, cython=cy,
                       includes=[cuda_trees[layout]], c_includes=[CUDA_INCLUDE], **kw))


# How the field builds (what real wheels were seen built with): each applied
# to the cimports consumer; "since" is the first Cython that supports it.
BUILD_VARIANTS = {
    "cplus": dict(cplus=True),                                   # RAPIDS: C++ mode
    "lto": dict(flags=["gcc", "-O2", "-flto"]),
    "O3-hidden": dict(flags=["gcc", "-O3", "-fvisibility=hidden"]),
    "mcmodel-large": dict(flags=["gcc", "-O2", "-mcmodel=large"]),
    "stripped": dict(post=[("strip", "--strip-unneeded")]),
    "single-phase": dict(defines=["CYTHON_PEP489_MULTI_PHASE_INIT=0"]),
    "module-state": dict(defines=["CYTHON_USE_MODULE_STATE=1"], since="3.1"),  # 3.0.12 does not compile
    "abi3": dict(defines=["Py_LIMITED_API=0x030B0000"], since="3.1"),
}


REALCUDA_VARIANTS = ("cplus", "abi3")
# Cython 3.3's shared utility module (--shared): its consumers take Cython's
# helpers, the import helpers among them, from it.
SHARED_CYTHONS = ["3.3.1"]
SHARED_NAME = "_cyutility"


def build_shared_module(cache, cy, target=HOST):
    """The shared utility module of Cython cy, in a directory of its own
    (one per interpreter besides this one's)."""
    out = os.path.join(cache, "shared", cy, *([] if target is HOST else [target.ext.strip(".")]))
    os.makedirs(out, exist_ok=True)
    so = os.path.join(out, SHARED_NAME + target.ext)
    c = os.path.join(out, SHARED_NAME + ".c")
    key = digest(cy, sys.version, sysconfig.get_config_var("CFLAGS") or "", *target.key)
    stamp = os.path.join(out, SHARED_NAME + ".key")
    if os.path.exists(so) and os.path.exists(stamp) and open(stamp).read() == key:
        return out
    rc, text = run([sys.executable, "-m", "cython", "--generate-shared=" + c], cwd=out,
                   env=dict(os.environ, PYTHONPATH=ensure_cython(cache, cy)))
    for cmd in ([] if rc else compile_cmds(c, so, [], target=target)):
        rc, text = run(cmd, cwd=out)
        if rc:
            break
    if rc:
        raise SystemExit("build_corpus: the shared utility module of Cython %s: %s" % (cy, last_error(text)))
    with open(stamp, "w") as f:
        f.write(key)
    return out


def shared_jobs(cache, sites, cy, layout, shared_dir):
    """The four consumers built against the shared utility module."""
    for name in ("cimports", "pyimport", "pyimport_as", "pyfrom"):
        src = substitute(open(os.path.join(HERE, "consumers", name + ".pyx.in")).read(), layout)
        out = os.path.join(cache, "shared", cy, layout)
        yield ({"id": "%s/%s/%s-shared" % (cy, layout, name), "kind": "shared", "cython": cy,
                "layout": layout, "module": name, "variant": "shared", "shared_dir": shared_dir,
                "provider_site": sites[layout]},
               dict(out_dir=out, name=name, source=src, cython=cy, includes=[sites[layout]],
                    cython_args=["--shared=" + SHARED_NAME]))


def deferred_job(cache, sites, cy, layout):
    """The consumer whose Python-level imports do not run at import time."""
    src = substitute(open(os.path.join(HERE, "consumers", "deferred.pyx.in")).read(), layout)
    return ({"id": "%s/%s/deferred" % (cy, layout), "kind": "deferred", "cython": cy, "layout": layout,
             "module": "deferred", "provider_site": sites[layout]},
            dict(out_dir=os.path.join(cache, "consumers", cy, layout), name="deferred", source=src, cython=cy,
                 includes=[sites[layout]]))


def jobs(cache, sites, cuda_trees):
    """Every consumer to build: (id, kwargs for build_ext, metadata)."""
    for cy in CYTHONS:
        for layout in ("bindings", "legacy"):
            yield from consumer_jobs(cache, sites, cy, layout)
            yield deferred_job(cache, sites, cy, layout)
            # Cython 3.2+ blobs in the other compressions the C supports: 3.2
            # has zlib (its default) and bz2; 3.3 has LZSS (its default) and
            # zlib; zstd needs Cython running on Python 3.14 (not here).
            if cy >= "3.2":
                src = substitute(open(os.path.join(HERE, "consumers", "cimports.pyx.in")).read(), layout)
                other = ("bz2", 2) if cy < "3.3" else ("zlib", 1)
                for algo, value in (other, ("plain", 0)):
                    out = os.path.join(cache, "consumers", cy, layout, algo)
                    yield ({"id": "%s/%s/cimports-%s" % (cy, layout, algo), "kind": "corpus",
                            "cython": cy, "layout": layout, "module": "cimports",
                            "compression": algo, "provider_site": sites[layout]},
                           dict(out_dir=out, name="cimports", source=src, cython=cy,
                                includes=[sites[layout]],
                                defines=["CYTHON_COMPRESS_STRINGS=%d" % value]))
            # compiler variants: what real pipelines also produce
            cc = sysconfig.get_config_var("CC").split()[0]
            variants = [("O0", [cc, "-O0"]), ("Os", [cc, "-Os"]), ("noplt", [cc, "-O2", "-fno-plt"]),
                        # one R+X segment for code and rodata: no padding for new space
                        ("nosepcode", [cc, "-O2", "-Wl,-z,noseparate-code"])]
            if shutil.which("clang"):
                variants.append(("clang", ["clang", "-O2"]))
            src = substitute(open(os.path.join(HERE, "consumers", "cimports.pyx.in")).read(), layout)
            for tag, flags in variants:
                out = os.path.join(cache, "consumers", cy, layout, tag)
                yield ({"id": "%s/%s/cimports-%s" % (cy, layout, tag), "kind": "corpus",
                        "cython": cy, "layout": layout, "module": "cimports", "variant": tag,
                        "provider_site": sites[layout]},
                       dict(out_dir=out, name="cimports", source=src, cython=cy,
                            includes=[sites[layout]], flags=flags))
            # build variants of real projects (scikit-build-core, RAPIDS' flags)
            for tag, kw in BUILD_VARIANTS.items():
                if cy < kw.get("since", "0"):
                    continue
                kw = {k: v for k, v in kw.items() if k != "since"}
                out = os.path.join(cache, "consumers", cy, layout, tag)
                yield ({"id": "%s/%s/cimports-%s" % (cy, layout, tag), "kind": "corpus",
                        "cython": cy, "layout": layout, "module": "cimports", "variant": tag,
                        "provider_site": sites[layout]},
                       dict(out_dir=out, name="cimports", source=src, cython=cy,
                            includes=[sites[layout]], **kw))
            yield realcuda_job(cache, cy, layout, cuda_trees)
            if cy in SHARED_CYTHONS:
                shared = build_shared_module(cache, cy)
                # installed beside the providers, so that every test's path finds it
                shutil.copy2(os.path.join(shared, SHARED_NAME + EXT), sites[layout])
                yield from shared_jobs(cache, sites, cy, layout, shared)
            # RAPIDS' builds: C++ mode; rmm 26.08: the limited API
            for variant in REALCUDA_VARIANTS:
                if cy >= BUILD_VARIANTS[variant].get("since", "0"):
                    yield realcuda_job(cache, cy, layout, cuda_trees, variant)


def build_all(cache, todo):
    log("building %d consumers with Cython %s" % (len(todo), ", ".join(sorted({m["cython"] for m, _ in todo}))))
    entries = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = [(meta, pool.submit(build_ext, cache, **kw)) for meta, kw in todo]
        for meta, fut in futures:
            so, c_file, err = fut.result()
            meta.update(so=so, c=c_file, skipped=err)
            if err:
                log("skip %s: %s" % (meta["id"], err))
            entries.append(meta)
    return entries


def write_manifest(cache, manifest):
    tmp = os.path.join(cache, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(cache, "manifest.json"))
    entries = manifest["entries"]
    built = sum(1 for e in entries if not e["skipped"])
    log("%d built, %d skipped; manifest in %s" % (built, len(entries) - built,
                                                   os.path.join(cache, "manifest.json")))


# --small: what the fallback stub is checked with under other CPythons
# (Cython 0.29 supports CPython up to 3.12).
SMALL_CYTHONS = ["0.29.37", "3.3.1"]


def main_small(cache):
    cythons = [cy for cy in SMALL_CYTHONS if not (cy.startswith("0.29") and sys.version_info >= (3, 13))]
    os.makedirs(cache, exist_ok=True)
    for cy in cythons:
        ensure_cython(cache, cy)
    sites = {}
    for layout in ("bindings", "legacy"):
        sites[layout], _ = build_provider_site(cache, layout)
    todo = [j for cy in cythons for layout in ("bindings", "legacy") for j in consumer_jobs(cache, sites, cy, layout)]
    entries = build_all(cache, todo)
    write_manifest(cache, {"python": sys.version.split()[0], "executable": sys.executable, "ext_suffix": EXT,
                           "cythons": cythons, "providers": sites, "entries": entries})


def main_gpu(cache):
    """For samples/gpu-proof: the rmm-like consumers of both layouts, built
    by this interpreter against its cuda-python 12.5.0 and 12.6.2.post1."""
    cy = "3.3.1"
    os.makedirs(cache, exist_ok=True)
    ensure_cython(cache, cy)
    trees, wheels = {}, {}
    for layout, (name, version) in CUDA_PYTHON.items():
        wheels[layout], trees[layout] = ensure_wheel(cache, name, version)
    entries = build_all(cache, [realcuda_job(cache, cy, layout, trees) for layout in CUDA_PYTHON])
    write_manifest(cache, {"python": sys.version.split()[0], "ext_suffix": EXT, "cythons": [cy],
                           "cuda_python": {k: {"requirement": "%s==%s" % v, "wheel": wheels[k], "tree": trees[k]}
                                           for k, v in CUDA_PYTHON.items()},
                           "entries": entries})


def main(argv):
    if len(argv) == 3 and argv[1] == "--small":
        return main_small(os.path.abspath(argv[2]))
    if len(argv) == 3 and argv[1] == "--gpu":
        return main_gpu(os.path.abspath(argv[2]))
    if len(argv) == 3 and argv[1] == "--provider-releases":
        return ensure_provider_releases(os.path.abspath(argv[2]))
    if len(argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    cache = os.path.abspath(argv[1])
    os.makedirs(cache, exist_ok=True)
    for cy in CYTHONS:
        ensure_cython(cache, cy)
    sites, providers = {}, []
    for layout in ("bindings", "legacy"):
        sites[layout], built = build_provider_site(cache, layout)
        providers += built
    # a provider that lacks a function the consumers cimport
    sites["bindings-partial"], _ = build_provider_site(cache, "bindings", "bindings-partial", "cuDeviceGetCount")
    cuda_trees, wheels = {}, {}
    for layout, (name, version) in CUDA_PYTHON.items():
        wheels[layout], cuda_trees[layout] = ensure_wheel(cache, name, version)
    cuda13 = os.path.join(cache, "site", "cuda_bindings-13")
    for name, version in CUDA_BINDINGS_13:
        ensure_wheel(cache, name, version, tree=cuda13)
    cuda129 = os.path.join(cache, "site", "cuda_bindings-12.9")
    for name, version in CUDA_BINDINGS_129:
        ensure_wheel(cache, name, version, tree=cuda129)
    foreign = ensure_foreign(cache)
    cp314 = ensure_cp314(cache)
    cp313_releases = ensure_cp313_releases(cache)
    provider_releases = ensure_provider_releases(cache)
    real_wheels = {name: download_wheel(cache, name, version) for name, version in REAL_WHEELS}
    real_corpus = [{"name": name, "version": version, "built": built,
                    "wheel": download_wheel(cache, name, version),
                    "deps": [download_wheel(cache, n, v) for n, v in deps]}
                   for (name, version), built, deps in REAL_CORPUS]
    read_only = [download_wheel(cache, name, version) for name, version in READ_ONLY_WHEELS]
    newest = {line: ["%s==%s" % w for w in wheels] for line, wheels in NEWEST_BINDINGS.items()
              if all(download_wheel(cache, n, v) for n, v in wheels)}
    # a Cython extension that references nothing the rules map (bad input for a retarget)
    unmapped, _, why = build_ext(cache, os.path.join(cache, "unmapped"), "unmapped",
                                 "def answer():\n    return 42\n", PROVIDER_CYTHON, [])
    if why:
        raise SystemExit("build_corpus: the unmapped module: %s" % why)
    entries = build_all(cache, list(jobs(cache, sites, cuda_trees)))
    write_manifest(cache, {
        "python": sys.version.split()[0], "ext_suffix": EXT, "cythons": CYTHONS,
        "provider_cython": PROVIDER_CYTHON, "providers": sites, "provider_modules": providers,
        "cuda_python": {k: {"requirement": "%s==%s" % v, "wheel": wheels[k], "tree": cuda_trees[k]}
                        for k, v in CUDA_PYTHON.items()},
        "cuda_bindings_13": {"requirements": ["%s==%s" % w for w in CUDA_BINDINGS_13], "tree": cuda13},
        "cuda_bindings_129": {"requirements": ["%s==%s" % w for w in CUDA_BINDINGS_129], "tree": cuda129},
        "real_wheels": real_wheels, "real_corpus": real_corpus, "read_only_wheels": read_only, "cp314": cp314, "cp313_releases": cp313_releases, "newest_bindings": newest, "provider_releases": provider_releases, "foreign": foreign, "unmapped": unmapped, "entries": entries})


if __name__ == "__main__":
    main(sys.argv)
