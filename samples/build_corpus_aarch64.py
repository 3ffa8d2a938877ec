#!/usr/bin/env python3
"""Builds the aarch64 corpus (issue 20) from real parts, cross-compiled here.

Cython runs on this machine (the C it generates does not depend on the
target); Debian's cross compiler aarch64-linux-gnu-gcc compiles and links
the C the way setuptools does on an aarch64 Debian: CC, CXX, CFLAGS,
CCSHARED, LDSHARED and EXT_SUFFIX come from the aarch64 CPython 3.11's own
sysconfig data in build/aarch64/sysroot (scripts/aarch64_sysroot), its
headers from that sysroot, glibc's from the cross toolchain; every link adds
-Wl,-z,max-page-size=65536, the 64 KiB segment alignment of every real
aarch64 wheel. Into OUTDIR/aarch64:

* our providers (samples/providers) in both layouts, site/<layout>/ as in
  the x86-64 corpus (providers/<layout>, and bindings-partial);
* the corpus consumers (cimports, pyimport, pyimport_as, pyfrom, deferred)
  and the rmm-like realcuda consumer, for every Cython in CYTHONS and both
  layouts;
* the x86-64 corpus's variants of the cimports consumer, each with a subset
  of the Cythons (VARIANTS: C++ mode with g++, clang with LLD (no padding,
  4 PT_LOADs), -O0, -Os, -fno-plt, -z separate-code, LTO, -O3 with hidden
  visibility, stripped, single-phase init, module state, the limited API;
  COMPRESSIONS: Cython 3.2+'s string blobs), the four consumers against
  Cython 3.3's shared utility module, and the realcuda consumer in C++ mode
  and with the limited API;
* the real cuda-python 12.5.0 (legacy) and 12.6.2.post1 (bindings) aarch64
  wheels, and cuda-bindings 13.0.3 (no legacy modules), installed by this
  machine's pip with --platform manylinux_2_28_aarch64;
* real aarch64 wheels of rmm-cu12 (REAL_WHEELS), downloaded into wheels/,
  and what rmm-cu12 25.2.0 needs at import besides cuda-python
  (RMM_RUNTIME: numpy), installed into site/rmm_runtime-<version>/.

manifest.json has the x86-64 manifest's shape (entries with id, kind,
cython, layout, module, variant, provider_site, so, c, skipped), plus the
machine, the interpreter that judges it and the flags used. A second run
rebuilds only what changed (the same cache keys as the x86-64 corpus, with
the target's flags in them). Cython itself is taken from OUTDIR/cython
(installed there once, shared with the x86-64 corpus).

usage: build_corpus_aarch64.py OUTDIR
"""

import os
import runpy
import shutil
import subprocess
import sys

import build_corpus as bc

ROOT = os.path.dirname(bc.HERE)
SYSROOT = os.path.join(ROOT, "build", "aarch64", "sysroot")
INTERPRETER = os.path.join(ROOT, "build", "aarch64", "python3")
PLATFORMS = ("manylinux_2_28_aarch64", "manylinux2014_aarch64")
PYTHON_VERSION = "3.11"
PAGE = "-Wl,-z,max-page-size=65536"
# variant -> (build_ext arguments, the Cythons it is built with): the x86-64
# corpus's variants (build_corpus.BUILD_VARIANTS and its compiler variants),
# each with a subset of the Cythons (the full matrix, every variant with
# every Cython, would be twice the modules for little more code to read).
# Left out: -mcmodel=large (aarch64 gcc: "code model 'large' with '-fPIC'"
# is unimplemented), and zstd blobs (as for x86-64).
GCC = "aarch64-linux-gnu-gcc"
VARIANTS = {
    "cplus": (dict(cplus=True), ["0.29.37", "3.0.12", "3.3.1"]),          # RAPIDS: C++ mode
    # LLD: no padding after the code, 4 PT_LOADs (GNU ld: 2)
    "clang-lld": (dict(flags=["clang", "--target=aarch64-linux-gnu", "-fuse-ld=lld", "-O2"]),
                  ["0.29.37", "3.1.8", "3.3.1"]),
    "O0": (dict(flags=[GCC, "-O0"]), ["3.0.12", "3.3.1"]),
    "Os": (dict(flags=[GCC, "-Os"]), ["3.2.9"]),
    "noplt": (dict(flags=[GCC, "-O2", "-fno-plt"]), ["3.0.12", "3.3.1"]),  # calls through the GOT
    "separate-code": (dict(flags=[GCC, "-O2", "-Wl,-z,separate-code"]), ["3.3.1"]),
    "lto": (dict(flags=[GCC, "-O2", "-flto"]), ["3.0.12", "3.3.1"]),
    "O3-hidden": (dict(flags=[GCC, "-O3", "-fvisibility=hidden"]), ["3.1.8"]),
    "stripped": (dict(post=[("aarch64-linux-gnu-strip", "--strip-unneeded")]), ["0.29.37", "3.3.1"]),
    "single-phase": (dict(defines=["CYTHON_PEP489_MULTI_PHASE_INIT=0"]), ["0.29.37", "3.0.12", "3.3.1"]),
    "module-state": (dict(defines=["CYTHON_USE_MODULE_STATE=1"]), ["3.1.8", "3.3.1"]),
    "abi3": (dict(defines=["Py_LIMITED_API=0x030B0000"]), ["3.2.9", "3.3.1"]),
}
# Cython 3.2+'s string blobs in their other compressions (as x86-64)
COMPRESSIONS = {"3.2.9": [("bz2", 2), ("plain", 0)], "3.3.1": [("zlib", 1), ("plain", 0)]}
REALCUDA_VARIANTS = {"cplus": ["3.0.12", "3.3.1"], "abi3": ["3.3.1"]}


def aarch64_target():
    """The aarch64 CPython's build configuration, as its sysconfig has it."""
    data = os.path.join(SYSROOT, "usr", "lib", "python3.11", "_sysconfigdata__aarch64-linux-gnu.py")
    pyconfig = os.path.join(SYSROOT, "usr", "include", "aarch64-linux-gnu", "python3.11", "pyconfig.h")
    if not (os.path.exists(data) and os.path.exists(pyconfig)):
        raise SystemExit("corpus: no aarch64 CPython headers in %s: run scripts/aarch64_sysroot" % SYSROOT)
    config = runpy.run_path(data)["build_time_vars"]
    for tool in (config["CC"].split()[0], config["CXX"].split()[0]):
        if not shutil.which(tool):
            raise SystemExit("corpus: %s is missing: scripts/setup installs the cross compiler" % tool)
    # Python.h from the sysroot; its multiarch pyconfig.h includes
    # <aarch64-linux-gnu/python3.11/pyconfig.h>, found after the toolchain's own
    include = ["-I" + os.path.join(SYSROOT, "usr", "include", "python3.11"),
               "-idirafter", os.path.join(SYSROOT, "usr", "include")]
    return bc.Target(config, include, [PAGE], ("aarch64", config["CFLAGS"], config["LDSHARED"], PAGE))


def pip_target(tree, requirements):
    """requirements (name, version) as aarch64 cp311 wheels, installed into
    tree by this machine's pip, once."""
    done = os.path.join(tree, ".done")
    if os.path.exists(done):
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    bc.log("installing %s (aarch64) from PyPI" % ", ".join("%s==%s" % r for r in requirements))
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    bc.pip("install", "--target", tree, *platforms, "--python-version", PYTHON_VERSION,
           "--only-binary=:all:", "--no-deps", *["%s==%s" % r for r in requirements])
    open(done, "w").close()
    return tree


def variant_job(cache, sites, cy, layout, tag, kw, what="variant"):
    """The cimports consumer in one of VARIANTS (or, with what="compression",
    with Cython's string blob compressed by tag)."""
    src = bc.substitute(open(os.path.join(bc.HERE, "consumers", "cimports.pyx.in")).read(), layout)
    return ({"id": "%s/%s/cimports-%s" % (cy, layout, tag), "kind": "corpus", "cython": cy, "layout": layout,
             "module": "cimports", what: tag, "provider_site": sites[layout]},
            dict(out_dir=os.path.join(cache, "consumers", cy, layout, tag), name="cimports", source=src,
                 cython=cy, includes=[sites[layout]], **kw))


def jobs(cache, sites, cuda_trees, target):
    """Every consumer of the aarch64 corpus: (metadata, build_ext arguments)."""
    have_lld = shutil.which("clang") and shutil.which("ld.lld")
    for cy in bc.CYTHONS:
        for layout in ("bindings", "legacy"):
            yield from bc.consumer_jobs(cache, sites, cy, layout)
            yield bc.deferred_job(cache, sites, cy, layout)
            yield bc.realcuda_job(cache, cy, layout, cuda_trees)
            for algo, value in COMPRESSIONS.get(cy, []):
                yield variant_job(cache, sites, cy, layout, algo,
                                  dict(defines=["CYTHON_COMPRESS_STRINGS=%d" % value]), "compression")
            if cy in bc.SHARED_CYTHONS:
                shared = bc.build_shared_module(cache, cy, target)
                # installed beside the providers, so that every test's path finds it
                shutil.copy2(os.path.join(shared, bc.SHARED_NAME + target.ext), sites[layout])
                yield from bc.shared_jobs(cache, sites, cy, layout, shared)
            for tag, (kw, cythons) in VARIANTS.items():
                if cy in cythons and (tag != "clang-lld" or have_lld):
                    yield variant_job(cache, sites, cy, layout, tag, kw)
            for tag, cythons in REALCUDA_VARIANTS.items():
                if cy in cythons:
                    yield bc.realcuda_job(cache, cy, layout, cuda_trees, tag)


# Real aarch64 wheels of a RAPIDS package that cimports cuda-python: rmm-cu12
# 25.2.0 (Cython 3.0.12, built against the bindings layout: the upstream
# report's failure under cuda-python 12.5.0) and 25.6.0 (Cython 3.1.1).
REAL_WHEELS = [("rmm-cu12", "25.2.0"), ("rmm-cu12", "25.6.0")]


def download_wheel(cache, name, version):
    """An aarch64 cp311 wheel in cache/wheels, downloaded once."""
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    prefix = "%s-%s-" % (name.replace("-", "_"), version)
    found = [w for w in os.listdir(wheels) if w.startswith(prefix)]
    if not found:
        bc.log("downloading %s %s (aarch64) from PyPI" % (name, version))
        platforms = [a for p in PLATFORMS for a in ("--platform", p)]
        bc.pip("download", "-d", wheels, *platforms, "--python-version", PYTHON_VERSION,
               "--only-binary=:all:", "--no-deps", "%s==%s" % (name, version))
        found = [w for w in os.listdir(wheels) if w.startswith(prefix)]
    return os.path.join(wheels, sorted(found)[0])


# What `import rmm` of a REAL_WHEELS release needs besides cuda-python, for
# the guest to import it (test_aarch64.py runs the real wheel, original and
# repaired). rmm-cu12 25.2.0's METADATA: cuda-python and numpy<3,>=1.23
# (numba only for its tests and rmm.allocators.numba, which `import rmm`
# does not import). Its extensions link librmm and the CUDA runtime
# statically (their NEEDED: glibc and libstdc++ only), so there is no
# librmm-cu12 or nvidia-cuda-runtime wheel to install. numpy 2.2.3: the
# release of rmm 25.02's month (14 MB wheel, 65 MB installed).
RMM_RUNTIME = {"25.2.0": [("numpy", "2.2.3")]}


def rmm_runtime(cache):
    """release -> the tree RMM_RUNTIME's requirements are installed in, once."""
    return {version: pip_target(os.path.join(cache, "site", "rmm_runtime-%s" % version), requirements)
            for version, requirements in RMM_RUNTIME.items()}


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    top = os.path.abspath(argv[1])
    cache = os.path.join(top, "aarch64")
    target = aarch64_target()
    os.makedirs(cache, exist_ok=True)
    for cy in bc.CYTHONS:
        bc.ensure_cython(top, cy)
    if not os.path.exists(os.path.join(cache, "cython")):
        os.symlink(os.path.join("..", "cython"), os.path.join(cache, "cython"))
    sites, providers = {}, []
    for layout in ("bindings", "legacy"):
        sites[layout], built = bc.build_provider_site(cache, layout, target=target)
        providers += built
    sites["bindings-partial"], _ = bc.build_provider_site(cache, "bindings", "bindings-partial",
                                                          "cuDeviceGetCount", target=target)
    cuda_trees = {layout: pip_target(os.path.join(cache, "site", "%s-%s" % (name.replace("-", "_"), version)),
                                     [(name, version)])
                  for layout, (name, version) in bc.CUDA_PYTHON.items()}
    cuda13 = pip_target(os.path.join(cache, "site", "cuda_bindings-13"), bc.CUDA_BINDINGS_13)
    real_wheels = [download_wheel(cache, name, version) for name, version in REAL_WHEELS]
    runtime = rmm_runtime(cache)
    todo = list(jobs(cache, sites, cuda_trees, target))
    for _, kw in todo:
        kw["target"] = target
    entries = bc.build_all(cache, todo)
    for e in entries:
        e["machine"] = "aarch64"
    bc.write_manifest(cache, {
        "machine": "aarch64", "python": PYTHON_VERSION, "interpreter": INTERPRETER, "sysroot": SYSROOT,
        "ext_suffix": target.ext, "cc": target.var("CC"), "cxx": target.var("CXX"),
        "cflags": target.var("CFLAGS"), "ldshared": target.var("LDSHARED"), "link_flags": target.link_flags,
        "cythons": bc.CYTHONS, "provider_cython": bc.PROVIDER_CYTHON, "providers": sites,
        "provider_modules": providers,
        "variants": {tag: cythons for tag, (_, cythons) in VARIANTS.items()},
        "compressions": {cy: [algo for algo, _ in algos] for cy, algos in COMPRESSIONS.items()},
        "shared_cythons": bc.SHARED_CYTHONS,
        "realcuda_variants": REALCUDA_VARIANTS,
        "cuda_python": {k: {"requirement": "%s==%s" % v, "tree": cuda_trees[k]} for k, v in bc.CUDA_PYTHON.items()},
        "cuda_bindings_13": {"requirements": ["%s==%s" % w for w in bc.CUDA_BINDINGS_13], "tree": cuda13},
        "real_wheels": real_wheels,
        "rmm_runtime": {v: {"requirements": ["%s==%s" % r for r in RMM_RUNTIME[v]], "tree": runtime[v]}
                        for v in RMM_RUNTIME},
        "entries": entries})


if __name__ == "__main__":
    main(sys.argv)
