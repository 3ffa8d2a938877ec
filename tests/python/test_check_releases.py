"""`cypatch check --release SPEC` (docs/releases.md): check under every
release cypatch knows, from the knowledge base compiled in instead of
files. Its verdict on every real wheel of the corpus under every release
must be what `check --against` says with that release's wheel unpacked
(provider-releases/site/), the files the knowledge base was made from;
test_real_wheels.py judges both against what importing does, for the
wheels as shipped and repaired in every mode, in its six environments. SPEC selects the
releases pip would (packaging's SpecifierSet), and a wheel's own
requirement is set against the verdicts: its floors that admit a failing
release are named.
"""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from packaging.specifiers import SpecifierSet

from conftest import CORPUS, CYPATCH, MAIN, MANIFEST, ROOT, cypatch

sys.path.insert(0, os.path.join(ROOT, "samples"))
from build_corpus import PROVIDER_RELEASES  # noqa: E402

REAL = MANIFEST.get("real_corpus", [])
SITES = os.path.join(CORPUS, "provider-releases", "site")


def wheel_id(w):
    return "%s-%s" % (w["name"], w["version"])


def verdicts(extensions):
    """Each extension's verdict: "binds", its first failure, or why it is
    skipped (a per-CUDA-major tree)."""
    return {e["file"]: "skipped: " + e["skipped"] if "skipped" in e else
            e["failures"][0] if e["failures"] else "binds" for e in extensions}


def against(wheel, dist, version):
    """check --against the release's files (the build under test alone:
    the sanitized twin runs the --release side, and --against in
    test_check and test_real_wheels)."""
    site = os.path.join(SITES, "%s-%s" % (dist.replace("-", "_"), version))
    p = subprocess.run([MAIN, "check", "--json", "--against", site, wheel], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return p.returncode, verdicts(json.loads(p.stdout)["extensions"]) if p.returncode in (0, 1) else p.stderr


@pytest.mark.parametrize("w", REAL, ids=[wheel_id(w) for w in REAL])
def test_check_release_says_what_check_against_its_files_says(w):
    wrong = []
    for form, wheel in [("as shipped", w["wheel"])]:
        p = subprocess.run([CYPATCH, "check", "--json", "--release", "all", wheel], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        with ThreadPoolExecutor(2) as pool:
            files = list(pool.map(lambda r: against(wheel, *r), PROVIDER_RELEASES))
        if p.returncode not in (0, 1):
            # nothing to check: every release says so too, in the same words
            assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
            assert all(rc == 2 for rc, _ in files), (form, p.stderr, files)
            continue
        cells = {(c["distribution"], c["version"]): c for c in json.loads(p.stdout)["releases"]}
        assert p.returncode == (0 if all(c["ok"] for c in cells.values()) else 1)
        for (dist, version), (rc, said) in zip(PROVIDER_RELEASES, files):
            cell = cells.get((dist, version))
            assert cell, "%s: check --release all has no cell for %s %s" % (form, dist, version)
            if (rc, said) != (0 if cell["ok"] else 1, verdicts(cell["extensions"])):
                wrong.append("%s %s under %s %s: --release %s, --against %s" % (
                    wheel_id(w), form, dist, version, verdicts(cell["extensions"]), said))
    assert not wrong, "\n".join(wrong)


def releases_picked(spec, wheel):
    p = cypatch("check", "--json", "--release", spec, wheel)
    assert p.returncode in (0, 1), p.stderr
    return [(c["distribution"], c["version"]) for c in json.loads(p.stdout)["releases"]]


def real_wheel(name, version):
    for w in REAL:
        if (w["name"], w["version"]) == (name, version):
            return w["wheel"]
    pytest.fail("%s %s is not in the real corpus: rerun samples/build_corpus.py" % (name, version))


SPECS = ["cuda-bindings>=12.9,<14", "cuda-bindings==13.*", "cuda-bindings~=12.9.2", "cuda-bindings!=12.9.1,<12.9.4",
         "cuda-python<=12.6.0", "cuda-python>12.5.0", "cuda-python>=12.6.2", "cuda-python", "cuda_Bindings>12.9.2,<=13.0.0",
         "cuda-bindings<13.0a0", "cuda-bindings>=13.0.0a0,<13.1"]


@pytest.mark.parametrize("spec", SPECS)
def test_a_spec_picks_the_releases_pip_would(spec):
    """The releases --release SPEC checks are those packaging's
    SpecifierSet admits, of the distribution SPEC names."""
    wheel = real_wheel("rmm-cu12", "26.10.0")
    dist = spec.split("<")[0].split(">")[0].split("=")[0].split("!")[0].split("~")[0]
    want = [(d, v) for d, v in PROVIDER_RELEASES
            if d == dist.lower().replace("_", "-") and SpecifierSet(spec[len(dist):]).contains(v)]
    assert releases_picked(spec, wheel) == want
    assert releases_picked("all", wheel) == list(PROVIDER_RELEASES)


@pytest.mark.parametrize("args", [["--release", "numpy>=1"], ["--release", "cuda-bindings=>12"],
                                  ["--release", "cuda-bindings>=12,"], ["--release", "all", "--against", SITES],
                                  ["--release", "cuda-bindings>99"]])
def test_a_bad_release_spec_is_a_usage_error(args):
    p = cypatch("check", *args, real_wheel("rmm-cu12", "26.10.0"))
    assert p.returncode == 64 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr)


def requirement(name, version):
    p = cypatch("check", "--json", "--release", "all", real_wheel(name, version))
    assert p.returncode in (0, 1), p.stderr
    return {g["extra"]: g for g in json.loads(p.stdout)["requirement"]}


def test_a_floor_that_admits_a_failing_release_is_named():
    """cuda-core 0.6.0 and 1.2.2 ask `cuda-bindings==12.*` for cu12, which
    admits 12.8.0, where cuda.bindings.cynvvm does not exist yet."""
    for version in ("0.6.0", "1.2.2"):
        cu12 = requirement("cuda-core", version)["cu12"]
        assert cu12["lines"] == ['cuda-bindings[all]==12.*; extra == "cu12"'], cu12
        assert "cuda-bindings 12.8.0" in cu12["admits_failing"], cu12
    p = cypatch("check", "--release", "all", real_wheel("cuda-core", "0.6.0"))
    assert "floor too low: it admits cuda-bindings 12.8.0, where the wheel fails" in p.stdout, p.stdout


def test_a_floor_that_forbids_releases_where_the_wheel_binds_is_named():
    """rmm-cu12 26.10.0 asks cuda-bindings>=12.9.2,<13.0, and binds from
    11.8.6 on (it cimports nothing added later)."""
    g = requirement("rmm-cu12", "26.10.0")[""]
    assert g["lines"] == ["cuda-bindings<13.0,>=12.9.2"], g
    assert g["admits_failing"] == [], g
    assert {"cuda-bindings 12.9.0", "cuda-bindings 12.9.1", "cuda-bindings 13.0.0"} <= set(g["forbids_binding"]), g


# -- cypatch requires: the lines repair would write (docs/repair.md) ---------

def test_requires_prints_the_lines_and_changes_nothing(tmp_path):
    wheel = real_wheel("rmm-cu12", "26.10.0")
    before = open(wheel, "rb").read()
    p = cypatch("requires", wheel)
    assert p.stdout.splitlines()[1:] == ["  - cuda-bindings<13.0,>=12.9.2", "  + cuda-python>=12.6.2.post1,<13"], p.stdout
    assert open(wheel, "rb").read() == before
    both = json.loads(cypatch("requires", "--json", wheel, real_wheel("cuda-core", "0.6.0")).stdout)
    assert [d["changed"] for d in both] == [True, True], both
    cu12 = [l for l in both[1]["lines"] if "cu12" in l["before"]]
    assert cu12 and "12.8.0" not in cu12[0]["after"] and ">=12.9.0" in cu12[0]["after"], cu12


@pytest.mark.parametrize("args,rc", [([], 64), (["--bogus"], 64), (["/nonexistent.whl"], 2)])
def test_requires_usage_and_bad_input(args, rc):
    p = cypatch("requires", *args, check=rc)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_requires_goes_on_after_a_wheel_it_cannot_predict():
    """cuvs-cu12 26.10.0 references no mapped module (nothing to check):
    one line for it, exit 2, and the next wheel is still told."""
    import glob
    cuvs = glob.glob(os.path.join(CORPUS, "wheels", "cuvs_cu12-26.10.0-*.whl"))
    assert cuvs, "cuvs-cu12 26.10.0 is not in the corpus: rerun samples/build_corpus.py"
    p = cypatch("requires", cuvs[0], real_wheel("rmm-cu12", "26.10.0"), check=2)
    assert len(p.stderr.strip().splitlines()) == 1 and "nothing to check" in p.stderr, p.stderr
    assert "+ cuda-python>=12.6.2.post1,<13" in p.stdout, p.stdout
