"""Collider shapes, and the one table of shapes that particles and bodies collide with.

The collider classes (``Plane``, ``Sphere``, ``Box``, ``BoxInterior``, ``Capsule``, ``Cylinder``,
``ConvexHull``, ``TriangleMesh``) describe a shape in its own frame (at the origin, axis-aligned),
placed in the world by a rigid ``transform`` (4x4, no scale: size lives in the dimensions). A
moving collider gives ``motion`` instead, its world pose over time (an ``engine.Track`` of 4x4
transforms, or a function t -> 4x4 that the builder samples): the builder makes it a kinematic
body that follows that motion, so moving colliders and bodies are one thing to the solver.

``Shapes`` is the table the solver uses: one row per shape (kind, parameters, owner body or the
world, frame in the owner's frame, friction, restitution), hulls' face planes and meshes' triangles
and lookup grids packed into shared arrays. Every row is queried by the one distance routine of
its kind (``backend/*/distance.py``), for particles and bodies alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..errors import JakobsenError
from ..checks import MAX_COORDINATE
from . import kinds

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
        from ..tracks import Track

        if self.motion is not None and not callable(self.motion) and not isinstance(self.motion, Track):
            raise JakobsenError(f"{where}: motion must be a Track of 4x4 world poses or a function t -> 4x4")

    def pose(self, t: float) -> np.ndarray:
        """World transform (4, 4) at time ``t`` seconds."""
        if self.motion is None:
            return np.asarray(self.transform, dtype=np.float64)
        from ..tracks import Track

        if isinstance(self.motion, Track):  # as the solver moves it: position lerped, rotation slerped
            from ..tracks import slerp
            from .quaternions import from_matrix, to_matrix

            values = self.motion.values
            u = min(max(t * self.motion.rate, 0.0), len(values) - 1.0)
            k = min(int(u), max(len(values) - 2, 0))
            a = u - k
            m0, m1 = values[k], values[min(k + 1, len(values) - 1)]
            out = np.eye(4)
            out[:3, :3] = to_matrix(slerp(from_matrix(m0[None, :3, :3]), from_matrix(m1[None, :3, :3]),
                                          np.array([a]))[0])
            out[:3, 3] = m0[:3, 3] + a * (m1[:3, 3] - m0[:3, 3])
            return out
        return _rigid(self.motion(t), f"collider {self.name or type(self).__name__} motion({t:g})")

    def row(self) -> tuple[int, np.ndarray]:
        """(kind, params (4,)): the shape table's description of this shape."""
        raise NotImplementedError


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

    def row(self):
        return kinds.PLANE, np.zeros(4)



@dataclass(frozen=True, kw_only=True)
class Sphere(_Collider):
    """Solid sphere of ``radius`` metres around the local origin."""

    radius: float = 1.0

    def validate(self, where):
        super().validate(where)
        _positive(self.radius, "radius", where)

    def row(self):
        return kinds.SPHERE, np.array([self.radius, 0.0, 0.0, 0.0])



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

    def row(self):
        return kinds.CAPSULE, np.array([self.radius, self.half_height, 0.0, 0.0])



@dataclass(frozen=True, kw_only=True)
class Box(_Collider):
    """Solid box with ``half_extents`` (3,) metres, centred on the local origin."""

    half_extents: tuple = (0.5, 0.5, 0.5)

    def validate(self, where):
        super().validate(where)
        _check_half_extents(self.half_extents, where)

    def row(self):
        return kinds.BOX, np.array([*self.half_extents, 0.0], dtype=np.float64)



@dataclass(frozen=True, kw_only=True)
class BoxInterior(_Collider):
    """The inside of a box (Jakobsen's cube world): particles are kept within ``half_extents``."""

    half_extents: tuple = (1.0, 1.0, 1.0)

    def validate(self, where):
        super().validate(where)
        _check_half_extents(self.half_extents, where)

    def row(self):
        return kinds.BOX_INTERIOR, np.array([*self.half_extents, 0.0], dtype=np.float64)



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

    def row(self):
        return kinds.CYLINDER, np.array([self.radius, self.half_height, 0.0, 0.0])



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
        from ..geometry.mesh import convex_hull

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

    def row(self):
        return kinds.HULL, np.array([hull_size(self.offsets), 0.0, 0.0, 0.0])



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
        from ..geometry.mesh import triangulate

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

    def row(self):
        return kinds.MESH, np.zeros(4)



def _cell_key(cells: np.ndarray) -> np.ndarray:
    """One int64 per 3-D cell index (21 bits an axis, offset so negatives fit)."""
    c = cells + (1 << 20)
    return (c[..., 0] << 42) | (c[..., 1] << 21) | c[..., 2]


def hull_size(offsets: np.ndarray) -> float:
    """A hull's typical size, the root mean square of its face planes' distances from its origin
    (which decides how near two faces count as equally near)."""
    o = np.asarray(offsets, dtype=np.float64)
    o = o[np.isfinite(o)]
    return float(np.sqrt(max(np.mean(o * o) if len(o) else 0.0, 1e-24)))


@dataclass(frozen=True)
class Shapes:
    """Every shape of a model, one row each (S shapes): what particles and bodies collide with.

    kind: (S,) a ``kinds`` number; owner: (S,) the body it moves with, or -1 for the world (a
    static collider); position (S, 3) and rotation (S, 4) (w, x, y, z): its frame in its owner's
    body frame (the world's frame for world shapes); params: (S, 4) its dimensions (see
    ``kinds``); friction, restitution: (S,); hull: (S, 2) (first, count) of its face planes in
    hull_planes (H, 4) (outward normal, offset: n . q <= offset inside); mesh: (S,) its mesh or -1;
    per mesh (M): mesh_cell (M,) the lookup grid's cell size, mesh_margin (M,) how far behind a
    face still counts, mesh_key_start (M + 1,) its cells in cell_keys (K,) (sorted per mesh), each
    cell's triangles cell_tris[cell_ptr[k]:cell_ptr[k + 1]], triangles (T, 3) into vertices (V, 3);
    names: (S,) for messages.
    """

    kind: np.ndarray
    owner: np.ndarray
    position: np.ndarray
    rotation: np.ndarray
    params: np.ndarray
    friction: np.ndarray
    restitution: np.ndarray
    hull: np.ndarray
    hull_planes: np.ndarray
    mesh: np.ndarray
    mesh_cell: np.ndarray
    mesh_margin: np.ndarray
    mesh_key_start: np.ndarray
    cell_keys: np.ndarray
    cell_ptr: np.ndarray
    cell_tris: np.ndarray
    triangles: np.ndarray
    vertices: np.ndarray
    names: tuple

    @property
    def count(self) -> int:
        return len(self.kind)

    def kernel_arrays(self) -> tuple:
        """The table as the kernels read it (see ``backend/numba/distance.py``)."""
        return (self.kind, self.params, self.hull, self.hull_planes, self.owner, self.mesh, self.mesh_cell,
                self.mesh_margin, self.mesh_key_start, self.cell_keys, self.cell_ptr, self.cell_tris, self.triangles,
                self.vertices, self.rotation, self.position, self.friction, self.restitution)


class ShapeTable:
    """Collects shape rows; ``finalize()`` packs them into ``Shapes``."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, kind: int, params, *, owner: int, position, rotation, friction: float, restitution: float,
            planes=None, mesh: "TriangleMesh | None" = None, name: str = "") -> int:
        self.rows.append(dict(kind=int(kind), params=np.asarray(params, dtype=np.float64), owner=int(owner),
                              position=np.asarray(position, dtype=np.float64),
                              rotation=np.asarray(rotation, dtype=np.float64), friction=float(friction),
                              restitution=float(restitution), planes=planes, mesh=mesh, name=name))
        return len(self.rows) - 1

    def add_collider(self, collider: _Collider, *, owner: int = -1, pose=None) -> int:
        """A collider's row: in the world at its transform, or (owner >= 0) in its owner's frame at ``pose``."""
        from .quaternions import from_matrix

        kind, params = collider.row()
        m = np.asarray(collider.transform if pose is None else pose, dtype=np.float64)
        planes = None
        if kind == kinds.HULL:
            planes = np.c_[collider.normals, collider.offsets]
        return self.add(kind, params, owner=owner, position=m[:3, 3], rotation=from_matrix(m[:3, :3]),
                        friction=collider.friction, restitution=collider.restitution, planes=planes,
                        mesh=collider if kind == kinds.MESH else None, name=collider.name)

    def finalize(self) -> Shapes:
        rows = self.rows
        n = len(rows)

        def col(key, shape, dtype=np.float64):
            return np.array([r[key] for r in rows], dtype=dtype).reshape((n,) + shape)

        hull = np.zeros((n, 2), np.int64)
        planes = []
        mesh = np.full(n, -1, np.int64)
        cells, margins, key_start, keys, ptr, tris, triangles, vertices = [], [], [0], [], [0], [], [], []
        v_off = t_off = c_off = 0
        for k, r in enumerate(rows):
            if r["planes"] is not None:
                hull[k] = (sum(len(p) for p in planes), len(r["planes"]))
                planes.append(np.asarray(r["planes"], dtype=np.float64))
            if r["mesh"] is not None:
                tm = r["mesh"]
                mesh[k] = len(cells)
                cells.append(tm.cell)
                margins.append(tm.margin)
                keys.append(tm.cell_keys)
                key_start.append(key_start[-1] + len(tm.cell_keys))
                ptr.append(np.asarray(tm.cell_starts[1:], np.int64) + c_off)
                tris.append(tm.cell_triangles + t_off)
                c_off += len(tm.cell_triangles)
                triangles.append(tm.triangles + v_off)
                vertices.append(tm.vertices)
                v_off += len(tm.vertices)
                t_off += len(tm.triangles)
        ptr_all = np.concatenate([np.zeros(1, np.int64)] + [np.asarray(p, np.int64) for p in ptr[1:]])
        return Shapes(
            kind=col("kind", (), np.int64), owner=col("owner", (), np.int64), position=col("position", (3,)),
            rotation=col("rotation", (4,)), params=col("params", (4,)), friction=col("friction", ()),
            restitution=col("restitution", ()), hull=hull,
            hull_planes=np.concatenate(planes) if planes else np.zeros((0, 4)), mesh=mesh,
            mesh_cell=np.array(cells, dtype=np.float64), mesh_margin=np.array(margins, dtype=np.float64),
            mesh_key_start=np.array(key_start, dtype=np.int64),
            cell_keys=np.concatenate(keys).astype(np.int64) if keys else np.zeros(0, np.int64),
            cell_ptr=ptr_all, cell_tris=np.concatenate(tris).astype(np.int64) if tris else np.zeros(0, np.int64),
            triangles=np.concatenate(triangles).astype(np.int64) if triangles else np.zeros((0, 3), np.int64),
            vertices=np.concatenate(vertices) if vertices else np.zeros((0, 3)),
            names=tuple(r["name"] for r in rows))


def empty_shapes() -> Shapes:
    return ShapeTable().finalize()
