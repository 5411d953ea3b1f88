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
    """A static, moving or deforming triangle mesh (terrain, a table, a character); its solid side
    is behind its faces.

    vertices: (n, 3) m; triangles: (t, 3) wound counter-clockwise seen from the open side.
    A point counts as touching when it is within ``margin`` in front of or behind a face.
    deformation: None, or a ``Track`` of the vertices over time, values (F, n, 3) m in the
    collider's own frame at ``deformation.rate`` samples per second from t = 0 (an armature- or
    shape-key-deformed mesh as the add-on samples it per frame; interpolated linearly per substep,
    the last sample held after the end). A deforming mesh's lookup grid is rebuilt per frame over
    the frame's motion, and its contacts move cloth with the surface point under it.
    Build with ``TriangleMesh.from_mesh`` so the lookup grid is made once.
    """

    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    margin: float = 0.1
    cell: float = 1.0
    cell_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cell_starts: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    cell_triangles: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    deformation: Optional[object] = None

    @staticmethod
    def from_mesh(vertices, faces, *, margin: float = 0.1, where: str = "", deformation=None,
                  deformation_rate: Optional[float] = None, **kwargs) -> "TriangleMesh":
        """vertices (n, 3), faces (polygons or triangles); deformation: a ``Track`` of (F, n, 3)
        (or (F, 3 n)) vertex positions, or an array of them with ``deformation_rate`` samples per
        second (the scene's frame rate for one sample a frame)."""
        from ..geometry.mesh import triangulate

        where = where or (f"collider '{kwargs['name']}'" if kwargs.get("name") else "triangle mesh")
        v = np.asarray(vertices, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 3 or not np.all(np.isfinite(v)):
            raise JakobsenError(f"{where}: vertices must be a finite (n, 3) array")
        tris = triangulate(faces, len(v), where)
        if len(tris) == 0:
            raise JakobsenError(f"{where}: the mesh has no faces")
        margin = _positive(margin, "margin", where)
        track = deformation_track(deformation, deformation_rate, len(v), where)
        lo = v[tris].min(axis=1) - margin
        hi = v[tris].max(axis=1) + margin
        cell = float(max(np.median(hi - lo), 1e-3))
        keys, starts, owners = mesh_grid(v[None] if track is None else track.values[:2], tris, margin, cell)
        return TriangleMesh(vertices=v, triangles=tris, margin=float(margin), cell=cell, cell_keys=keys,
                            cell_starts=starts, cell_triangles=owners, deformation=track, **kwargs)

    def validate(self, where):
        super().validate(where)
        _positive(self.margin, "margin", where)
        if self.deformation is not None:
            deformation_track(self.deformation, None, len(self.vertices), where)

    def vertices_at(self, t: float) -> np.ndarray:
        """The vertices (n, 3) in the collider's frame at time t (s)."""
        if self.deformation is None:
            return np.asarray(self.vertices, dtype=np.float64)
        return _track_at(self.deformation, t)

    def row(self):
        return kinds.MESH, np.zeros(4)


def deformation_track(deformation, rate, count: int, where: str):
    """A deforming mesh's vertices over time as a ``Track`` of (F, count, 3), checked."""
    from ..tracks import Track

    if deformation is None:
        return None
    if isinstance(deformation, Track):
        if rate is not None:
            raise JakobsenError(f"{where}: deformation_rate is for an array of vertices; a Track has its own rate")
        rate, values = deformation.rate, deformation.values
    else:
        if rate is None:
            raise JakobsenError(f"{where}: a deformation given as an array needs deformation_rate (samples per "
                                "second, the frame rate for one sample a frame)")
        rate = float(rate)
        if not (math.isfinite(rate) and rate > 0.0):
            raise JakobsenError(f"{where}: deformation_rate must be a positive number of samples per second, "
                                f"got {rate}")
        try:
            values = np.asarray(deformation, dtype=np.float64)
        except (TypeError, ValueError):
            raise JakobsenError(f"{where}: deformation must be an array of vertex positions (frames, vertices, 3)")
    if values.ndim == 2 and values.shape[1] == 3 * count:
        values = values.reshape(len(values), count, 3)
    if values.ndim != 3 or values.shape[1:] != (count, 3) or len(values) == 0:
        raise JakobsenError(f"{where}: deformation must have shape (frames, {count}, 3) (its {count} vertices per "
                            f"sample), got {values.shape}")
    bad = ~np.all(np.isfinite(values), axis=(1, 2))
    if np.any(bad):
        raise JakobsenError(f"{where}: the deformation's sample {int(np.flatnonzero(bad)[0])} has non-finite "
                            "vertex positions")
    if np.any(np.abs(values) > MAX_COORDINATE):
        raise JakobsenError(f"{where}: the deformation has vertices absurdly far from the origin (at most "
                            f"{MAX_COORDINATE:g} m)")
    if isinstance(deformation, Track) and values is deformation.values:
        return deformation
    return Track(rate=rate, values=values)


def _track_at(track, t: float) -> np.ndarray:
    """Vertices (n, 3) of a deformation track at time t: linear between samples, clamped."""
    values = track.values
    u = min(max(t * track.rate, 0.0), len(values) - 1.0)
    k = min(int(u), max(len(values) - 2, 0))
    if len(values) == 1:
        return values[0]
    a = u - k
    return values[k] + a * (values[k + 1] - values[k])


def mesh_grid(samples: np.ndarray, tris: np.ndarray, margin: float, cell: float):
    """The lookup grid of a mesh whose vertices take the positions ``samples`` (S, n, 3) (one
    shape, or the samples of a deforming mesh over a frame): each triangle registered in every
    cell that its margin-grown box over all samples touches (vertices move linearly between
    samples, so that box holds it throughout). Returns (sorted unique cell keys, starts (K + 1,),
    triangle per entry)."""
    corners = samples[:, tris]  # (S, t, 3, 3)
    lo = np.floor((corners.min(axis=(0, 2)) - margin) / cell).astype(np.int64)
    hi = np.floor((corners.max(axis=(0, 2)) + margin) / cell).astype(np.int64)
    span = hi - lo + 1
    count = span.prod(axis=1)
    owners = np.repeat(np.arange(len(tris)), count)
    local = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    sy, sz = span[owners, 1], span[owners, 2]
    offset = np.stack([local // (sy * sz), (local // sz) % sy, local % sz], axis=1)
    keys = _cell_key(lo[owners] + offset)
    order = np.argsort(keys, kind="stable")
    keys, owners = keys[order], owners[order]
    unique, starts = np.unique(keys, return_index=True)
    return unique, np.append(starts, len(keys)).astype(np.int64), owners.astype(np.int64)



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


def face_loops(normals: np.ndarray, offsets: np.ndarray, vertices: np.ndarray) -> list:
    """The faces of a convex polytope as polygons: per face plane (outward unit normal, offset),
    the vertices on it in counterclockwise order seen from outside, (k, 3); a plane that holds
    fewer than three vertices gets an empty polygon. ``vertices`` are the polytope's corners."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    size = max(float(np.abs(v).max(initial=0.0)), 1e-12)
    loops = []
    for n, o in zip(np.asarray(normals, dtype=np.float64), np.asarray(offsets, dtype=np.float64)):
        on = v[np.abs(v @ n - o) <= 1e-7 * size]
        if len(on):
            # The same corner listed twice (a mesh's split vertices) once.
            _, first = np.unique(np.round(on / size * 1e9).astype(np.int64), axis=0, return_index=True)
            on = on[np.sort(first)]
        if len(on) < 3:
            loops.append(np.zeros((0, 3)))
            continue
        middle = on.mean(axis=0)
        u = on[np.argmax(np.linalg.norm(on - middle, axis=1))] - middle
        u -= n * (u @ n)
        u /= max(np.linalg.norm(u), 1e-300)
        w = np.cross(n, u)
        angle = np.arctan2((on - middle) @ w, (on - middle) @ u)
        loops.append(on[np.argsort(angle, kind="stable")])
    return loops


def box_faces(half) -> tuple:
    """A box's face planes (6, 4) and corners (8, 3) in its frame; the -x and +x faces first (the
    contact kernels read a box's corners off those two faces alone)."""
    h = np.asarray(half, dtype=np.float64)[:3]
    planes = np.array([[*(s * np.eye(3)[k]), h[k]] for k in range(3) for s in (-1.0, 1.0)])
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * h
    return planes, corners


def pack_faces(rows) -> tuple:
    """Every box's and hull's face polygons packed as the table holds them: (face_range (S, 2)
    first face and count per shape, face_planes (F, 4), face_loop (F, 2) first corner and count
    per face, loop_points (L, 3), edge_range (S, 2) first and count of its edge directions in
    edge_directions (E, 3)), from rows of (kind, params, planes or None, vertices or None,
    inset): a hull's polygons are pulled in towards its origin by the fraction ``inset``, as its
    body's sample points are (``bodies.rigid.SAMPLE_INSET``), so a crossing and a corner of one
    face rest at one height."""
    face_range = np.zeros((len(rows), 2), np.int64)
    planes_out, loop_out, points_out = [], [], []
    faces = corners = 0
    for k, (kind, params, planes, vertices, inset) in enumerate(rows):
        if kind == kinds.BOX:
            planes, vertices = box_faces(params)
        elif kind != kinds.HULL or planes is None or vertices is None or not len(vertices):
            continue
        planes = np.asarray(planes, dtype=np.float64)
        loops = face_loops(planes[:, :3], planes[:, 3], vertices)
        face_range[k] = faces, len(planes)
        for plane, loop in zip(planes, loops):
            planes_out.append(plane)
            loop_out.append((corners, len(loop)))
            points_out.append(loop * (1.0 - inset))
            corners += len(loop)
        faces += len(planes)
    loop_points = np.concatenate(points_out).reshape(-1, 3) if points_out else np.zeros((0, 3))
    loop_of = np.array(loop_out, dtype=np.int64).reshape(-1, 2)
    # Each shape's edge directions, parallel ones once (a box's three), for the separating axes
    # across edges.
    edge_range = np.zeros((len(rows), 2), np.int64)
    directions: list = []
    for k in range(len(rows)):
        first, count = face_range[k]
        mine: list = []
        for f in range(first, first + count):
            start, n = loop_of[f]
            for j in range(n):
                e = loop_points[start + (j + 1) % n] - loop_points[start + j]
                length = np.linalg.norm(e)
                if length > 0.0 and not any(abs(float(e @ d)) > (1.0 - 1e-9) * length for d in mine):
                    mine.append(e / length)
        edge_range[k] = len(directions), len(mine)
        directions += mine
    return (face_range, np.array(planes_out, dtype=np.float64).reshape(-1, 4), loop_of, loop_points, edge_range,
            np.array(directions, dtype=np.float64).reshape(-1, 3))


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
    names: (S,) for messages. Per mesh also: its vertices vertices[mesh_vertex_start[m]:...[m + 1]]
    and triangles triangles[mesh_tri_start[m]:...[m + 1]], face_normals (T, 3) the triangles' unit
    normals, mesh_deforming (M,) 1 for a deforming mesh, whose vertices (and normals) the solver
    rewrites each substep, and meshes (M,) the ``TriangleMesh`` colliders themselves. Boxes and
    hulls also have their faces as polygons (``pack_faces``): face_range (S, 2), face_planes (F,
    4), face_loop (F, 2), loop_points (L, 3), and their edges' directions, edge_range (S, 2) and
    edge_directions (E, 3), for the contacts where two of them cross. The kernels
    also read (``kernel_arrays``) vertices_prev (V, 3), where the vertices were one substep
    before, and mesh_motion (M,), the farthest any vertex of a mesh moved over the substep (m; 0
    for all but deforming meshes, which the solver fills in).
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
    mesh_vertex_start: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    mesh_tri_start: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    face_normals: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    mesh_deforming: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    meshes: tuple = ()
    face_range: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    face_planes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    face_loop: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    loop_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    edge_range: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    edge_directions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def count(self) -> int:
        return len(self.kind)

    def kernel_arrays(self) -> tuple:
        """The table as the kernels read it (see ``backend/numba/distance.py``)."""
        return (self.kind, self.params, self.hull, self.hull_planes, self.owner, self.mesh, self.mesh_cell,
                self.mesh_margin, self.mesh_key_start, self.cell_keys, self.cell_ptr, self.cell_tris, self.triangles,
                self.vertices, self.rotation, self.position, self.friction, self.restitution, self.vertices.copy(),
                self.mesh_tri_start, self.face_normals, np.zeros(len(self.mesh_deforming)), self.face_range,
                self.face_planes, self.face_loop, self.loop_points, self.edge_range, self.edge_directions)


def face_normals(triangles: np.ndarray, vertices: np.ndarray, out=None) -> np.ndarray:
    """Unit normals (T, 3) of triangles (T, 3) into vertices, computed term by term as the distance
    kernels did per triangle (so precomputing them changes no number)."""
    a, b, c = vertices[triangles[:, 0]], vertices[triangles[:, 1]], vertices[triangles[:, 2]]
    e1, e2 = b - a, c - a
    n = np.stack([e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1], e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
                  e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]], axis=1)
    nl = np.maximum(np.sqrt(n[:, 0] * n[:, 0] + n[:, 1] * n[:, 1] + n[:, 2] * n[:, 2]), 1e-300)
    n /= nl[:, None]
    if out is None:
        return n
    out[...] = n
    return out


def pack_grids(grids) -> tuple:
    """Every mesh's grid (keys, starts, triangles, triangle offset) packed as the table holds
    them: (mesh_key_start (M + 1,), cell_keys, cell_ptr, cell_tris)."""
    key_start, keys, ptr, tris = [0], [], [np.zeros(1, np.int64)], []
    c_off = 0
    for k, starts, owners, t_off in grids:
        keys.append(np.asarray(k, np.int64))
        key_start.append(key_start[-1] + len(k))
        ptr.append(np.asarray(starts[1:], np.int64) + c_off)
        tris.append(np.asarray(owners, np.int64) + t_off)
        c_off += len(owners)
    return (np.array(key_start, dtype=np.int64),
            np.concatenate(keys).astype(np.int64) if keys else np.zeros(0, np.int64),
            np.concatenate(ptr).astype(np.int64),
            np.concatenate(tris).astype(np.int64) if tris else np.zeros(0, np.int64))


class ShapeTable:
    """Collects shape rows; ``finalize()`` packs them into ``Shapes``."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, kind: int, params, *, owner: int, position, rotation, friction: float, restitution: float,
            planes=None, vertices=None, inset: float = 0.0, mesh: "TriangleMesh | None" = None,
            name: str = "") -> int:
        self.rows.append(dict(kind=int(kind), params=np.asarray(params, dtype=np.float64), owner=int(owner),
                              position=np.asarray(position, dtype=np.float64),
                              rotation=np.asarray(rotation, dtype=np.float64), friction=float(friction),
                              restitution=float(restitution), planes=planes, vertices=vertices, inset=float(inset),
                              mesh=mesh, name=name))
        return len(self.rows) - 1

    def add_collider(self, collider: _Collider, *, owner: int = -1, pose=None) -> int:
        """A collider's row: in the world at its transform, or (owner >= 0) in its owner's frame at ``pose``."""
        from .quaternions import from_matrix

        kind, params = collider.row()
        m = np.asarray(collider.transform if pose is None else pose, dtype=np.float64)
        planes = vertices = None
        if kind == kinds.HULL:
            planes = np.c_[collider.normals, collider.offsets]
            vertices = collider.vertices
        return self.add(kind, params, owner=owner, position=m[:3, 3], rotation=from_matrix(m[:3, :3]),
                        friction=collider.friction, restitution=collider.restitution, planes=planes, vertices=vertices,
                        mesh=collider if kind == kinds.MESH else None, name=collider.name)

    def finalize(self, min_margin: float = 0.0) -> Shapes:
        """min_margin: m, the least reach of a mesh's lookup grid: a mesh built with less is
        rebuilt with it (a cloth whose Thickness is beyond the mesh's margin was found only within
        the margin, so it fell to the margin and was thrown back out each substep: a cloth of
        20 cm Thickness bobbed 3 cm on a table of 10 cm margin)."""
        rows = self.rows
        n = len(rows)
        for r in rows:
            tm = r["mesh"]
            if tm is not None and tm.margin < min_margin:
                r["mesh"] = TriangleMesh.from_mesh(
                    tm.vertices, tm.triangles, margin=min_margin, deformation=tm.deformation, name=tm.name,
                    friction=tm.friction, restitution=tm.restitution, transform=tm.transform, motion=tm.motion)

        def col(key, shape, dtype=np.float64):
            return np.array([r[key] for r in rows], dtype=dtype).reshape((n,) + shape)

        hull = np.zeros((n, 2), np.int64)
        planes = []
        mesh = np.full(n, -1, np.int64)
        cells, margins, grids, triangles, vertices, meshes = [], [], [], [], [], []
        v_start, t_start = [0], [0]
        for k, r in enumerate(rows):
            if r["planes"] is not None:
                hull[k] = (sum(len(p) for p in planes), len(r["planes"]))
                planes.append(np.asarray(r["planes"], dtype=np.float64))
            if r["mesh"] is not None:
                tm = r["mesh"]
                mesh[k] = len(cells)
                meshes.append(tm)
                cells.append(tm.cell)
                margins.append(tm.margin)
                grids.append((tm.cell_keys, tm.cell_starts, tm.cell_triangles, t_start[-1]))
                triangles.append(tm.triangles + v_start[-1])
                vertices.append(tm.vertices_at(0.0))
                v_start.append(v_start[-1] + len(tm.vertices))
                t_start.append(t_start[-1] + len(tm.triangles))
        key_start, cell_keys, cell_ptr, cell_tris = pack_grids(grids)
        triangles = np.concatenate(triangles).astype(np.int64) if triangles else np.zeros((0, 3), np.int64)
        vertices = np.ascontiguousarray(np.concatenate(vertices)) if vertices else np.zeros((0, 3))
        face_range, face_planes, face_loop, loop_points, edge_range, edge_directions = pack_faces(
            [(r["kind"], r["params"], r["planes"], r["vertices"], r["inset"]) for r in rows])
        return Shapes(
            kind=col("kind", (), np.int64), owner=col("owner", (), np.int64), position=col("position", (3,)),
            rotation=col("rotation", (4,)), params=col("params", (4,)), friction=col("friction", ()),
            restitution=col("restitution", ()), hull=hull,
            hull_planes=np.concatenate(planes) if planes else np.zeros((0, 4)), mesh=mesh,
            mesh_cell=np.array(cells, dtype=np.float64), mesh_margin=np.array(margins, dtype=np.float64),
            mesh_key_start=key_start, cell_keys=cell_keys, cell_ptr=cell_ptr, cell_tris=cell_tris,
            triangles=triangles, vertices=vertices, names=tuple(r["name"] for r in rows),
            mesh_vertex_start=np.array(v_start, dtype=np.int64), mesh_tri_start=np.array(t_start, dtype=np.int64),
            face_normals=face_normals(triangles, vertices),
            mesh_deforming=np.array([tm.deformation is not None for tm in meshes], dtype=np.int64),
            meshes=tuple(meshes), face_range=face_range, face_planes=face_planes, face_loop=face_loop,
            loop_points=loop_points, edge_range=edge_range, edge_directions=edge_directions)


def empty_shapes() -> Shapes:
    return ShapeTable().finalize()
