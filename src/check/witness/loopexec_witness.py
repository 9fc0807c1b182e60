"""loopexec's witness inside pytest: records that the session reached its own end.

Loaded through PYTEST_PLUGINS before any test module is imported. At import it takes
the witness path out of the environment (code under test never sees it there) and
keeps it only inside the hooks' closure, not as a module attribute; at session end it
writes what pytest itself counted, with the ids of the tests it passed and skipped
(a quiet transcript names only failures). A run whose transcript looks green but left no
witness ended before pytest did (a forged transcript, an early exit).

It also keeps, from before any test module is imported, the runner's own functions
that decide an outcome (running a test item, making and logging its report); at
session end any that was replaced, or whose code was swapped in place (`__code__`,
defaults), is listed under "tampered": code under test that reached into the runner at
run time, however it spelled the names and however it found them (a frame's
`f_globals`). So is a plugin
registered after the session started that implements an outcome hook (a report
wrapper that turns failures into passes), unless it is a conftest module.

It also skips the files the agent added since t0 (`LOOPEXEC_SKIP_FILE` names a file of
NUL-terminated entries, `D<path>` or `U<path>`, absolute; read when the plugin loads):
none is collected, so no module-level code of theirs runs beside the frozen tests
because pytest found it (a new module under `--doctest-modules`, a new text file under
`--doctest-glob`, a new test file of a check in place). `D` marks a test file, which
nothing may import either: at session end the witness records how many entries it was
given and which `D` files a module was loaded from anyway (found in `sys.modules` by
file), so a skip that did not hold is seen however the file was reached. A `U` file is
code the code under test may import.
"""
import json
import os
import sys

_GUARDED = (
    ("_pytest.python", "Function", "runtest"),
    # where a test item finds the function it calls: a wrapper here runs no test body
    ("_pytest.python", "Function", "_getobj"),
    ("_pytest.python", "PyobjMixin", "_getobj"),
    ("_pytest.python", "PyobjMixin", "obj"),
    ("_pytest.python", None, "pytest_pyfunc_call"),
    ("_pytest.runner", None, "call_and_report"),
    ("_pytest.runner", None, "runtestprotocol"),
    ("_pytest.runner", None, "pytest_runtest_makereport"),
    ("_pytest.runner", "CallInfo", "from_call"),
    ("_pytest.reports", "TestReport", "from_item_and_call"),
    ("_pytest.reports", "TestReport", "__init__"),
    ("_pytest.reports", "BaseReport", "passed"),
    ("_pytest.reports", "BaseReport", "failed"),
    ("_pytest.runner", "CallInfo", "__init__"),
    ("_pytest.runner", None, "call_runtest_hook"),
    ("_pytest.main", "Session", "perform_collect"),
    ("_pytest.main", None, "pytest_runtestloop"),
    ("_pytest.terminal", "TerminalReporter", "pytest_runtest_logreport"),
    # names the runner looks up in its modules' globals at run time: a subclass bound
    # there (a report that always says "passed") replaces nothing on the class itself
    ("_pytest.runner", None, "TestReport"),
    ("_pytest.runner", None, "CallInfo"),
    ("_pytest.reports", None, "TestReport"),
    ("_pytest.python", None, "Function"),
    ("_pytest.outcomes", None, "fail"),
    ("_pytest.outcomes", None, "skip"),
    # unittest test cases under pytest: a run() that never calls the test method
    ("_pytest.unittest", "TestCaseFunction", "runtest"),
    ("unittest.case", "TestCase", "run"),
    ("unittest.case", "TestCase", "__call__"),
    ("unittest.case", "TestCase", "_callTestMethod"),
    # what a TestCase's assertions raise: a class unittest swallows turns them into passes
    ("unittest.case", "TestCase", "failureException"),
    # pluggy calls every hook implementation: a wrapper here decides every outcome
    ("pluggy._callers", None, "_multicall"),
    ("pluggy._hooks", "HookCaller", "__call__"),
    ("pluggy._manager", "PluginManager", "_hookexec"),
)


_OUTCOME_HOOKS = (
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_runtest_call",
    "pytest_runtest_teardown",
    "pytest_collection_modifyitems",
    "pytest_itemcollected",
    "pytest_pyfunc_call",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_report_teststatus",
)


def _pytest_classes():
    """pytest's own classes, as imported before any test module: a plugin pytest
    registers during the session (its fixture manager) is an instance of one."""
    import sys

    kept = set()
    for modname, mod in list(sys.modules.items()):
        if modname == "_pytest" or modname.startswith("_pytest."):
            for value in list(getattr(mod, "__dict__", {}).values()):
                if isinstance(value, type) and getattr(value, "__module__", "") == modname:
                    kept.add(value)
    return kept


def _lookup(module, owner, name):
    import importlib

    obj = importlib.import_module(module)
    if owner:
        obj = getattr(obj, owner)
    return obj.__dict__.get(name) if hasattr(obj, "__dict__") else getattr(obj, name, None)


def _body(obj):
    """What runs when `obj` is called, beyond its identity: the code object, defaults
    and keyword defaults of the function (a property's getter, a static or class
    method's function). Swapping `__code__` in place keeps the function's identity
    and changes what it does."""
    f = getattr(obj, "fget", None) or obj
    f = getattr(f, "__func__", f)
    kw = getattr(f, "__kwdefaults__", None)
    return (
        getattr(f, "__code__", None),
        getattr(f, "__defaults__", None),
        dict(kw) if isinstance(kw, dict) else kw,
    )


def _same_body(a, b):
    return a[0] is b[0] and a[1] is b[1] and a[2] == b[2]


def _originals():
    kept = {}
    for module, owner, name in _GUARDED:
        try:
            obj = _lookup(module, owner, name)
            kept[(module, owner, name)] = (obj, _body(obj))
        except Exception:
            pass
    return kept


def _real(p):
    try:
        return os.path.realpath(str(p))
    except Exception:
        return str(p)


def _watch_opens(tests):
    """The set of `tests` (real paths) whose code Python runs from now on, filled by an
    audit hook on `exec` events (the import system runs a module's body through
    `exec`, whose code object names the file it was compiled from). An audit hook cannot
    be removed, and it sees the module run whatever the module does to its own
    attributes (`del __file__`); a test that only reads the file is not counted. Not
    installed when `tests` is empty."""
    opened = set()
    if not tests:
        return opened
    names = frozenset(os.path.basename(t) for t in tests)

    def hook(event, args):
        if event != "exec" or not args:
            return
        p = getattr(args[0], "co_filename", None)
        if not isinstance(p, str):
            return
        if os.path.basename(p) in names and _real(p) in tests:
            opened.add(_real(p))

    sys.addaudithook(hook)
    return opened


def _imported(tests, opened):
    """The files of `tests` (real paths) whose code ran since the witness loaded
    (`opened`, [`_watch_opens`]) or that a module in `sys.modules` names as its file or
    its spec's origin."""
    found = set(opened)
    for mod in list(sys.modules.values()):
        spec = getattr(mod, "__spec__", None)
        for f in (getattr(mod, "__file__", None), getattr(spec, "origin", None)):
            if isinstance(f, str) and _real(f) in tests:
                found.add(_real(f))
    return sorted(found)


def _hooks(path, originals, pytest_classes, skips):
    deselect, tests, given = skips
    opened = _watch_opens(tests)
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    armed = [True]
    # node ids as the transcript prints them (relative to the invocation directory)
    names = {"passed_ids": [], "skipped_ids": []}
    # the files the reported tests came from, absolute: where pytest really ran
    files = set()
    configs = []

    def pytest_configure(config):
        configs.append(config)

    # Plugins in place when the session starts (built-ins, `-p`, entry points, and what
    # they registered while configuring). One registered later that implements an
    # outcome hook is code under test reaching into the runner, unless it is a
    # conftest module (a file of the tree, judged as the frozen oracle).
    settled = []

    # Whether the session started with no trace or profile function (coverage installs
    # its tracer before the session starts); one that appears while tests run can move
    # a frame's line past the call of the test (`frame.f_lineno = …`).
    untraced = []
    traced = []

    def pytest_sessionstart(session):
        settled.append(set(map(id, session.config.pluginmanager.get_plugins())))
        untraced.append(sys.gettrace() is None and sys.getprofile() is None)

    def _late_hooks():
        found = []
        if not configs or not settled:
            return found
        pm = configs[0].pluginmanager
        for name in _OUTCOME_HOOKS:
            hook = getattr(pm.hook, name, None)
            if hook is None:
                continue
            for impl in hook.get_hookimpls():
                plugin = impl.plugin
                if id(plugin) in settled[0]:
                    continue
                if os.path.basename(getattr(plugin, "__file__", "") or "") == "conftest.py":
                    continue
                # pytest's own (its fixture manager), with the hook its class defines
                cls = type(plugin)
                if cls in pytest_classes and getattr(impl.function, "__func__", None) is cls.__dict__.get(name):
                    continue
                found.append("hook %s (registered during the session: %s)" % (name, pm.get_name(plugin)))
        return found

    def _shown(nodeid):
        """`nodeid` (relative to the rootdir) as pytest's transcript shows it: relative
        to the directory pytest was started in (`Config.cwd_relative_nodeid`, computed
        here because its signature changed across pytest versions)."""
        nid = str(nodeid)
        try:
            cfg = configs[0]
            inv = str(cfg.invocation_params.dir)
            root = str(cfg.rootpath)
        except Exception:
            return nid
        if inv == root:
            return nid
        base, sep, rest = nid.partition("::")
        rel = os.path.relpath(os.path.join(root, base), inv) if base else base
        return rel + sep + rest

    def pytest_runtest_logreport(report):
        if untraced and untraced[0] and not traced:
            if sys.gettrace() is not None or sys.getprofile() is not None:
                traced.append(report.nodeid)
        if report.when == "call" or report.outcome != "passed":
            key = {"passed": "passed", "failed": "failed", "skipped": "skipped"}.get(report.outcome)
            if key == "failed" and report.when != "call":
                key = "errors"
            if key:
                counts[key] += 1
            if key in ("passed", "skipped"):
                names[key + "_ids"].append(_shown(report.nodeid))
        try:
            files.add(os.path.join(str(configs[0].rootpath), report.location[0]))
        except Exception:
            files.add("?")

    def pytest_ignore_collect(collection_path=None, path=None, config=None):
        p = collection_path if collection_path is not None else path
        if p is not None and deselect and _real(p) in deselect:
            return True
        return None

    def pytest_sessionfinish(session, exitstatus):
        if not path:
            return
        data = dict(counts)
        data["exitstatus"] = int(exitstatus)
        data["collected"] = int(getattr(session, "testscollected", 0))
        tampered = []
        for (module, owner, name), (original, body) in originals.items():
            try:
                now = _lookup(module, owner, name)
            except Exception:
                now = None
            dotted = ".".join(p for p in (module, owner, name) if p)
            if now is not original:
                tampered.append(dotted + " replaced")
            elif not _same_body(_body(now), body):
                tampered.append(dotted + " code replaced in place")
        for hook, body in own:
            if not _same_body(_body(hook), body):
                tampered.append("loopexec's witness hook %s code replaced in place" % hook.__name__)
        tampered.extend(_late_hooks())
        if traced:
            tampered.append("a trace or profile function installed during the session (first seen at %s)" % traced[0])
        data["tampered"] = tampered
        data.update(names)
        data["test_files"] = sorted(files)
        data["deselect_given"] = given if armed else 0
        data["deselected_imported"] = _imported(tests, opened)
        with open(path, "w") as f:
            json.dump(data, f)

    try:
        ignore = _ignore_hook(pytest_ignore_collect)
    except Exception:
        # a pytest whose hook this cannot implement: nothing is skipped, and the
        # witness says it was given nothing, which a check in place reads as a skip
        # that did not hold
        ignore = None
        armed.clear()
    # the witness's own hooks, as defined: one whose code is swapped counts nothing
    own = [
        (h, _body(h))
        for h in (pytest_configure, pytest_sessionstart, pytest_runtest_logreport, pytest_ignore_collect, ignore)
        if h is not None
    ]
    return pytest_configure, pytest_sessionstart, pytest_runtest_logreport, pytest_sessionfinish, ignore


def _ignore_hook(impl):
    """`impl` as a `pytest_ignore_collect` implementation for this pytest: its
    argument names are the ones the hook's specification has (pytest 7 added
    `collection_path`, pytest 9 drops `path`; pluggy refuses a name the
    specification lacks), and it runs before every other implementation (the first
    answer wins)."""
    import inspect

    import pytest
    from _pytest import hookspec

    names = [
        n
        for n in inspect.signature(hookspec.pytest_ignore_collect).parameters
        if n in ("collection_path", "path", "config")
    ]
    namespace = {"impl": impl}
    exec(
        "def pytest_ignore_collect(%s):\n    return impl(%s)\n"
        % (", ".join(names), ", ".join("%s=%s" % (n, n) for n in names)),
        namespace,
    )
    return pytest.hookimpl(tryfirst=True)(namespace["pytest_ignore_collect"])


def _skips():
    """The entries of `LOOPEXEC_SKIP_FILE`: (every path to skip, the test files among
    them, as real paths; how many entries there were: two links to one file are two).
    Empty when there is none; an unreadable file skips nothing, and the witness then
    says it was given nothing."""
    name = os.environ.get("LOOPEXEC_SKIP_FILE")
    if not name:
        return frozenset(), frozenset(), 0
    try:
        with open(name, "rb") as f:
            entries = f.read().decode("utf-8", "surrogateescape").split("\0")
    except Exception:
        return frozenset(), frozenset(), 0
    entries = [e for e in entries if e[:1] in ("D", "U", "M") and e[1:]]
    every = frozenset(_real(e[1:]) for e in entries)
    tests = frozenset(_real(e[1:]) for e in entries if e[:1] == "D")
    return every, tests, len(entries)


(
    pytest_configure,
    pytest_sessionstart,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_ignore_collect,
) = _hooks(
    os.environ.pop("LOOPEXEC_WITNESS_FILE", None),
    _originals(),
    _pytest_classes(),
    _skips(),
)
del _hooks
