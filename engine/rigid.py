"""Rigid bodies: mass properties from a mesh, collision shapes, sample points, the particle cluster.

A rigid body is Jakobsen's particle cluster: four particles of mass M/4 at (+-a_x, +-a_y, +-a_z)
(the even sign patterns) in the body's principal frame, with a_k chosen so the cluster has the
mesh's mass, centre of mass and inertia tensor exactly. Any point p of the body is a fixed affine
combination p = sum c_i x_i of the four particles (its weights are the same at every pose), which
is how collision geometry is embedded. Because four particles held by six sticks bleed spin under
projection (thesis, section 3.2) and cannot conserve momentum to 1e-6, the solver keeps the
cluster's rigid pose (centre, orientation, velocity, angular velocity) as its state; the particle
positions follow from it (``cluster_positions``) and contact corrections move the cluster as the
converged Jakobsen projection would: by the rigid body's own generalized inverse mass.

Shapes: n vertices, B bodies, P sample points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from . import quaternions as quat
from .checks import (FLOAT32_MAX, MAX_ANGULAR_SPEED, MAX_COORDINATE, MAX_SPEED, check_range,
                     check_vector)
from .errors import JakobsenError
from .geometry import convex_hull, is_closed, mass_properties, triangulate


class BodyMode(IntEnum):
    """Cinema 4D's Dynamic setting."""

    DYNAMIC = 0  # On: moved by the solver
    KINEMATIC = 1  # Off: follows its animation, pushes dynamic bodies, is not pushed back
    GHOST = 2  # Ghost: moved by the solver, collides with nothing


class ShapeKind(IntEnum):
    SPHERE = 0
    BOX = 1
    CAPSULE = 2  # along the shape's z
    CYLINDER = 3  # along the shape's z
    CONVEX_HULL = 4


SAMPLE_INSET = 1e-3  # relative: 0.45 mm on a 0.9 m box
# The sizes (largest extent, m) a rigid body may have. Below 0.01 mm a body's motion is lost in
# Blender's single-precision keys a few metres from the origin (and its contacts in the rounding
# of the solve); beyond 1000 km, so is everything else in the scene.
MIN_BODY_SIZE = 1e-5
MAX_BODY_SIZE = 1e6
MAX_DENSITY = 2.3e6

SHAPE_NAMES = {"sphere": ShapeKind.SPHERE, "box": ShapeKind.BOX, "capsule": ShapeKind.CAPSULE,
               "cylinder": ShapeKind.CYLINDER, "convex_hull": ShapeKind.CONVEX_HULL,
               "automatic": ShapeKind.CONVEX_HULL}
MODE_NAMES = {"dynamic": BodyMode.DYNAMIC, "kinematic": BodyMode.KINEMATIC, "ghost": BodyMode.GHOST}


@dataclass(frozen=True)
class BodyHandle:
    """Which body a mesh became: ``index`` into the model's bodies."""

    name: str
    index: int


@dataclass
class BodySpec:
    """One body as the builder collects it (body frame = principal axes at the centre of mass)."""

    name: str
    mode: BodyMode
    mass: float
    inertia: np.ndarray  # (3,) principal moments, kg m^2
    position: np.ndarray  # (3,) centre of mass in the world at rest
    orientation: np.ndarray  # (4,) principal frame in the world at rest
    velocity: np.ndarray
    angular_velocity: np.ndarray
    friction: float
    restitution: float
    linear_damping: float
    angular_damping: float
    shape: ShapeKind
    shape_params: np.ndarray  # (4,) sphere (R), box (hx, hy, hz), capsule/cylinder (R, H)
    shape_rotation: np.ndarray  # (3, 3) shape frame -> body frame
    shape_offset: np.ndarray  # (3,) shape origin in the body frame
    hull_normals: np.ndarray  # (f, 3) body frame (convex hull only)
    hull_offsets: np.ndarray  # (f,)
    points: np.ndarray  # (p, 3) sample points in the body frame
    point_radius: np.ndarray  # (p,)
    motion: object = None
    drag: float = 0.0  # kg/m, quadratic air drag
    follow_position: float = 0.0  # 1/s, pull towards the animated position
    follow_rotation: float = 0.0  # 1/s, pull towards the animated orientation


def _principal(inertia: np.ndarray):
    moments, axes = np.linalg.eigh(inertia)
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return np.maximum(moments, 0.0), axes


def make_body(vertices, faces, *, name: str, mass=None, density=1000.0, shape="automatic", shape_frame=None,
              friction=0.5, restitution=0.0, mode="dynamic", motion=None, velocity=(0, 0, 0),
              angular_velocity=(0, 0, 0), linear_damping=0.0, angular_damping=0.0, drag=0.0, follow_position=0.0,
              follow_rotation=0.0, warnings=None) -> BodySpec:
    """Everything the solver needs about one rigid body, from its mesh in world space at rest.

    drag: kg/m, quadratic drag against the air, F = -drag |v - v_air| (v - v_air);
    follow_position, follow_rotation: 1/s, how hard a moving body is pulled towards the pose
    ``motion(t)`` gives it (its rest pose without a motion); see ``engine.forces``.
    """
    where = f"rigid body '{name}'"
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
        raise JakobsenError(f"{where}: vertices must be an (n, 3) array with n > 0, got shape {v.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(v), axis=1))
    if len(bad):
        raise JakobsenError(f"{where}: vertex {bad[0]} is not finite ({v[bad[0]].tolist()})")
    check_range(v, "vertex", where, limit=MAX_COORDINATE, unit="m")
    velocity = check_vector(velocity, "velocity", where, limit=MAX_SPEED, unit="m/s")
    angular_velocity = check_vector(angular_velocity, "angular velocity", where, limit=MAX_ANGULAR_SPEED,
                                    unit="rad/s")
    if mode not in MODE_NAMES:
        raise JakobsenError(f"{where}: mode must be one of {sorted(MODE_NAMES)}, got {mode!r}")
    if shape not in SHAPE_NAMES:
        raise JakobsenError(f"{where}: collision shape must be one of {sorted(SHAPE_NAMES)}, got {shape!r}")
    for what, value, high in (("friction", friction, 1e3), ("restitution", restitution, 1.0),
                              ("linear damping", linear_damping, 1e6), ("angular damping", angular_damping, 1e6),
                              ("drag", drag, 1e9), ("follow position", follow_position, 1e6),
                              ("follow rotation", follow_rotation, 1e6)):
        if not (math.isfinite(value) and 0.0 <= value <= high):
            raise JakobsenError(f"{where}: {what} must be between 0 and {high:g}, got {value}")
    if motion is not None and not callable(motion):
        raise JakobsenError(f"{where}: motion must be a callable t -> 4x4 transform")
    tris = triangulate(faces, len(v), where) if faces is not None and len(faces) else np.zeros((0, 3), np.int64)
    size = float(np.ptp(v, axis=0).max())
    if not MIN_BODY_SIZE <= size <= MAX_BODY_SIZE:
        raise JakobsenError(f"{where}: it is too {'small' if size < MIN_BODY_SIZE else 'large'} to simulate, "
                            f"{size:.3g} m across; rigid bodies may be {MIN_BODY_SIZE:g} m to {MAX_BODY_SIZE:g} m "
                            "across (scale the scene, or its units, towards metres)")

    # Mass properties from the closed mesh; an open or degenerate one falls back to its convex hull.
    volume, centre, inertia = (mass_properties(v, tris) if is_closed(tris) else (0.0, None, None))
    hull = None
    if volume <= 1e-12 * size ** 3:
        if warnings is not None and len(tris):
            warnings.append(f"{where}: the mesh is not closed; its convex hull gives its mass and inertia")
        hull = convex_hull(v, where)
        volume, centre, inertia = mass_properties(v, hull[1])
    if mass is not None:
        if not (math.isfinite(mass) and 0 < mass <= FLOAT32_MAX):
            raise JakobsenError(f"{where}: mass must be a positive number of kilograms, got {mass}")
        total = float(mass)
    else:
        if not (math.isfinite(density) and 0 < density <= MAX_DENSITY):
            raise JakobsenError(f"{where}: density must be a positive number of kg/m^3 (at most {MAX_DENSITY:g}, "
                                f"a hundred times osmium's), got {density}")
        total = float(density) * volume
    if not (math.isfinite(total) and total > 0.0 and volume > 0.0):
        raise JakobsenError(f"{where}: its mass ({total:g} kg from a volume of {volume:g} m^3) must be a positive "
                            "finite number of kilograms")
    moments, axes = _principal(inertia * (total / volume))
    # A needle or a flat plate has a zero principal moment; keep the body solvable (relative to its
    # largest moment: a 0.1 mm body's moments are about 1e-20 kg m^2).
    moments = np.maximum(moments, 1e-6 * moments.max())
    if not moments.max() > 0.0:
        raise JakobsenError(f"{where}: it has no rotational inertia (its vertices lie on a point)")

    local = (v - centre) @ axes  # vertices in the body frame
    if shape_frame is None:
        if hull is None and kind_needs_frame(shape):
            hull = convex_hull(v, where)
        shape_rot = axes.T @ tightest_box_frame(v, hull[1] if hull is not None else None, axes)
    else:
        frame = np.asarray(shape_frame, dtype=np.float64)[:3, :3]
        frame = frame / np.maximum(np.linalg.norm(frame, axis=0, keepdims=True), 1e-300)
        shape_rot = axes.T @ frame  # shape frame axes expressed in the body frame
    in_shape = local @ shape_rot
    lo, hi = in_shape.min(axis=0), in_shape.max(axis=0)
    half = 0.5 * (hi - lo)
    offset = shape_rot @ (0.5 * (lo + hi))
    kind = SHAPE_NAMES[shape]
    params = np.zeros(4)
    hull_n, hull_o = np.zeros((0, 3)), np.zeros(0)
    if kind == ShapeKind.SPHERE:
        params[0] = max(half.max(), 1e-6 * size)
        points, radius = np.zeros((1, 3)), np.array([params[0]])
    elif kind == ShapeKind.BOX:
        params[:3] = np.maximum(half, 1e-6 * size)
        # Corners pulled in by the same distance along every axis and given that distance as
        # their radius: the rounded corner still reaches exactly to the box's faces, so a box
        # stacked on another starts in contact instead of falling the inset first.
        inset = SAMPLE_INSET * params[:3].min()
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
        points, radius = signs * (params[:3] - inset), np.full(8, inset)
    elif kind == ShapeKind.CAPSULE:
        r = max(half[0], half[1], 1e-6 * size)
        hh = max(half[2] - r, 0.0)
        params[:2] = r, hh
        n_seg = max(2, int(math.ceil(2 * hh / r)) + 1)
        points = np.zeros((n_seg, 3))
        points[:, 2] = np.linspace(-hh, hh, n_seg)
        radius = np.full(n_seg, r)
    elif kind == ShapeKind.CYLINDER:
        r, hh = max(half[0], half[1], 1e-6 * size), max(half[2], 1e-6 * size)
        params[:2] = r, hh
        angle = np.linspace(0, 2 * np.pi, 16, endpoint=False)
        rim = np.stack([r * np.cos(angle), r * np.sin(angle), np.zeros(16)], axis=1)
        points = np.concatenate([rim + [0, 0, -hh], rim + [0, 0, hh]])
        radius = np.zeros(32)
    else:
        hull_idx, hull_tris = hull if hull is not None else convex_hull(v, where)
        a, b, c = (local[hull_tris[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        area = np.linalg.norm(n, axis=1)
        keep = area > 1e-12 * area.max()
        hull_n = n[keep] / area[keep, None]
        hull_o = np.einsum("ij,ij->i", hull_n, a[keep])
        key = np.round(np.c_[hull_n, hull_o] * 1e6).astype(np.int64)
        _, first = np.unique(key, axis=0, return_index=True)
        hull_n, hull_o = hull_n[np.sort(first)], hull_o[np.sort(first)]
        points, radius = local[hull_idx], np.zeros(len(hull_idx))
        shape_rot, offset = np.eye(3), np.zeros(3)
    if kind in (ShapeKind.CYLINDER, ShapeKind.CONVEX_HULL):
        # Corners sit on several faces at once; pulled a hair inside, a corner resting on another
        # box's face is unambiguously inside that box's other faces' planes, whatever the rounding.
        points = points * (1.0 - SAMPLE_INSET)
    if kind != ShapeKind.CONVEX_HULL:
        points = points @ shape_rot.T + offset

    return BodySpec(
        name=name, mode=MODE_NAMES[mode], mass=total, inertia=moments, position=centre,
        orientation=quat.from_matrix(axes), velocity=np.asarray(velocity, float),
        angular_velocity=np.asarray(angular_velocity, float), friction=float(friction),
        restitution=float(restitution), linear_damping=float(linear_damping),
        angular_damping=float(angular_damping), shape=kind, shape_params=params, shape_rotation=shape_rot,
        shape_offset=offset, hull_normals=hull_n, hull_offsets=hull_o, points=points, point_radius=radius,
        motion=motion, drag=float(drag), follow_position=float(follow_position),
        follow_rotation=float(follow_rotation))


def kind_needs_frame(shape: str) -> bool:
    return SHAPE_NAMES[shape] != ShapeKind.CONVEX_HULL


def tightest_box_frame(vertices, hull_triangles, principal_axes) -> np.ndarray:
    """Axes (3, 3), columns, of the smallest box around the vertices among a few candidates.

    Candidates: the principal axes (arbitrary for a cube or a sphere), the world axes, and every
    pair of perpendicular hull face normals, which finds a box mesh's own axes at any rotation.
    """
    frames = [principal_axes, np.eye(3)]
    if hull_triangles is not None and len(hull_triangles):
        a, b, c = (vertices[hull_triangles[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        n = n[np.linalg.norm(n, axis=1) > 0]
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        n = np.unique(np.round(n, 9), axis=0)[:64]
        dots = np.abs(n @ n.T)
        i, j = np.nonzero(np.triu(dots < 1e-6, 1))
        for p, r in zip(i[:256], j[:256]):
            frames.append(np.stack([n[p], n[r], np.cross(n[p], n[r])], axis=1))
    frames = np.array(frames)
    proj = np.einsum("nk,fkj->fnj", vertices, frames)
    volume = np.prod(proj.max(axis=1) - proj.min(axis=1), axis=1)
    return frames[int(np.argmin(volume))]


def cluster_offsets(mass: float, inertia: np.ndarray) -> np.ndarray:
    """Jakobsen's cluster (4, 3) in the body frame: four particles of mass/4 with this inertia.

    With S = sum m_i p_i p_i^T the second moment, I = trace(S) E - S, so the per-axis second
    moments are s_x = (I_y + I_z - I_x) / 2 etc.; particles at the even sign patterns of
    (a_x, a_y, a_z), a_k = sqrt(s_k / mass), give exactly that S and their centre is the origin.
    """
    ix, iy, iz = inertia
    s = 0.5 * np.array([iy + iz - ix, ix + iz - iy, ix + iy - iz])
    a = np.sqrt(np.maximum(s, 0.0) / mass)
    signs = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float)
    return signs * a


def embedding_weights(cluster: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Weights c (k, 4), sum 1, with p = sum c_i x_i for body-frame points (k, 3) in a cluster (4, 3)."""
    m = np.vstack([cluster.T, np.ones(4)])  # (4, 4): [x_i; 1]
    rhs = np.vstack([np.asarray(points, float).T, np.ones(len(points))])
    return np.linalg.solve(m, rhs).T


@dataclass(frozen=True)
class RigidBodies:
    """All rigid bodies of a model as arrays (B bodies, P sample points, F hull faces at most).

    mode: (B,) ``BodyMode``; mass, inverse_mass: (B,) kg, 1/kg (0 for kinematic);
    inertia, inverse_inertia: (B, 3) principal moments in the body frame (kg m^2, 0 for kinematic);
    rest_position: (B, 3) m and rest_orientation: (B, 4) the body frame in the world at rest;
    initial_velocity, initial_angular_velocity: (B, 3); friction, restitution, linear_damping,
    angular_damping (1/s): (B,); shape: (B,) ``ShapeKind``; shape_params: (B, 4);
    shape_rotation: (B, 3, 3) shape -> body frame; shape_offset: (B, 3); hull_normals: (B, F, 3)
    and hull_offsets: (B, F) padded with offset +inf; bound_radius: (B,) m around the centre of
    mass; point_body: (P,); point_local: (P, 3) body frame; point_radius: (P,); motions: per body
    a callable t -> 4x4 (rest -> current pose) or None; cluster: (B, 4, 3) Jakobsen's particles;
    drag: (B,) kg/m quadratic air drag; follow_position, follow_rotation: (B,) 1/s pulls of a
    moving body towards its animated pose.
    """

    names: tuple
    mode: np.ndarray
    mass: np.ndarray
    inverse_mass: np.ndarray
    inertia: np.ndarray
    inverse_inertia: np.ndarray
    rest_position: np.ndarray
    rest_orientation: np.ndarray
    initial_velocity: np.ndarray
    initial_angular_velocity: np.ndarray
    friction: np.ndarray
    restitution: np.ndarray
    linear_damping: np.ndarray
    angular_damping: np.ndarray
    shape: np.ndarray
    shape_params: np.ndarray
    shape_rotation: np.ndarray
    shape_offset: np.ndarray
    hull_normals: np.ndarray
    hull_offsets: np.ndarray
    bound_radius: np.ndarray
    point_body: np.ndarray
    point_local: np.ndarray
    point_radius: np.ndarray
    motions: tuple
    cluster: np.ndarray
    drag: np.ndarray
    follow_position: np.ndarray
    follow_rotation: np.ndarray

    @property
    def count(self) -> int:
        return len(self.mode)


def finalize_bodies(specs: list[BodySpec]) -> RigidBodies:
    count = len(specs)
    faces = max([len(s.hull_normals) for s in specs] + [1])
    hull_n = np.zeros((count, faces, 3))
    hull_n[..., 2] = 1.0
    hull_o = np.full((count, faces), np.inf)
    for k, s in enumerate(specs):
        hull_n[k, :len(s.hull_normals)] = s.hull_normals
        hull_o[k, :len(s.hull_offsets)] = s.hull_offsets
    mode = np.array([s.mode for s in specs], dtype=np.int8)
    mass = np.array([s.mass for s in specs])
    inertia = np.array([s.inertia for s in specs]).reshape(count, 3)
    moving = mode != BodyMode.KINEMATIC
    points = [s.points for s in specs]
    bound = np.array([np.linalg.norm(p, axis=1).max() + r.max() if len(p) else 0.0
                      for p, r in zip(points, (s.point_radius for s in specs))])
    return RigidBodies(
        names=tuple(s.name for s in specs), mode=mode, mass=mass,
        inverse_mass=np.where(moving, 1.0 / mass, 0.0),
        inertia=inertia, inverse_inertia=np.where(moving[:, None], 1.0 / inertia, 0.0),
        rest_position=np.array([s.position for s in specs]).reshape(count, 3),
        rest_orientation=np.array([s.orientation for s in specs]).reshape(count, 4),
        initial_velocity=np.array([s.velocity for s in specs]).reshape(count, 3),
        initial_angular_velocity=np.array([s.angular_velocity for s in specs]).reshape(count, 3),
        friction=np.array([s.friction for s in specs]), restitution=np.array([s.restitution for s in specs]),
        linear_damping=np.array([s.linear_damping for s in specs]),
        angular_damping=np.array([s.angular_damping for s in specs]),
        shape=np.array([s.shape for s in specs], dtype=np.int8),
        shape_params=np.array([s.shape_params for s in specs]).reshape(count, 4),
        shape_rotation=np.array([s.shape_rotation for s in specs]).reshape(count, 3, 3),
        shape_offset=np.array([s.shape_offset for s in specs]).reshape(count, 3),
        hull_normals=hull_n, hull_offsets=hull_o, bound_radius=bound,
        point_body=np.repeat(np.arange(count), [len(p) for p in points]),
        point_local=np.concatenate(points) if points else np.zeros((0, 3)),
        point_radius=np.concatenate([s.point_radius for s in specs]) if specs else np.zeros(0),
        motions=tuple(s.motion for s in specs),
        cluster=np.array([cluster_offsets(s.mass, s.inertia) for s in specs]).reshape(count, 4, 3),
        drag=np.array([s.drag for s in specs]), follow_position=np.array([s.follow_position for s in specs]),
        follow_rotation=np.array([s.follow_rotation for s in specs]),
    )


def empty_bodies() -> RigidBodies:
    z3 = np.zeros((0, 3))
    z = np.zeros(0)
    return RigidBodies(
        names=(), mode=np.zeros(0, np.int8), mass=z, inverse_mass=z, inertia=z3, inverse_inertia=z3,
        rest_position=z3, rest_orientation=np.zeros((0, 4)), initial_velocity=z3, initial_angular_velocity=z3,
        friction=z, restitution=z, linear_damping=z, angular_damping=z, shape=np.zeros(0, np.int8),
        shape_params=np.zeros((0, 4)), shape_rotation=np.zeros((0, 3, 3)), shape_offset=z3,
        hull_normals=np.zeros((0, 1, 3)), hull_offsets=np.zeros((0, 1)), bound_radius=z,
        point_body=np.zeros(0, np.int64), point_local=z3, point_radius=z, motions=(), cluster=np.zeros((0, 4, 3)),
        drag=z, follow_position=z, follow_rotation=z)
