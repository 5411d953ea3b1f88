"""Surfaces: each cloth's triangles and its whole-surface settings (self-collision, pressure,
shape matching, plasticity, tearing), as flat arrays.

Sticks say how far apart two particles may be; what needs the surface itself lives here: the
self-collision of a folding cloth (its triangles against its own vertices), the volume of a
closed cloth that pressure keeps (a balloon, a cushion) and the rest shape a soft body matches.

Shapes: T triangles, S surfaces (one per cloth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Surfaces:
    """triangles: (T, 3) int64 particle indices (every face fanned from its first corner);
    surface: (T,) int64 which surface each triangle belongs to. Per surface (S,): start, stop:
    its particle range; self_collision: bool; self_distance: m, how close two of its non-adjacent
    parts may come; pressure: the volume it keeps as a ratio of its rest volume (0 = no pressure);
    pressure_compliance: m^3 per (N/m^2), 0 = the volume is held exactly; rest_volume: m^3, signed
    (negative when the faces point inwards; 0 for an open surface); closed: bool, every edge
    shared by exactly two faces; shape_compliance: the shape-matching compliance per unit mass,
    s^2 (inf = none: a cloth; a soft body keeps its shape with stiffness 1 / compliance, N/m per
    kg); shape_damping: how much of its jiggle a soft body loses, as a ratio of critical damping
    (1 = springs back without overshooting); plastic_limit: the strain of a stick (or of a soft
    body's vertex from its matched shape, relative to the body's size) beyond which its rest
    changes (inf = elastic); plastic_rate: how much of the strain beyond the limit becomes rest
    each second (1/s; inf = at once); tear_factor: a stretch or shear stick breaks when stretched
    beyond this times its rest length (inf = never)."""

    triangles: np.ndarray
    surface: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    self_collision: np.ndarray
    self_distance: np.ndarray
    pressure: np.ndarray
    pressure_compliance: np.ndarray
    rest_volume: np.ndarray
    closed: np.ndarray
    shape_compliance: np.ndarray
    shape_damping: np.ndarray
    plastic_limit: np.ndarray
    plastic_rate: np.ndarray
    tear_factor: np.ndarray
    names: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return len(self.start)

    def self_colliding_triangles(self) -> np.ndarray:
        """(t, 3) the triangles of the surfaces with self-collision on."""
        return self.triangles[self.self_collision[self.surface]] if len(self.triangles) else self.triangles


def fan_triangles(corners: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(T, 3) the faces (flat corners, starts) fanned from each face's first corner, in face order."""
    sizes = np.diff(np.append(starts, len(corners)))
    tris, faces, fans = [], [], []
    for size in np.unique(sizes):
        fs = np.flatnonzero(sizes == size)
        for k in range(1, size - 1):
            first = starts[fs]
            tris.append(np.stack([corners[first], corners[first + k], corners[first + k + 1]], axis=1))
            faces.append(fs)
            fans.append(np.full(len(fs), k))
    if not tris:
        return np.zeros((0, 3), np.int64)
    order = np.lexsort((np.concatenate(fans), np.concatenate(faces)))
    return np.concatenate(tris).astype(np.int64)[order]


def is_closed(corners: np.ndarray, starts: np.ndarray) -> bool:
    """Every edge of the faces shared by exactly two faces (a closed, manifold surface)."""
    sizes = np.diff(np.append(starts, len(corners)))
    face_of = np.repeat(np.arange(len(starts)), sizes)
    nxt = starts[face_of] + (np.arange(len(corners)) - starts[face_of] + 1) % sizes[face_of]
    lo, hi = np.minimum(corners, corners[nxt]), np.maximum(corners, corners[nxt])
    _, counts = np.unique(lo * (int(corners.max()) + 1) + hi, return_counts=True)
    return bool(len(counts)) and bool(np.all(counts == 2))


def enclosed_volume(positions: np.ndarray, triangles: np.ndarray) -> float:
    """The signed volume m^3 a closed triangle surface encloses (positive for outward normals):
    the sum of the tetrahedra from the surface's centroid to each triangle."""
    if not len(triangles):
        return 0.0
    c = positions[np.unique(triangles)].mean(axis=0)
    a, b, d = (positions[triangles[:, k]] - c for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, d)).sum() / 6.0)


def empty_surfaces() -> Surfaces:
    z = np.zeros(0)
    zi = np.zeros(0, np.int64)
    zb = np.zeros(0, bool)
    return Surfaces(np.zeros((0, 3), np.int64), zi, zi, zi, zb, z, z, z, z, zb, z, z, z, z, z, ())


def join_surfaces(parts: list[dict]) -> Surfaces:
    """Surfaces from the builder's per-cloth records (dicts of this class's fields, one surface
    each, triangles already in global particle indices)."""
    if not parts:
        return empty_surfaces()
    tri = np.concatenate([p["triangles"] for p in parts]).astype(np.int64).reshape(-1, 3)
    owner = np.concatenate([np.full(len(p["triangles"]), k, np.int64) for k, p in enumerate(parts)])

    def per(key, dtype=np.float64):
        return np.array([p[key] for p in parts], dtype=dtype)

    out = Surfaces(tri, owner, per("start", np.int64), per("stop", np.int64), per("self_collision", bool),
                   per("self_distance"), per("pressure"), per("pressure_compliance"), per("rest_volume"),
                   per("closed", bool), per("shape_compliance"), per("shape_damping"), per("plastic_limit"),
                   per("plastic_rate"),
                   per("tear_factor"), tuple(p["name"] for p in parts))
    for a in (out.triangles, out.surface, out.start, out.stop, out.self_collision, out.self_distance,
              out.pressure, out.pressure_compliance, out.rest_volume, out.closed, out.shape_compliance,
              out.shape_damping, out.plastic_limit, out.plastic_rate, out.tear_factor):
        a.flags.writeable = False
    return out


def pressure_compliance(stiffness: float, volume: float) -> float:
    """The compliance (m^3 per N/m^2) of a volume held with bulk stiffness ``stiffness`` N/m^2
    (pressure per unit volume strain): C = V - V_target, energy k C^2 / (2 V_target)."""
    return 0.0 if math.isinf(stiffness) else volume / stiffness
