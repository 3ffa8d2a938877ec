"""What Cython's generated C says an extension imports: the oracle that
`cypatch show` must agree with. It reads the .c file only, so it shares no
code or assumption with the scanner, which reads the binary."""
import ast
import re

LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def c_bytes(body):
    """The bytes of a C string literal's body (escapes: octal, \\x, \\n, \\", \\?)."""
    body = body.replace("\\?", "?")
    return ast.literal_eval('b"' + body + '"')


def c_literal_run(text, start):
    """Concatenated adjacent literals starting at text[start:]."""
    out = b""
    pos = start
    while True:
        while text[pos].isspace():
            pos += 1
        m = LITERAL.match(text, pos)
        if not m:
            return out
        out += c_bytes(m.group(1))
        pos = m.end()


def string_tab(text):
    """cname -> index of __pyx_string_tab (Cython 3.1+)."""
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"#define (__pyx_\w+) __pyx_string_tab\[(\d+)\]", text)}


def lengths(text, name):
    m = re.search(r"\b%s\[\] = \{([^;]*)\};" % name, text)
    return [int(x) for x in re.findall(r"\{(\d+)\}", m.group(1))] if m else None


def blob_entries(text):
    """Cython 3.2+: the decoded blob split by its length index."""
    m = re.search(r"/\* compression: none \(\d+ bytes\) \*/\s*(?:static const char bytes\[\] = "
                  r"|const char\* const bytes = )", text)
    if not m:
        return None
    data = c_literal_run(text, m.end())
    lens = lengths(text, "index")
    if lens is None:
        lens = (lengths(text, "str_length_index") or []) + (lengths(text, "bytes_length_index") or [])
    out, pos = [], 0
    for n in lens:
        out.append(data[pos:pos + n])
        pos += n
    assert pos == len(data), "index does not cover the blob"
    return out


def sigconst(data):
    pieces = data.split(b"\0")
    half = len(pieces) // 2
    sigs, names, cur = [], pieces[half:], None
    for p in pieces[:half]:
        cur = p if p else cur
        sigs.append(cur)
    return [(n.decode(), s.decode()) for n, s in zip(names, sigs)]


def expected(c_path, rules, so_path=None):
    """The references the .c file makes. A `__pyx_f` entry counts only when
    its literal is in the binary at all: 3.1+ declare the table
    `static const char* const`, and an optimising compiler drops the entries
    no code reads."""
    text = open(c_path, encoding="utf-8", errors="replace").read()
    binary = open(so_path, "rb").read() if so_path else None
    exp = set()
    mangled = rules.mangled()

    def module_of(module, sig):
        if module and rules.is_mapped(module):
            return module
        for prefix, mod in mangled.items():
            if prefix in sig:
                return mod if not module else module
        return None

    # cimported modules, and the per-module import code that follows each
    entries = blob_entries(text)
    tab = string_tab(text)
    module = None
    for m in re.finditer(r'PyImport_ImportModule\("([^"]+)"\)|'
                         r'__Pyx_Import(Function|VoidPtr)_\w+\(\w+, "(\w+)", [^"]*"((?:[^"\\]|\\.)*)"\)|'
                         r'__pyx_import_signature = __Pyx_PyBytes_AsString\(\w+->(__pyx_kp_b_\w+)\)|'
                         r'__Pyx_ImportType_\w+\(\s*\w+,\s*"([^"]+)",\s*"(\w+)"', text):
        if m.group(1):
            module = m.group(1)
            if rules.is_mapped(module):
                exp.add(("cimport", module))
        elif m.group(2):
            kind = "function" if m.group(2) == "Function" else "variable"
            sig = c_bytes(m.group(4)).decode()
            mod = module_of(module, sig)
            if mod:
                exp.add((kind, mod, m.group(3), sig))
        elif m.group(5):
            rest = text[m.end():m.end() + 3000]
            kind = "variable" if rest.find("ImportVoidPtr") != -1 and (
                rest.find("ImportFunction") == -1 or rest.find("ImportVoidPtr") < rest.find("ImportFunction")) \
                else "function"
            for name, sig in sigconst(entries[tab[m.group(5)]]):
                mod = module_of(module, sig)
                if mod:
                    exp.add((kind, mod, name, sig))
        elif m.group(6) and rules.is_mapped(m.group(6)):
            exp.add(("type", m.group(6), m.group(7)))
    # Python-level names in the string table
    if entries is not None:
        values = [e.decode("utf-8", "replace") for e in entries]
    else:
        values = [c_bytes(m.group(1)).decode("utf-8", "replace") for m in
                  re.finditer(r'static const char __pyx_k_\w+\[\] = "((?:[^"\\]|\\.)*)";', text)]
    for v in values:
        if rules.names_layout(v):
            exp.add(("pyimport", v))
    # from-imports: `from P import N` with P.N mapped, unless P.N is itself
    # a Python-level name (then the pyimport above covers it)
    k_values = {m.group(1): c_bytes(m.group(2)).decode("utf-8", "replace") for m in
                re.finditer(r'static const char __pyx_k_(\w+)\[\] = "((?:[^"\\]|\\.)*)";', text)}

    def value_of(cname):
        if entries is not None:
            return entries[tab[cname]].decode("utf-8", "replace")
        return k_values.get(re.sub(r"^__pyx_n_[su]_", "", cname))

    imports = list(re.finditer(r"__Pyx_Import\((?:\w+->)?(__pyx_n_\w+), ", text))
    for i, m in enumerate(imports):
        end = imports[i + 1].start() if i + 1 < len(imports) else len(text)
        before = text[max(0, m.start() - 600):m.start()]
        names = re.findall(r"__pyx_imported_names\[\] = \{([^}]*)\}", before)
        froms = re.findall(r"(__pyx_n_\w+)", names[-1]) if names and m.group(0) else []
        froms += re.findall(r"__Pyx_ImportFrom\(\w+, (?:\w+->)?(__pyx_n_\w+)\)", text[m.end():end])
        pkg = value_of(m.group(1))
        for cname in froms:
            full = "%s.%s" % (pkg, value_of(cname))
            if rules.is_mapped(full) and full not in values:
                exp.add(("fromimport", full))
    # the __pyx_f filename table
    m = re.search(r"static const char\s*\*\s*(?:const\s+)?__pyx_f\[\] = \{(.*?)\};", text, re.S)
    for lit in LITERAL.findall(m.group(1) if m else ""):
        path = c_bytes(lit).decode()
        stem = path.rsplit(".", 1)[0].replace("/", ".")
        if rules.is_mapped(stem) and (binary is None or b"\0" + path.encode() + b"\0" in binary):
            exp.add(("filename", path))
    return exp


def reported(doc):
    got = set()
    for r in doc["references"]:
        k = r["kind"]
        if k == "cimport":
            got.add(("cimport", r["value"]))
        elif k in ("function", "variable"):
            got.add((k, r["module"], r["name"], r["signature"]))
        elif k == "type":
            got.add(("type", r["module"], r["class"]))
        elif k in ("pyimport", "filename", "fromimport"):
            got.add((k, r["value"]))
    return got
