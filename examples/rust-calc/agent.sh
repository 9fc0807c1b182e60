#!/usr/bin/env bash
# Scripted, deterministic stand-in for a coding agent (no network, no LLM).
# Each invocation looks at the code and fixes the FIRST bug still present,
# exactly one per call, so the loop needs three iterations to go green.
set -euo pipefail
f=src/lib.rs

if grep -q 'value = value + digit;' "$f"; then
    echo "agent: fixing number tokenizing (multi-digit numbers)"
    sed -i 's|value = value + digit; // BUG 1: forgets to shift by the base|value = value * 10 + digit;|' "$f"
elif grep -q 'acc += self.term()?; } // BUG 2' "$f"; then
    echo "agent: fixing subtraction"
    sed -i 's|acc += self.term()?; } // BUG 2: adds instead of subtracting|acc -= self.term()?; }|' "$f"
elif grep -q 'acc /= rhs; // BUG 3' "$f"; then
    echo "agent: fixing division by zero"
    sed -i 's|acc /= rhs; // BUG 3: panics instead of reporting division by zero|if rhs == 0 { return Err(CalcError::DivisionByZero); }\n                    acc /= rhs;|' "$f"
else
    echo "agent: nothing left to fix"
fi
