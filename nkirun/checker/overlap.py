"""Exact overlap of two views of one tensor, for the scheduler's dependences.

A view selects, per tensor dimension, the arithmetic progression start + k*step,
k = 0..count-1 (`Resolved.box`); the selected elements are the Cartesian product.
"""
from __future__ import annotations

from math import gcd


def _ap_intersect(s1: int, c1: int, t1: int, s2: int, c2: int, t2: int) -> bool:
    """Whether {s1 + i*t1 : i < c1} and {s2 + j*t2 : j < c2} share an integer."""
    if c1 == 1:
        t1 = 1
    if c2 == 1:
        t2 = 1
    lo = max(s1, s2)
    hi = min(s1 + (c1 - 1) * t1, s2 + (c2 - 1) * t2)
    if lo > hi:
        return False
    if t1 == 1 and t2 == 1:
        return True
    if c1 == 1:
        return (s1 - s2) % t2 == 0
    if c2 == 1:
        return (s2 - s1) % t1 == 0
    # x = s1 + i*t1 = s2 + j*t2: solvable iff gcd | (s2 - s1); the solutions form one
    # residue class modulo lcm(t1, t2) (Chinese remainder theorem). Is one in [lo, hi]?
    g = gcd(t1, t2)
    d = s2 - s1
    if d % g:
        return False
    m = t2 // g
    i0 = (d // g) * pow(t1 // g, -1, m) % m if m > 1 else 0
    x0, period = s1 + i0 * t1, t1 * m
    x = x0 - ((x0 - lo) // period) * period  # the smallest solution >= lo
    return x <= hi


def overlaps(box_a, box_b) -> bool:
    """Whether two boxes of the same tensor share any element (exact)."""
    if box_a == box_b:
        return True
    for (s1, c1, t1), (s2, c2, t2) in zip(box_a, box_b):
        if not _ap_intersect(s1, c1, t1, s2, c2, t2):
            return False
    return True


def _ap_contains(s1: int, c1: int, t1: int, s2: int, c2: int, t2: int) -> bool:
    """Whether progression 2 is a subset of progression 1."""
    e1, e2 = s1 + (c1 - 1) * t1, s2 + (c2 - 1) * t2
    if not (s1 <= s2 and e2 <= e1 and (s2 - s1) % t1 == 0):
        return False
    return c2 == 1 or t2 % t1 == 0


def contains(box_a, box_b) -> bool:
    """Whether every element of box_b is in box_a (same tensor)."""
    if box_a == box_b:
        return True
    return all(_ap_contains(*a, *b) for a, b in zip(box_a, box_b))
