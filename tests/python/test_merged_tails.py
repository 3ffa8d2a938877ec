"""A provider's module name that the linker merged as the tail of a longer
string (scan/scan_strings.c, plan/plan.c owns_bytes).

GNU ld merges a string literal that ends another one into it: the
`PyImport_ImportModule("cuda.bindings.cydriver")` that Cython writes for a
cimport points into the middle of a user's "Xcuda.bindings.cydriver" (or
"see cuda.bindings.cydriver"). The scan must find that tail as a literal
of its own even where what stands before it is a name's byte (before the
fix it reported nothing to do, exit 0, and the module still failed under
legacy), and the plan must not rewrite it in place, where it would change
the user's string too. Each module is built here, against both layouts,
with Cython 0.29 to 3.3; the patched one must observe under each provider
what the one built for that provider observes.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, MANIFEST, ROOT, cypatch

sys.path.insert(0, os.path.join(ROOT, "samples"))
import build_corpus  # noqa: E402

CYTHONS = ("0.29.37", "3.0.12", "3.1.8", "3.3.1")
# off a name's boundary the user's string is not a mention of the module,
# and stays as written; on one it is, and is written for the layout (as
# building for the other layout would write it)
PREFIXES = {"name": "Xcuda.bindings.cydriver", "space": "see @CYDRIVER@"}
SOURCE = '''
from @CYDRIVER@ cimport cuInit
cdef extern from *:
    """
    static const char *cypatch_tail = "%s";
    """
    const char *cypatch_tail

def run():
    return {"tail": cypatch_tail, "cuInit": cuInit(3)}
'''
OBSERVE = "import json, mtail; r = mtail.run(); print(json.dumps({'tail': r['tail'].decode(), 'cuInit': r['cuInit']}))"
OTHER = {"bindings": "legacy", "legacy": "bindings"}


@pytest.fixture(scope="module")
def built():
    """(cython, prefix, layout) -> .so"""
    todo = []
    for cy in CYTHONS:
        for key, text in PREFIXES.items():
            for layout in ("bindings", "legacy"):
                out = os.path.join(CORPUS, "merged_tails", cy, key, layout)
                todo.append(({"cython": cy, "key": "/".join((cy, key, layout))},
                             dict(out_dir=out, name="mtail", source=build_corpus.substitute(SOURCE % text, layout),
                                  cython=cy, includes=[MANIFEST["providers"][layout]], flags=None)))
    return {meta["key"]: meta["so"] or meta["skipped"] for meta in build_corpus.build_all(CORPUS, todo)}


def observe(so, layout):
    site = MANIFEST["providers"][layout]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(so), site]), PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, "-c", OBSERVE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.strip().splitlines()[-1:]
    return json.loads(proc.stdout)


def merged(so):
    """Whether the linker merged the module's name into the user's string:
    the name's only copy is a tail."""
    data = open(so, "rb").read()
    return data.count(b"cuda.bindings.cydriver\0") == 1 and data.count(b"\0cuda.bindings.cydriver\0") == 0


@pytest.mark.parametrize("mode", ["retarget", "fallback"])
@pytest.mark.parametrize("built_as", ["bindings", "legacy"])
@pytest.mark.parametrize("key", sorted(PREFIXES))
@pytest.mark.parametrize("cy", CYTHONS)
def test_patched_module_observes_what_one_built_for_the_target_does(cy, key, built_as, mode, built, tmp_path):
    so = built["/".join((cy, key, built_as))]
    assert so and so.endswith(".so"), so
    if built_as == "bindings":
        # the premise: one copy of the name, the tail of the user's string
        assert merged(so), "ld did not merge the tail here"
    target = OTHER[built_as]
    dest = str(tmp_path / os.path.basename(so))
    proc = cypatch("--target-layout", target if mode == "retarget" else "fallback", "-o", dest, so)
    assert proc.returncode == 0, proc.stderr
    assert os.path.exists(dest), proc.stdout
    for layout in ([target] if mode == "retarget" else [target, built_as]):
        want = observe(built["/".join((cy, key, layout))], layout)
        if mode == "fallback" or "the fallback stub covers it" in proc.stdout:
            # the stub rewrites no name: the user's string stays the original's
            want["tail"] = observe(so, built_as)["tail"]
        assert observe(dest, layout) == want
