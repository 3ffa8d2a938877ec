#!/usr/bin/env python3
"""Random corpus consumers, for differential testing (Csmith-style).

A seed gives one consumer: a random subset of the providers' cimported
functions, variable and type, a random set of Python-level imports, and
module-level string and bytes constants of many lengths and kinds (ASCII,
non-ASCII, empty, long, some naming the mapped modules in prose), built by
a random Cython version with a random compiler variant. The same source is
built against both layouts (the names substituted as in the corpus), so
that the consumer built against the target layout is the oracle of a
patched one: `observe()` must return the same from both
(tests/python/test_random_consumers.py).

usage: random_consumer.py SEED          prints the source (bindings layout)
"""
import random
import sys

CYTHONS = ["0.29.37", "3.0.12", "3.1.8", "3.2.9", "3.3.1"]
# compiler variants of build_corpus.py that every Cython here builds
FLAGS = [None, ["gcc", "-O0"], ["gcc", "-Os"], ["gcc", "-O2", "-fno-plt"], ["gcc", "-O3"], ["clang", "-O2"]]

# what each cimport needs declared and how observe() calls it
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
}
# names the calls need besides the function itself
SUPPORT = {"cuGraphicsGLRegisterBuffer": ["CUgraphicsResource", "GLuint"],
           "cudaMemcpyAsync": ["cudaStream_t", "cudaMemcpyDefault"]}
# Python-level imports (statement, expression observe() reports); a
# `from` import of the driver module's parent works in both layouts
PYIMPORTS = [
    ("from @DRIVER_PARENT@ import @DRIVER_LEAF@", "@DRIVER_LEAF@.__name__"),
    ("from @DRIVER@ import cuDriverGetVersion", "cuDriverGetVersion()"),
]
WORDS = ["cuda", "driver", "runtime", "bindings", "device", "stream", "memory", "event", "graph", "x"]


def random_text(rng):
    kind = rng.randrange(7)
    if kind == 0:
        return ""
    if kind == 1:  # a mapped module's name in prose
        return "see %s for %s" % (rng.choice(["@CYDRIVER@", "@CYRUNTIME@", "@DRIVER@"]), rng.choice(WORDS))
    if kind == 2:  # exactly a module name, as importlib would be given
        return rng.choice(["@DRIVER@", "@CYDRIVER@"])
    if kind == 3:  # non-ASCII
        return "".join(rng.choice("aé€𝄞ß字") for _ in range(rng.randrange(1, 40)))
    if kind == 4:  # long
        return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(40, 120)))
    return "_".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 6)))


def generate(seed):
    """(source with @NAME@ placeholders, cython version, compiler flags)."""
    rng = random.Random(seed)
    cy = rng.choice(CYTHONS)
    flags = rng.choice(FLAGS)
    funcs = sorted(rng.sample(sorted(CIMPORTS), rng.randrange(1, len(CIMPORTS) + 1)))
    pyimports = [p for p in PYIMPORTS if rng.random() < 0.5]
    consts = [random_text(rng) for _ in range(rng.randrange(1, 12))]
    blobs = [random_text(rng).encode("utf-8") for _ in range(rng.randrange(0, 4))]
    lines = ["# random consumer, seed %d (samples/random_consumer.py)" % seed]
    for module in ("@CYDRIVER@", "@CYRUNTIME@"):
        names = [f for f in funcs if CIMPORTS[f][0] == module]
        names += [s for f in names for s in SUPPORT.get(f, [])]
        if names:
            lines.append("from %s cimport %s" % (module, ", ".join(sorted(set(names)))))
    lines += [stmt for stmt, _ in pyimports]
    lines.append("CONSTS = (%s,)" % ", ".join(repr(c) for c in consts))
    lines.append("BLOBS = (%s)" % "".join(repr(b) + ", " for b in blobs))
    lines += ["", "", "def observe():", "    cdef int n = 0", "    cdef int m = 0",
              "    cdef CUgraphicsResource res = NULL" if "cuGraphicsGLRegisterBuffer" in funcs else "",
              "    cdef GLuint buf = 7" if "cuGraphicsGLRegisterBuffer" in funcs else "",
              "    cdef char src[4]", "    cdef char dst[4]", "    src[:] = [1, 2, 3, 4]", "    out = {}"]
    lines += ["    " + CIMPORTS[f][1] for f in funcs]
    lines += ["    out['import %d'] = %s" % (i, expr) for i, (_, expr) in enumerate(pyimports)]
    lines += ["    out['CONSTS'] = CONSTS", "    out['BLOBS'] = BLOBS", "    return out", ""]
    return "\n".join(l for l in lines if l != "") + "\n", cy, flags


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    print(generate(int(sys.argv[1]))[0])
