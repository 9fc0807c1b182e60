#!/usr/bin/env bash
# Run one loopexec example end to end in a fresh temporary git repository.
#
#   examples/run.sh rust-calc      # converges: exit code 10
#   examples/run.sh python-stuck   # never converges: exit code 17
#
# Environment:
#   LOOPEXEC      path to a loopexec binary (default: $CARGO_TARGET_DIR/release/loopexec,
#                 or <repo>/target/release/loopexec when CARGO_TARGET_DIR is unset;
#                 built there with `cargo build --release` if missing)
#   CARGO_TARGET_DIR  where loopexec itself is found and built (the example's own
#                 crate always builds inside its temporary repository)
#   KEEP_TMP=1    keep the temporary repository and print its path
set -euo pipefail

usage() {
    echo "usage: $0 rust-calc|python-stuck" >&2
    exit 2
}
[ $# -eq 1 ] || usage
name=$1

examples_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$examples_dir/.." && pwd)
example_dir="$examples_dir/$name"
[ -d "$example_dir/template" ] || { echo "unknown example: $name" >&2; usage; }

# --- locate (or build) loopexec -------------------------------------------
if [ -n "${LOOPEXEC:-}" ]; then
    loopexec=$LOOPEXEC
else
    target_dir=${CARGO_TARGET_DIR:-$repo_root/target}
    # Cargo reads a relative CARGO_TARGET_DIR from where it runs; take it from here.
    case "$target_dir" in
        /*) ;;
        *) target_dir="$PWD/$target_dir" ;;
    esac
    loopexec="$target_dir/release/loopexec"
    if [ ! -x "$loopexec" ]; then
        echo "== building loopexec (cargo build --release, target dir $target_dir) ..." >&2
        (cd "$repo_root" && CARGO_TARGET_DIR="$target_dir" cargo build --release --quiet)
    fi
fi
[ -x "$loopexec" ] || { echo "loopexec binary not found or not executable: $loopexec" >&2; exit 2; }
loopexec=$(cd "$(dirname "$loopexec")" && pwd)/$(basename "$loopexec")

# --- per-example settings ---------------------------------------------------
agent="bash $example_dir/agent.sh"
case "$name" in
    rust-calc)
        check="cargo test"
        max_iterations=6
        ;;
    python-stuck)
        if python3 -c 'import pytest' >/dev/null 2>&1; then
            check="python3 -m pytest -v -p no:cacheprovider"
        else
            echo "== pytest is not importable; falling back to unittest" >&2
            check="python3 -m unittest -v"
        fi
        max_iterations=10
        ;;
    *) usage ;;
esac

# --- fresh project in a temporary git repo ----------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/loopexec-$name.XXXXXX")
if [ "${KEEP_TMP:-0}" = 1 ]; then
    echo "== keeping $tmp" >&2
else
    trap 'rm -rf "$tmp"' EXIT
fi
work="$tmp/$name"
cp -R "$example_dir/template" "$work"
cd "$work"
# The crate's build output stays inside the temp repo (target/ is gitignored),
# whatever CARGO_TARGET_DIR the caller has set.
unset CARGO_TARGET_DIR
export PYTHONDONTWRITEBYTECODE=1
git init --quiet
git config user.name "loopexec example"
git config user.email "example@loopexec.invalid"
git config commit.gpgsign false
git add -A
git commit --quiet -m "$name: initial project with a bug"

echo "== example:  $name"
echo "== project:  $work"
echo "== loopexec: $loopexec"
echo "== exec:     $agent"
echo "== check:    $check"
echo

# --- the loop ----------------------------------------------------------------
set +e
"$loopexec" run --exec "$agent" --check "$check" --max-iterations "$max_iterations"
code=$?
set -e

echo
echo "== loopexec report"
"$loopexec" report || true
echo
echo "== loopexec explain-halt"
"$loopexec" explain-halt || true
echo
echo "exit code: $code"
exit "$code"
