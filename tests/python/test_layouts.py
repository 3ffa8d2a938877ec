"""Property tests over randomized link layouts, in the manner of patchelf's
rewrite tests: a corpus consumer's C (real Cython output) is compiled and
linked with random settings, patched in every mode, and must import and
call through its provider under LD_BIND_NOW=1 (every slot bound at load).

Settings drawn per layout: -z separate-code / noseparate-code, -z relro /
norelro, -z max-page-size 4K / 64K / 2M, --hash-style gnu / sysv / both,
-z pack-relative-relocs or not, -fcf-protection full / none, -O0 / -O2 /
-Os, -g or not, stripped or not.

CYPATCH_LAYOUTS sets how many (25 by default), CYPATCH_LAYOUT_SEED the seed
(by default a new one per run, printed in the test ids so that a failure can
be replayed)."""
import hashlib
import json
import os
import random
import subprocess
import sys
import sysconfig

import pytest

from conftest import ENTRIES, MANIFEST, cypatch
from test_imports import EXPECTED, OTHER, RUN_ALL

COUNT = int(os.environ.get("CYPATCH_LAYOUTS", "25"))
SEED = int(os.environ.get("CYPATCH_LAYOUT_SEED", str(random.SystemRandom().randrange(1 << 30))))
SOURCES = [e for e in ENTRIES if e["kind"] == "corpus" and not e.get("variant") and e.get("c")]

SETTINGS = {
    "separate": ["-Wl,-z,separate-code", "-Wl,-z,noseparate-code"],
    "relro": ["-Wl,-z,relro", "-Wl,-z,norelro", "-Wl,-z,relro,-z,now"],
    "page": ["-Wl,-z,max-page-size=0x1000", "-Wl,-z,max-page-size=0x10000", "-Wl,-z,max-page-size=0x200000"],
    "hash": ["-Wl,--hash-style=gnu", "-Wl,--hash-style=sysv", "-Wl,--hash-style=both"],
    "relr": ["", "-Wl,-z,pack-relative-relocs"],
    "cet": ["-fcf-protection=full", "-fcf-protection=none"],
    "opt": ["-O0", "-O2", "-Os"],
    "debug": ["", "-g"],
    "strip": [False, True],
}


def draw(i):
    rng = random.Random("%d/%d" % (SEED, i))
    return rng.choice(SOURCES), {k: rng.choice(v) for k, v in SETTINGS.items()}


# Draws that once failed, kept whatever the seed: (consumer, settings).
REGRESSIONS = [
    # -O2 keeps PyBytes_AS_STRING's assert as a call inside the inlined LZSS
    # loop: the loop's input-consumed check was looked for only before it
    ("3.3.1/legacy/cimports", {"separate": "-Wl,-z,separate-code", "relro": "-Wl,-z,relro,-z,now",
                               "page": "-Wl,-z,max-page-size=0x1000", "hash": "-Wl,--hash-style=gnu",
                               "relr": "-Wl,-z,pack-relative-relocs", "cet": "-fcf-protection=full",
                               "opt": "-O2", "debug": "", "strip": True}),
    # -Os leaves PyBytes_AS_STRING out of line, called between the LZSS
    # buffer's allocation and its decode loop
    ("3.3.1/bindings/cimports-zlib", {"separate": "-Wl,-z,separate-code", "relro": "-Wl,-z,relro",
                                      "page": "-Wl,-z,max-page-size=0x1000", "hash": "-Wl,--hash-style=sysv",
                                      "relr": "", "cet": "-fcf-protection=full", "opt": "-Os", "debug": "",
                                      "strip": False}),
]
BY_ID = {e["id"]: e for e in SOURCES}
LAYOUTS = [(BY_ID[k], s) for k, s in REGRESSIONS if k in BY_ID] + [draw(i) for i in range(COUNT)]
FIXED = len(LAYOUTS) - COUNT


def layout_id(i):
    entry, s = LAYOUTS[i]
    if i < FIXED:
        return "regression%d-%s" % (i, entry["id"].replace("/", "-"))
    return "seed%d-%d-%s" % (SEED, i - FIXED, entry["id"].replace("/", "-"))


def build(entry, s, d):
    include = sysconfig.get_paths()["include"]
    obj, so = os.path.join(d, "m.o"), os.path.join(d, entry["module"] + MANIFEST["ext_suffix"])
    cflags = [f for f in (s["opt"], s["debug"], s["cet"]) if f]
    subprocess.run(["gcc"] + cflags + ["-fPIC", "-I" + include, "-c", entry["c"], "-o", obj], check=True)
    ldflags = [f for f in (s["separate"], s["relro"], s["page"], s["hash"], s["relr"]) if f]
    subprocess.run(["gcc", "-shared"] + ldflags + [obj, "-o", so], check=True)
    if s["strip"]:
        subprocess.run(["strip", "--strip-unneeded", so], check=True)
    return so


def import_and_call(so, entry, layout):
    """The consumer's own calls, through `layout`'s provider, every symbol
    bound at load time."""
    env = dict(os.environ, LD_BIND_NOW="1", PYTHONNOUSERSITE="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(so), MANIFEST["providers"][layout]]))
    proc = subprocess.run([sys.executable, "-c", RUN_ALL, entry["module"], "run"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["run"]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def patch(src, dest, layout):
    """The file that binds to `layout`: dest, or src itself when cypatch
    says it already does (a file the fallback stub serves binds to both)."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    proc = cypatch("--target-layout", layout, "-o", dest, src)
    assert proc.returncode == 0, (layout, proc.stderr)
    if "nothing to do" in proc.stdout:
        assert not os.path.exists(dest)
        return src
    return dest


@pytest.mark.parametrize("i", range(len(LAYOUTS)), ids=layout_id)
def test_random_link_layout(tmp_path, i):
    entry, s = LAYOUTS[i]
    built, other = entry["layout"], OTHER[entry["layout"]]
    want = EXPECTED[entry["module"]]
    so = build(entry, s, str(tmp_path))
    assert import_and_call(so, entry, built) == ["ok", want[built]], s

    # retarget to the other layout, and back: each works under its layout
    there = patch(so, str(tmp_path / "there" / os.path.basename(so)), other)
    assert there != so
    assert import_and_call(there, entry, other) == ["ok", want[other]], s
    back = patch(there, str(tmp_path / "back" / os.path.basename(so)), built)
    assert import_and_call(back, entry, built) == ["ok", want[built]], s

    # the fallback works under both, and a second fallback run is a no-op
    fb = patch(so, str(tmp_path / "fb" / os.path.basename(so)), "fallback")
    assert fb != so
    for layout in (built, other):
        assert import_and_call(fb, entry, layout) == ["ok", want[layout]], (layout, s)
    before = digest(fb)
    proc = cypatch("--target-layout", "fallback", fb, "--in-place")
    assert proc.returncode == 0 and "already fallback-patched" in proc.stdout, proc.stdout + proc.stderr
    assert digest(fb) == before
