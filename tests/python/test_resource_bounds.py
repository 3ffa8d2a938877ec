"""Time and memory against the size of the input (issue 18 case 14; the
SHT_RELR memory bound, case 3, is in test_bad_input.py with the other
refusals). Speed targets are ratios measured in one run, never absolute
times: the rules-at-scale cases time `show` and a fallback patch with N
and 16N mapped modules and require near-linear growth."""
import os
import signal
import subprocess

import pytest

from conftest import CYPATCH, ENTRIES

SAMPLE = next(e["so"] for e in ENTRIES if e["id"] == "3.3.1/bindings/cimports")


def mangled(module):
    """Cython's mangled prefix of a module (patcher/rules.c, cp_mangle_prefix)."""
    return "__pyx_t_" + "".join("%d%s_" % (len(p), p) for p in module.split("."))


def synthetic_rules(path, n):
    """A valid rules file mapping n modules `pkg{i}.cmod{i}` (legacy) to
    `pkg{i}.bindings.cymod{i}` (bindings), each with its mangled pair, as
    the bundled rules list theirs."""
    pairs = [("pkg%d.cmod%d" % (i, i), "pkg%d.bindings.cymod%d" % (i, i)) for i in range(n)]
    with open(path, "w") as f:
        f.write("[layouts]\nlegacy = cuda-python <= 12.6.0, <= 11.8.3\n"
                "bindings = cuda-python >= 12.6.1, >= 11.8.4\n[modules legacy bindings]\n")
        f.writelines("%s = %s\n" % p for p in pairs)
        f.write("[mangled legacy bindings]\n")
        f.writelines("%s = %s\n" % (mangled(a), mangled(b)) for a, b in pairs)
    return path


def measure(args, timeout):
    """(CPU seconds, peak resident bytes) of one cypatch run, from
    /usr/bin/time (a child forked from this process would start with its
    high-water mark, and exec keeps it); (None, 0) when it ran past timeout
    seconds of wall time (it is then killed)."""
    proc = subprocess.Popen(["/usr/bin/time", "-q", "-f", "%U %S %M", CYPATCH] + args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        err = proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # time and cypatch
        proc.communicate()
        return None, 0
    assert proc.returncode == 0, (args, proc.returncode, err)
    user, system, peak = err.splitlines()[-1].split()
    return float(user) + float(system), int(peak) * 1024


SMALL, LARGE = 250, 4000


@pytest.mark.parametrize("command", ["show", "fallback"])
def test_rules_at_scale_are_near_linear(tmp_path, command):
    """`show`, and a fallback patch (whose stub carries every mapped name,
    and whose check scans it), with 250 and 4,000 mapped modules (16 times
    as many): the CPU time may grow at most 48 times (3 x 16; it grew 2 to
    7 times here, the process's fixed costs included; the cubic anchor
    choice took 1.7 s for 250 and 34 s for 1,000 modules, and the fallback
    check, quadratic, 0.05 s for 250 and 7.9 s for 4,000), and the memory at
    most 16 KiB per added module (about 10 here). Each is the best of three
    runs."""
    small = synthetic_rules(str(tmp_path / "small.rules"), SMALL)
    large = synthetic_rules(str(tmp_path / "large.rules"), LARGE)
    out = str(tmp_path / "out.so")

    def args(rules):
        if command == "show":
            return ["show", "--rules", rules, SAMPLE]
        return ["--target-layout", "fallback", "--rules", rules, "-o", out, SAMPLE]

    ratio = 3 * LARGE // SMALL
    t_small = min(measure(args(small), 600)[0] for _ in range(3))
    rss_small = measure(args(small), 600)[1]
    # a floor for a run too quick to time
    bound = ratio * max(t_small, 0.01)
    runs = []
    for _ in range(3):
        runs.append(measure(args(large), bound + 1))
        assert runs[-1][0] is not None, "%d mapped modules ran past %.1f s (%d x the %.2f s of %d)" % (
            LARGE, bound + 1, ratio, t_small, SMALL)
    t_large = min(t for t, _ in runs)
    rss_large = min(r for _, r in runs)
    assert t_large <= bound, (t_small, t_large)
    if "ASAN_OPTIONS" not in os.environ:
        assert rss_large - rss_small <= 16 * 1024 * (LARGE - SMALL), (rss_small, rss_large)
