"""Differential testing with random consumers (samples/random_consumer.py):
each seed's source is built against both layouts; the one built against the
other layout is patched to the target (and with fallback), and must observe
exactly what the one built against the target observes: every cimported
function, variable and type called through its slot, every module-level
string and bytes constant, every Python-level import. A refusal is allowed:
exit 2, one line, nothing written. A failure prints the seed and the command
that replays it (docs/testing.md).

CYPATCH_RANDOM_N seeds (12 by default, what CI runs) from
CYPATCH_RANDOM_SEED (1 by default) on, and the seeds in REGRESSIONS.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, MANIFEST, ROOT, assert_refused, cypatch

sys.path.insert(0, os.path.join(ROOT, "samples"))
import build_corpus  # noqa: E402
import random_consumer  # noqa: E402

PY = sys.executable
N = int(os.environ.get("CYPATCH_RANDOM_N", "12"))
FIRST = int(os.environ.get("CYPATCH_RANDOM_SEED", "1"))
# seeds that once failed, run whatever the range: 706 (a str constant
# 'driver' beside `from cuda.bindings import driver`, renamed with the leaf);
# 723 (a plain blob whose start two instructions build: refused by the
# check until every one moved with it, plan_blob.c redirect_blob)
REGRESSIONS = [706, 723]
SEEDS = list(range(FIRST, FIRST + N)) + [s for s in REGRESSIONS if not FIRST <= s < FIRST + N]
OTHER = {"bindings": "legacy", "legacy": "bindings"}

OBSERVE = """
import importlib, json, sys
m = importlib.import_module(sys.argv[1])
out = m.observe()
print(json.dumps({k: (list(map(repr, v)) if isinstance(v, tuple) else repr(v)) for k, v in out.items()}))
"""


def observe(so, site):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(so), site]), PYTHONNOUSERSITE="1")
    name = os.path.basename(so).split(".")[0]
    proc = subprocess.run([PY, "-c", OBSERVE, name], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1]}
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def built():
    """seed -> layout -> .so (or the reason it did not build)."""
    cache = CORPUS
    todo = []
    for seed in SEEDS:
        source, cy, flags = random_consumer.generate(seed)
        for layout in ("bindings", "legacy"):
            out = os.path.join(cache, "random", str(seed), layout)
            todo.append(({"seed": seed, "layout": layout, "cython": cy},
                         dict(out_dir=out, name="rnd%d" % seed, source=build_corpus.substitute(source, layout),
                              cython=cy, includes=[MANIFEST["providers"][layout]], flags=flags)))
    out = {}
    for meta in build_corpus.build_all(cache, todo):
        out.setdefault(meta["seed"], {})[meta["layout"]] = meta["so"] or meta["skipped"]
    return out


def replay(seed):
    _, cy, flags = random_consumer.generate(seed)
    return "Cython %s, %s; replay: CYPATCH_RANDOM_SEED=%d CYPATCH_RANDOM_N=1 pytest tests/python/" \
           "test_random_consumers.py" % (cy, " ".join(flags or ["default flags"]), seed)


@pytest.mark.parametrize("mode", ["retarget", "fallback"])
@pytest.mark.parametrize("built_as", ["bindings", "legacy"])
@pytest.mark.parametrize("seed", SEEDS)
def test_patched_consumer_observes_what_one_built_for_the_target_does(seed, built_as, mode, built, tmp_path):
    so = built[seed][built_as]
    assert so and so.endswith(".so"), "seed %d did not build: %s (%s)" % (seed, so, replay(seed))
    target = OTHER[built_as]
    dest = str(tmp_path / os.path.basename(so))
    proc = cypatch("--target-layout", target if mode == "retarget" else "fallback", "-o", dest, so)
    if proc.returncode:
        assert_refused(proc, "", dest)
        return
    envs = [target] if mode == "retarget" else [target, built_as]
    for layout in envs:
        site = MANIFEST["providers"][layout]
        want = observe(built[seed][layout], site)
        got = observe(dest, site)
        assert "error" not in want, (want, replay(seed))
        if mode == "fallback" or "the fallback stub covers it" in proc.stdout:
            # the stub rewrites no name: the constants stay the original's
            own = observe(so, MANIFEST["providers"][built_as])
            want.update({k: own[k] for k in ("CONSTS", "BLOBS")})
        assert got == want, "seed %d, built against %s, %s, under %s: %s\n%s" % (
            seed, built_as, mode, layout,
            {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)},
            replay(seed))
