"""loopexec's witness inside Python's unittest: records that a test runner reached its end.

loopexec puts this directory first on PYTHONPATH for every check, so Python imports this
module at start-up (before the main module, and before the current directory is on
sys.path). It takes the witness path out of the environment (code under test never
sees it there), then runs the sitecustomize it stands in front of, if any. When
`unittest.runner` is imported, `TextTestRunner.run` is wrapped: each run that returns
appends one JSON line with what unittest itself counted. A unittest transcript that
looks green but left no line was printed by something other than unittest's runner (a
forged transcript and an early exit).

When `unittest.loader` is imported, discovery is made to skip the files the agent
added since t0 (`LOOPEXEC_SKIP_FILE`, as for pytest's witness): `unittest discover`
imports every module it finds in one process, so a new `tests/test_0.py` found before
the frozen tests could patch the code under test. Each line then also says how many
entries the witness was given and which test files (`D` entries) were imported anyway.
"""


def _loopexec_unittest_witness():
    import os
    import sys

    path = os.environ.pop("LOOPEXEC_UNITTEST_WITNESS", None)
    here = os.path.dirname(os.path.abspath(__file__))

    # the sitecustomize this one shadows (a distribution's), run as it would have been
    try:
        from importlib.machinery import PathFinder

        rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = PathFinder.find_spec("sitecustomize", rest)
        if spec is not None and spec.loader is not None:
            import types

            mod = types.ModuleType("sitecustomize")
            mod.__file__ = spec.origin
            spec.loader.exec_module(mod)
    except Exception:
        pass

    if not path:
        return

    def real(p):
        try:
            return os.path.realpath(str(p))
        except Exception:
            return str(p)

    # the same entries, count and import evidence as pytest's witness (see there)
    skip, tests, markers, given, root = frozenset(), frozenset(), frozenset(), 0, None
    name = os.environ.get("LOOPEXEC_SKIP_FILE")
    if name:
        try:
            with open(name, "rb") as f:
                entries = f.read().decode("utf-8", "surrogateescape").split("\0")
            roots = [e[1:] for e in entries if e[:1] == "R" and e[1:]]
            root = real(roots[0]) if roots else None
            entries = [e for e in entries if e[:1] in ("D", "U", "M") and e[1:]]
            skip = frozenset(real(e[1:]) for e in entries)
            tests = frozenset(real(e[1:]) for e in entries if e[:1] == "D")
            markers = frozenset(real(e[1:]) for e in entries if e[:1] == "M")
            given = len(entries)
        except Exception:
            pass
    armed = []
    opened = set()
    # Until the first file of t0's tree runs, every module that runs was imported by
    # the interpreter or the runner on their own (pytest's start imports `copy`, which
    # tries `org.python.core`): code from a new file then is no code under test, and
    # is written down at once, before its body runs (it could remove a record kept in
    # memory).
    early = [root is not None and bool(skip)]

    def added(p):
        while p and p != root:
            if p in skip:
                return True
            parent = os.path.dirname(p)
            if parent == p:
                return False
            p = parent
        return False

    def note_early(p):
        try:
            import json

            with open(path, "a") as f:
                f.write(json.dumps({"early_new": p}) + "\n")
        except Exception:
            pass

    if tests or early[0]:
        names = frozenset(os.path.basename(t) for t in tests)
        inside = (root or "").rstrip(os.sep) + os.sep

        def hook(event, args):
            if event != "exec" or not args:
                return
            p = getattr(args[0], "co_filename", None)
            if not isinstance(p, str):
                return
            if early[0] and p.startswith(("/", ".")):
                rp = real(p)
                if rp in markers:
                    # a bare package marker runs nothing: Python runs a new
                    # `tests/__init__.py` before the frozen test module under it
                    pass
                elif rp.startswith(inside) and "-packages" + os.sep not in rp:
                    if added(rp):
                        note_early(rp)
                    else:
                        early[0] = False
            if os.path.basename(p) in names and real(p) in tests:
                opened.add(real(p))

        sys.addaudithook(hook)

    def imported():
        found = set(opened)
        for mod in list(sys.modules.values()):
            spec = getattr(mod, "__spec__", None)
            for f in (getattr(mod, "__file__", None), getattr(spec, "origin", None)):
                if isinstance(f, str) and real(f) in tests:
                    found.add(real(f))
        return sorted(found)

    def patch_loader(loader_module):
        cls = getattr(loader_module, "TestLoader", None)
        find = getattr(cls, "_find_test_path", None)
        if find is None or getattr(find, "_loopexec_witness", False):
            return

        def _find_test_path(self, full_path, pattern, *args, **kwargs):
            if skip and real(full_path) in skip:
                return None, False
            return find(self, full_path, pattern, *args, **kwargs)

        _find_test_path._loopexec_witness = True
        cls._find_test_path = _find_test_path
        armed.append(True)

    def patch(runner_module):
        cls = getattr(runner_module, "TextTestRunner", None)
        if cls is None or getattr(cls.run, "_loopexec_witness", False):
            return
        original = cls.run

        def run(self, test):
            result = original(self, test)
            try:
                import json

                line = json.dumps(
                    {
                        "tests_run": int(result.testsRun),
                        "failures": len(result.failures),
                        "errors": len(result.errors),
                        "skipped": len(result.skipped),
                        "expected_failures": len(result.expectedFailures),
                        "unexpected_successes": len(result.unexpectedSuccesses),
                        "deselect_given": given if armed else 0,
                        "deselected_imported": imported(),
                    }
                )
                with open(path, "a") as f:
                    f.write(line + "\n")
            except Exception:
                pass
            return result

        run._loopexec_witness = True
        cls.run = run

    patches = {"unittest.runner": patch, "unittest.loader": patch_loader}

    class Finder:
        """Wraps the loaders of `unittest.runner` and `unittest.loader` so each is
        patched once loaded."""

        def find_spec(self, name, target_path=None, target=None):
            if name not in patches:
                return None
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(name, target_path)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            exec_module = loader.exec_module

            def exec_and_patch(module):
                exec_module(module)
                patches.pop(name, lambda m: None)(module)
                if not patches:
                    try:
                        sys.meta_path.remove(finder)
                    except ValueError:
                        pass

            loader.exec_module = exec_and_patch
            return spec

    for name in list(patches):
        if name in sys.modules:
            patches.pop(name)(sys.modules[name])
    if patches:
        finder = Finder()
        sys.meta_path.insert(0, finder)


def _loopexec_confine():
    """Points imports the working tree would provide at the clean room instead.

    A check that runs in the clean room must read the snapshot only. An editable
    install (`pip install -e .`: a `.pth` naming the working tree, or a finder mapping
    package names into it) would import the agent's live tree, where files the snapshot
    leaves out (`__pycache__`, ignored files) still are. `LOOPEXEC_CONFINE` is
    "<working tree>\n<clean room>": every `sys.path` entry and editable mapping inside
    the working tree is moved to the same place in the clean room, and any module a
    finder would still load from the working tree is refused (an import error: the
    check goes red rather than green on code the snapshot does not hold). Lines after
    the first two name the working tree's dependency directories the room links to (a
    project's `.venv`): loopexec digests those instead of snapshotting them, so what is
    imported from them stays where it is.
    """
    import os
    import sys

    # left in the environment: a Python the tests start (`subprocess`, xdist workers)
    # runs this again and is confined the same way
    spec = os.environ.get("LOOPEXEC_CONFINE")
    if not spec or "\n" not in spec:
        return
    live, room, *linked = spec.split("\n")
    if not live or not room or live == room:
        return
    linked = [d for d in linked if d]

    def inside(p, root):
        return p == root or p.startswith(root.rstrip(os.sep) + os.sep)

    def moved(p):
        """The clean room's path for `p` when it lies in the working tree, else None."""
        if not isinstance(p, str) or not p:
            return None
        try:
            rp = os.path.realpath(p)
        except Exception:
            return None
        if any(inside(rp, d) for d in linked):
            return None
        if inside(rp, live) and not inside(rp, room):
            return room + rp[len(live):]
        return None

    sys.path[:] = [moved(p) or p for p in sys.path]

    # setuptools' (`__editable___*_finder`) and editables' (`_editable_impl_*`)
    # finders keep their mappings in module globals or class attributes
    holders = [m for n, m in list(sys.modules.items())
               if n.startswith(("__editable__", "_editable_impl_"))]
    holders += [f for f in sys.meta_path if not isinstance(f, type)]
    holders += [f for f in sys.meta_path if isinstance(f, type)]
    for h in holders:
        for attr in ("MAPPING", "NAMESPACES", "_redirections", "mapping"):
            m = getattr(h, attr, None)
            if not isinstance(m, dict):
                continue
            for k, v in list(m.items()):
                if isinstance(v, str):
                    m[k] = moved(v) or v
                elif isinstance(v, (list, tuple)):
                    m[k] = type(v)(moved(x) or x for x in v)

    class Confined:
        """Asks the finders after it; refuses a module they find in the working tree."""

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            try:
                after = sys.meta_path[sys.meta_path.index(cls) + 1:]
            except ValueError:
                return None
            for f in after:
                find = getattr(f, "find_spec", None)
                if find is None:
                    continue
                found = find(name, path, target)
                if found is None:
                    continue
                where = [found.origin] if found.has_location else []
                where += list(found.submodule_search_locations or [])
                if any(moved(w) for w in where):
                    raise ImportError(
                        "loopexec: %s would be imported from the working tree (%s), "
                        "which a check in the clean room does not read" % (name, live),
                        name=name,
                    )
                return found
            return None

    sys.meta_path.insert(0, Confined)


_loopexec_confine()
del _loopexec_confine
_loopexec_unittest_witness()
del _loopexec_unittest_witness
