"""Graphs over indices: which items are joined, through pairs of them, into one piece."""

from __future__ import annotations

import numpy as np


def connected_components(count: int, pairs) -> np.ndarray:
    """Component label (count,) of each item: the lowest index of its component, joining the
    pairs (k, 2) of indices (indices outside 0..count-1 stand for the world and join nothing).
    Labels spread along the pairs and jump to their labels' labels until nothing changes: a few
    whole-array passes even for a pile of a thousand boxes or a cloth of 250,000 vertices (a
    union-find in Python was a tenth of that pile's frame)."""
    label = np.arange(count, dtype=np.int64)
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    keep = np.all((p >= 0) & (p < count), axis=1)
    a, b = p[keep, 0], p[keep, 1]
    while len(a):
        low = np.minimum(label[a], label[b])
        spread = label.copy()
        np.minimum.at(spread, a, low)
        np.minimum.at(spread, b, low)
        spread = spread[spread]  # an item's label is an item of its piece with a lower label: jump
        spread = spread[spread]
        if np.array_equal(spread, label):
            break
        label = spread
    return label


def nearest_source(count: int, pairs, lengths, sources) -> tuple[np.ndarray, np.ndarray]:
    """Shortest distances (count,) along the pairs (k, 2), each as long as ``lengths`` (k,) and
    walkable both ways, from the nearest of the ``sources`` (indices), and which source that is
    (count,; -1 and inf where none is reached). Label-correcting, a wave front of whole-array
    steps: a vertex is moved on when it got nearer in the last step; ties go to the lower source
    index, so the result does not depend on the order of the pairs."""
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    w = np.asarray(lengths, dtype=np.float64)
    a, b = np.concatenate([p[:, 0], p[:, 1]]), np.concatenate([p[:, 1], p[:, 0]])
    w = np.concatenate([w, w])
    order = np.argsort(a, kind="stable")
    a, b, w = a[order], b[order], w[order]
    first = np.searchsorted(a, np.arange(count + 1))  # the pairs leaving each vertex: first[v]:first[v + 1]
    distance = np.full(count, np.inf)
    source = np.full(count, -1, dtype=np.int64)
    front = np.unique(np.asarray(sources, dtype=np.int64))
    distance[front], source[front] = 0.0, front
    while len(front):
        counts = first[front + 1] - first[front]
        edge = np.repeat(first[front] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        to, via = b[edge], a[edge]
        reach, by = distance[via] + w[edge], source[via]
        better = (reach < distance[to]) | ((reach == distance[to]) & (by < source[to]))
        to, reach, by = to[better], reach[better], by[better]
        pick = np.lexsort((by, reach, to))  # the nearest offer for each vertex, then the lowest source
        keep = np.ones(len(pick), dtype=bool)
        keep[1:] = to[pick[1:]] != to[pick[:-1]]
        pick = pick[keep]
        distance[to[pick]], source[to[pick]] = reach[pick], by[pick]
        front = to[pick]
    return distance, source
