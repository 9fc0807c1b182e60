#!/usr/bin/env python3
"""A deterministic loopexec judge: refuses a diff that touches files outside a scope.

Usage:  loopexec run ... --judge 'python3 examples/judges/scope_judge.py --allow "src/**" --allow "tests/**"'

Reads the judge input (JSON) on stdin and takes the changed paths from
`diff.paths` (every path that differs from t0, one string each, never cut), or,
from a loopexec that does not give that list, from the `diff --git` headers of
`diff.text`, unquoting the names git quotes (a tab, a quote, a newline or a
backslash in a name gives `diff --git "a/..." "b/..."`). It prints one verdict
object: approve when every changed path matches an --allow glob (and --deny none),
reject naming the paths outside the scope otherwise.

It never approves what it could not see: a diff it cannot read (no git, an error),
a header it cannot parse, or a diff text cut at its size bound with no path list
is escalated. Exit status 0 unless the input is not JSON (then loopexec escalates
on its own).
"""

import argparse
import fnmatch
import json
import sys

HEADER = "diff --git "
# git's C-style escapes (quote.c: sq_lookup); octal \NNN is handled apart
ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class Unreadable(Exception):
    """A diff header whose paths cannot be told apart for certain."""


def unquote(s, i):
    """Reads the C-quoted string starting at s[i] == '"': (name, index after it)."""
    out = bytearray()
    i += 1
    while i < len(s):
        c = s[i]
        if c == '"':
            return out.decode("utf-8", "replace"), i + 1
        if c == "\\":
            nxt = s[i + 1 : i + 2]
            if nxt in ESCAPES:
                out.append(ESCAPES[nxt])
                i += 2
            elif len(s[i + 1 : i + 4]) == 3 and all(d in "01234567" for d in s[i + 1 : i + 4]):
                out.append(int(s[i + 1 : i + 4], 8) & 0xFF)
                i += 4
            else:
                raise Unreadable("unknown escape in %r" % s)
        else:
            out.extend(c.encode("utf-8", "surrogateescape"))
            i += 1
    raise Unreadable("unterminated quote in %r" % s)


def strip_side(name, side):
    if not name.startswith(side + "/"):
        raise Unreadable("expected a path starting %s/ in %r" % (side, name))
    return name[len(side) + 1 :]


def header_paths(rest):
    """The two paths of `diff --git <rest>`: (old, new)."""
    if rest.startswith('"'):
        old, i = unquote(rest, 0)
        if rest[i : i + 1] != " ":
            raise Unreadable(rest)
        tail = rest[i + 1 :]
        if tail.startswith('"'):
            new, j = unquote(tail, 0)
            if j != len(tail):
                raise Unreadable(rest)
        else:
            new = tail
        return strip_side(old, "a"), strip_side(new, "b")
    if rest.endswith('"'):
        # a/<plain> "b/<quoted>": the split whose quoted part runs to the end
        for k in range(len(rest)):
            if rest.startswith(' "', k):
                try:
                    new, j = unquote(rest, k + 1)
                except Unreadable:
                    continue
                if j == len(rest):
                    return strip_side(rest[:k], "a"), strip_side(new, "b")
        raise Unreadable(rest)
    # a/<plain> b/<plain>: the same name twice (git writes both sides; with no
    # rename they are equal), else a single " b/" to split at
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return strip_side(rest[:half], "a"), strip_side(rest[half + 1 :], "b")
    if rest.count(" b/") == 1:
        old, new = rest.split(" b/")
        return strip_side(old, "a"), new
    raise Unreadable(rest)


def changed_paths(diff_text):
    """Every path named by a `diff --git` header (and a rename's or copy's lines)."""
    paths = []

    def add(p):
        if p not in paths:
            paths.append(p)

    for line in diff_text.split("\n"):
        if line.startswith(HEADER):
            for p in header_paths(line[len(HEADER) :]):
                add(p)
        for key in ("rename from ", "rename to ", "copy from ", "copy to "):
            if line.startswith(key):
                name = line[len(key) :]
                if name.startswith('"'):
                    name, j = unquote(name, 0)
                    if j != len(line) - len(key):
                        raise Unreadable(line)
                add(name)
    return paths


def matches(path, globs):
    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def escalate(why):
    return {"verdict": "escalate", "reasons": [why], "evidence": []}


def judge(data, allow, deny):
    diff = data.get("diff") or {}
    if "paths" in diff:
        paths = diff["paths"]
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            return escalate("diff.paths is not a list of paths")
    elif "text" not in diff:
        return escalate("no diff against t0 to judge: " + str(diff.get("error", "missing")))
    elif diff.get("truncated"):
        return escalate("the diff against t0 was cut at its size bound and no path list was given")
    else:
        try:
            paths = changed_paths(diff["text"])
        except Unreadable as e:
            return escalate("a diff header could not be read for certain: %s" % e)
    outside = [p for p in paths if (allow and not matches(p, allow)) or matches(p, deny)]
    if outside:
        return {
            "verdict": "reject",
            "reasons": ["the diff touches files outside the declared scope: " + ", ".join(outside)],
            "evidence": outside,
        }
    return {
        "verdict": "approve",
        "reasons": ["every changed path is within the declared scope (%d changed)" % len(paths)],
        "evidence": paths,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--allow", action="append", default=[], help="glob of paths the work may change (repeatable)")
    ap.add_argument("--deny", action="append", default=[], help="glob of paths it must not change (repeatable)")
    args = ap.parse_args()
    print(json.dumps(judge(json.load(sys.stdin), args.allow, args.deny)))


if __name__ == "__main__":
    main()
