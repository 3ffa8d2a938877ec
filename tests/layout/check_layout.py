#!/usr/bin/env python3
"""The house rules of patcher/ (issue 19), checked on the tree and the built
library:

  cycles     no two library files call each other, directly or round a
             loop, except repair.c and repair_write.c (the writer calls back
             when a bet is lost); edges are read from the objects of
             libcypatch.a with nm, so they are calls and data, not includes
  arch       no instruction-set vocabulary outside patcher/arch/<machine>/:
             capstone, Zydis, x86 identifiers, relocation types, register names or
             opcode bytes in code (comments stripped)
  length     no function of patcher/ over 60 lines (Universal Ctags)
  objects    no two objects of libcypatch.a share a name (a machine's file
             names its machine: x86_64_walk.c), so that nm's edges above
             keep the machines apart
  args       the number of argument registers is written once per machine
             (X86_64_NARGS, A64_NARGS) and once for all (CP_MAX_ARGS): no
             array of arguments sized, and no loop over one bounded, by a
             number

    check_layout.py LIBCYPATCH_A PATCHER_DIR

Prints one line per violation and exits 1 when there is any."""
import collections
import pathlib
import re
import subprocess
import sys

ALLOWED_CYCLES = [{"repair.c.o", "repair_write.c.o"}]
MAX_LINES = 60
# x86-64 as text: capstone's x86 API, ELF's x86-64 names, the 64/32-bit
# general registers, rip, vector registers, and the opcode bytes cypatch
# writes or matches (int3, call, jmp, ret, `jmp *[rip+x]`).
ARCH_WORDS = re.compile(
    r"\b(?:X86_\w+|R_X86_64_\w+|EM_X86_64|CS_ARCH_X86|CS_MODE_64|cs_x86\w*|x86_reg|x86_\w+"
    r"|[re](?:ax|bx|cx|dx|si|di|sp|bp)|r(?:8|9|1[0-5])[dwb]?|rip|[xyz]mm\d+"
    r"|0x(?:cc|e8|e9|c3|ff, 0x25))\b")
# the decoders: capstone's API (every machine), Zydis's (x86-64's walk)
CAPSTONE = re.compile(r"#include\s*<(?:capstone|Zydis)/|\bcs_(?:open|disasm|insn|regs|malloc|free|option)\b|\bcsh\b"
                      r"|\bZydis\w+|\bZYDIS_\w+|\bZYAN_\w+")


def edges_of(lib):
    run = lambda *a: subprocess.run(["nm", "-A", *a, lib], capture_output=True, text=True, check=True).stdout
    defined = {}
    for line in run("--defined-only").splitlines():
        m = re.match(r"[^:]*:([^:]+):\S*\s+[TDBRC]\s+(\S+)", line)
        if m:
            defined[m.group(2)] = m.group(1)
    edges = collections.defaultdict(set)
    for line in run("-u").splitlines():
        m = re.match(r"[^:]*:([^:]+):\s+U\s+(\S+)", line)
        if m and defined.get(m.group(2), m.group(1)) != m.group(1):
            edges[m.group(1)].add(defined[m.group(2)])
    return edges


def cycles(edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in list(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]; counter[0] += 1; stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop(); on.discard(w); comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def strip_comments(text):
    """C without its comments, line numbers kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def arch_words(src):
    for path in sorted(src.rglob("*.[ch]")):
        rel = path.relative_to(src)
        if rel.parts[0] == "arch" and len(rel.parts) > 2:
            continue  # arch/<machine>/ is where these belong
        if rel.parts[0] == "stub":
            continue  # compiled for the target, not cypatch's code
        for n, line in enumerate(strip_comments(path.read_text()).split("\n"), 1):
            for rx in (ARCH_WORDS, CAPSTONE):
                m = rx.search(line)
                if m:
                    yield f"{rel}:{n}: '{m.group(0)}' outside arch/<machine>/"


def duplicate_objects(lib):
    names = subprocess.run(["ar", "t", lib], capture_output=True, text=True, check=True).stdout.split()
    for name, n in sorted(collections.Counter(names).items()):
        if n > 1:
            yield f"{lib}: {n} objects named {name}"


ARG_ARRAY = re.compile(r"\b(?:struct\s+\w+|\w+_t|int|unsigned)\s+\**\w*arg\w*\s*\[\s*\d+\s*\]")
NUMBER_LOOP = re.compile(r"\bfor\s*\([^;]*;[^;]*<\s*\d+\s*;[^)]*\)")


def argument_counts(src):
    for path in sorted(src.rglob("*.[ch]")):
        rel = path.relative_to(src)
        if rel.parts[0] == "stub":
            continue
        text = strip_comments(path.read_text())
        for m in ARG_ARRAY.finditer(text):
            yield f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: '{m.group(0)}': size it by CP_MAX_ARGS"
        for m in NUMBER_LOOP.finditer(text):
            body = text[m.end():m.end() + 160]
            if re.search(r"(?<![A-Za-z0-9])arg\w*\s*\[|->known\s*>>", body):
                yield (f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: '{m.group(0)}' over argument registers: "
                       "bound it by CP_MAX_ARGS or the machine's count")


def long_functions(src):
    files = [str(p) for p in sorted(src.rglob("*.c"))]
    out = subprocess.run(["ctags", "-o", "-", "--fields=+ne", "--c-kinds=f", *files],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name, path = line.split("\t")[:2]
        start = re.search(r"\tline:(\d+)", line)
        end = re.search(r"\tend:(\d+)", line)
        if start and end and int(end.group(1)) - int(start.group(1)) + 1 > MAX_LINES:
            n = int(end.group(1)) - int(start.group(1)) + 1
            yield f"{pathlib.Path(path).relative_to(src)}:{start.group(1)}: {name} is {n} lines (at most {MAX_LINES})"


def main():
    lib, src = sys.argv[1], pathlib.Path(sys.argv[2])
    bad = []
    for comp in cycles(edges_of(lib)):
        if comp not in ALLOWED_CYCLES:
            bad.append("cycle: " + " <-> ".join(sorted(c.removesuffix(".o") for c in comp)))
    bad += arch_words(src)
    bad += long_functions(src)
    bad += duplicate_objects(lib)
    bad += argument_counts(src)
    for b in bad:
        print(b)
    print(f"check_layout: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
