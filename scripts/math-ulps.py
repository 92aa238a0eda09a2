#!/usr/bin/env python3
"""Error of the f64 functions' IR against the correctly rounded result, with mpmath.

    GPU_ASYNC_MATH_DUMP=/tmp/dump GPU_ASYNC_MATH_SAMPLES=200000 \
        cargo test --release -p gpu-async-compiler --test math_ir
    python3 scripts/math-ulps.py /tmp/dump [FUNCTION...]

Each DIR/NAME.txt line holds the bits of x, y and the IR's result (from
macros/compiler/tests/math_ir.rs). For every finite, nonzero exact result this prints the
largest error in ulps of the exact value (|result - exact| / ulp(exact), subnormals counting
2^-1074), where it occurs, and how many results are not the correctly rounded double.
Results that are 0, infinite or NaN are compared with the rounded exact value as they are.
"""

import struct
import sys
from pathlib import Path

import mpmath

mpmath.mp.prec = 160


def f64(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def ulp(v):
    """The ulp of the double nearest the (nonzero, finite) mpf v."""
    e = int(mpmath.floor(mpmath.log(abs(v), 2)))
    return mpmath.mpf(2) ** max(e - 52, -1074)


def exact(name, x, y):
    """The exact value as an mpf, or None where it is 0, infinite or NaN (not measured)."""
    X, Y = mpmath.mpf(x), mpmath.mpf(y)
    if name == "exp":
        return mpmath.exp(X)
    if name == "exp2":
        return mpmath.power(2, X)
    if name == "ln":
        return mpmath.log(X) if x > 0 and x != 1 else None
    if name == "log2":
        return mpmath.log(X, 2) if x > 0 and x != 1 else None
    if name in ("sin", "cos"):
        # Large arguments need the working precision of their exponent.
        with mpmath.workprec(160 + max(0, int(abs(x)).bit_length())):
            return mpmath.sin(X) if name == "sin" else mpmath.cos(X)
    if name == "tanh":
        return mpmath.tanh(X)
    if name == "powf":
        if x == 0 or y == 0 or x == 1:
            return None
        if x < 0:
            if y != int(y):
                return None
            mag = mpmath.power(-X, Y)
            return -mag if int(y) % 2 else mag
        return mpmath.power(X, Y)
    raise ValueError(name)


def measure(path):
    name = path.stem
    worst, at, not_rounded, count = mpmath.mpf(0), None, 0, 0
    for line in path.read_text().split("\n"):
        if not line.strip():
            continue
        a, b, r = (int(t, 16) for t in line.split())
        x, y, res = f64(a), f64(b), f64(r)
        if not all(map(lambda v: v == v and abs(v) != float("inf"), (x, y))):
            continue
        try:
            v = exact(name, x, y)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        if v is None or v == 0 or not mpmath.isfinite(v):
            continue
        if abs(v) >= mpmath.mpf(2) ** 1024 or abs(v) < mpmath.mpf(2) ** -1075:
            continue  # overflows or underflows to 0: the host comparison checks these
        count += 1
        if res != res or abs(res) == float("inf"):
            err = mpmath.inf
        else:
            err = abs(mpmath.mpf(res) - v) / ulp(v)
        if err > 0.5:
            not_rounded += 1
        if err > worst:
            worst, at = err, (x, y, res)
    print(f"{name}: max {mpmath.nstr(worst, 4)} ulp over {count} results "
          f"(at x = {at[0]!r}, y = {at[1]!r}: {at[2]!r}), {not_rounded} not correctly rounded"
          if at else f"{name}: no results")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    directory = Path(sys.argv[1])
    wanted = sys.argv[2:]
    for path in sorted(directory.glob("*.txt")):
        if not wanted or path.stem in wanted:
            measure(path)


if __name__ == "__main__":
    main()
