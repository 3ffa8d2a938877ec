"""The check's shortcut on real wheels. The check walks again only the
functions an edit changed and takes the input's walk for the rest
(scan/scan_splice.c); `--full-check` walks all of the output's code as well
and fails with exit 70 if the two walks disagree. For every wheel of the
corpus (the real wheels from PyPI, providers included) and every mode,
repair with --full-check must give the same exit code, messages and wheel
bytes as repair without it. tests/unit/walk_crosscheck.c compares every
finding for every corpus module and real cuda-python module; this covers
the extensions inside real wheels.
"""
import glob
import hashlib
import os
import subprocess

import pytest

from conftest import CYPATCH, MANIFEST

WHEELS = sorted(glob.glob(os.path.join(os.path.dirname(MANIFEST["real_wheels"]["numpy"]), "*.whl")))


def repair(wheel, mode, out, *extra):
    proc = subprocess.run([CYPATCH, "repair", "--no-fsync", *extra, "-t", mode, "-w", str(out), wheel],
                          capture_output=True, text=True, timeout=600)
    made = sorted(glob.glob(os.path.join(str(out), "*.whl")))
    digest = [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in made]
    text = (proc.stdout + proc.stderr).replace(str(out), "OUT")
    return proc.returncode, text, [os.path.basename(p) for p in made], digest


@pytest.mark.parametrize("mode", ["legacy", "bindings", "fallback"])
@pytest.mark.parametrize("wheel", WHEELS, ids=os.path.basename)
def test_full_check_agrees_with_the_shortcut(wheel, mode, tmp_path):
    short = repair(wheel, mode, tmp_path / "short")
    full = repair(wheel, mode, tmp_path / "full", "--full-check")
    assert full[0] != 70, full[1]
    assert full == short


def test_the_wheels_are_there():
    assert len(WHEELS) >= 20, WHEELS
