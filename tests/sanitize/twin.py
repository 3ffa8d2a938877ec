"""Runs one cypatch command twice: first with the sanitized build
(AddressSanitizer, LeakSanitizer, UndefinedBehaviorSanitizer), undoing
what it wrote, then with the build under test, whose result the caller
gets. The two must agree: exit status, stdout, stderr and every file
written, byte for byte; a disagreement (a sanitizer's report is one:
exit 86) is appended to LOG, which the test's teardown reads
(tests/python/conftest.py). So the corpus tests judge the build under test
and hold the sanitized build to the same bytes in one pass, without a
second run of their CPython work.

    python3 -I -S twin.py MAIN SANITIZED LOG ARGS...
    python3 twin.py --env     # the sanitizers' options, as shell exports

What it undoes: the files the command names that exist (the input of an
in-place retarget: restored from a hard link made before), the -o file and
the -w folder (what the sanitized build made there is hashed and removed).
Anything else it wrote is left, for the test to find. Commands whose
output is timed (--timings) are compared on all but stderr; the names of
temporary folders in a report are not compared."""
import os
import stat
import sys
from time import time_ns

# (hashlib, re, shlex and signal are imported where they are needed, and
# subprocess not at all: this script starts once per command of the corpus
# tests, and those imports took 15 ms of each start)

HERE = os.path.dirname(os.path.abspath(__file__))
SANITIZER_ENV = {
    "ASAN_OPTIONS": "exitcode=86:detect_leaks=1",
    "LSAN_OPTIONS": "suppressions=%s:print_suppressions=0" % os.path.join(HERE, "lsan.supp"),
    "UBSAN_OPTIONS": "print_stacktrace=1",
}
VALUED = {"-o", "--output", "-w", "--wheel-dir", "-t", "--target-layout", "--rules", "--against", "--python",
          "--timeout"}


def option_values(args, longs, short):
    """The values of one option in every spelling: -w DIR, -wDIR, --wheel-dir DIR, --wheel-dir=DIR."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a in longs or a == short:
            if i + 1 < len(args):
                out.append(args[i + 1])
            i += 2
            continue
        for name in longs:
            if a.startswith(name + "="):
                out.append(a[len(name) + 1:])
        if short and a.startswith(short) and len(a) > 2 and not a.startswith("--"):
            out.append(a[2:])
        i += 1
    return out


def named_files(args):
    """The arguments that name existing regular files (inputs, and the
    input an in-place retarget replaces)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in VALUED:
            skip = True
            continue
        if not a.startswith("-") and os.path.isfile(a) and not os.path.islink(a):
            out.append(a)
    return out


def digest(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest(), stat.S_IMODE(os.stat(path).st_mode)


def identity(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, stat.S_ISDIR(st.st_mode)


def tree(path):
    """{relative name: (digest, mode)} of a folder's files."""
    out = {}
    for top, _, files in os.walk(path):
        for name in files:
            p = os.path.join(top, name)
            out[os.path.relpath(p, path)] = digest(p)
    return out


class Watch:
    """The paths the command may write, as they were before it ran."""

    def __init__(self, args):
        self.args = args
        self.files = {p: identity(p) for p in named_files(args)}
        self.outputs = {p: identity(p) for p in option_values(args, ("--output",), "-o")}
        self.dirs = {}
        if args[:1] == ["repair"]:
            for d in option_values(args, ("--wheel-dir",), "-w"):
                if os.path.lexists(d) and not os.path.isdir(d):
                    continue  # not a folder: refused, nothing to undo
                self.dirs[d] = ({n: identity(os.path.join(d, n)) for n in os.listdir(d)}
                                if os.path.isdir(d) else None)
        self.links = {}

    def keep(self):
        """A hard link to each existing file the command may replace, so
        that the original (its inode too) can be put back."""
        # (only the top-level retarget replaces a file it reads: a link beside
        # every input would show up in the folders that check and verify read)
        wanted = list(self.files) if self.args[:1] and self.args[0].startswith("-") else []
        wanted += [p for p, was in self.outputs.items() if was and not was[3]]
        wanted += [os.path.join(d, n) for d, names in self.dirs.items() if names
                   for n, was in names.items() if not was[3]]
        for p in wanted:
            link = os.path.join(os.path.dirname(p) or ".", ".twin-%d-%s" % (os.getpid(), os.path.basename(p)))
            try:
                os.link(p, link)
                self.links[p] = link
            except OSError:
                pass  # a folder it cannot write: the command cannot replace the file either

    def written(self, undo):
        """{path: (digest, mode)} of what the command wrote; with undo, each
        is removed and each replaced file put back."""
        out = {}
        for p, was in list(self.files.items()) + list(self.outputs.items()):
            now = identity(p)
            if now == was or now is None or now[3]:
                continue
            out[p] = digest(p)
            if undo:
                self.put_back(p, was)
        for d, names in self.dirs.items():
            now = identity(d)
            if now is None or not now[3]:
                continue
            if names is None:
                out.update({os.path.join(d, k): v for k, v in tree(d).items()})
                if undo:
                    remove_tree(d)
                continue
            for n in os.listdir(d):
                p = os.path.join(d, n)
                now = identity(p)
                if now[3] or now == names.get(n) or p in self.links.values():
                    continue
                out[p] = digest(p)
                if undo:
                    self.put_back(p, names.get(n))
        return out

    def put_back(self, path, was):
        if path in self.links:
            os.rename(self.links.pop(path), path)
        elif was is None:
            os.unlink(path)
        else:
            raise SystemExit("twin: %s: replaced, and no link to put the original back" % path)

    def drop(self):
        for link in self.links.values():
            try:
                os.unlink(link)
            except OSError:
                pass
        self.links = {}


def remove_tree(d):
    for top, dirs, files in os.walk(d, topdown=False):
        for name in files:
            os.unlink(os.path.join(top, name))
        for name in dirs:
            os.rmdir(os.path.join(top, name))
    os.rmdir(d)


class Ran:
    """What subprocess.run would return: returncode (-N when killed by
    signal N), stdout and stderr as bytes."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def scratch():
    """An unlinked temporary file, open for reading and writing."""
    where = os.environ.get("TMPDIR") or "/tmp"
    try:
        return os.open(where, os.O_TMPFILE | os.O_RDWR, 0o600)
    except OSError:  # a file system without O_TMPFILE
        path = os.path.join(where, ".twin-%d-%d" % (os.getpid(), time_ns()))
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.unlink(path)
        return fd


def run(binary, args, env=None):
    """binary run with args, stdin /dev/null, stdout and stderr captured in
    unlinked temporary files (no pipes to drain, so no threads)."""
    fds = [scratch() for _ in range(2)]
    try:
        pid = os.posix_spawn(binary, [binary] + args, os.environ if env is None else env, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, fds[0], 1), (os.POSIX_SPAWN_DUP2, fds[1], 2)])
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        out = []
        for fd in fds:
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = iter(lambda: os.read(fd, 1 << 20), b"")
            out.append(b"".join(chunks))
        return Ran(code, out[0], out[1])
    finally:
        for fd in fds:
            os.close(fd)


# the temporary names mkdtemp/mkstemp gave (verify's and check's folders,
# which verify's report names), the only bytes two runs may differ in
TEMPORARY = rb"((?:/tmp/cypatch-(?:check|verify)|/\.cypatch)-)[A-Za-z0-9]{6}"


def same_text(a, b):
    if a == b:
        return True
    import re
    return re.sub(TEMPORARY, rb"\1XXXXXX", a) == re.sub(TEMPORARY, rb"\1XXXXXX", b)


def disagreements(first, main, first_out, main_out, timed):
    out = []
    if first.returncode != main.returncode:
        out.append("exit %d, the build under test's %d" % (first.returncode, main.returncode))
    if not same_text(first.stdout, main.stdout):
        out.append("stdout differs:\n%s\n--- the build under test's:\n%s" % (
            first.stdout.decode(errors="replace")[-2000:], main.stdout.decode(errors="replace")[-2000:]))
    if (not timed and not same_text(first.stderr, main.stderr)) or first.returncode != main.returncode:
        out.append("stderr:\n%s\n--- the build under test's:\n%s" % (
            first.stderr.decode(errors="replace")[-6000:], main.stderr.decode(errors="replace")[-2000:]))
    for p in sorted(set(first_out) | set(main_out)):
        if first_out.get(p) != main_out.get(p):
            out.append("%s: %s, the build under test's %s" % (p, first_out.get(p), main_out.get(p)))
    return out


def main():
    if sys.argv[1:] == ["--env"]:  # for scripts/sanitize, which runs the sanitized build alone
        import shlex
        print("".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in SANITIZER_ENV.items()), end="")
        return 0
    main_build, sanitized, log, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    watch = Watch(args)
    watch.keep()
    try:
        first = run(sanitized, args, dict(os.environ, **SANITIZER_ENV))
        first_out = watch.written(undo=True)
    finally:
        watch.drop()
    result = run(main_build, args)
    problems = disagreements(first, result, first_out, watch.written(undo=False), "--timings" in args)
    if problems:
        with open(log, "a") as f:
            f.write("cypatch %s (in %s): the sanitized build disagrees: %s\n\n" % (
                " ".join(args), os.getcwd(), "\n".join(problems)))
    sys.stdout.buffer.write(result.stdout)
    sys.stderr.buffer.write(result.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    if result.returncode < 0:  # killed: so is this process, by the same signal
        import signal
        signal.signal(-result.returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -result.returncode)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
