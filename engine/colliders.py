"""Collider shapes that particles are projected out of (or, for ``BoxInterior``, kept inside).

Every shape is defined in its own local frame (at the origin, axis-aligned) and placed in the
world by a rigid ``transform`` (4x4, no scale: size lives in the shape's dimensions). A moving
(kinematic) collider gives ``motion(t) -> 4x4`` instead, evaluated by the solver at every
substep; friction then acts relative to the moving surface.

Contact queries are vectorised: ``penetration(q, r)`` takes local points ``q`` (k, 3) and radii
``r`` (k,) and returns the local correction (k, 3) that moves each point out of the shape, and
the penetration depth (k,) in metres (<= 0 where there is no contact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .checks import MAX_COORDINATE
from .errors import JakobsenError

Motion = Callable[[float], np.ndarray]


def _rigid(transform, where: str) -> np.ndarray:
    m = np.asarray(transform, dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)):
        raise JakobsenError(f"{where}: transform must be a finite 4x4 matrix, got shape {m.shape}")
    if not np.all(np.abs(m[:3, 3]) <= MAX_COORDINATE):
        raise JakobsenError(f"{where}: its position {m[:3, 3].tolist()} is absurd (at most {MAX_COORDINATE:g} m "
                            "from the origin)")
    r = m[:3, :3]
    if not np.allclose(r.T @ r, np.eye(3), atol=1e-6) or np.linalg.det(r) < 0:
        raise JakobsenError(
            f"{where}: transform must be a rotation plus translation (no scale or shear); "
            "put the size into the shape's dimensions")
    return m


def _positive(value: float, what: str, where: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise JakobsenError(f"{where}: {what} must be a positive finite number, got {value}")
    if value > MAX_COORDINATE:
        raise JakobsenError(f"{where}: {what} is absurd, {value:g} m (at most {MAX_COORDINATE:g})")
    return value


def _check_half_extents(half_extents, where: str) -> None:
    he = np.asarray(half_extents, dtype=np.float64)
    if he.shape != (3,):
        raise JakobsenError(f"{where}: half_extents must have 3 values, got {he.shape}")
    for v in he:
        _positive(v, "each half extent", where)


def _unit(q: np.ndarray, fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    length = np.linalg.norm(q, axis=1)
    safe = length > 1e-12
    n = np.empty_like(q)
    n[safe] = q[safe] / length[safe, None]
    n[~safe] = fallback
    return n, length


@dataclass(frozen=True, kw_only=True)
class _Collider:
    friction: float = 0.5
    restitution: float = 0.0
    transform: np.ndarray = field(default_factory=lambda: np.eye(4))
    motion: Optional[Motion] = None
    name: str = ""

    def validate(self, where: str) -> None:
        for what, value in (("friction", self.friction), ("restitution", self.restitution)):
            if not math.isfinite(value) or value < 0.0:
                raise JakobsenError(f"{where}: {what} must be >= 0, got {value}")
        if self.restitution > 1.0:
            raise JakobsenError(f"{where}: restitution must be <= 1, got {self.restitution}")
        _rigid(self.transform, where)
        if self.motion is not None and not callable(self.motion):
            raise JakobsenError(f"{where}: motion must be a callable t -> 4x4 transform")

    def pose(self, t: float) -> np.ndarray:
        """World transform (4, 4) at time ``t`` seconds."""
        if self.motion is None:
            return np.asarray(self.transform, dtype=np.float64)
        return _rigid(self.motion(t), f"collider {self.name or type(self).__name__} motion({t:g})")

    def penetration(self, q: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def clearance(self, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        """How far (k,) m each local point q (k, 3) of radius r (k,) can surely move before it
        touches the shape (<= 0: touching or inside): for a swept body that must not pass
        through (see ``rigid_solver.RigidStepper.sweep``). The signed distance, or less."""
        return -self.penetration(q, r)[1]

    def thickness(self) -> float:
        """The shape's smallest extent through its solid part, m (inf for a half-space)."""
        return math.inf


@dataclass(frozen=True, kw_only=True)
class Plane(_Collider):
    """Infinite plane z = 0 of its local frame; the solid side is z < 0."""

    @staticmethod
    def from_point_normal(point, normal, **kwargs) -> "Plane":
        """A plane through ``point`` (3,) with outward ``normal`` (3,), in world space."""
        n = np.asarray(normal, dtype=np.float64)
        length = np.linalg.norm(n)
        if not np.isfinite(length) or length < 1e-12:
            raise JakobsenError(f"plane: normal must be a finite non-zero vector, got {normal}")
        z = n / length
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        y = np.cross(z, x)
        m = np.eye(4)
        m[:3, 0], m[:3, 1], m[:3, 2] = x, y, z
        m[:3, 3] = np.asarray(point, dtype=np.float64)
        return Plane(transform=m, **kwargs)

    def penetration(self, q, r):
        depth = r - q[:, 2]
        corr = np.zeros_like(q)
        corr[:, 2] = depth
        return corr, depth


@dataclass(frozen=True, kw_only=True)
class Sphere(_Collider):
    """Solid sphere of ``radius`` metres around the local origin."""

    radius: float = 1.0

    def validate(self, where):
        super().validate(where)
        _positive(self.radius, "radius", where)

    def thickness(self):
        return 2.0 * self.radius

    def penetration(self, q, r):
        n, length = _unit(q, np.array([0.0, 0.0, 1.0]))
        depth = self.radius + r - length
        return n * depth[:, None], depth


@dataclass(frozen=True, kw_only=True)
class Capsule(_Collider):
    """Solid capsule along local z: a segment from -half_height to +half_height, swept by radius."""

    radius: float = 0.5
    half_height: float = 0.5

    def validate(self, where):
        super().validate(where)
        _positive(self.radius, "radius", where)
        if not math.isfinite(self.half_height) or self.half_height < 0:
            raise JakobsenError(f"{where}: half_height must be >= 0, got {self.half_height}")

    def thickness(self):
        return 2.0 * self.radius

    def penetration(self, q, r):
        axis_point = np.zeros_like(q)
        axis_point[:, 2] = np.clip(q[:, 2], -self.half_height, self.half_height)
        n, length = _unit(q - axis_point, np.array([1.0, 0.0, 0.0]))
        depth = self.radius + r - length
        return n * depth[:, None], depth


@dataclass(frozen=True, kw_only=True)
class Box(_Collider):
    """Solid box with ``half_extents`` (3,) metres, centred on the local origin."""

    half_extents: tuple = (0.5, 0.5, 0.5)

    def validate(self, where):
        super().validate(where)
        _check_half_extents(self.half_extents, where)

    def thickness(self):
        return 2.0 * float(min(self.half_extents))

    def penetration(self, q, r):
        he = np.asarray(self.half_extents, dtype=np.float64)
        a = np.abs(q) - he
        outside = np.any(a > 0.0, axis=1)
        corr = np.zeros_like(q)
        depth = np.empty(len(q))
        # Outside: push away from the closest surface point (handles edges and corners).
        qo = q[outside]
        n, dist = _unit(qo - np.clip(qo, -he, he), np.array([0.0, 0.0, 1.0]))
        depth[outside] = r[outside] - dist
        corr[outside] = n * depth[outside, None]
        # Inside: leave through the nearest face.
        inside = ~outside
        qi, ai = q[inside], a[inside]
        k = np.argmax(ai, axis=1)
        rows = np.arange(len(qi))
        d_in = r[inside] - ai[rows, k]
        ci = np.zeros_like(qi)
        ci[rows, k] = np.where(qi[rows, k] >= 0.0, 1.0, -1.0) * d_in
        depth[inside] = d_in
        corr[inside] = ci
        return corr, depth


@dataclass(frozen=True, kw_only=True)
class BoxInterior(_Collider):
    """The inside of a box (Jakobsen's cube world): particles are kept within ``half_extents``."""

    half_extents: tuple = (1.0, 1.0, 1.0)

    def validate(self, where):
        super().validate(where)
        _check_half_extents(self.half_extents, where)

    def clearance(self, q, r):
        # Inside, the distance to the nearest wall (penetration is 0 anywhere inside).
        he = np.asarray(self.half_extents, dtype=np.float64)
        inner = np.min(he[None, :] - r[:, None] - np.abs(q), axis=1)
        return np.where(inner > 0.0, inner, -self.penetration(q, r)[1])

    def penetration(self, q, r):
        he = np.asarray(self.half_extents, dtype=np.float64)
        limit = np.maximum(he[None, :] - r[:, None], 0.0)
        corr = np.clip(q, -limit, limit) - q
        depth = np.linalg.norm(corr, axis=1)
        return corr, depth


ColliderShape = _Collider


@dataclass(frozen=True, kw_only=True)
class Cylinder(_Collider):
    """Solid cylinder along local z: ``radius`` and ``half_height`` in metres."""

    radius: float = 0.5
    half_height: float = 0.5

    def validate(self, where):
        super().validate(where)
        _positive(self.radius, "radius", where)
        _positive(self.half_height, "half_height", where)

    def thickness(self):
        return 2.0 * min(self.radius, self.half_height)

    def penetration(self, q, r):
        radial = np.linalg.norm(q[:, :2], axis=1)
        side = radial - self.radius  # > 0 outside the side wall
        cap = np.abs(q[:, 2]) - self.half_height  # > 0 beyond a cap
        rad_dir = np.zeros_like(q)
        safe = radial > 1e-12
        rad_dir[safe, :2] = q[safe, :2] / radial[safe, None]
        rad_dir[~safe, 0] = 1.0
        axial = np.zeros_like(q)
        axial[:, 2] = np.where(q[:, 2] >= 0.0, 1.0, -1.0)
        outside_both = (side > 0) & (cap > 0)
        dist = np.where(outside_both, np.hypot(np.maximum(side, 0), np.maximum(cap, 0)), np.maximum(side, cap))
        n = np.where((side > cap)[:, None], rad_dir, axial)
        rim = outside_both
        if np.any(rim):
            v = rad_dir[rim] * side[rim, None] + axial[rim] * cap[rim, None]
            n[rim] = v / np.linalg.norm(v, axis=1, keepdims=True)
        depth = r - dist
        return n * depth[:, None], depth


@dataclass(frozen=True, kw_only=True)
class ConvexHull(_Collider):
    """Solid convex polytope: the intersection of half-spaces n_k . q <= offset_k.

    normals: (f, 3) unit outward face normals; offsets: (f,) m; vertices: (h, 3) its corners.
    Build it from points with ``ConvexHull.from_points``.
    """

    normals: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @staticmethod
    def from_points(points, where: str = "convex hull", **kwargs) -> "ConvexHull":
        from .geometry import convex_hull

        pts = np.asarray(points, dtype=np.float64)
        idx, tris = convex_hull(pts, where)
        a, b, c = (pts[tris[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        area = np.linalg.norm(n, axis=1)
        keep = area > 1e-12 * max(area.max(), 1e-300)
        n = n[keep] / area[keep, None]
        offsets = np.einsum("ij,ij->i", n, a[keep])
        # Merge the coplanar triangles of one face into one half-space.
        key = np.round(np.c_[n, offsets] * 1e6).astype(np.int64)
        _, first = np.unique(key, axis=0, return_index=True)
        return ConvexHull(normals=n[np.sort(first)], offsets=offsets[np.sort(first)], vertices=pts[idx], **kwargs)

    def validate(self, where):
        super().validate(where)
        if len(self.normals) < 4 or len(self.normals) != len(self.offsets):
            raise JakobsenError(f"{where}: a convex hull needs at least 4 faces")

    def thickness(self):
        if not len(self.vertices):
            return math.inf
        spans = self.vertices @ self.normals.T
        return float(np.min(spans.max(axis=0) - spans.min(axis=0)))

    def penetration(self, q, r):
        dist = q @ self.normals.T - self.offsets
        k = np.argmax(dist, axis=1)
        d = dist[np.arange(len(q)), k]
        depth = r - d
        return self.normals[k] * depth[:, None], depth


def closest_points_on_triangles(p, a, b, c):
    """Closest points (k, 3) on triangles (a, b, c) (k, 3 each) to points p (k, 3) (Ericson 5.1.5)."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = np.einsum("ij,ij->i", ab, ap), np.einsum("ij,ij->i", ac, ap)
    bp = p - b
    d3, d4 = np.einsum("ij,ij->i", ab, bp), np.einsum("ij,ij->i", ac, bp)
    cp = p - c
    d5, d6 = np.einsum("ij,ij->i", ab, cp), np.einsum("ij,ij->i", ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    denom = va + vb + vc
    denom = np.where(np.abs(denom) < 1e-300, 1e-300, denom)
    v = vb / denom
    w = vc / denom
    out = a + ab * v[:, None] + ac * w[:, None]  # inside the face
    with np.errstate(divide="ignore", invalid="ignore"):
        # edge bc
        sel = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        out = np.where(sel[:, None], b + (c - b) * t[:, None], out)
        # edge ac
        sel = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        t = d2 / (d2 - d6)
        out = np.where(sel[:, None], a + ac * t[:, None], out)
        # edge ab
        sel = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        t = d1 / (d1 - d3)
        out = np.where(sel[:, None], a + ab * t[:, None], out)
    # vertices
    out = np.where(((d6 >= 0) & (d5 <= d6))[:, None], c, out)
    out = np.where(((d3 >= 0) & (d4 <= d3))[:, None], b, out)
    out = np.where(((d1 <= 0) & (d2 <= 0))[:, None], a, out)
    return out


@dataclass(frozen=True, kw_only=True)
class TriangleMesh(_Collider):
    """A static (or moving) triangle mesh such as terrain; its solid side is behind its faces.

    vertices: (n, 3) m; triangles: (t, 3) wound counter-clockwise seen from the open side.
    A point counts as touching when it is within ``margin`` in front of or behind a face.
    Build with ``TriangleMesh.from_mesh`` so the lookup grid is made once.
    """

    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    margin: float = 0.1
    cell: float = 1.0
    cell_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cell_starts: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    cell_triangles: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @staticmethod
    def from_mesh(vertices, faces, *, margin: float = 0.1, where: str = "triangle mesh", **kwargs) -> "TriangleMesh":
        from .geometry import triangulate

        v = np.asarray(vertices, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 3 or not np.all(np.isfinite(v)):
            raise JakobsenError(f"{where}: vertices must be a finite (n, 3) array")
        tris = triangulate(faces, len(v), where)
        if len(tris) == 0:
            raise JakobsenError(f"{where}: the mesh has no faces")
        lo = v[tris].min(axis=1) - margin
        hi = v[tris].max(axis=1) + margin
        cell = float(max(np.median(hi - lo), 1e-3))
        # Register each triangle in every cell its margin-grown box touches.
        lo_c = np.floor(lo / cell).astype(np.int64)
        hi_c = np.floor(hi / cell).astype(np.int64)
        keys, owners = [], []
        span = hi_c - lo_c + 1
        for dx in range(int(span[:, 0].max())):
            for dy in range(int(span[:, 1].max())):
                for dz in range(int(span[:, 2].max())):
                    ok = (dx < span[:, 0]) & (dy < span[:, 1]) & (dz < span[:, 2])
                    t = np.flatnonzero(ok)
                    keys.append(_cell_key(lo_c[t] + np.array([dx, dy, dz])))
                    owners.append(t)
        keys, owners = np.concatenate(keys), np.concatenate(owners)
        order = np.argsort(keys, kind="stable")
        keys, owners = keys[order], owners[order]
        unique, starts = np.unique(keys, return_index=True)
        return TriangleMesh(vertices=v, triangles=tris, margin=float(margin), cell=cell, cell_keys=unique,
                            cell_starts=np.append(starts, len(keys)), cell_triangles=owners, **kwargs)

    def validate(self, where):
        super().validate(where)
        _positive(self.margin, "margin", where)

    def thickness(self):
        return self.margin  # what counts as touching behind a face

    def clearance(self, q, r):
        # Only the triangles registered in a point's cell are looked at, and a triangle that is
        # not is at least ``margin`` away (cells hold every triangle whose box, grown by the
        # margin, reaches them): so no point is surely clear by more than the margin.
        return np.minimum(-self.penetration(q, r)[1], self.margin)

    def penetration(self, q, r):
        k = len(q)
        depth = np.full(k, -np.inf)
        corr = np.zeros_like(q)
        key = _cell_key(np.floor(q / self.cell).astype(np.int64))
        slot = np.searchsorted(self.cell_keys, key)
        slot = np.minimum(slot, len(self.cell_keys) - 1)
        found = self.cell_keys[slot] == key
        if not np.any(found):
            return corr, depth
        pts = np.flatnonzero(found)
        start, stop = self.cell_starts[slot[pts]], self.cell_starts[slot[pts] + 1]
        counts = stop - start
        point = np.repeat(pts, counts)
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        tri = self.cell_triangles[np.repeat(start, counts) + offsets]
        a, b, c = (self.vertices[self.triangles[tri, j]] for j in range(3))
        closest = closest_points_on_triangles(q[point], a, b, c)
        normal = np.cross(b - a, c - a)
        normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300)
        offset = q[point] - closest
        dist = np.linalg.norm(offset, axis=1)
        signed = np.where(np.einsum("ij,ij->i", offset, normal) >= 0.0, dist, -dist)
        # Per point, the nearest triangle decides.
        order = np.lexsort((dist, point))
        first = np.ones(len(order), bool)
        first[1:] = point[order][1:] != point[order][:-1]
        best = order[first]
        p = point[best]
        d = signed[best]
        within = d > -self.margin
        depth_p = np.where(within, r[p] - d, -np.inf)
        # Push out along the face normal (behind a face) or away from the nearest feature (in front).
        n = np.where((d < 1e-9)[:, None], normal[best], offset[best] / np.maximum(dist[best], 1e-300)[:, None])
        depth[p] = depth_p
        corr[p] = n * np.where(np.isfinite(depth_p), depth_p, 0.0)[:, None]
        return corr, depth


def _cell_key(cells: np.ndarray) -> np.ndarray:
    """One int64 per 3-D cell index (21 bits an axis, offset so negatives fit)."""
    c = cells + (1 << 20)
    return (c[..., 0] << 42) | (c[..., 1] << 21) | c[..., 2]
