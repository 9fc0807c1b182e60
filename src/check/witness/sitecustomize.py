"""loopexec's witness inside Python's unittest: records that a test runner reached its end.

loopexec puts this directory first on PYTHONPATH for every check, so Python imports this
module at start-up (before the main module, and before the current directory is on
sys.path). It takes the witness path out of the environment (code under test never
sees it there), then runs the sitecustomize it stands in front of, if any. When
`unittest.runner` is imported, `TextTestRunner.run` is wrapped: each run that returns
appends one JSON line with what unittest itself counted. A unittest transcript that
looks green but left no line was printed by something other than unittest's runner (a
forged transcript and an early exit).
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
                    }
                )
                with open(path, "a") as f:
                    f.write(line + "\n")
            except Exception:
                pass
            return result

        run._loopexec_witness = True
        cls.run = run

    class Finder:
        """Wraps the loader of `unittest.runner` so the runner is patched once loaded."""

        def find_spec(self, name, target_path=None, target=None):
            if name != "unittest.runner":
                return None
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(name, target_path)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            exec_module = loader.exec_module

            def exec_and_patch(module):
                exec_module(module)
                patch(module)
                try:
                    sys.meta_path.remove(finder)
                except ValueError:
                    pass

            loader.exec_module = exec_and_patch
            return spec

    if "unittest.runner" in sys.modules:
        patch(sys.modules["unittest.runner"])
    else:
        finder = Finder()
        sys.meta_path.insert(0, finder)


_loopexec_unittest_witness()
del _loopexec_unittest_witness
