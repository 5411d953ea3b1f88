"""Meshes -> the engine's cloth, soft bodies, rigid bodies and colliders."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jakobsen_engine import JakobsenError, ModelBuilder, Track, TriangleMesh
from jakobsen_engine.geometry.reproducible import matmul
from jakobsen_engine.particles.surfaces import is_closed

from ..blender_io.checks import ROLE_NAMES, check_invertible, check_matrix, check_numbers, describe, written_by_bake
from ..blender_io.reads import MeshData, pin_group, read_mesh, simulated_ancestor
from ..translate.meshes import face_areas, face_list, face_starts, fit_shape, mesh_warnings
from ..translate.settings import FOLLOW_RATE, RIGID_MODES, RIGID_SHAPES, damping_rate
from ..translate.transforms import affine_inverse, matrix, rigid, rotation_and_scale, world as into_world
from .. import actions
from .bindings import BodyBinding, ColliderBinding


def parent_warning(obj, warnings: list[str]) -> bool:
    """Warns (and returns True) when a parent of ``obj`` is a body the bake moves: on playback the
    object would be moved twice, by what the bake writes for it and by its parent's keys (or, if
    the bake writes nothing for it, simulated where it stood while its parent carries it away).
    A rigid body the bake keys is keyed relative to that parent instead (no warning, True); it is
    warned about when its parent, moved or not, is scaled unevenly."""
    keyed = obj.jakobsen.type == 'RIGID_BODY' and obj.jakobsen.rigid_body.dynamic != 'OFF'
    if keyed and obj.parent is not None:
        # Keyed in its parent's frame, simulated or not (an imported model's empties often are
        # scaled unevenly): a frame scaled unevenly turns a child that turns in it into a sheared
        # one (a lid hinged to a crate of scale (1, 0.6, 0.5) was drawn 9 degrees off square and
        # 4 cm off its hinge; a box under a still empty of scale (2, 0.5, 1) came to rest drawn a
        # parallelogram 0.37 m off the simulation), which no keys can undo.
        frame = matrix(obj.parent.matrix_world) @ matrix(obj.matrix_parent_inverse)
        stretch = np.linalg.svd(frame[:3, :3], compute_uv=False)
        if stretch[0] > (1.0 + 1e-4) * stretch[-1]:
            warnings.append(f"{describe(obj)}: its parent '{obj.parent.name}' is scaled unevenly (its frame stretches "
                            f"{stretch[-1]:.3g} to {stretch[0]:.3g}), so where it turns against its parent Blender "
                            "draws it sheared and off where it was simulated; apply the parent's scale (Object > "
                            "Apply > Scale) or clear the parent (Clear and Keep Transformation)")
    parent = simulated_ancestor(obj)
    if parent is None:
        return False
    if keyed:
        return True
    where = describe(obj)
    role = obj.jakobsen.type
    moved = written_by_bake(obj)
    how = (f"on playback it is moved twice, by its own baked {'shapes' if role != 'RIGID_BODY' else 'keys'} "
           f"and again by its parent's" if moved else
           "it is simulated as if it stood still while its parent carries it away on playback")
    warnings.append(f"{where}: its parent '{parent.name}' is a simulated rigid body, so {how}; clear the parent "
                    "(Object > Parent > Clear and Keep Transformation) and join them with a connector (a Fixed "
                    "one keeps them together)")
    return True


def shape_stiffness(frequency: float) -> float:
    """A soft body's Jiggle Frequency (Hz) as the engine's shape stiffness (N/m per kg, 1/s^2): each
    vertex is pulled to its matched rest place like a mass on a spring, which swings at
    sqrt(k/m) / (2 pi) Hz, so k/m = (2 pi f)^2."""
    return (2.0 * math.pi * float(frequency)) ** 2


def is_closed_mesh(data: MeshData) -> bool:
    """Every edge shared by exactly two faces: the mesh encloses a volume pressure can keep."""
    loop_total = np.asarray(data.loop_total, dtype=np.int64)
    starts = face_starts(loop_total)
    return is_closed(np.asarray(data.corners, dtype=np.int64), starts)


def surface_settings(obj, data: MeshData, warnings: list[str]) -> dict:
    """The whole-surface keywords of ``ModelBuilder.add_cloth`` from a cloth's or soft body's panels:
    self collision, pressure (a soft body's Volume is pressure at the volume as modelled), shape
    matching, plasticity and tearing; a setting whose toggle is off is left at the engine's "off"."""
    where = describe(obj)
    s = obj.jakobsen.cloth
    soft = obj.jakobsen.type == 'SOFT_BODY'
    # The engine's keyword arguments (numbers, flags, None for "off").
    out: dict[str, Any] = dict(self_collision=bool(s.use_self_collision),
                               self_distance=float(s.self_distance) if s.use_self_collision else None)
    if s.use_plasticity:
        out.update(plastic_limit=float(s.plastic_limit) / 100.0, plastic_rate=float(s.plastic_rate))
    if soft:
        sb = obj.jakobsen.soft_body
        check_numbers(sb, where)  # (the cloth group is checked with the other roles' groups)
        out["shape_stiffness"] = shape_stiffness(sb.jiggle_frequency)
        out["shape_damping"] = float(sb.jiggle_damping)
        if sb.use_volume:
            out.update(pressure=1.0, pressure_stiffness=float(sb.volume_stiffness))
        if not sb.use_volume and sb.jiggle_frequency <= 0.0:
            warnings.append(f"{where} has a Jiggle Frequency of 0 and Volume off, so it keeps neither its shape "
                            "nor its volume: it is simulated as a cloth surface")
    else:
        if s.use_pressure:
            out.update(pressure=float(s.pressure_volume), pressure_stiffness=float(s.pressure_stiffness))
        if s.use_tearing:
            out["tear_factor"] = float(s.tear_factor)
    # Checked here to name the setting as the panel shows it (the engine would say "pressure").
    if out.get("pressure", 0.0) > 0.0 and not is_closed_mesh(data):
        setting, panel = ("Volume", "Soft Body") if soft else ("Pressure", "Cloth > Pressure")
        raise JakobsenError(f"{where}: {setting} needs a closed mesh (every edge shared by two faces), and this "
                            "one has holes or loose edges; fill them (Edit Mode: Select > Select All by Trait > "
                            f"Non Manifold shows them) or turn {setting} off (Physics > Jakobsen Physics > {panel})")
    return out


# The transform channels the bake keys: a driver on one of them replaces the keys on playback.
DRIVEN_POSE = {"location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "delta_location",
               "delta_rotation_euler", "delta_rotation_quaternion"}


def add_deformable(builder: ModelBuilder, obj, depsgraph, track, warnings: list[str]):
    where = describe(obj)
    parent_warning(obj, warnings)
    s = obj.jakobsen.cloth
    group, renamed_from = pin_group(obj)
    if renamed_from:
        warnings.append(f"{where}: its pin group '{renamed_from}' is now named '{group}' (the group in its place "
                        f"among its vertex groups, as after a rename), so it pins with '{group}'; set the Pin "
                        "Group to keep it")
    data = read_mesh(obj, depsgraph, where, group)
    if len(data.loop_total) == 0:
        raise JakobsenError(f"{where}: the mesh has no faces; a {ROLE_NAMES[obj.jakobsen.type]} needs faces "
                            "(vertices joined by edges only cannot be simulated as a surface)")
    m = matrix(obj.evaluated_get(depsgraph).matrix_world)
    check_matrix(obj, m)
    check_invertible(obj, m)
    world = into_world(data.local, m)
    areas = face_areas(world, data.loop_total, data.corners)
    size = float(np.ptp(world, axis=0).max()) if len(world) else 0.0
    # Relative to the mesh's own size: a 1 micrometre cloth has faces of 1e-12 m^2 that are not flat.
    if size <= 0.0 or areas.sum() <= 1e-9 * size * size:
        spread = np.linalg.svd(world - world.mean(axis=0), compute_uv=False) if len(world) >= 2 else np.zeros(2)
        why = ("its vertices lie on one line or point" if size <= 0.0 or spread[1] <= 1e-6 * spread[0]
               else "each face crosses itself, its corners out of order like a bow tie, so its halves cancel")
        raise JakobsenError(f"{where}: all its faces have zero area ({why})")
    warnings.extend(mesh_warnings(where, world, data.loop_total, data.corners, areas))
    surface = surface_settings(obj, data, warnings)
    density = (s.vertex_mass * len(world) / float(areas.sum())) if s.use_vertex_mass else s.density
    weights = data.weights
    if weights is not None and not np.any(weights > 0.0):
        warnings.append(f"{where}: its pin group '{group}' is empty (no vertex has a weight in it), so "
                        "nothing is pinned and the cloth falls free")
    if obj.jakobsen.type == 'CLOTH' and not s.use_rigid_stretch and s.use_rigid_shear:
        # Rigid diagonals under soft edges: what the edges would stretch the diagonals hold, as far
        # as their solve converges, so the sag followed the substep count (a curtain at 100 N hung
        # 0.54, 0.41 and 0.33 mm at 5, 10 and 20 substeps).
        warnings.append(f"{where}: its Stretch is soft ({s.stretch_stiffness:g} N) but its Shear is rigid, so how "
                        "far it stretches depends on the substep count; untick Rigid Shear and give Shear a "
                        "stiffness (the presets give it the Stretch's or near it)")
    handle = builder.add_cloth(
        world, face_list(data.loop_total, data.corners, m), name=obj.name, density=density,
        thickness=s.thickness,
        stretch_stiffness=math.inf if s.use_rigid_stretch else s.stretch_stiffness,
        shear_stiffness=math.inf if s.use_rigid_shear else s.shear_stiffness,
        bend_stiffness=s.bend_stiffness * 1e-3,  # (the panel's is in mN m)
        pin_weights=weights, pin_stiffness=s.pin_stiffness,
        friction=s.friction, drag=s.air_drag, **surface)
    to_world = track if track is not None else m[None]
    if track is not None:
        for k in range(len(track)):
            check_matrix(obj, track[k])
            check_invertible(obj, track[k])
    return obj.name, obj.jakobsen.type, handle, to_world, data.local


def read_rigid_body(obj, depsgraph) -> MeshData:
    where = describe(obj)
    data = read_mesh(obj, depsgraph, where)
    if len(data.loop_total) == 0:
        raise JakobsenError(f"{where}: the mesh has no faces; a rigid body needs a surface "
                            "to collide with and to give it mass")
    return data


def rigid_track(obj, track: np.ndarray, scale: np.ndarray, frame_rate: float, offset: np.ndarray,
                 warnings: list[str]) -> Track:
    """The motion of an animated object, sampled per frame (``track``: (frames, 4, 4) matrix_world),
    as an engine ``Track`` of its rigid pose (rotation and translation, scale taken out) times
    ``offset``, one sample a frame (the engine interpolates between them: positions linearly,
    rotations by slerp); warns once if its scale changes (the shape keeps its first size)."""
    where = describe(obj)
    rotations = []
    for k in range(len(track)):
        check_matrix(obj, track[k])
        r, s = rotation_and_scale(track[k], where, [])
        if not np.allclose(np.abs(s), np.abs(scale), rtol=1e-4):
            warnings.append(f"{where}: its scale changes during the bake; its collision shape keeps the size "
                            "it has on the first frame")
            scale = s  # warn once
        rotations.append(rigid(r, track[k][:3, 3]) @ offset)
    return Track(rate=frame_rate, values=np.array(rotations))


def mesh_collider(obj, data: MeshData, m: np.ndarray, track, frame_rate: float, friction: float,
                  bounce: float, warnings: list[str], movers: np.ndarray | None = None) -> TriangleMesh:
    """The object's faces as a triangle-mesh collider: its world vertices on the first frame,
    moved along its animation (the motion from that pose) if it has one. A Collider with Shape
    Mesh and a rigid body with Dynamic Off and Static Mesh collide the same way. A flat mesh (a
    ground, a floor) faces what moves (``facing_what_moves``) as a plane does."""
    where = describe(obj)
    rotation, scale = rotation_and_scale(m, where, [])  # (the faces are exact in the world, sheared or not)
    world = into_world(data.local, m)
    motion = None
    if track is not None:
        motion = rigid_track(obj, track, scale, frame_rate, np.linalg.inv(rigid(rotation, m[:3, 3])), warnings)
    faces = facing_faces(where, world, data, m, movers, warnings)
    return TriangleMesh.from_mesh(world, faces, where=where, friction=float(friction), restitution=float(bounce),
                                  motion=motion, name=obj.name)


def facing_faces(where: str, world: np.ndarray, data: MeshData, m: np.ndarray, movers: np.ndarray | None,
                 warnings: list[str]):
    """The mesh's faces (``face_list``) as a triangle-mesh collider takes them, turned round where
    they point away from what moves (``movers``; warned): a flat mesh (a ground) as a plane is
    (``facing_what_moves``); an open curved one (a bowl, a terrain) by the face nearest each
    mover; a closed one whose faces point inwards (its volume negative: flipped normals, as
    imports leave them) likewise, unless what moves starts inside it (a container): a cloth
    dropped on such a ball sank into it, silently. world: its vertices in the world (a deforming
    mesh's on the first frame), m: its matrix (a mirroring one reverses the faces' turn)."""
    faces = face_list(data.loop_total, data.corners, m)
    size = float(np.ptp(world, axis=0).max()) if len(world) else 0.0
    flip = False
    if len(world) >= 3 and size > 0.0:
        centre = world.mean(axis=0)
        _, spread, axes = np.linalg.svd(world - centre, full_matrices=False)
        if spread[-1] <= 1e-6 * size * math.sqrt(len(world)):  # flat: a plane's worth of faces
            # The side its faces point to: the sum of their first corners' turns, as Blender shows
            # them (a mirroring matrix reverses the turn in the world: ``face_list``).
            starts = face_starts(data.loop_total)
            a, b, c = (world[data.corners[starts + k]] for k in range(3))
            turn = float(np.sum(np.cross(b - a, c - a) @ axes[-1])) * np.sign(np.linalg.det(m[:3, :3]))
            normal = axes[-1] if turn >= 0.0 else -axes[-1]
            flip = facing_what_moves(where, normal, centre, movers, warnings)
        elif movers is not None and len(movers) and len(data.loop_total):
            # An open curved mesh collides on the side its faces point to as well: with its normals
            # away from what moves (a hemisphere cut from a sphere, an import's flipped terrain) a
            # ball and a cloth fell through it, silently. A closed one is turned only when its
            # faces point inwards.
            if not is_closed_mesh(data) or _enclosed_volume(world, data, m) < 0.0:
                flip = _behind_nearest_faces(where, world, data, m, movers, warnings)
    if flip:
        faces = [np.asarray(f)[::-1] for f in faces] if isinstance(faces, list) else faces[:, ::-1]
    return faces


def _enclosed_volume(world: np.ndarray, data: MeshData, m: np.ndarray) -> float:
    """The signed volume a closed mesh's faces enclose, m^3: negative when they point inwards."""
    centre = world.mean(axis=0)
    a, b, c = (world[k] - centre for k in fan_triangles(data.loop_total, data.corners))
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0) * float(np.sign(np.linalg.det(m[:3, :3])))


# How far a mesh's surface may lie from the shape fitted to it: a tenth of the shape's thinnest
# extent, and at least this fraction of the mesh's size (a plane has no thickness), but that
# floor never beyond FIT_FLOOR_MOST m: on a 40 m terrain it was 8 cm, and bumps of 5-10 cm (what a
# car feels) went unwarned while the car rode the flat top of the box fitted to them.
FIT_TOLERANCE, FIT_FLOOR, FIT_FLOOR_MOST = 0.1, 0.002, 0.01
FIT_LEFT_OUT = 0.25  # warn when more of the mesh's surface area than this is off the shape

# Where each triangle of a face is sampled (barycentric): its centre and a point towards each corner.
_SAMPLES = np.array([[1 / 3, 1 / 3, 1 / 3], [2 / 3, 1 / 6, 1 / 6], [1 / 6, 2 / 3, 1 / 6], [1 / 6, 1 / 6, 2 / 3]])


def fan_triangles(loop_total, corners) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vertex indices (a, b, c) of every face fanned into triangles from its first corner
    (corner j of a face: the triangle of corners 0, j, j + 1)."""
    loop_total = np.asarray(loop_total, dtype=np.int64)
    corners = np.asarray(corners, dtype=np.int64)
    starts = face_starts(loop_total)
    face_of = np.repeat(np.arange(len(loop_total)), loop_total)
    within = np.arange(len(corners)) - starts[face_of]
    fan = np.flatnonzero((within >= 1) & (within <= loop_total[face_of] - 2))
    return corners[starts[face_of[fan]]], corners[fan], corners[fan + 1]


def surface_samples(points: np.ndarray, loop_total, corners) -> tuple[np.ndarray, np.ndarray]:
    """Points spread over a mesh's faces (each face fanned into triangles, four points a
    triangle) and the area each stands for: (s, 3), (s,)."""
    a, b, c = (points[k] for k in fan_triangles(loop_total, corners))
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    samples = np.einsum("sk,tkd->tsd", _SAMPLES, np.stack([a, b, c], axis=1)).reshape(-1, 3)
    return samples, np.repeat(area / len(_SAMPLES), len(_SAMPLES))


def surface_off_fitted_shape(shape: str, size: dict, offset: np.ndarray, points: np.ndarray, loop_total,
                             corners) -> tuple[float, float]:
    """How much of a mesh the collision shape fitted to it leaves out: (the fraction of its
    surface area that lies farther than the tolerance from the shape's surface, the tolerance
    in m). points: (n, 3) the mesh in the object's rotated but unscaled frame (where
    ``fit_shape`` fits), offset: the shape's frame in it."""
    samples, areas = surface_samples(points, loop_total, corners)
    q = (samples - offset[:3, 3]) @ offset[:3, :3]  # in the shape's frame
    if shape == 'BOX':
        half = np.asarray(size["half_extents"])
        outside = np.abs(q) - half
        distance = np.abs(np.linalg.norm(np.maximum(outside, 0.0), axis=1) + np.minimum(outside.max(axis=1), 0.0))
        thinnest = 2.0 * float(half.min())
    elif shape == 'SPHERE':
        distance = np.abs(np.linalg.norm(q, axis=1) - size["radius"])
        thinnest = 2.0 * size["radius"]
    elif shape == 'CAPSULE':
        axis_point = np.clip(q[:, 2], -size["half_height"], size["half_height"])
        distance = np.abs(np.linalg.norm(q - np.outer(axis_point, [0.0, 0.0, 1.0]), axis=1) - size["radius"])
        thinnest = 2.0 * size["radius"]
    elif shape == 'CYLINDER':
        radial = np.hypot(q[:, 0], q[:, 1]) - size["radius"]
        axial = np.abs(q[:, 2]) - size["half_height"]
        distance = np.abs(np.hypot(np.maximum(radial, 0.0), np.maximum(axial, 0.0))
                          + np.minimum(np.maximum(radial, axial), 0.0))
        thinnest = 2.0 * min(size["radius"], size["half_height"])
    else:  # a plane: its normal is the frame's Z
        distance = np.abs(q[:, 2])
        thinnest = 0.0
    tolerance = max(FIT_TOLERANCE * thinnest, min(FIT_FLOOR * float(np.ptp(points, axis=0).max()), FIT_FLOOR_MOST))
    total = float(areas.sum())
    if total <= 0.0:
        return 0.0, tolerance
    return float(areas[distance > tolerance].sum()) / total, tolerance


def _world_box(obj, depsgraph) -> np.ndarray:
    """(8, 3) the corners of the object's bounding box (evaluated) in the world."""
    ob_eval = obj.evaluated_get(depsgraph)
    return into_world(np.array([tuple(c) for c in ob_eval.bound_box]), matrix(ob_eval.matrix_world))


def centres(objects, depsgraph) -> np.ndarray:
    """(k, 3) the world centres of the objects' bounding boxes (evaluated), where they start."""
    return np.array([_world_box(obj, depsgraph).mean(axis=0) for obj in objects]).reshape(-1, 3)


def passing_through(objects, depsgraph) -> list[str]:
    """Warnings for cloths and soft bodies that start one above another (their world boxes
    overlap across X and Y) without Self Collision on both: they pass through each other (a
    sheet dropped on another ended in its plane, a jelly fell through a hammock, silently). With
    Self Collision on both they collide with each other too (``collision.self_contact``)."""
    boxes = [(box.min(axis=0), box.max(axis=0)) for box in (_world_box(obj, depsgraph) for obj in objects)]
    out = []
    for i, a in enumerate(objects):
        for j in range(i + 1, len(objects)):
            b = objects[j]
            if a.jakobsen.cloth.use_self_collision and b.jakobsen.cloth.use_self_collision:
                continue
            (alo, ahi), (blo, bhi) = boxes[i], boxes[j]
            if np.all(alo[:2] <= bhi[:2]) and np.all(blo[:2] <= ahi[:2]):
                out.append(f"{describe(a)} and {describe(b)} start one above the other but pass through each "
                           "other: cloths and soft bodies collide with each other only with Self Collision on "
                           "both (Physics > Jakobsen Physics > Self Collision)")
    return out


def _behind_nearest_faces(where: str, world: np.ndarray, data: MeshData, m: np.ndarray, movers: np.ndarray,
                          warnings: list[str]) -> bool:
    """Whether an open mesh should be turned round because more of what moves starts behind the
    face nearest to it (by the faces' centres) than in front; warned when so (``facing_what_moves``)."""
    loop_total = np.asarray(data.loop_total, dtype=np.int64)
    starts = face_starts(loop_total)
    corners = np.asarray(data.corners, dtype=np.int64)
    a, b, c = (world[corners[starts + k]] for k in range(3))
    normals = np.cross(b - a, c - a) * np.sign(np.linalg.det(m[:3, :3]))  # (a mirroring matrix: ``face_list``)
    centres = np.add.reduceat(world[corners], starts, axis=0) / loop_total[:, None]
    side = np.empty(len(movers))
    for k, p in enumerate(movers):  # (a mover at a time: faces x movers could be large)
        nearest = int(np.argmin(np.einsum("fi,fi->f", centres - p, centres - p)))
        side[k] = (p - centres[nearest]) @ normals[nearest]
    behind, front = int(np.count_nonzero(side < 0.0)), int(np.count_nonzero(side > 0.0))
    if behind <= front:
        return False
    _turned_round(where, behind, len(movers), warnings)
    return True


def _turned_round(where: str, behind: int, total: int, warnings: list[str]) -> None:
    warnings.append(f"{where}: its faces point away from what moves ({behind} of {total} moving objects "
                    "start behind it), so it collides on their side (Flip its normals in Edit Mode to make "
                    "that its front)")


def facing_what_moves(where: str, normal: np.ndarray, point: np.ndarray, movers: np.ndarray | None,
                      warnings: list[str]) -> bool:
    """Whether a flat collider (a plane, a flat mesh) through ``point`` should be turned round
    because more of what moves (``movers``: cloth, soft and active rigid bodies, where they start)
    lies behind its faces than in front of them; warned when so. A plane collides on its front
    only; a ground whose faces point down (turned over, or its normals flipped by an import)
    let everything fall through (Blender's Cloth and Rigid Body hold on either side of it)."""
    if movers is None or not len(movers):
        return False
    side = (movers - point) @ normal
    behind, front = int(np.count_nonzero(side < 0.0)), int(np.count_nonzero(side > 0.0))
    if behind <= front:
        return False
    _turned_round(where, behind, len(movers), warnings)
    return True


def add_collider(builder: ModelBuilder, obj, depsgraph, track, frame_rate: float,
                  warnings: list[str], deformed: np.ndarray | None = None,
                  movers: np.ndarray | None = None) -> ColliderBinding:
    """A Collider: a shape fitted to the mesh, or (Shape Mesh) its faces; ``deformed``: the world
    positions (frames, n, 3) of its evaluated vertices on every frame of the bake when its mesh
    deforms (an armature, hooks, shape keys), which a Mesh collider follows, re-read each frame
    and interpolated per substep. movers: where what moves starts (``centres``), which a plane
    faces (``facing_what_moves``)."""
    where = describe(obj)
    parent_warning(obj, warnings)
    data = read_mesh(obj, depsgraph, where)
    c = obj.jakobsen.collider
    if len(data.local) == 0:
        raise JakobsenError(f"{where}: the mesh has no vertices to fit a collision shape to")
    m = matrix(obj.evaluated_get(depsgraph).matrix_world)
    check_matrix(obj, m)
    if c.shape == 'MESH':
        if len(data.loop_total) == 0:
            raise JakobsenError(f"{where}: the mesh has no faces to collide with (Shape: Mesh); give it faces "
                                "or choose another Shape")
        if deformed is not None and deformed.shape[1] == len(data.local) and np.ptp(deformed, axis=0).max() > 1e-7:
            # Its own matrix's motion is in the world positions too: no motion of its own.
            # (turned round as a still mesh is, by where it and what moves start)
            faces = facing_faces(where, deformed[0], data, m, movers, warnings)
            collider = TriangleMesh.from_mesh(deformed[0], faces, where=where,
                                              deformation=deformed, deformation_rate=frame_rate,
                                              friction=float(c.friction), restitution=float(c.bounce), name=obj.name)
            index = builder.add_collider(collider)
            return ColliderBinding(object_name=obj.name, role='COLLIDER', shape='MESH', index=index, animated=True)
        index = builder.add_collider(mesh_collider(obj, data, m, track, frame_rate, c.friction, c.bounce, warnings,
                                                   movers))
        return ColliderBinding(object_name=obj.name, role='COLLIDER', shape='MESH', index=index,
                               animated=track is not None)
    rotation, scale = rotation_and_scale(m, where, warnings)
    shape, cls, size, offset = fit_shape(c.shape, data.local, scale, where)
    if shape == 'PLANE':
        start = rigid(rotation, m[:3, 3]) @ offset
        if facing_what_moves(where, start[:3, 2], start[:3, 3], movers, warnings):
            offset = offset.copy()
            offset[:3, 1:3] *= -1.0  # turned round its X: a proper rotation whose Z is the other side
    if len(data.loop_total):
        left_out, tolerance = surface_off_fitted_shape(shape, size, offset, data.local * scale, data.loop_total,
                                                       data.corners)
        if left_out > FIT_LEFT_OUT:
            chosen = shape.lower() if c.shape != 'AUTOMATIC' else f"automatic shape ({shape.lower()})"
            warnings.append(f"{where}: its {chosen} leaves out much of its mesh ({left_out:.0%} of its surface "
                            f"lies more than {tolerance:.3g} m from the {shape.lower()}'s), so things collide "
                            "with the shape, not with what is seen; set Shape: Mesh (Physics > Jakobsen "
                            "Physics > Collider) to collide with its faces")
    kwargs = dict(size, friction=float(c.friction), restitution=float(c.bounce), name=obj.name)
    if track is None:
        collider = cls(transform=rigid(rotation, m[:3, 3]) @ offset, **kwargs)
    else:
        collider = cls(motion=rigid_track(obj, track, scale, frame_rate, offset, warnings), **kwargs)
    index = builder.add_collider(collider)
    return ColliderBinding(object_name=obj.name, role='COLLIDER', shape=shape, index=index,
                           animated=track is not None)


def initial_velocities(obj, mode: str, warnings: list[str]) -> tuple[tuple, tuple]:
    """The body's Initial Velocity (world m/s) and Angular (world rad/s), or zeros when it is off.
    A body with Dynamic Off follows its animation, so its initial velocity is left out (with a
    warning when one is set)."""
    rb = obj.jakobsen.rigid_body
    still = (0.0, 0.0, 0.0)
    if not rb.use_initial_velocity:
        return still, still
    linear = tuple(float(v) for v in rb.initial_velocity)
    angular = tuple(float(v) for v in rb.initial_angular_velocity)
    if mode == "kinematic":
        if any(linear) or any(angular):
            warnings.append(f"{describe(obj)}: its Initial Velocity is ignored: with Dynamic Off it follows its "
                            "animation (set Dynamic On to start it moving)")
        return still, still
    return linear, angular


def round_shape_warning(where: str, collision_shape: str, data: MeshData, scale: np.ndarray,
                        warnings: list[str]) -> None:
    """Warns when a rigid body's Sphere, Capsule or Cylinder, fitted to its mesh's bounds as the
    engine fits it (a capsule or cylinder along the local Z axis, as Blender's), leaves out much of
    the mesh: a log modelled along X made a Capsule was a sphere 2 m across that held it 0.85 m
    above the ground, silently (a Collider's shape was already checked so)."""
    if collision_shape not in ('SPHERE', 'CAPSULE', 'CYLINDER') or not len(data.loop_total):
        return
    points = data.local * scale  # the object's rotated but unscaled frame
    lo, hi = points.min(axis=0), points.max(axis=0)
    dims = hi - lo
    if dims.max() <= 1e-9:
        return
    radius = float(max(dims[0], dims[1])) / 2
    size = {'SPHERE': {"radius": float(dims.max()) / 2},
            'CAPSULE': {"radius": radius, "half_height": max(float(dims[2]) / 2 - radius, 0.0)},
            'CYLINDER': {"radius": radius, "half_height": float(dims[2]) / 2}}[collision_shape]
    name = collision_shape.lower()
    left_out, tolerance = surface_off_fitted_shape(collision_shape, size, rigid(np.eye(3), (lo + hi) / 2), points,
                                                   data.loop_total, data.corners)
    if left_out <= FIT_LEFT_OUT:
        return
    # The axis the mesh is round about: the one across which its other two sizes agree best.
    spread = [abs(dims[(k + 1) % 3] - dims[(k + 2) % 3]) / max(dims[(k + 1) % 3], dims[(k + 2) % 3], 1e-300)
              for k in range(3)]
    axis = "XYZ"[int(np.argmin(spread))]
    turn = (f"a {name} runs along the object's local Z axis and this mesh is round about its local {axis}: rotate the "
            f"mesh (Edit Mode) so that its axis is local Z, or " if collision_shape != 'SPHERE' and axis != "Z"
            and spread[2] > min(spread) + 0.05 else "")
    warnings.append(f"{where}: its {name} leaves out much of its mesh ({left_out:.0%} of its surface lies more than "
                    f"{tolerance:.3g} m from the {name}'s), so it collides as that {name}, not as what is seen; "
                    f"{turn}choose Convex Hull (Physics > Jakobsen Physics > Rigid Body > Shape)")


def add_rigid_body(builder: ModelBuilder, obj, depsgraph, track, frame_rate: float,
                    warnings: list[str], basis_track: np.ndarray | None = None,
                    movers: np.ndarray | None = None) -> BodyBinding | ColliderBinding:
    """A rigid body: an engine body, or for a passive body that collides with its faces a
    triangle-mesh collider (which the cloth and the other bodies meet the same way).
    basis_track: (frames, 4, 4) its matrix_basis on each frame, where its parent moves on its own
    animation (sampled with ``track``): it is then keyed relative to the parent on each frame."""
    where = describe(obj)
    rb = obj.jakobsen.rigid_body
    carried = parent_warning(obj, warnings)
    data = read_rigid_body(obj, depsgraph)
    ob_eval = obj.evaluated_get(depsgraph)
    m = matrix(ob_eval.matrix_world)
    check_matrix(obj, m)
    rotation, scale = rotation_and_scale(m, where, warnings)
    world = into_world(data.local, m)
    faces = face_list(data.loop_total, data.corners, m)
    mode = RIGID_MODES[rb.dynamic]
    shape = RIGID_SHAPES[rb.collision_shape]
    moves = track is not None

    size = max(float(np.ptp(world, axis=0).max()), 1e-9)
    flat = float(np.linalg.svd(world - world.mean(axis=0), compute_uv=False)[-1]) <= 1e-6 * size
    faces_collide = rb.collision_shape == 'STATIC_MESH' or (rb.collision_shape == 'AUTOMATIC' and flat)
    velocity, angular_velocity = initial_velocities(obj, mode, warnings)
    if mode == "kinematic" and faces_collide:
        index = builder.add_collider(mesh_collider(obj, data, m, track, frame_rate, rb.friction, rb.bounce,
                                                   warnings, movers))
        return ColliderBinding(object_name=obj.name, role='RIGID_BODY', shape='STATIC_MESH', index=index,
                               animated=moves)
    round_shape_warning(where, rb.collision_shape, data, scale, warnings)
    if rb.collision_shape == 'STATIC_MESH' and mode == "dynamic":
        warnings.append(f"{where}: a moving body cannot collide with its faces (Static Mesh is for bodies with "
                        "Dynamic Off); it collides with its convex hull")

    motion = None
    follows = mode != "kinematic" and (rb.follow_position > 0.0 or rb.follow_rotation > 0.0)
    if moves and (mode == "kinematic" or follows):
        # Kinematic bodies move along their animation; with Follow Position / Rotation a dynamic
        # or ghost body is pulled towards it (towards its first pose if it is not animated).
        motion = rigid_track(obj, track, scale, frame_rate, np.linalg.inv(rigid(rotation, m[:3, 3])), warnings)
    elif moves and (basis_track is None or not np.allclose(basis_track, basis_track[:1], atol=1e-9)):
        # (moved only by its parent's animation, it is not animated itself: keyed relative to it)
        fcurves = actions.assigned_fcurves(obj)
        scaled = fcurves is not None and any(fc.data_path in ("scale", "delta_scale") and not fc.mute
                                             for fc in fcurves)
        # (The bake keys location and rotation: keyed scale still plays over them, on a body the
        # solver kept at its first frame's size; a box keyed to grow half again sank 0.1 m into
        # the ground on playback while the warning said its animation was replaced.)
        warnings.append(f"{where}: it is animated, but the solver moves it (Dynamic {rb.dynamic.title()}); it "
                        "starts at rest from its pose on the first frame and the bake replaces its location and "
                        "rotation keys (Free Bake puts them back; Follow Position and Rotation pull it along the "
                        "animation)" + ("; its scale keys still play over the bake, but the solver keeps the size "
                                        "it has on the first frame: remove them, or scale it with Dynamic Off"
                                        if scaled else ""))
    if mode != "kinematic":
        deltas = np.r_[obj.delta_location, obj.delta_rotation_euler, np.subtract(obj.delta_rotation_quaternion,
                                                                                  (1, 0, 0, 0))]
        if np.abs(deltas).max() > 1e-9:
            warnings.append(f"{where}: its delta location or rotation is added again on top of the baked keys; "
                            "clear it (or apply it to the object's own transform) before baking")
        if len(obj.constraints):
            warnings.append(f"{where}: its constraints act again on top of the baked keys; disable them "
                            "or bake it without them")
        drivers = obj.animation_data.drivers if obj.animation_data else ()
        driven = sorted({f"{d.data_path}[{d.array_index}]" for d in drivers
                         if not d.mute and d.data_path in DRIVEN_POSE})
        if driven:
            # (Drivers are evaluated after the action: a crate sliding down a slope with a driver
            # on its Location X played back held at the driver's value, silently.)
            warnings.append(f"{where}: the drivers on its {', '.join(driven)} replace the baked keys on "
                            "playback; mute or remove them (Drivers editor) to play the bake")
    handle = builder.add_rigid_body(
        world, faces, name=obj.name,
        mass=None if rb.use_density else float(rb.mass), density=float(rb.density),
        shape=shape, shape_frame=m, friction=float(rb.friction), restitution=float(rb.bounce),
        mode=mode, motion=motion, velocity=velocity, angular_velocity=angular_velocity,
        linear_damping=damping_rate(rb.linear_damping), angular_damping=damping_rate(rb.angular_damping),
        drag=float(rb.drag), follow_position=FOLLOW_RATE * float(rb.follow_position) if follows else 0.0,
        follow_rotation=FOLLOW_RATE * float(rb.follow_rotation) if follows else 0.0)
    # matrix_basis = to_basis @ matrix_world: the parent (and its inverse matrix) as on the first
    # frame; on each frame where the parent moves. (Keyed as if the parent stood still, a crate
    # carried by an animated truck, or the lid of a simulated box, moved twice on playback.)
    to_basis = matrix(obj.matrix_basis) @ np.linalg.inv(m) if obj.parent is not None else np.eye(4)
    carrier, carrier_offset = "", None
    if mode != "kinematic" and carried:
        # Hanging from a body the bake keys: the parent frame (matrix_world times matrix_basis's
        # inverse) rides on that body's baked motion, as on the first frame relative to it.
        ancestor = simulated_ancestor(obj)
        # (products by ``matmul``: the same bits on every numpy, as the keys' other arithmetic)
        parent_frame = matmul(m, affine_inverse(matrix(obj.matrix_basis)))
        carrier = ancestor.name
        carrier_offset = matmul(affine_inverse(matrix(ancestor.evaluated_get(depsgraph).matrix_world)), parent_frame)
    elif mode != "kinematic" and basis_track is not None and track is not None:
        to_basis = affine_inverse(matmul(track, affine_inverse(basis_track)))
    return BodyBinding(object_name=obj.name, index=handle.index, mode=mode, shape=shape, rest_matrix=m,
                       to_basis=to_basis, keyed=mode != "kinematic", scale=tuple(obj.scale), carrier=carrier,
                       carrier_offset=carrier_offset)
