"""Rigid bodies: mass properties from a mesh, collision shapes, sample points, the derived cluster.

What the solver steps is each body's rigid pose (centre of mass, orientation) and velocities,
moved by Extended XPBD; its sample points and shape are fixed in the body's frame. Jakobsen's
particle cluster (four particles of mass M/4 at (+-a_x, +-a_y, +-a_z), the even sign patterns, in
the principal frame, with a_k chosen so that the cluster has the mesh's mass, centre of mass and
inertia tensor exactly) is derived from the pose (``cluster_positions``), not stepped: four
particles held by six sticks bleed spin under projection (thesis, section 3.2) and cannot
conserve momentum to 1e-6, so contact corrections move the body as the converged Jakobsen
projection would, by the rigid body's own generalized inverse mass.

Shapes: n vertices, B bodies, P sample points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ..checks import FLOAT32_MAX, MAX_ANGULAR_SPEED, MAX_COORDINATE, MAX_SPEED, check_range, check_vector
from ..errors import JakobsenError
from ..geometry import quaternions as quat
from ..geometry import reproducible
from ..geometry import kinds
from ..geometry.kinds import ShapeKind
from ..geometry.mesh import convex_hull, is_closed, mass_properties, triangulate
from ..geometry.shapes import ShapeTable, hull_size
from ..tracks import BodyTracks, Track, body_tracks


class BodyMode(IntEnum):
    """Cinema 4D's Dynamic setting."""

    DYNAMIC = 0  # On: moved by the solver
    KINEMATIC = 1  # Off: follows its animation, pushes dynamic bodies, is not pushed back
    GHOST = 2  # Ghost: moved by the solver, collides with nothing


SAMPLE_INSET = 1e-3  # relative: 0.45 mm on a 0.9 m box
# The sizes (largest extent, m) a rigid body may have. Below 0.01 mm a body's motion is lost in
# Blender's single-precision keys a few metres from the origin (and its contacts in the rounding
# of the solve); beyond 1000 km, so is everything else in the scene.
MIN_BODY_SIZE = 1e-5
MAX_BODY_SIZE = 1e6
MAX_DENSITY = 2.3e6
# How deep one substep may drive a contact, as a fraction of the thinner shape's thickness: what
# the contact solve takes back in a substep. Motors are held to what moves their body by no more
# than this in a substep (``constraints.motors.drive_limits``).
CONTACT_DEPTH = 0.25

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
    point_material: np.ndarray = None  # (p,) bool: the sample point is a fixed point of the body
    collider: object = None  # the moving collider this body was made of (its shape row comes from it)
    motion: object = None
    drag: float = 0.0  # kg/m, quadratic air drag
    follow_position: float = 0.0  # 1/s, pull towards the animated position
    follow_rotation: float = 0.0  # 1/s, pull towards the animated orientation


def _principal(inertia: np.ndarray):
    # (Not np.linalg.eigh: the same bits on numpy 1.26 and 2.x, see ``reproducible``.)
    moments, axes = reproducible.symmetric_eigen3(inertia)
    det = axes[0, 0] * (axes[1, 1] * axes[2, 2] - axes[1, 2] * axes[2, 1]) \
        - axes[0, 1] * (axes[1, 0] * axes[2, 2] - axes[1, 2] * axes[2, 0]) \
        + axes[0, 2] * (axes[1, 0] * axes[2, 1] - axes[1, 1] * axes[2, 0])
    if det < 0:
        axes[:, 2] = -axes[:, 2]
    return np.maximum(moments, 0.0), axes


def plate_thickness(size: float) -> float:
    """How thick a flat mesh is made as a rigid body (m): a hundredth of its size, at least
    1 mm (but no more than a tenth of it)."""
    return min(max(0.01 * size, 1e-3), 0.1 * size)


def _thickened_if_flat(v: np.ndarray, tris: np.ndarray, size: float, where: str, warnings) -> np.ndarray:
    """A mesh whose vertices lie in one plane (a card, a sheet of plywood, a leaf modelled as a
    Plane) as a plate ``plate_thickness`` thick behind its faces, as Blender's Solidify adds it:
    the faces stay where they are drawn (a floor made a static Box stays at its height; centred,
    it held a crate 10 cm above the floor it was drawn on). (Refused before, where Blender's
    Rigid Body drops it as a convex hull grown by its collision margin.)"""
    if len(v) < 3:
        return v
    centred = v - v.mean(axis=0)
    _, axes = reproducible.symmetric_eigen3(reproducible.matmul(centred.T, centred))
    normal = axes[:, 0]  # the direction the vertices spread least along
    spread = centred @ normal
    if float(np.ptp(spread)) > 1e-9 * size or float(np.ptp(centred @ axes[:, 1])) <= 1e-9 * size:
        return v  # it has volume, or it is a line (refused by the hull with that reason)
    thickness = plate_thickness(size)
    if warnings is not None:
        warnings.append(f"{where}: its mesh is flat; it is simulated as a plate {1000 * thickness:.3g} mm thick "
                        "(a Solidify modifier gives it a thickness of your own)")
    facing = 0.0  # which side of the plane the faces look to (their areas' sum along the normal)
    if len(tris):
        a, b, c = v[tris[:, 0]], v[tris[:, 1]], v[tris[:, 2]]
        facing = float(np.cross(b - a, c - a).sum(axis=0) @ normal)
    flat = v - spread[:, None] * normal
    if facing == 0.0:  # (faces both ways, or none: centred)
        return np.concatenate([flat - 0.5 * thickness * normal, flat + 0.5 * thickness * normal])
    return np.concatenate([flat, flat - math.copysign(thickness, facing) * normal])


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
    if motion is not None and not callable(motion) and not isinstance(motion, Track):
        raise JakobsenError(f"{where}: motion must be a Track of 4x4 transforms or a function t -> 4x4 transform")
    tris = triangulate(faces, len(v), where) if faces is not None and len(faces) else np.zeros((0, 3), np.int64)
    size = float(np.ptp(v, axis=0).max())
    if not MIN_BODY_SIZE <= size <= MAX_BODY_SIZE:
        raise JakobsenError(f"{where}: it is too {'small' if size < MIN_BODY_SIZE else 'large'} to simulate, "
                            f"{size:.3g} m across; rigid bodies may be {MIN_BODY_SIZE:g} m to {MAX_BODY_SIZE:g} m "
                            "across (scale the scene, or its units, towards metres)")

    flat = len(v)
    v = _thickened_if_flat(v, tris, size, where, warnings)
    flat = len(v) != flat
    # Mass properties from the closed mesh; an open or degenerate one falls back to its convex hull.
    volume, centre, inertia = (mass_properties(v, tris) if is_closed(tris) else (0.0, None, None))
    hull = None
    if volume <= 1e-12 * size ** 3:
        if warnings is not None and len(tris) and not flat:
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
        # No fixed sample points: its rim points that meet a shape are found against that shape
        # (``backend/*/contacts.py``), so it rolls on its true rim, not on a polygon.
        r, hh = max(half[0], half[1], 1e-6 * size), max(half[2], 1e-6 * size)
        params[:2] = r, hh
        points, radius = np.zeros((0, 3)), np.zeros(0)
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
    if kind == ShapeKind.CONVEX_HULL:
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
        # Corners are fixed points of a body (their friction anchors may persist); a sphere's and a
        # capsule's points stand for the surface nearest the other shape, which rolls along it.
        point_material=np.full(len(points), kind in (ShapeKind.BOX, ShapeKind.CONVEX_HULL)),
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


# The most a body may turn in one substep (rad) while it touches something: its contacts are
# solved at the substep's poses, and a cone spinning on its tip on the ground kept its spin and
# its place up to 1.33 rad a substep and gained 16% of its spin and flew off at 1.67. (The
# motors hold their targets to this turn: ``constraints.motors.MAX_TURN`` is this.) Free flight
# is exact at any spin (the exponential map), so for a body's own spin this is a warning.
MAX_SUBSTEP_TURN = 1.0


def spin_warnings(bodies: "RigidBodies", h: float, substeps: int) -> list[str]:
    """The dynamic bodies whose starting spin turns them more than MAX_SUBSTEP_TURN a substep of
    ``h`` seconds, with the substeps that would resolve them, as warnings naming them."""
    out = []
    spin = np.linalg.norm(bodies.initial_angular_velocity, axis=1) if bodies.count else np.zeros(0)
    for i in np.flatnonzero((spin * h > MAX_SUBSTEP_TURN) & (bodies.mode != BodyMode.KINEMATIC)):
        turn = float(spin[i]) * h
        need = int(math.ceil(substeps * turn / MAX_SUBSTEP_TURN))
        out.append(f"body '{bodies.names[i]}': it starts spinning at {float(spin[i]):g} rad/s, {turn:.2f} rad a "
                   f"substep, more than the {MAX_SUBSTEP_TURN:g} its contacts resolve at {substeps} substeps: if it "
                   f"touches anything it may gain spin and fly off; use at least {need} substeps")
    return out


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
    mass; point_body: (P,); point_local: (P, 3) body frame; point_radius: (P,); tracks: the sampled
    poses of the bodies that follow an animation (``BodyTracks``); cluster: (B, 4, 3) Jakobsen's particles;
    drag: (B,) kg/m quadratic air drag; follow_position, follow_rotation: (B,) 1/s pulls of a
    moving body towards its animated pose; thickness: (B,) m, the smallest extent through each
    body's collision shape (``body_thickness``).
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
    shape_index: np.ndarray
    bound_radius: np.ndarray
    point_body: np.ndarray
    point_local: np.ndarray
    point_radius: np.ndarray
    point_material: np.ndarray
    collider: np.ndarray
    tracks: BodyTracks
    cluster: np.ndarray
    drag: np.ndarray
    follow_position: np.ndarray
    follow_rotation: np.ndarray
    thickness: np.ndarray

    @property
    def count(self) -> int:
        return len(self.mode)


def finalize_bodies(specs: list[BodySpec], table: ShapeTable, track_rate: float = 240.0,
                    track_duration: float = 60.0) -> RigidBodies:
    """The bodies as arrays; each body's collision shape goes into ``table`` (owned by the body);
    motions given as functions are sampled at ``track_rate`` over ``track_duration`` seconds."""
    count = len(specs)
    shape_index = np.empty(count, np.int64)
    for k, s in enumerate(specs):
        if s.collider is not None:
            shape_index[k] = table.add_collider(s.collider, owner=k, pose=np.eye(4))
            continue
        planes = np.c_[s.hull_normals, s.hull_offsets] if s.shape == ShapeKind.CONVEX_HULL else None
        params = np.array(s.shape_params, dtype=np.float64)
        if planes is not None:
            params[0] = hull_size(s.hull_offsets)
        shape_index[k] = table.add(int(s.shape), params, owner=k, position=s.shape_offset,
                                   rotation=quat.from_matrix(np.asarray(s.shape_rotation, dtype=np.float64)),
                                   friction=s.friction, restitution=s.restitution, planes=planes,
                                   # (a hull's sample points are its corners pulled in by SAMPLE_INSET)
                                   vertices=None if planes is None else s.points / (1.0 - SAMPLE_INSET),
                                   inset=0.0 if planes is None else SAMPLE_INSET, name=s.name)
    mode = np.array([s.mode for s in specs], dtype=np.int8)
    mass = np.array([s.mass for s in specs])
    inertia = np.array([s.inertia for s in specs]).reshape(count, 3)
    moving = mode != BodyMode.KINEMATIC
    points = [s.points for s in specs]
    bound = np.array([body_bound(s) for s in specs])
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
        shape_index=shape_index, bound_radius=bound,
        point_body=np.repeat(np.arange(count), [len(p) for p in points]),
        point_local=np.concatenate(points) if points else np.zeros((0, 3)),
        point_radius=np.concatenate([s.point_radius for s in specs]) if specs else np.zeros(0),
        point_material=np.concatenate([s.point_material for s in specs]) if specs else np.zeros(0, bool),
        collider=np.array([s.collider is not None for s in specs], dtype=bool),
        tracks=body_tracks([s.motion for s in specs], np.array([s.position for s in specs]).reshape(count, 3),
                           np.array([s.orientation for s in specs]).reshape(count, 4), [s.name for s in specs],
                           track_rate, track_duration),
        cluster=np.array([cluster_offsets(s.mass, s.inertia) for s in specs]).reshape(count, 4, 3),
        drag=np.array([s.drag for s in specs]), follow_position=np.array([s.follow_position for s in specs]),
        follow_rotation=np.array([s.follow_rotation for s in specs]),
        thickness=np.array([spec_thickness(s) for s in specs]).reshape(count),
    )


def spec_thickness(s: BodySpec) -> float:
    """A body's smallest extent through its collision shape, m (inf for a plane or a box world;
    a triangle mesh's margin, what counts as touching behind a face)."""
    kind, p = int(s.shape), s.shape_params
    if kind in (kinds.PLANE, kinds.BOX_INTERIOR):
        return math.inf
    if kind == kinds.MESH:
        return float(s.collider.margin)
    if kind in (kinds.SPHERE, kinds.CAPSULE):
        return 2.0 * float(p[0])
    if kind == kinds.BOX:
        return 2.0 * float(p[:3].min())
    if kind == kinds.CYLINDER:
        return 2.0 * float(min(p[0], p[1]))
    # A hull: its narrowest span across one of its face normals.
    normals = s.hull_normals if s.collider is None else np.asarray(s.collider.normals, dtype=np.float64)
    points = s.points
    if not len(normals) or not len(points):
        return 2.0 * body_bound(s)
    spans = points @ normals.T
    return float(np.min(spans.max(axis=0) - spans.min(axis=0))) / (1.0 - SAMPLE_INSET)


def body_thickness(bodies: RigidBodies) -> np.ndarray:
    """Each body's smallest extent through its collision shape (B,) m."""
    return np.maximum(bodies.thickness, 1e-300)


def body_bound(s: BodySpec) -> float:
    """The radius around the body's centre that holds its whole collision shape (inf: a plane)."""
    kind, p, off = int(s.shape), s.shape_params, np.linalg.norm(s.shape_offset)
    if kind in (kinds.PLANE, kinds.BOX_INTERIOR):
        return math.inf
    if kind == kinds.MESH:
        return float(np.linalg.norm(s.collider.vertices, axis=1).max()) + s.collider.margin  # in its own frame
    if kind == kinds.SPHERE:
        return off + p[0]
    if kind in (kinds.CAPSULE, kinds.CYLINDER):
        return off + (p[0] + p[1] if kind == kinds.CAPSULE else math.hypot(p[0], p[1]))
    if kind == kinds.BOX:
        return off + float(np.linalg.norm(p[:3]))
    points = s.points
    return float(np.linalg.norm(points, axis=1).max() + s.point_radius.max()) if len(points) else 0.0


def collider_body(collider, index: int) -> BodySpec:
    """A moving collider as a kinematic body: it follows ``collider.motion`` (the world pose of the
    collider's frame at t), pushes the bodies and cloth it meets and is not pushed back. Its body
    frame is the collider's frame at t = 0; its sample points are what a body of its shape has."""
    name = collider.name or f"collider {index}"
    pose0 = np.asarray(collider.pose(0.0), dtype=np.float64)
    inverse0 = np.linalg.inv(pose0)
    kind, params = collider.row()
    points, radius = np.zeros((0, 3)), np.zeros(0)
    if kind == kinds.BOX:
        inset = SAMPLE_INSET * params[:3].min()
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
        points, radius = signs * (params[:3] - inset), np.full(8, inset)
    elif kind == kinds.SPHERE:
        points, radius = np.zeros((1, 3)), np.array([params[0]])
    elif kind == kinds.CAPSULE:
        n_seg = max(2, int(math.ceil(2 * params[1] / params[0])) + 1)
        points = np.zeros((n_seg, 3))
        points[:, 2] = np.linspace(-params[1], params[1], n_seg)
        radius = np.full(n_seg, params[0])
    elif kind == kinds.HULL:
        points, radius = np.asarray(collider.vertices, float) * (1.0 - SAMPLE_INSET), np.zeros(len(collider.vertices))
    motion = collider.motion
    if isinstance(motion, Track):  # world poses of the collider's frame: as transforms from t = 0's
        rest_motion = Track(rate=motion.rate, values=motion.values @ inverse0)
    else:
        def rest_motion(t, motion=motion, inverse0=inverse0):
            return np.asarray(motion(t), dtype=np.float64) @ inverse0
    return BodySpec(
        name=name, mode=BodyMode.KINEMATIC, mass=1.0, inertia=np.ones(3), position=pose0[:3, 3].copy(),
        orientation=quat.from_matrix(pose0[:3, :3]), velocity=np.zeros(3), angular_velocity=np.zeros(3),
        friction=float(collider.friction), restitution=float(collider.restitution), linear_damping=0.0,
        angular_damping=0.0, shape=ShapeKind(kind), shape_params=params, shape_rotation=np.eye(3),
        shape_offset=np.zeros(3), hull_normals=np.zeros((0, 3)), hull_offsets=np.zeros(0), points=points,
        point_radius=radius, point_material=np.full(len(points), kind in (kinds.BOX, kinds.HULL)),
        collider=collider, motion=rest_motion,
        drag=0.0, follow_position=0.0, follow_rotation=0.0)


def empty_bodies() -> RigidBodies:
    return finalize_bodies([], ShapeTable())
