"""Differential testing with random consumers (samples/random_consumer.py):
each seed's source is built against both layouts; the one built against the
other layout is patched to the target (and with fallback), and must observe
exactly what the one built against the target observes: every cimported
function, variable and type called through its slot, every module-level
string and bytes constant, every Python-level import. A refusal is allowed:
exit 2, one line, nothing written. A failure prints the seed and the command
that replays it (docs/testing.md).

CYPATCH_RANDOM_N seeds (12 by default, what CI runs) from
CYPATCH_RANDOM_SEED (1 by default) on, the seeds in REGRESSIONS and the
consumers in random_regressions/. Each seed is built and run for the
CPython it draws, with our providers built for that CPython (skipped, with
the reason, where this machine lacks it).
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, MANIFEST, ROOT, assert_refused, cypatch

sys.path.insert(0, os.path.join(ROOT, "samples"))
import build_corpus  # noqa: E402
import build_pythons  # noqa: E402
import random_consumer  # noqa: E402

PY = sys.executable

N = int(os.environ.get("CYPATCH_RANDOM_N", "12"))
FIRST = int(os.environ.get("CYPATCH_RANDOM_SEED", "1"))
# seeds that once failed, run whatever the range: 1042, 1090, 1173 (Cython
# 3.0.12 built by clang: a module's name passed to an import is also a str
# or bytes constant's text, one merged literal, and the retarget changed
# it in place, leaving the string table's length: 'cuda.bindi'); 1138
# (module state, gcc -O3: the names' offset was looked for after the
# import, and a stack slot's displacement equal to it took the patch;
# 1362: the same under CPython 3.9, where the output crashed at import);
# 2309 (Cython 3.2.9, clang -O2, C++, limited API: the bytes loop unrolled
# into calls with the lengths as immediates, and the array's unread copy
# of them took the patch: the output imported the name 'n'); 2705
# (Cython 3.2.9, gcc -O2 -fno-plt: the bytes entries folded into calls
# through the GOT went unseen, and a literal of the provider's names fit
# instead: `-t legacy` said "nothing to do" on a bindings build)
REGRESSIONS = [1042, 1090, 1138, 1173, 1362, 2309, 2705, 1028, 1371]
# seeds whose every patch was once refused although the scan can follow
# them (Cython 3.3.1 built by clang): each must be patched, not refused
MUST_PATCH = {
    1028: "clang -Os lays the LZSS decoder's check of the input consumed out past its error paths",
    1371: "clang places the bytes length array right after the str one: a str array one entry "
          "longer fits the same lengths, and no loop runs its count",
    2705: "gcc -fno-plt calls PyBytes_FromStringAndSize through its GOT slot, with the lengths of the "
          "bytes entries folded into the calls",
}
# consumers of the generator before this one that once failed, kept as
# source (random_regressions/: their first line says how they were built)
FROZEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_regressions")
SEEDS = list(range(FIRST, FIRST + N)) + [s for s in REGRESSIONS if not FIRST <= s < FIRST + N] + \
    sorted(f[:-len(".pyx.in")] for f in os.listdir(FROZEN))
OTHER = {"bindings": "legacy", "legacy": "bindings"}
HOST = "%d.%d" % sys.version_info[:2]

OBSERVE = """
import importlib, json, sys
m = importlib.import_module(sys.argv[1])
out = m.observe()
print(json.dumps({k: (list(map(repr, v)) if isinstance(v, tuple) else repr(v)) for k, v in out.items()}))
"""


def observe(so, paths, python):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(so)] + paths), PYTHONNOUSERSITE="1")
    name = os.path.basename(so).split(".")[0]
    proc = subprocess.run([python, "-c", OBSERVE, name], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        return {"error": last or ("killed by signal %d" % -proc.returncode if proc.returncode < 0
                                  else "exit status %d, nothing on stderr" % proc.returncode)}
    return json.loads(proc.stdout)


class Interpreter:
    """A CPython the seeds are built for: its executable, build_corpus's
    Target, and our providers built for it, per layout."""

    def __init__(self, version):
        self.version = version
        if version == HOST:
            self.exe, self.target, self.sites = PY, build_corpus.HOST, MANIFEST["providers"]
            return
        self.exe = build_pythons.find(version)
        if not self.exe:
            return
        self.target = build_corpus.target_of(self.exe)
        self.sites = {layout: build_corpus.build_provider_site(CORPUS, layout, "%s-py%s" % (layout, version),
                                                               target=self.target)[0]
                      for layout in ("bindings", "legacy")}


def tally(seed, built_as, mode, proc):
    """A line for a long run's count (CYPATCH_RANDOM_LOG names the file):
    the seed's build, the mode, cypatch's exit status and its refusal."""
    if os.environ.get("CYPATCH_RANDOM_LOG"):
        with open(os.environ["CYPATCH_RANDOM_LOG"], "a") as f:
            f.write(json.dumps({"seed": seed, "built_as": built_as, "mode": mode, "rc": proc.returncode,
                                "describe": spec_of(seed)["describe"], "stderr": proc.stderr.strip()}) + "\n")


def spec_of(seed):
    """random_consumer.generate's answer for a seed, or for a frozen one."""
    if isinstance(seed, int):
        return random_consumer.generate(seed)
    source = open(os.path.join(FROZEN, seed + ".pyx.in")).read()
    cy, flags = source.split("\n", 1)[0].split(": Cython ")[1].split(", ")
    return {"source": source, "cython": cy, "python": HOST, "build": {"flags": flags.split()},
            "describe": "Cython %s, CPython %s, %s" % (cy, HOST, flags)}


@pytest.fixture(scope="module")
def built():
    """seed -> {"python": Interpreter, "paths": layout -> sys.path entries
    the import needs, layout -> .so or the reason it did not build}."""
    interpreters = {}
    todo, out = [], {}
    for seed in SEEDS:
        spec = spec_of(seed)
        py = interpreters.get(spec["python"]) or interpreters.setdefault(spec["python"], Interpreter(spec["python"]))
        out[seed] = {"python": py}
        if not py.exe:
            continue
        kw = dict(spec["build"])
        shared = []
        if kw.pop("shared", False):
            shared = [build_corpus.build_shared_module(CORPUS, spec["cython"], py.target)]
            kw["cython_args"] = ["--shared=" + build_corpus.SHARED_NAME]
        for layout in ("bindings", "legacy"):
            out[seed].setdefault("paths", {})[layout] = [py.sites[layout]] + shared
            dest = os.path.join(CORPUS, "random", str(seed), layout)
            todo.append(({"id": "random/%s/%s" % (seed, layout), "seed": seed, "layout": layout,
                          "cython": spec["cython"]},
                         dict(out_dir=dest, name="rnd%s" % seed, source=build_corpus.substitute(spec["source"], layout),
                              cython=spec["cython"], includes=[py.sites[layout]], target=py.target, **kw)))
    for meta in build_corpus.build_all(CORPUS, todo):
        out[meta["seed"]][meta["layout"]] = meta["so"] or meta["skipped"]
    return out


def replay(seed):
    how = "CYPATCH_RANDOM_SEED=%d CYPATCH_RANDOM_N=1 " % seed if isinstance(seed, int) else ""
    return "%s; replay: %spytest tests/python/test_random_consumers.py" % (spec_of(seed)["describe"], how)


@pytest.mark.parametrize("mode", ["retarget", "fallback"])
@pytest.mark.parametrize("built_as", ["bindings", "legacy"])
@pytest.mark.parametrize("seed", SEEDS)
def test_patched_consumer_observes_what_one_built_for_the_target_does(seed, built_as, mode, built, tmp_path):
    py = built[seed]["python"]
    if not py.exe:
        pytest.skip("seed %s is built for CPython %s, which this machine lacks (build_pythons.find)" % (seed, py.version))
    so = built[seed][built_as]
    assert so and so.endswith(".so"), "seed %s did not build: %s (%s)" % (seed, so, replay(seed))
    target = OTHER[built_as]
    dest = str(tmp_path / os.path.basename(so))
    proc = cypatch("--target-layout", target if mode == "retarget" else "fallback", "-o", dest, so)
    tally(seed, built_as, mode, proc)
    assert seed not in MUST_PATCH or proc.returncode == 0, (MUST_PATCH.get(seed), proc.stderr, replay(seed))
    if proc.returncode:
        assert_refused(proc, "", dest)
        return
    envs = [target] if mode == "retarget" else [target, built_as]
    for layout in envs:
        paths = built[seed]["paths"][layout]
        want = observe(built[seed][layout], paths, py.exe)
        got = observe(dest, paths, py.exe)
        assert "error" not in want, (want, replay(seed))
        if mode == "fallback" or "the fallback stub covers it" in proc.stdout:
            # the stub rewrites no name: the constants stay the original's
            own = observe(so, built[seed]["paths"][built_as], py.exe)
            want.update({k: own[k] for k in ("CONSTS", "BLOBS")})
        assert got == want, "seed %s, built against %s, %s, under %s: %s\n%s" % (
            seed, built_as, mode, layout,
            {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)},
            replay(seed))
