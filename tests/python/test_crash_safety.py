"""Crash safety: cypatch killed with SIGKILL at random moments while it
retargets cuda-python's 37.8 MB driver module leaves the target either the
complete old file or the complete new one, for -o and --in-place."""
import hashlib
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

from conftest import CYPATCH, MANIFEST

BIG = os.path.join(MANIFEST["cuda_python"]["bindings"]["tree"], "cuda", "bindings",
                   "driver" + MANIFEST["ext_suffix"])
RUNS = int(os.environ.get("CYPATCH_KILL_RUNS", "8"))


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The complete new file (the output is reproducible) and how long it takes."""
    out = tmp_path_factory.mktemp("reference") / "driver.so"
    t0 = time.monotonic()
    subprocess.run([CYPATCH, "--target-layout", "legacy", "-o", str(out), BIG], check=True,
                   stdout=subprocess.DEVNULL)
    return digest(str(out)), time.monotonic() - t0


@pytest.mark.parametrize("mode", ["-o", "--in-place"])
def test_sigkill_leaves_the_old_file_or_the_new_one(mode, reference, tmp_path):
    new, took = reference
    old = digest(BIG)
    rng = random.Random("cypatch-%s" % mode)
    killed_while_running = 0
    outcomes = set()
    for i in range(RUNS):
        d = tmp_path / str(i)
        d.mkdir()
        target = d / "driver.so"
        shutil.copyfile(BIG, target)  # the old file, in both modes
        if mode == "-o":
            args = [CYPATCH, "--target-layout", "legacy", "-o", str(target), BIG]
        else:
            args = [CYPATCH, "--target-layout", "legacy", "--in-place", str(target)]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # a moment inside the run as long as the reference run took (a fixed
        # first 50 ms missed most of a run once a patch took 0.12 s)
        time.sleep(rng.uniform(0.02, 0.95) * took)
        if proc.poll() is None:
            killed_while_running += 1
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = digest(str(target))
        assert now in (old, new), "run %d: the target is neither the old file nor the new one" % i
        outcomes.add("old" if now == old else "new")
        # what a kill can leave besides the target is a temporary of cypatch's own
        assert all(n == "driver.so" or n.startswith(".cypatch-") for n in os.listdir(d))
    assert killed_while_running >= RUNS // 2, "too few kills landed while cypatch ran"
