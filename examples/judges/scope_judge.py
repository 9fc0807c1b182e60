#!/usr/bin/env python3
"""A deterministic loopexec judge: refuses a diff that touches files outside a scope.

Usage:  loopexec run ... --judge 'python3 examples/judges/scope_judge.py --allow "src/**" --allow "tests/**"'

Reads the judge input (JSON) on stdin, takes the changed paths from the diff
against t0 (`diff --git a/X b/Y` headers), and prints one verdict object:
approve when every changed path matches an --allow glob (and --deny none), reject
naming the paths outside the scope otherwise. A diff it cannot read (no git, an
error) is escalated: it never approves what it could not see. Exit status 0 unless
the input is not JSON (then loopexec escalates on its own).
"""

import argparse
import fnmatch
import json
import re
import sys


def changed_paths(diff_text):
    paths = []
    for line in diff_text.splitlines():
        m = re.match(r"^diff --git a/(.+) b/(.+)$", line)
        if m:
            for p in (m.group(1), m.group(2)):
                if p not in paths:
                    paths.append(p)
    return paths


def matches(path, globs):
    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--allow", action="append", default=[], help="glob of paths the work may change (repeatable)")
    ap.add_argument("--deny", action="append", default=[], help="glob of paths it must not change (repeatable)")
    args = ap.parse_args()
    data = json.load(sys.stdin)
    diff = data.get("diff") or {}
    if "text" not in diff:
        verdict = {
            "verdict": "escalate",
            "reasons": ["no diff against t0 to judge: " + str(diff.get("error", "missing"))],
            "evidence": [],
        }
    else:
        paths = changed_paths(diff["text"])
        outside = [p for p in paths if (args.allow and not matches(p, args.allow)) or matches(p, args.deny)]
        if outside:
            verdict = {
                "verdict": "reject",
                "reasons": ["the diff touches files outside the declared scope: " + ", ".join(outside)],
                "evidence": outside,
            }
        else:
            verdict = {
                "verdict": "approve",
                "reasons": ["every changed path is within the declared scope (%d changed)" % len(paths)],
                "evidence": paths,
            }
    print(json.dumps(verdict))


if __name__ == "__main__":
    main()
