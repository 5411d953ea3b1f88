"""The broad phase: which bodies may touch, from bounding spheres, once per frame (sweep and
prune along x keeps it near linear in the number of bodies)."""

from __future__ import annotations

import numpy as np


def sweep_and_prune(centre: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Pairs (p, 2), i < j, of spheres (centre (B, 3), radius (B,)) that overlap."""
    lo = centre[:, 0] - radius
    order = np.argsort(lo, kind="stable")
    lo_sorted = lo[order]
    hi_sorted = (centre[:, 0] + radius)[order]
    end = np.searchsorted(lo_sorted, hi_sorted, side="right")
    start = np.arange(len(order)) + 1
    counts = np.maximum(end - start, 0)
    if counts.sum() == 0:
        return np.zeros((0, 2), np.int64)
    first = np.repeat(np.arange(len(order)), counts)
    second = np.repeat(start - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    i, j = order[first], order[second]
    d = centre[i] - centre[j]
    close = np.einsum("ij,ij->i", d, d) <= (radius[i] + radius[j]) ** 2
    pairs = np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1)[close]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
