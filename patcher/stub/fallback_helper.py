# The slow path of cypatch's fallback stubs, run only when an import of a
# mapped module, or of a module stood in for (--tolerate-missing), needs
# help. cypatch prepends MAP (each mapped module name to its name in the
# other layout) and EXT (the extension's module name).
import importlib
import types


def _gone(err, name):
    # The ModuleNotFoundError is about `name` itself or one of its parents.
    n = getattr(err, "name", None)
    return isinstance(err, ModuleNotFoundError) and bool(n) and (
        name == n or name.startswith(n + "."))


def _load(name):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if _gone(err, name):
            return None
        raise


def module(name, alt=None):
    """The module `name`, else its counterpart in the other layout."""
    alt = alt or MAP[name]
    m = _load(name)
    if m is None:
        m = _load(alt)
    if m is None:
        raise ImportError("%s: neither %s nor %s can be imported (cypatch fallback)"
                          % (EXT, name, alt), name=name)
    return m


class _View(types.ModuleType):
    """A package as this extension sees it: the real one, if any, plus the
    modules of the other layout under the names the extension was built with.
    It is not put in sys.modules: nothing outside the extension sees it."""

    def __init__(self, name, real, attrs):
        types.ModuleType.__init__(self, name)
        self.__dict__.update(attrs)
        self.__dict__["_cypatch_real"] = real

    def __getattr__(self, attr):
        real = self.__dict__.get("_cypatch_real")
        if real is None:
            raise AttributeError(attr)
        return getattr(real, attr)


def _quiet(name):
    try:
        return _load(name)
    except ImportError:
        return None


def _tree(name, leaf):
    # `import a.b.c` binds `a`: views from a down to the module found.
    parts = name.split(".")
    node = leaf
    for i in range(len(parts) - 1, 0, -1):
        pkg = ".".join(parts[:i])
        node = _View(pkg, _quiet(pkg), {parts[i]: node})
    return node


def level(name, fromlist=None):
    """__import__(name, fromlist=fromlist) for a name that MAP concerns."""
    try:
        pkg = __import__(name, None, None, fromlist, 0)
    except ModuleNotFoundError as err:
        if not _gone(err, name):
            raise
        if not fromlist:
            if name not in MAP:
                raise
            return _tree(name, module(name))
        if name in MAP:
            # `from a.b.c import x`, and 0.29's `import a.b.c as x` (fromlist
            # ['*']): the module itself, from whichever layout has it
            return module(name)
        pkg, first = None, err
    if not fromlist:
        return pkg
    attrs = {}
    for n in fromlist:
        if pkg is not None and hasattr(pkg, n):
            continue
        full = name + "." + n
        if full not in MAP:
            if pkg is None:
                raise first
            continue
        attrs[n] = module(full)
    return _View(name, pkg, attrs) if attrs else pkg


def standin(name):
    """An empty module for a cimported module the installed release lacks:
    cypatch listed each function the extension takes from it, and the stub
    stands in for those. Not put in sys.modules."""
    m = types.ModuleType(name)
    m.__pyx_capi__ = {}
    return m
