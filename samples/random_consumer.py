#!/usr/bin/env python3
"""Random corpus consumers, for differential testing (Csmith-style).

A seed gives one consumer drawn from every axis at once: one to three
cimported provider modules (cydriver, cyruntime, cynvrtc) and a random
subset of their functions, variable and type, signatures among them that
carry a typedef of their own module or of another; Python-level imports
in every form (absolute, from-, aliased, in a try, deferred into the
function) or none; module-level string and bytes constants of many lengths
and kinds (ASCII, non-ASCII, empty, long, some naming the mapped modules in
prose); a Cython version, a CPython version, and a build: compiler and
optimisation, C or C++, module state, the limited API, the shared utility
module, single-phase init, string compression, strip. The same source is
built against both layouts (the names substituted as in the corpus), so
that the consumer built against the target layout is the oracle of a
patched one: `observe()` must return the same from both
(tests/python/test_random_consumers.py).

usage: random_consumer.py SEED          prints the seed's build and source
"""
import random
import sys

CYTHONS = ["0.29.37", "3.0.12", "3.1.8", "3.2.9", "3.3.1"]
# the CPythons a consumer is built for; build_corpus's interpreter (3.11)
# twice as often as each other
PYTHONS = ["3.9", "3.10", "3.11", "3.11", "3.12", "3.13"]
# Cython 0.29 does not compile for CPython 3.13
CYTHON_BEFORE = {"0.29.37": "3.13"}
# compilers and optimisation, as the corpus's compiler variants
FLAGS = [None, ["gcc", "-O0"], ["gcc", "-Os"], ["gcc", "-O2", "-fno-plt"], ["gcc", "-O3"], ["clang", "-O2"],
         ["clang", "-Os"], ["gcc", "-O2", "-flto"], ["gcc", "-O3", "-fvisibility=hidden"],
         ["gcc", "-O2", "-mcmodel=large"], ["gcc", "-O2", "-Wl,-z,noseparate-code"]]

# what each cimport needs declared and how observe() calls it, per module
CIMPORTS = {
    "cuInit": ("@CYDRIVER@", "out['cuInit'] = cuInit(3)"),
    "cuDeviceGetCount": ("@CYDRIVER@", "cuDeviceGetCount(&n)\n    out['cuDeviceGetCount'] = n"),
    "cuGraphicsGLRegisterBuffer": ("@CYDRIVER@", "out['cuGraphicsGLRegisterBuffer'] = "
                                   "(cuGraphicsGLRegisterBuffer(&res, buf, 9), <size_t>res)"),
    "cudaCorpusLayout": ("@CYDRIVER@", "out['cudaCorpusLayout'] = cudaCorpusLayout"),
    "CUstreamHolder": ("@CYDRIVER@", "out['CUstreamHolder'] = CUstreamHolder(4).get()"),
    "cudaMemcpyAsync": ("@CYRUNTIME@", "out['cudaMemcpyAsync'] = (<int>cudaMemcpyAsync(dst, src, 4, "
                        "cudaMemcpyDefault, <cudaStream_t>NULL), dst[3])"),
    "cudaGetDeviceCount": ("@CYRUNTIME@", "cudaGetDeviceCount(&m)\n    out['cudaGetDeviceCount'] = m"),
    # its own module's typedef in its signature
    "cudaStreamGetAttribute": ("@CYRUNTIME@", "out['cudaStreamGetAttribute'] = (<int>cudaStreamGetAttribute("
                               "<cudaStream_t>NULL, <cudaStreamAttrID>3, &k), k)"),
    # cynvrtc's typedef in a cyruntime signature
    "cudaProgramGetLayout": ("@CYRUNTIME@", "out['cudaProgramGetLayout'] = "
                             "(<int>cudaProgramGetLayout(5, &v), v)"),
    "nvrtcVersion": ("@CYNVRTC@", "out['nvrtcVersion'] = (<int>nvrtcVersion(&major, &minor), major, minor)"),
    "nvrtcGetProgramSize": ("@CYNVRTC@", "out['nvrtcGetProgramSize'] = "
                            "(<int>nvrtcGetProgramSize(<nvrtcProgramId>4, &size), size)"),
}
# names the calls need besides the function itself (of the same module)
SUPPORT = {"cuGraphicsGLRegisterBuffer": ["CUgraphicsResource", "GLuint"],
           "cudaMemcpyAsync": ["cudaStream_t", "cudaMemcpyDefault"],
           "cudaStreamGetAttribute": ["cudaStream_t", "cudaStreamAttrID"],
           "nvrtcGetProgramSize": ["nvrtcProgramId"]}
MODULES = ["@CYDRIVER@", "@CYRUNTIME@", "@CYNVRTC@"]
LOCALS = ["cdef int n = 0", "cdef int m = 0", "cdef int k = 0", "cdef int v = 0", "cdef int major = 0",
          "cdef int minor = 0", "cdef size_t size = 0", "cdef char src[4]", "cdef char dst[4]",
          "src[:] = [1, 2, 3, 4]"]
# Python-level imports: (module-level statement or None, statement inside
# observe() or None, expression observe() reports). The absolute import
# binds `cuda`, which the legacy layout's `from cuda import cuda` rebinds:
# a seed takes one of the two (EXCLUSIVE).
PYIMPORTS = {
    "absolute": ("import @DRIVER@", None, "@DRIVER@.cuDriverGetVersion()"),
    "aliased": ("import @DRIVER@ as drv", None, "(drv.__name__, drv.cuDriverGetVersion())"),
    "from": ("from @DRIVER_PARENT@ import @DRIVER_LEAF@", None, "@DRIVER_LEAF@.__name__"),
    "from-name": ("from @DRIVER@ import cuDriverGetVersion", None, "cuDriverGetVersion()"),
    "from-aliased": ("from @DRIVER@ import cuDriverGetVersion as get_version", None, "get_version()"),
    "try": ("try:\n    import @DRIVER@ as maybe\nexcept ImportError:\n    maybe = None", None,
            "maybe is not None and maybe.cuDriverGetVersion()"),
    "deferred": (None, "from @DRIVER_PARENT@ import @DRIVER_LEAF@ as inner", "inner.cuDriverGetVersion()"),
}
EXCLUSIVE = ("absolute", "from")
WORDS = ["cuda", "driver", "runtime", "bindings", "device", "stream", "memory", "event", "graph", "x"]


def random_text(rng):
    kind = rng.randrange(7)
    if kind == 0:
        return ""
    if kind == 1:  # a mapped module's name in prose
        return "see %s for %s" % (rng.choice(["@CYDRIVER@", "@CYRUNTIME@", "@CYNVRTC@", "@DRIVER@"]),
                                  rng.choice(WORDS))
    if kind == 2:  # exactly a module name, as importlib would be given
        return rng.choice(["@DRIVER@", "@CYDRIVER@", "@CYNVRTC@"])
    if kind == 3:  # non-ASCII
        return "".join(rng.choice("aé€𝄞ß字") for _ in range(rng.randrange(1, 40)))
    if kind == 4:  # long
        return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(40, 120)))
    return "_".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 6)))


def version(text):
    return tuple(int(x) for x in text.split("."))


def random_build(rng, cy, python):
    """build_corpus.build_ext's keywords for one random build, and its
    name. Each draw is independent: the space is their product."""
    kw, name = {}, []
    flags = rng.choice(FLAGS)
    if flags:
        kw["flags"] = flags
        name.append(" ".join(flags))
    if rng.random() < 0.3:
        kw["cplus"] = True
        name.append("C++")
    defines = []
    # not for Cython 3.2 in C++: its module state does not compile under
    # clang for CPython 3.13 (copies of std::atomic, seed 1467)
    if cy >= "3.1" and not (kw.get("cplus") and cy.startswith("3.2.")) and rng.random() < 0.15:
        defines.append("CYTHON_USE_MODULE_STATE=1")
    # RAPIDS' cp311-abi3; not with module state, which Cython 3.2.9 does not
    # compile for the 3.11 limited API under CPython 3.12+ headers
    # (Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED, seed 1116)
    if cy >= "3.1" and version(python) >= (3, 11) and not defines and rng.random() < 0.2:
        defines.append("Py_LIMITED_API=0x030B0000")
    if rng.random() < 0.1:
        defines.append("CYTHON_PEP489_MULTI_PHASE_INIT=0")
    if cy >= "3.2" and rng.random() < 0.3:  # plain, or the other compression the C supports
        defines.append("CYTHON_COMPRESS_STRINGS=%d" % rng.choice([0, 2 if cy < "3.3" else 1]))
    if defines:
        kw["defines"] = defines
        name += defines
    # the shared utility module is built once per Cython, without the
    # limited API, whose consumers then refuse its types (seed 1485)
    if cy >= "3.3" and not any(d.startswith("Py_LIMITED_API") for d in defines) and rng.random() < 0.2:
        kw["shared"] = True
        name.append("--shared")
    if rng.random() < 0.2:
        kw["post"] = [("strip", "--strip-unneeded")]
        name.append("strip")
    return kw, ", ".join(name) or "default build"


def random_imports(rng):
    """The Python-level import forms of one seed (none at all a quarter of
    the time)."""
    if rng.random() < 0.25:
        return []
    forms = [f for f in sorted(PYIMPORTS) if rng.random() < 0.35]
    if all(f in forms for f in EXCLUSIVE):
        forms.remove(rng.choice(EXCLUSIVE))
    return forms


def random_cimports(rng):
    """One to three provider modules, and a nonempty subset of each one's
    names."""
    modules = rng.sample(MODULES, rng.randrange(1, len(MODULES) + 1))
    funcs = []
    for module in modules:
        mine = sorted(f for f in CIMPORTS if CIMPORTS[f][0] == module)
        funcs += rng.sample(mine, rng.randrange(1, len(mine) + 1))
    return sorted(funcs)


def generate(seed):
    """One seed's consumer: {"source" (@NAME@ placeholders), "cython",
    "python" (X.Y), "build" (build_ext's keywords; "shared": built against
    Cython's shared utility module), "describe"}."""
    rng = random.Random(seed)
    python = rng.choice(PYTHONS)
    cy = rng.choice([c for c in CYTHONS if version(python) < version(CYTHON_BEFORE.get(c, "4"))])
    build, describe = random_build(rng, cy, python)
    funcs = random_cimports(rng)
    forms = random_imports(rng)
    consts = [random_text(rng) for _ in range(rng.randrange(1, 12))]
    blobs = [random_text(rng).encode("utf-8") for _ in range(rng.randrange(0, 4))]
    lines = ["# random consumer, seed %d (samples/random_consumer.py)" % seed]
    for module in MODULES:
        names = [f for f in funcs if CIMPORTS[f][0] == module]
        names += [s for f in names for s in SUPPORT.get(f, [])]
        if names:
            lines.append("from %s cimport %s" % (module, ", ".join(sorted(set(names)))))
    lines += [PYIMPORTS[f][0] for f in forms if PYIMPORTS[f][0]]
    lines.append("CONSTS = (%s,)" % ", ".join(repr(c) for c in consts))
    lines.append("BLOBS = (%s)" % "".join(repr(b) + ", " for b in blobs))
    lines += ["", "", "def observe():"] + ["    " + l for l in LOCALS]
    if "cuGraphicsGLRegisterBuffer" in funcs:
        lines += ["    cdef CUgraphicsResource res = NULL", "    cdef GLuint buf = 7"]
    lines += ["    " + PYIMPORTS[f][1] for f in forms if PYIMPORTS[f][1]]
    lines.append("    out = {}")
    lines += ["    " + CIMPORTS[f][1] for f in funcs]
    lines += ["    out['import %s'] = %s" % (f, PYIMPORTS[f][2]) for f in forms]
    lines += ["    out['CONSTS'] = CONSTS", "    out['BLOBS'] = BLOBS", "    return out", ""]
    describe = "Cython %s, CPython %s, %s" % (cy, python, describe)
    return {"source": "\n".join(lines), "cython": cy, "python": python, "build": build, "describe": describe}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    spec = generate(int(sys.argv[1]))
    print("# " + spec["describe"])
    print(spec["source"])
