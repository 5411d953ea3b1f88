"""Cloth topology from a polygon mesh: which particle pairs become stretch and shear sticks
(bending: ``particles.bending``).

Faces come as a list of vertex-index sequences (any polygon size >= 3). Everything is done on
flat corner arrays with numpy, so large meshes cost no per-face Python work beyond reading them.
"""

from __future__ import annotations

import numpy as np

from ..errors import JakobsenError


def flatten_faces(faces, vertex_count: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Faces -> (corners (c,) vertex indices, starts (f,) first corner of each face).

    Rejects faces with fewer than 3 vertices, repeated vertices or indices out of range.
    """
    if isinstance(faces, np.ndarray) and faces.ndim == 2:
        sizes = np.full(len(faces), faces.shape[1], dtype=np.int64)
        corners = faces.astype(np.int64).ravel()
    else:
        faces = [np.asarray(f).ravel() for f in faces]
        sizes = np.array([len(f) for f in faces], dtype=np.int64)
        corners = np.concatenate(faces).astype(np.int64) if faces else np.zeros(0, np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    small = np.flatnonzero(sizes < 3)
    if len(small):
        raise JakobsenError(f"{where}: face {small[0]} has {sizes[small[0]]} vertices; a face needs at least 3")
    bad = np.flatnonzero((corners < 0) | (corners >= vertex_count))
    if len(bad):
        face = int(np.searchsorted(starts, bad[0], side="right") - 1)
        raise JakobsenError(
            f"{where}: face {face} uses vertex index {corners[bad[0]]}, "
            f"but the mesh has {vertex_count} vertices")
    # Repeated vertex within a face: sort each face's corners and look for equal neighbours.
    face_of = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((corners, face_of))
    same = (face_of[order][1:] == face_of[order][:-1]) & (corners[order][1:] == corners[order][:-1])
    if np.any(same):
        k = int(np.flatnonzero(same)[0])
        raise JakobsenError(
            f"{where}: face {face_of[order][k]} repeats vertex {corners[order][k]}")
    return corners, starts


def _corner_links(corners, starts):
    sizes = np.diff(np.append(starts, len(corners)))
    face_of = np.repeat(np.arange(len(starts)), sizes)
    local = np.arange(len(corners)) - starts[face_of]
    size = sizes[face_of]
    nxt = starts[face_of] + (local + 1) % size
    prv = starts[face_of] + (local - 1) % size
    return nxt, prv, face_of, sizes


def unique_keys(keys: np.ndarray) -> np.ndarray:
    """np.unique of a 1-d integer array: sorted, each value once. (numpy 2's np.unique hashes
    first, and took sixteen times as long as this sort on 3 million keys.)"""
    keys = np.sort(keys)
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys


def _unique_pairs(a, b):
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    lo, hi = lo[keep].astype(np.int64), hi[keep].astype(np.int64)
    # Each pair as one integer (in the rows' order: by lo, then hi): np.unique over rows took
    # 2.5 s of a 250,000-vertex cloth's build.
    base = int(hi.max()) + 1 if len(hi) else 1
    key = unique_keys(lo * base + hi)
    return np.stack([key // base, key % base], axis=1).reshape(-1, 2)


def cloth_pairs(corners: np.ndarray, starts: np.ndarray) -> dict[str, np.ndarray]:
    """Stick pairs (k, 2) for ``stretch`` (edges) and ``shear`` (polygon diagonals)."""
    nxt, prv, face_of, sizes = _corner_links(corners, starts)
    u, w = corners, corners[nxt]
    stretch = _unique_pairs(u, w)

    # Shear: fan diagonals from each face's first corner (for a quad, both diagonals).
    diag_a, diag_b = [], []
    for size in np.unique(sizes):
        if size < 4:
            continue
        fs = starts[sizes == size]
        for k in range(2, size - 1):
            diag_a.append(corners[fs])
            diag_b.append(corners[fs + k])
        if size == 4:
            diag_a.append(corners[fs + 1])
            diag_b.append(corners[fs + 3])
    shear = (_unique_pairs(np.concatenate(diag_a), np.concatenate(diag_b))
             if diag_a else np.zeros((0, 2), np.int64))

    return {"stretch": stretch, "shear": shear}


# Vertices with more edges than this are left out of ``crookedness`` (a fan's hub would make its
# padded table as wide as the fan).
CROOKED_VALENCE = 12


def crookedness(positions: np.ndarray, pairs: np.ndarray) -> float:
    """How far a mesh's edges are from running straight on through its vertices: at each vertex,
    each edge's angle from the straight continuation of its most nearly opposite edge there,
    averaged over the mesh (degrees; a regular grid, quads or triangulated, 1.4 at 65 x 65 from
    its border, 10-16 with its inner vertices moved up to 0.15-0.3 of an edge). The chains
    (``particles.chains``) pair each vertex's edges into such continuations."""
    if not len(pairs):
        return 0.0
    i = np.concatenate([pairs[:, 0], pairs[:, 1]])
    j = np.concatenate([pairs[:, 1], pairs[:, 0]])
    u = positions[j] - positions[i]
    u = u / np.maximum(np.linalg.norm(u, axis=1), 1e-300)[:, None]
    order = np.argsort(i, kind="stable")
    i, u = i[order], u[order]
    valence = np.bincount(i)
    start = np.concatenate([[0], np.cumsum(valence)[:-1]])
    slot = np.arange(len(i)) - start[i]
    keep = (valence[i] >= 2) & (valence[i] <= CROOKED_VALENCE)
    if not np.any(keep):
        return 0.0
    vertex = np.unique(i[keep], return_inverse=True)[1]
    table = np.full((int(vertex.max()) + 1, CROOKED_VALENCE, 3), np.nan)
    table[vertex, slot[keep]] = u[keep]
    # Each edge's dot with each other edge of its vertex, one other at a time (the whole table of
    # dots would be 144 numbers a vertex); the smallest is the most nearly opposite edge.
    best = np.full(table.shape[:2], np.inf)
    for other in range(CROOKED_VALENCE):
        dots = np.einsum("vak,vk->va", table, table[:, other])
        dots[:, other] = np.inf
        best = np.fmin(best, np.where(np.isnan(dots), np.inf, dots))
    best = best[np.isfinite(best) & ~np.isnan(table[:, :, 0])]
    return float(np.degrees(np.arccos(np.clip(-best, -1.0, 1.0))).mean())


def vertex_areas(positions: np.ndarray, corners: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Area (n,) m^2 that each vertex represents: each face's area shared equally by its corners."""
    nxt, _, face_of, sizes = _corner_links(corners, starts)
    # Newell's formula, relative to each face's first corner to keep rounding small far from the origin.
    origin = positions[corners[starts[face_of]]]
    cross = np.cross(positions[corners] - origin, positions[corners[nxt]] - origin)
    area = 0.5 * np.linalg.norm(np.add.reduceat(cross, starts, axis=0), axis=1)
    share = np.repeat(area / sizes, sizes)
    out = np.zeros(len(positions))
    np.add.at(out, corners, share)
    return out
