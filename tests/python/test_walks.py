"""The code walk's two proofs on the extensions inside real wheels (the C
cross-checks cover the corpus's modules; these, every wheel of the corpus:
the real wheels from PyPI, providers included).

- The check walks again only the functions an edit changed and takes the
  input's walk for the rest (scan/scan_splice.c); `--full-check` walks all
  of the output's code as well and fails with exit 70 if the two walks
  disagree. Every wheel is repaired with it in every mode: a repair or a
  refusal (exit 0 or 2), never a disagreement.
- x86-64's walk decodes with Zydis; tests/unit/walk_reference compares it,
  event by event, with the capstone walk it replaced, on every extension
  module of every wheel.
"""
import glob
import os
import subprocess

import zipfile

import pytest

from conftest import CYPATCH, MAIN, MANIFEST

WALK_REFERENCE = os.path.join(os.path.dirname(MAIN), "tests", "walk_reference")

WHEELS = sorted(glob.glob(os.path.join(os.path.dirname(MANIFEST["real_wheels"]["numpy"]), "*.whl")))


def repair(wheel, mode, out, *extra):
    proc = subprocess.run([CYPATCH, "repair", "--no-fsync", *extra, "-t", mode, "-w", str(out), wheel],
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("mode", ["legacy", "bindings", "fallback"])
@pytest.mark.parametrize("wheel", WHEELS, ids=os.path.basename)
def test_full_check_agrees_with_the_shortcut(wheel, mode, tmp_path):
    # --full-check only adds the comparison: where it passes, the output is
    # the one repair writes without it; where the walks differ it exits 70
    code, text = repair(wheel, mode, tmp_path, "--full-check")
    assert code in (0, 2) and "differs from a walk of all its code" not in text, text


def test_the_wheels_are_there():
    assert len(WHEELS) >= 20, WHEELS


def test_zydis_walk_reports_what_the_capstone_walk_did_in_every_wheel(tmp_path):
    n = 0
    for wheel in WHEELS:
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if ".so" in os.path.basename(name):
                    z.extract(name, tmp_path / os.path.basename(wheel))
                    n += 1
    proc = subprocess.run([WALK_REFERENCE, str(tmp_path)], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert n >= 50 and " 0 x86-64 modules" not in proc.stdout, (n, proc.stdout)
