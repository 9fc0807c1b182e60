#!/usr/bin/env bash
# Scripted, deterministic stand-in for a coding agent that is stuck (no
# network, no LLM). Every invocation "tries something": it toggles the
# precision of PI in shapes/geometry.py between two values. That changes the
# code each time but never touches the real bug in triangle_area, so the same
# test keeps failing and the tree flips back and forth between two states.
set -euo pipefail
f=shapes/geometry.py

if grep -q '^PI = 3.14159$' "$f"; then
    echo "agent: maybe pi is not precise enough; using more digits"
    sed -i 's|^PI = 3.14159$|PI = 3.141592653589793|' "$f"
else
    echo "agent: that did not help; going back to the shorter pi"
    sed -i 's|^PI = 3.141592653589793$|PI = 3.14159|' "$f"
fi
