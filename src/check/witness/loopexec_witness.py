"""loopexec's witness inside pytest: records that the session reached its own end.

Loaded through PYTEST_PLUGINS before any test module is imported. At import it takes
the witness path out of the environment (code under test never sees it there) and
keeps it only inside the hooks' closure, not as a module attribute; at session end it
writes what pytest itself counted. A run whose transcript looks green but left no
witness ended before pytest did (a forged transcript, an early exit).
"""
import json
import os


def _hooks(path):
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}

    def pytest_runtest_logreport(report):
        if report.when == "call" or report.outcome != "passed":
            key = {"passed": "passed", "failed": "failed", "skipped": "skipped"}.get(report.outcome)
            if key == "failed" and report.when != "call":
                key = "errors"
            if key:
                counts[key] += 1

    def pytest_sessionfinish(session, exitstatus):
        if not path:
            return
        data = dict(counts)
        data["exitstatus"] = int(exitstatus)
        data["collected"] = int(getattr(session, "testscollected", 0))
        with open(path, "w") as f:
            json.dump(data, f)

    return pytest_runtest_logreport, pytest_sessionfinish


pytest_runtest_logreport, pytest_sessionfinish = _hooks(
    os.environ.pop("LOOPEXEC_WITNESS_FILE", None)
)
del _hooks
