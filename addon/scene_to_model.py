"""The one place that reads Blender data into the engine.

``build(context)`` reads every object with ``jakobsen.enabled`` in the view layer, as it is on
the bake's first frame: evaluated meshes (modifiers applied) in world space, pin weights,
collider shapes fitted to the objects, and the transforms of animated objects on every frame of
the bake (sampled once, here, so that the solver never changes the scene's frame). It returns a
``SceneModel``: the engine ``Model``, the ``SolverSettings``, and which object is which.

Everything is read with ``foreach_get`` into numpy buffers, except vertex-group weights: Blender
(4.2 to 5.0) has no bulk access to them (vertex groups are not in ``Mesh.attributes``, and
``MeshVertex.groups`` cannot be read with ``foreach_get``), so ``vertex_group_weights`` makes one
pass over the evaluated mesh's vertices, once per pinned cloth per bake (about 1 µs a vertex).

Rigid bodies (``RIGID_BODY``) become engine bodies: Dynamic On a dynamic body, Off a kinematic
body that follows its animation (pushing the others, never pushed back), Ghost a body the
solver moves that collides with nothing; a passive (Off) body with the Static Mesh shape, or
a flat one with the Automatic shape, becomes a triangle-mesh collider instead. The bake keys
the bodies the solver moves (``BodyBinding.keyed``): their pose composed with the object's
matrix on the first frame, so scale, parents and the rotation mode are kept.

Connector Empties (all ten types) become engine joints between the rigid bodies in Object A and
Object B (an empty slot is the world), at the Empty's origin with the Empty's axes (its rotation,
scale removed) as on the first frame; their limits, breaking and the wheel's suspension come
from the Connector panel. Spring Empties become springs between the origins of Object A and
Object B (an empty slot: the Empty's location). Motor Empties drive Object A about or along the
Empty's Z axis, relative to Object B or the world. Settings a user animates (the wheel's
steering angle, a motor's target) are sampled on every frame of the bake and interpolated
linearly in between (engine ``Track``s, as the motions of animated objects are).

Blender's own force fields (Add > Force Field) in the view layer act too: Wind, Force and Drag
map to the engine's wind, attractor and drag fields (see ``_add_force_field``); other field
types are ignored with a warning naming them.

Bad input raises ``JakobsenError`` with a message naming the object; awkward but legal input
adds a line to ``SceneModel.warnings``. Reading changes nothing in the scene: the current frame
is restored, and a previous bake's output is hidden only while the meshes are read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import actions, baking
from jakobsen_engine import (Box, Capsule, JakobsenError, Model, ModelBuilder, Plane, SolverSettings, Sphere, Track,
                             TriangleMesh)
from jakobsen_engine.bodies.rigid import BodyHandle
from .properties import EMPTY_TYPES, types_for

DEFORMING = ('CLOTH', 'SOFT_BODY')
PIN_WEIGHT = 1.0 - 1e-6  # the engine pins a vertex at this weight and above
_ROLE_NAMES = {'RIGID_BODY': "rigid body", 'CLOTH': "cloth", 'SOFT_BODY': "soft body", 'COLLIDER': "collider",
               'CONNECTOR': "connector", 'SPRING': "spring", 'MOTOR': "motor"}


def describe(obj) -> str:
    """``cloth 'Flag'``: the object's role and name, as messages name it."""
    return f"{_ROLE_NAMES.get(obj.jakobsen.type, 'object')} '{obj.name}'"


# -- what build returns -----------------------------------------------------------------------------

@dataclass(frozen=True)
class DeformableBinding:
    """A cloth or soft body: its vertices are the model's particles ``particles``.

    world_to_local: (1, 4, 4), or (frames, 4, 4) if the object moves, to write results in the
    object's space on each frame. pinned: model indices of its pinned particles;
    pinned_local: (k, 3) where they are in the object's space.
    """

    object_name: str
    role: str
    particles: slice
    vertex_count: int
    world_to_local: np.ndarray
    object_to_world: np.ndarray
    pinned: np.ndarray
    pinned_local: np.ndarray

    @property
    def animated(self) -> bool:
        return len(self.object_to_world) > 1


@dataclass(frozen=True)
class ColliderBinding:
    """An object that takes part as the model's collider ``index``: a collider, or a passive rigid
    body that collides with its faces (``shape`` 'STATIC_MESH')."""

    object_name: str
    role: str
    shape: str
    index: int
    animated: bool


@dataclass(frozen=True)
class BodyBinding:
    """A rigid body: the model's body ``index``.

    mode: the engine's "dynamic", "kinematic" or "ghost"; shape: the engine's collision shape;
    rest_matrix: (4, 4) its matrix_world on the first frame (scale included); to_basis: (4, 4)
    world -> the object's ``matrix_basis`` (its parent and parent inverse, as on the first
    frame); keyed: whether the bake writes its motion (the solver moves it: dynamic and ghost;
    kinematic bodies already follow their own animation); scale: (3,) its scale property on the
    first frame (negative on a mirrored axis), which the keyed rotation leaves out.
    """

    object_name: str
    index: int
    mode: str
    shape: str
    rest_matrix: np.ndarray
    to_basis: np.ndarray
    keyed: bool
    scale: tuple = (1.0, 1.0, 1.0)


@dataclass
class SceneModel:
    """The model, how to step it, and which Blender object is which part of it."""

    model: Model
    settings: SolverSettings
    frame_start: int
    frame_end: int
    deformables: list[DeformableBinding]
    colliders: list[ColliderBinding]
    bodies: list[BodyBinding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    breakable: dict[str, str] = field(default_factory=dict)  # engine name -> "connector" or "spring"

    @property
    def frames(self) -> range:
        return range(self.frame_start, self.frame_end + 1)

    def time_of(self, frame: int) -> float:
        """Solver time (s) of a frame: 0 on the first frame of the bake."""
        return (frame - self.frame_start) / self.settings.frame_rate

    def frame_of(self, time: float) -> int:
        """The frame on which solver time ``time`` (s) falls: the first frame computed at or after it."""
        return self.frame_start + int(math.ceil(time * self.settings.frame_rate - 1e-6))

    def pinned_positions(self, frame: int):
        """(n, 3) world positions of the pinned particles on ``frame``, or None if no pin moves."""
        moving = [d for d in self.deformables if d.animated and len(d.pinned)]
        if not moving:
            return None
        pos = np.array(self.model.rest_positions)
        k = frame - self.frame_start
        for d in moving:
            m = d.object_to_world[min(k, len(d.object_to_world) - 1)]
            pos[d.pinned] = d.pinned_local @ m[:3, :3].T + m[:3, 3]
        return pos

    def body_matrices(self, translations: np.ndarray, rotations: np.ndarray) -> dict[str, np.ndarray]:
        """matrix_world (4, 4) of every keyed body, from the solver's ``body_poses``: translation
        (B, 3) and rotation quaternion (B, 4) w x y z, the motion from the rest pose to now,
        composed with the object's rest matrix (so its scale stays as it was)."""
        out = {}
        for b in self.bodies:
            if b.keyed:
                out[b.object_name] = _rigid(_rotation(rotations[b.index]), translations[b.index]) @ b.rest_matrix
        return out

    def local_positions(self, binding: DeformableBinding, positions: np.ndarray, frame: int) -> np.ndarray:
        """A deformable's world positions (n, 3) on ``frame`` -> its object space (float64; what
        Blender stores is float32, checked by the bake)."""
        m = binding.world_to_local[min(frame - self.frame_start, len(binding.world_to_local) - 1)]
        return positions[binding.particles] @ m[:3, :3].T + m[:3, 3]


# -- transforms -------------------------------------------------------------------------------------

def _matrix(m) -> np.ndarray:
    return np.array(m, dtype=np.float64).reshape(4, 4)


def _rotation_and_scale(m: np.ndarray, where: str, warnings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Split a 4x4 into a rotation (3, 3) and per-axis scale (3,) (negative for a mirrored axis)."""
    a = m[:3, :3]
    s = np.linalg.norm(a, axis=0)
    if np.any(s < 1e-12):
        raise JakobsenError(f"{where}: its scale is zero on an axis")
    if np.linalg.det(a) < 0:
        s[0] = -s[0]
    r = a / s
    u, _, vt = np.linalg.svd(r)
    ortho = u @ vt
    if np.abs(ortho - r).max() > 1e-4:
        warnings.append(f"{where}: its transform is sheared (non-uniform scale under a rotated parent); "
                        "the collision shape is fitted approximately")
    return ortho, s


def _rigid(r: np.ndarray, t: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = r, t
    return m


def _quaternion(r: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(r)
    if t > 0:
        s = 2.0 * math.sqrt(t + 1.0)
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + r[i, i] - r[j, j] - r[k, k], 1e-300))
        q = [0.0] * 4
        q[0] = (r[k, j] - r[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (r[j, i] + r[i, j]) / s
        q[1 + k] = (r[k, i] + r[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def _rotation(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _may_move(obj) -> bool:
    """Whether the object's transform could change over time (animation, drivers, constraints, parents)."""
    o = obj
    while o is not None:
        ad = o.animation_data
        if ad is not None and (ad.action is not None or len(ad.drivers) or len(ad.nla_tracks)):
            return True
        if len(o.constraints):
            return True
        o = o.parent
    return False


_TRANSFORM_PATHS = {"location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
                    "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale"}


def _transform_animated(obj) -> bool:
    """Whether the object's transform (or a parent's) is keyed, driven or constrained; keys on
    its other settings (an animated Steering Angle) do not count."""
    o = obj
    while o is not None:
        if len(o.constraints):
            return True
        ad = o.animation_data
        if ad is not None:
            if len(ad.nla_tracks):
                return True
            paths = [fc.data_path for fc in ad.drivers]
            paths += [fc.data_path for fc in (actions.assigned_fcurves(o) or ())]
            if any(p in _TRANSFORM_PATHS for p in paths):
                return True
        o = o.parent
    return False


def _has_animation(obj) -> bool:
    """Whether the object's own settings may change over time (keyframes, drivers, NLA strips)."""
    ad = obj.animation_data
    return ad is not None and (ad.action is not None or len(ad.drivers) > 0 or len(ad.nla_tracks) > 0)


def _sample_matrices(scene, context, names: list[str], frames: range,
                     settings: dict | None = None) -> tuple[dict[str, np.ndarray], dict[tuple, np.ndarray]]:
    """matrix_world (frames, 4, 4) of each object in ``names``, and (frames,) values of each setting
    in ``settings`` ((object name, setting) -> getter(evaluated object)), on each frame.
    Changes the current frame."""
    settings = settings or {}
    out = {name: np.empty((len(frames), 4, 4)) for name in names}
    values = {key: np.empty(len(frames)) for key in settings}
    for k, frame in enumerate(frames):
        scene.frame_set(frame)
        depsgraph = context.evaluated_depsgraph_get()
        for name in names:
            out[name][k] = _matrix(bpy.data.objects[name].evaluated_get(depsgraph).matrix_world)
        for key, getter in settings.items():
            values[key][k] = float(getter(bpy.data.objects[key[0]].evaluated_get(depsgraph)))
    return out, values


# Animatable settings of the Empties, sampled per frame when the Empty has animation:
# setting -> (role, getter of the evaluated object). A motor reads only the target its mode uses.
_ANIMATABLE = {
    "steering": ('CONNECTOR', lambda ob: ob.jakobsen.connector.steering_angle),
    "motor target": ('MOTOR', lambda ob: _motor_target(ob.jakobsen.motor)),
}


def _motor_target(m) -> float:
    """The target the motor's mode uses: rad/s or m/s (speed), rad or m (servo); 0 when applying force."""
    angular = m.motor_type == 'ANGULAR'
    if m.mode == 'REGULATE_SPEED':
        return m.target_angular_speed if angular else m.target_linear_speed
    if m.mode == 'SERVO':
        return m.target_angle if angular else m.target_position
    return 0.0


def _animated_settings(objects) -> dict[tuple, object]:
    """(object name, setting) -> getter, for the animatable settings of animated Empties."""
    out = {}
    for obj in objects:
        if obj.type != 'EMPTY' or not _has_animation(obj):
            continue
        for setting, (role, getter) in _ANIMATABLE.items():
            if obj.jakobsen.type == role and (setting != "steering"
                                               or obj.jakobsen.connector.connector_type == 'WHEEL_SUSPENSION'):
                out[(obj.name, setting)] = getter
    return out


def _setting_over_time(obj, setting: str, sampled: dict, frame_rate: float):
    """A float, or an engine ``Track`` (a sample a frame) if the setting changes during the bake."""
    values = sampled.get((obj.name, setting))
    if values is None:
        return float(_ANIMATABLE[setting][1](obj))
    if not np.all(np.isfinite(values)):
        raise JakobsenError(f"{describe(obj)}: its animated {setting} is not a number on some frame")
    if np.allclose(values, values[0], rtol=0.0, atol=1e-12):
        return float(values[0])
    return Track(rate=frame_rate, values=values)


# -- mesh reading -----------------------------------------------------------------------------------

@dataclass
class _MeshData:
    local: np.ndarray  # (n, 3) float64, object space
    loop_total: np.ndarray  # (f,) corners of each face
    corners: np.ndarray  # (c,) vertex index of each corner, face by face
    weights: np.ndarray | None  # (n,) pin weights, or None


def _read_mesh(obj, depsgraph, where: str, pin_group: str = "") -> _MeshData:
    """The evaluated mesh (modifiers applied) in object space, with pin weights if asked for."""
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh(preserve_all_data_layers=bool(pin_group), depsgraph=depsgraph)
    try:
        n = len(mesh.vertices)
        co = np.empty(n * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        f = len(mesh.polygons)
        loop_total = np.empty(f, dtype=np.int32)
        mesh.polygons.foreach_get("loop_total", loop_total)
        # polygons' 'vertices' flattens face by face, so loop_total alone splits it.
        corners = np.empty(int(loop_total.sum()), dtype=np.int32)
        mesh.polygons.foreach_get("vertices", corners)
        weights = None
        if pin_group:
            if obj.vertex_groups.get(pin_group) is None:
                raise JakobsenError(f"{where}: its pin group '{pin_group}' is not one of its vertex groups "
                                    "(Pin Group, in its Jakobsen Physics cloth settings)")
            # The evaluated object lists only the groups that hold vertices after the modifiers.
            group = ob_eval.vertex_groups.get(pin_group)
            weights = np.zeros(n) if group is None else vertex_group_weights(mesh, group.index)
    finally:
        ob_eval.to_mesh_clear()
    local = co.reshape(-1, 3).astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(local).all(axis=1))
    if len(bad):
        raise JakobsenError(f"{where}: vertex {bad[0]} has a coordinate that is not a number "
                            f"({tuple(local[bad[0]].tolist())}); fix the mesh (e.g. Mesh > Clean Up)")
    return _MeshData(local, loop_total.astype(np.int64), corners.astype(np.int64), weights)


def vertex_group_weights(mesh, group_index: int) -> np.ndarray:
    """(n,) weights of one vertex group, 0 where a vertex is not in it.

    Blender offers no bulk read of vertex-group weights, so this is the one per-vertex pass the
    add-on makes over Blender data: once per pinned cloth per bake, never per frame.
    """
    weights = np.zeros(len(mesh.vertices))
    for v in mesh.vertices:
        for element in v.groups:
            if element.group == group_index:
                weights[v.index] = element.weight
                break
    return weights


def _face_list(loop_total: np.ndarray, corners: np.ndarray):
    """Faces for the engine: an (f, k) array when all faces have k corners, else a list of arrays."""
    if len(loop_total) and np.all(loop_total == loop_total[0]):
        return corners.reshape(len(loop_total), int(loop_total[0]))
    return np.split(corners, np.cumsum(loop_total)[:-1])


def _face_areas(world: np.ndarray, loop_total: np.ndarray, corners: np.ndarray) -> np.ndarray:
    starts = np.concatenate(([0], np.cumsum(loop_total)[:-1])).astype(np.int64)
    face_of = np.repeat(np.arange(len(loop_total)), loop_total)
    nxt = np.arange(len(corners)) + 1
    ends = starts + loop_total
    nxt[ends - 1] = starts
    origin = world[corners[starts[face_of]]]
    cross = np.cross(world[corners] - origin, world[corners[nxt]] - origin)
    return 0.5 * np.linalg.norm(np.add.reduceat(cross, starts, axis=0), axis=1)


def _mesh_warnings(where: str, world: np.ndarray, loop_total: np.ndarray, corners: np.ndarray,
                   areas: np.ndarray) -> list[str]:
    """What may make a deforming mesh behave badly, though it can be simulated."""
    out = []
    loose = int(np.count_nonzero(np.bincount(corners, minlength=len(world)) == 0))
    if loose:
        out.append(f"{where}: {loose} loose vertices (in no face) are simulated as free particles, "
                   "joined to nothing")
    scale = float(np.median(areas)) if len(areas) else 0.0
    flat = int(np.count_nonzero(areas <= max(scale, 1e-12) * 1e-9))
    if flat:
        out.append(f"{where}: {flat} faces have zero area; they add no mass and may fold unpredictably")
    starts = np.concatenate(([0], np.cumsum(loop_total)[:-1])).astype(np.int64)
    nxt = np.arange(len(corners)) + 1
    nxt[starts + loop_total - 1] = starts
    a, b = corners, corners[nxt]
    edges = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    non_manifold = int(np.count_nonzero(counts > 2))
    if non_manifold:
        out.append(f"{where}: {non_manifold} edges are shared by more than two faces (non-manifold); "
                   "bending across them is approximate")
    return out


# -- collider shapes --------------------------------------------------------------------------------

def _fit_shape(shape: str, local: np.ndarray, scale: np.ndarray, where: str):
    """(shape, engine collider class, its size keywords, offset 4x4 in the object's unscaled frame)."""
    lo, hi = local.min(axis=0), local.max(axis=0)
    centre = (lo + hi) / 2 * scale  # in the object's rotated but unscaled frame
    dims = (hi - lo) * np.abs(scale)
    biggest = float(dims.max())
    if biggest <= 1e-9:
        raise JakobsenError(f"{where}: the mesh has no size (all vertices in one place)")
    plane_axis = 2  # a plane's normal: local +Z, or for an automatic plane the axis the mesh is flat along
    if shape == 'AUTOMATIC':
        thinnest = int(np.argmin(dims))
        if dims[thinnest] <= biggest * 1e-6:
            shape, plane_axis = 'PLANE', thinnest
        else:
            r = np.linalg.norm((local - (lo + hi) / 2) * scale, axis=1)
            round_ = len(local) >= 12 and (r.max() - r.min()) <= 0.02 * r.max() and dims.min() >= 0.98 * biggest
            shape = 'SPHERE' if round_ else 'BOX'
    offset = _rigid(np.eye(3), centre)
    if shape == 'PLANE':
        # A proper rotation whose Z column is the normal axis (a cyclic permutation of the axes).
        rotation = np.eye(3)[:, [(plane_axis + 1) % 3, (plane_axis + 2) % 3, plane_axis]]
        if scale[plane_axis] < 0:  # a mirrored axis: the normal follows the mirrored mesh
            rotation[:, 1:] *= -1.0
        offset[:3, :3] = rotation
        return shape, Plane, {}, offset
    if shape == 'BOX':
        if dims.min() <= 1e-9:
            raise JakobsenError(f"{where}: a box collider needs thickness on all three axes; "
                                "use the Plane shape for a flat mesh")
        return shape, Box, {"half_extents": tuple((dims / 2).tolist())}, offset
    if shape == 'SPHERE':
        return shape, Sphere, {"radius": biggest / 2}, offset
    if shape == 'CAPSULE':
        radius = float(max(dims[0], dims[1])) / 2
        if radius <= 1e-9:
            raise JakobsenError(f"{where}: a capsule collider needs width across its local Z axis")
        return shape, Capsule, {"radius": radius, "half_height": max(float(dims[2]) / 2 - radius, 0.0)}, offset
    raise JakobsenError(f"{where}: unknown collision shape {shape!r}")


# Collision shapes of rigid bodies: the property's item -> the engine's shape.
RIGID_SHAPES = {'AUTOMATIC': "automatic", 'CONVEX_HULL': "convex_hull", 'BOX': "box", 'SPHERE': "sphere",
                'CAPSULE': "capsule", 'CYLINDER': "cylinder", 'STATIC_MESH': "convex_hull"}
RIGID_MODES = {'ON': "dynamic", 'OFF': "kinematic", 'GHOST': "ghost"}


# -- build ------------------------------------------------------------------------------------------

def solver_settings(scene) -> SolverSettings:
    """The engine's settings from ``Scene.jakobsen`` and the scene (frame rate, gravity)."""
    props = scene.jakobsen
    check_numbers(props, f"scene '{scene.name}' (Scene > Jakobsen Physics)")
    if props.use_scene_gravity and scene.use_gravity and not all(math.isfinite(g) for g in scene.gravity):
        raise JakobsenError(f"scene '{scene.name}': its Gravity (Scene > Gravity) is not a finite number")
    if props.use_scene_gravity:
        gravity = tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    else:
        gravity = tuple(props.gravity)
    settings = SolverSettings(frame_rate=scene.render.fps / scene.render.fps_base, substeps=props.substeps,
                              iterations=props.iterations, gravity=tuple(float(g) for g in gravity),
                              damping=float(props.damping), air_velocity=tuple(float(w) for w in props.wind))
    settings.validate()
    return settings


# Blender 4.x keeps an ID's Python-defined settings among its custom properties and creates them
# the first time they are read: reading ``obj.jakobsen.enabled`` on every object of a scene would
# add a 'jakobsen' property to objects that never take part. 5.0 stores them apart.
_SETTINGS_AMONG_CUSTOM_PROPERTIES = bpy.app.version < (5, 0, 0)


def takes_part(obj) -> bool:
    """Whether Jakobsen Physics is enabled on ``obj``, read without creating its settings."""
    if _SETTINGS_AMONG_CUSTOM_PROPERTIES and "jakobsen" not in obj.keys():
        return False
    return obj.jakobsen.enabled


def enabled_objects(context) -> list:
    """The objects that take part, in a stable order (by name)."""
    context.view_layer.update()  # objects linked since the last update are not in the view layer before
    return sorted((o for o in context.view_layer.objects if takes_part(o)), key=lambda o: o.name)


_ROLE_GROUPS = {'RIGID_BODY': "rigid_body", 'CLOTH': "cloth", 'SOFT_BODY': "cloth", 'COLLIDER': "collider",
                'CONNECTOR': "connector", 'SPRING': "spring", 'MOTOR': "motor"}


def role_settings(obj):
    """The settings group of the object's role (``obj.jakobsen.cloth`` for a cloth)."""
    return getattr(obj.jakobsen, _ROLE_GROUPS[obj.jakobsen.type])


def _label(group, name: str) -> str:
    """A setting as its panel shows it ("Air Drag")."""
    return group.bl_rna.properties[name].name


def check_numbers(group, where: str) -> None:
    """Every number of a settings group is finite, or a ``JakobsenError`` names the setting as the
    panel shows it. (A script can store NaN in any float setting; the engine's own messages would
    name its internal parameters instead of the panel's.)"""
    for prop in group.bl_rna.properties:
        if prop.type != 'FLOAT':
            continue
        value = getattr(group, prop.identifier)
        values = tuple(value) if getattr(prop, "is_array", False) and prop.array_length > 0 else (value,)
        if not all(math.isfinite(v) for v in values):
            shown = ", ".join(f"{v:g}" for v in values)
            raise JakobsenError(f"{where}: its {prop.name} is not a finite number ({shown}); "
                                "set it in Properties > Physics > Jakobsen Physics")


def check_order(group, low: str, high: str, where: str, *, angle: bool = False) -> None:
    """The setting ``low`` is not above ``high``, or a ``JakobsenError`` names both as the panel does."""
    lo, hi = getattr(group, low), getattr(group, high)
    if lo > hi:
        unit = (lambda v: f"{math.degrees(v):g} degrees") if angle else (lambda v: f"{v:g} m")
        raise JakobsenError(f"{where}: its {_label(group, low)} ({unit(lo)}) is above its "
                            f"{_label(group, high)} ({unit(hi)})")


# Connector types, as the engine's add_joint kinds.
JOINT_KINDS = {'FIXED': "fixed", 'HINGE': "hinge", 'BALL_SOCKET': "ball_socket", 'CARDAN': "cardan",
               'RAGDOLL': "ragdoll", 'SLIDER': "slider", 'TWIST_SLIDER': "twist_slider", 'PLANAR': "planar",
               'BOX': "box", 'WHEEL_SUSPENSION': "wheel_suspension"}
MOTOR_MODES = {'REGULATE_SPEED': "speed", 'APPLY_FORCE': "force", 'SERVO': "servo"}


def _connector_label(obj) -> str:
    """The connector type as the panel shows it ("Hinge", "Wheel Suspension")."""
    settings = obj.jakobsen.connector
    return settings.bl_rna.properties["connector_type"].enum_items[settings.connector_type].name


def _what_it_is(obj) -> str:
    """``a Hinge connector``, ``a spring``, ``a motor``: how messages name what an Empty is."""
    if obj.jakobsen.type == 'CONNECTOR':
        return f"a {_connector_label(obj)} connector"
    return f"a {_ROLE_NAMES[obj.jakobsen.type]}"


def _check_pairs(objects) -> None:
    taking_part = {o.name: o for o in objects}
    for obj in objects:
        if obj.jakobsen.type not in EMPTY_TYPES:
            continue
        where = describe(obj)
        a, b = obj.jakobsen.pair()
        if a is None and b is None:
            raise JakobsenError(f"{where} has neither Object A nor Object B; set at least one "
                                "(an empty slot means the world)")
        if a is not None and a == b:
            raise JakobsenError(f"{where} joins '{a.name}' to itself; Object A and Object B must differ")
        if obj.jakobsen.type == 'MOTOR' and a is None:
            raise JakobsenError(f"{where} has no Object A: Object A is the body the motor drives, Object B the "
                                "one it pushes against (empty: the world)")
        for slot, other in (("Object A", a), ("Object B", b)):
            if other is None:
                continue
            if other.name in taking_part and other.jakobsen.type != 'RIGID_BODY':
                raise JakobsenError(f"{where}: its {slot} '{other.name}' is not a rigid body (it is a "
                                    f"{_ROLE_NAMES[other.jakobsen.type]}); {_what_it_is(obj)} joins rigid bodies "
                                    "(leave the slot empty to join to the world)")
            if other.name not in taking_part:
                raise JakobsenError(f"{where}: its {slot} '{other.name}' is not a body in the simulation; "
                                    "enable Jakobsen Physics on it as a rigid body (or leave the slot empty to "
                                    "join to the world)")


def _empty_frame(obj, depsgraph) -> np.ndarray:
    """The Empty's matrix_world on the first frame with its scale taken out: columns X, Y, Z are
    unit axes (the connector's frame, the motor's Z axis)."""
    where = describe(obj)
    m = _matrix(obj.evaluated_get(depsgraph).matrix_world)
    if not np.all(np.isfinite(m)):
        raise JakobsenError(f"{where}: its transform is not a number (check its location, rotation, "
                            "scale and parents)")
    lengths = np.linalg.norm(m[:3, :3], axis=0)
    for axis, length in zip("XYZ", lengths):
        if length < 1e-12:
            raise JakobsenError(f"{where}: its {axis} axis has zero length (its scale is zero); "
                                f"{_what_it_is(obj)} takes its axes from the Empty's rotation")
    m[:3, :3] /= lengths
    if np.linalg.det(m[:3, :3]) < 0:
        raise JakobsenError(f"{where}: its scale is negative (mirrored); {_what_it_is(obj)} takes its axes "
                            "from the Empty's rotation, so give it a positive scale")
    return m


def _joint_settings(obj, sampled: dict, frame_rate: float) -> dict:
    """The Connector panel's settings that apply to the chosen type, as add_joint keywords."""
    c = obj.jakobsen.connector
    kind = c.connector_type
    out = dict(limit_bounce=float(c.limit_bounce), ignore_collisions=bool(c.ignore_collisions),
               breaking_force=float(c.breaking_force) if c.use_breaking else math.inf,
               breaking_torque=float(c.breaking_torque) if c.use_breaking else math.inf)
    if kind in ('HINGE', 'TWIST_SLIDER') and c.use_angular_limit:
        check_order(c, "angle_min", "angle_max", describe(obj), angle=True)
        out["angle_limits"] = (float(c.angle_min), float(c.angle_max))
    if kind in ('SLIDER', 'TWIST_SLIDER') and c.use_linear_limit:
        check_order(c, "distance_min", "distance_max", describe(obj))
        out["distance_limits"] = (float(c.distance_min), float(c.distance_max))
    if kind == 'RAGDOLL' or (kind == 'CARDAN' and c.use_cone_limit):
        out["cone_angle"] = float(c.cone_angle)
    if kind == 'RAGDOLL':
        out["twist_limits"] = (-float(c.twist_angle), float(c.twist_angle))
    if kind == 'BOX':
        lower, upper = tuple(float(v) for v in c.box_lower), tuple(float(v) for v in c.box_upper)
        bad = [axis for axis, lo, hi in zip("XYZ", lower, upper) if lo > hi]
        if bad:
            raise JakobsenError(f"{describe(obj)}: the Box's Lower {bad[0]} is above its Upper {bad[0]}")
        out["box_limits"] = (lower, upper)
    if kind == 'WHEEL_SUSPENSION':
        check_order(c, "suspension_lower", "suspension_upper", describe(obj))
        out.update(steering=_setting_over_time(obj, "steering", sampled, frame_rate),
                   suspension_limits=(float(c.suspension_lower), float(c.suspension_upper)),
                   suspension_rest=float(c.suspension_rest), suspension_stiffness=float(c.suspension_stiffness),
                   suspension_damping=float(c.suspension_damping))
    return out


def _add_empties(builder: ModelBuilder, objects, depsgraph, bodies: list[BodyBinding],
                 colliders: list[ColliderBinding], sampled: dict, frame_rate: float,
                 warnings: list[str]) -> dict[str, str]:
    """Connector, spring and motor Empties -> engine joints, springs and motors, as on the bake's
    first frame. Returns what may break: engine name -> "connector" or "spring"."""
    handles = {b.object_name: BodyHandle(name=b.object_name, index=b.index) for b in bodies}
    as_colliders = {c.object_name for c in colliders}
    breakable = {}
    for obj in objects:
        role = obj.jakobsen.type
        if role not in EMPTY_TYPES:
            continue
        where = describe(obj)
        if _transform_animated(obj):
            # A connector is fixed in its bodies from the first frame on (as in Cinema 4D); moving
            # the Empty afterwards changes nothing, which a user animating it would not expect.
            warnings.append(f"{where}: its transform is animated, but {_what_it_is(obj)} stays where it is "
                            "on the bake's first frame and then moves with its bodies")
        ends = []
        for slot, other in zip(("Object A", "Object B"), obj.jakobsen.pair()):
            if other is None:
                ends.append(None)
            elif other.name in handles:
                ends.append(handles[other.name])
            else:
                why = ("collides with its faces (Dynamic Off with a Static Mesh shape, or a flat mesh with "
                       f"Automatic), so it is a collider, not a body {_what_it_is(obj)} can hold; give it "
                       "another collision shape" if other.name in as_colliders
                       else "is not a rigid body of this bake")
                raise JakobsenError(f"{where}: its {slot} '{other.name}' {why}, "
                                    "or leave the slot empty to join to the world")
        frame = _empty_frame(obj, depsgraph)
        if role == 'CONNECTOR':
            builder.add_joint(JOINT_KINDS[obj.jakobsen.connector.connector_type], ends[0], ends[1], frame[:3, 3],
                              frame=frame[:3, :3], name=obj.name, **_joint_settings(obj, sampled, frame_rate))
            breakable[obj.name] = "connector"
        elif role == 'SPRING':
            s = obj.jakobsen.spring
            # Each end holds its body at the body's origin; a world end holds at the Empty.
            anchors = [frame[:3, 3] if other is None else _matrix(other.evaluated_get(depsgraph).matrix_world)[:3, 3]
                       for other in obj.jakobsen.pair()]
            builder.add_spring(
                ends[0], ends[1], anchors[0], anchors[1], name=obj.name, kind=s.spring_type.lower(),
                rest_length=None if s.use_current_length else float(s.rest_length),
                stiffness=float(s.stiffness), damping=float(s.damping),
                angular_stiffness=float(s.angular_stiffness), angular_damping=float(s.angular_damping),
                elastic_limits=(float(s.elastic_compression), float(s.elastic_stretch)) if s.use_plastic else None,
                break_stretch=float(s.break_stretch) if s.use_breaking else math.inf,
                break_compression=float(s.break_compression) if s.use_breaking else math.inf)
            breakable.setdefault(obj.name, "spring")
        else:
            m = obj.jakobsen.motor
            angular = m.motor_type == 'ANGULAR'
            effort = {"torque": float(m.max_torque)} if angular else {"force": float(m.max_force)}
            builder.add_motor(ends[0], ends[1], frame[:3, 2], name=obj.name, kind=m.motor_type.lower(),
                              mode=MOTOR_MODES[m.mode],
                              target=_setting_over_time(obj, "motor target", sampled, frame_rate), **effort)
    return breakable


# -- Blender's force fields -------------------------------------------------------------------------

# Blender's falloff power -> the engine's falloff: 1 / r^power.
_FALLOFFS = {0: "none", 1: "inverse", 2: "inverse_square"}


def field_objects(context) -> list:
    """The objects of the view layer with a Blender force field, by name (as Blender, a field
    outside the view layer does nothing)."""
    return sorted((o for o in context.view_layer.objects if o.field is not None and o.field.type != 'NONE'),
                  key=lambda o: o.name)


def _add_force_field(builder: ModelBuilder, obj, depsgraph, warnings: list[str]) -> None:
    """One of Blender's force-field objects -> an engine force field, as on the bake's first frame.

    - Wind: the engine's wind, an air velocity along the object's Z axis. Blender's wind has no air
      speed (its Strength is a force); here Strength is read as the air speed in m/s (negative:
      along -Z), which pushes rigid bodies through their Drag and cloth through its Air Drag.
      Noise -> turbulence (the gusts' RMS speed as a fraction of the air speed: Noise 0.5 gusts
      at half the wind speed), Seed -> seed; the gusts are about 1 m in size and change about
      once a second. Blender's falloff is not simulated: the wind blows everywhere.
    - Force: the engine's attractor at the object's origin, Strength read as an acceleration in
      m/s² at 1 m; Blender's positive Strength pushes away, so the sign is flipped. Falloff Power
      0, 1, 2 -> none, 1/r, 1/r² (other powers take the nearest of these, with a warning);
      Blender's (1 + r)^-power becomes r^-power, r kept at least the Minimum Distance (when on);
      the Maximum Distance (when on) ends the field. Tube and Cone falloff shapes act as Sphere.
    - Drag: the engine's drag field, Linear (kg/s) and Quadratic (kg/m) as they are.
    - Turbulence and the other types have no engine counterpart (a turbulence without a wind to
      carry it has no air speed to vary): ignored, with a warning.
    """
    where = f"force field '{obj.name}'"
    f = obj.field
    kind = f.type
    label = f.bl_rna.properties["type"].enum_items[kind].name
    m = _matrix(obj.evaluated_get(depsgraph).matrix_world)
    if not np.all(np.isfinite(m)):
        raise JakobsenError(f"{where}: its transform is not a number (check its location, rotation, scale and "
                            "parents)")
    if kind not in ('WIND', 'FORCE', 'DRAG'):
        warnings.append(f"{where} ({label}) is ignored: Jakobsen Physics simulates Wind, Force and Drag fields")
        return
    if _may_move(obj):
        warnings.append(f"{where} is animated; the field stays as it is on the bake's first frame")
    if kind == 'WIND':
        z = m[:3, 2]
        length = float(np.linalg.norm(z))
        if length < 1e-12:
            raise JakobsenError(f"{where}: its Z axis has zero length (its scale is zero); the wind blows along "
                                "the object's Z axis")
        direction = z / length * (1.0 if f.strength >= 0 else -1.0)
        if f.use_max_distance or f.use_min_distance or f.falloff_power != 0.0:
            warnings.append(f"{where}: its falloff (power, minimum or maximum distance) is not simulated; "
                            "the wind blows everywhere")
        builder.add_force("wind", name=obj.name, direction=direction, strength=abs(float(f.strength)),
                          turbulence=float(f.noise), seed=int(f.seed))
    elif kind == 'DRAG':
        if f.use_max_distance or f.use_min_distance:
            warnings.append(f"{where}: its minimum and maximum distance are not simulated; the drag acts "
                            "everywhere")
        builder.add_force("drag", name=obj.name, linear=float(f.linear_drag), quadratic=float(f.quadratic_drag))
    else:
        power = float(f.falloff_power)
        nearest = min(max(int(round(power)), 0), 2)
        if abs(power - nearest) > 1e-6:
            warnings.append(f"{where}: its Falloff Power {power:g} is simulated as {nearest} "
                            "(the engine has powers 0, 1 and 2)")
        if f.falloff_type != 'SPHERE':
            warnings.append(f"{where}: its {f.falloff_type.title()} falloff is simulated as Sphere")
        if f.shape != 'POINT':
            warnings.append(f"{where}: its {f.shape.title()} shape is simulated as Point (the object's origin)")
        min_distance = float(f.distance_min) if f.use_min_distance else 0.0
        max_distance = float(f.distance_max) if f.use_max_distance else None
        if max_distance is not None and max_distance <= min_distance:
            raise JakobsenError(f"{where}: its Maximum Distance ({max_distance:g} m) must exceed its Minimum "
                                f"Distance ({min_distance:g} m)")
        builder.add_force("attractor", name=obj.name, position=m[:3, 3], strength=-float(f.strength),
                          falloff=_FALLOFFS[nearest], min_distance=min_distance, max_distance=max_distance)


def build(context, *, frame_range: tuple[int, int] | None = None) -> SceneModel:
    """Read the enabled objects of ``context.view_layer`` into a ``SceneModel``."""
    scene = context.scene
    start, end = frame_range if frame_range is not None else scene.jakobsen.frame_range()
    if end <= start:
        raise JakobsenError(f"bake frame range: the end frame ({end}) must come after the start frame ({start})")
    settings = solver_settings(scene)
    objects = enabled_objects(context)
    if not objects:
        raise JakobsenError("nothing to bake: no object has Jakobsen Physics enabled "
                            "(Properties > Physics > Jakobsen Physics)")
    for obj in objects:
        if obj.jakobsen.type not in types_for(obj):
            raise JakobsenError(f"object '{obj.name}' ({obj.type.title()}) cannot be a "
                                f"{_ROLE_NAMES[obj.jakobsen.type]}; meshes can be bodies, cloth or colliders, "
                                "Empties connectors, springs or motors")
        if obj.mode == 'EDIT':
            raise JakobsenError(f"{describe(obj)} is in Edit Mode; switch to Object Mode to bake")
        check_numbers(role_settings(obj), describe(obj))
    warnings: list[str] = []
    _check_pairs(objects)
    fields = field_objects(context)

    meshes = [o for o in objects if o.type == 'MESH']
    frames = range(start, end + 1)
    original = (scene.frame_current, scene.frame_subframe)
    try:
        with baking.previous_bakes_hidden([o.name for o in meshes]):
            moving = [o.name for o in meshes if _may_move(o)]
            animated = _animated_settings(objects)
            tracks, sampled = (_sample_matrices(scene, context, moving, frames, animated)
                               if moving or animated else ({}, {}))
            scene.frame_set(start)
            depsgraph = context.evaluated_depsgraph_get()
            builder = ModelBuilder()
            deformables, colliders, bodies = [], [], []
            pending = []
            for obj in meshes:
                track = tracks.get(obj.name)
                if track is not None and np.allclose(track, track[:1], atol=1e-9):
                    track = None  # animated, but it does not move within the bake
                role = obj.jakobsen.type
                if role in DEFORMING:
                    pending.append(_add_deformable(builder, obj, depsgraph, track, warnings))
                elif role == 'RIGID_BODY':
                    item = _add_rigid_body(builder, obj, depsgraph, track, settings.frame_rate, warnings)
                    (bodies if isinstance(item, BodyBinding) else colliders).append(item)
                else:
                    colliders.append(_add_collider(builder, obj, depsgraph, track, settings.frame_rate, warnings))
            breakable = _add_empties(builder, objects, depsgraph, bodies, colliders, sampled, settings.frame_rate,
                                     warnings)
            for obj in fields:
                _add_force_field(builder, obj, depsgraph, warnings)
    finally:
        scene.frame_set(original[0], subframe=original[1])

    if not pending and not any(b.keyed for b in bodies):
        raise JakobsenError("nothing to simulate: enable Jakobsen Physics on a cloth, a soft body or a rigid "
                            "body with Dynamic On or Ghost (Properties > Physics > Jakobsen Physics)")
    warnings.extend(builder.warnings)
    model = builder.finalize()
    for name, role, handle, to_world, local in pending:
        pinned_mask = model.inverse_masses[handle.slice] == 0.0
        to_local = np.linalg.inv(to_world)
        deformables.append(DeformableBinding(
            object_name=name, role=role, particles=handle.slice, vertex_count=handle.count,
            world_to_local=to_local, object_to_world=to_world,
            pinned=np.flatnonzero(pinned_mask) + handle.start, pinned_local=local[pinned_mask]))
    return SceneModel(model=model, settings=settings, frame_start=start, frame_end=end,
                      deformables=deformables, colliders=colliders, bodies=bodies, warnings=warnings,
                      breakable=breakable)


def _world(local: np.ndarray, m: np.ndarray) -> np.ndarray:
    return local @ m[:3, :3].T + m[:3, 3]


def _check_invertible(obj, m: np.ndarray) -> None:
    """A deforming object's results are written in its own space: its transform must have an inverse."""
    lengths = np.linalg.norm(m[:3, :3], axis=0)
    if np.any(lengths < 1e-12) or abs(np.linalg.det(m[:3, :3])) < 1e-18 * max(float(lengths.max()), 1e-300) ** 3:
        axis = "XYZ"[int(np.argmin(lengths))]
        raise JakobsenError(f"{describe(obj)}: its scale is zero on the {axis} axis (or its transform is flat), so "
                            "the baked shapes could not be written in its own space; give it a non-zero scale "
                            "(Object > Apply > Scale keeps its look)")


def _check_matrix(obj, m: np.ndarray) -> None:
    if not np.all(np.isfinite(m)):
        raise JakobsenError(f"{describe(obj)}: its transform is not a number (check its location, "
                            "rotation, scale and parents)")


def _add_deformable(builder: ModelBuilder, obj, depsgraph, track, warnings: list[str]):
    where = describe(obj)
    s = obj.jakobsen.cloth
    data = _read_mesh(obj, depsgraph, where, s.pin_group)
    if len(data.loop_total) == 0:
        raise JakobsenError(f"{where}: the mesh has no faces; a {_ROLE_NAMES[obj.jakobsen.type]} needs faces "
                            "(vertices joined by edges only cannot be simulated as a surface)")
    m = _matrix(obj.evaluated_get(depsgraph).matrix_world)
    _check_matrix(obj, m)
    _check_invertible(obj, m)
    world = _world(data.local, m)
    areas = _face_areas(world, data.loop_total, data.corners)
    size = float(np.ptp(world, axis=0).max()) if len(world) else 0.0
    # Relative to the mesh's own size: a 1 micrometre cloth has faces of 1e-12 m^2 that are not flat.
    if size <= 0.0 or areas.sum() <= 1e-9 * size * size:
        raise JakobsenError(f"{where}: all its faces have zero area (its vertices lie on one line or point)")
    warnings.extend(_mesh_warnings(where, world, data.loop_total, data.corners, areas))
    if obj.jakobsen.type == 'SOFT_BODY':
        warnings.append(f"{where} is simulated as a surface with its cloth settings; "
                        "volume preservation is not in the engine yet")
    density = (s.vertex_mass * len(world) / float(areas.sum())) if s.use_vertex_mass else s.density
    weights = data.weights
    if weights is not None and not np.any(weights > 0.0):
        warnings.append(f"{where}: its pin group '{s.pin_group}' is empty (no vertex has a weight in it), so "
                        "nothing is pinned and the cloth falls free")
    if track is not None and weights is not None and np.any((weights > 0) & (weights < PIN_WEIGHT)):
        warnings.append(f"{where}: it moves, but its partly pinned vertices (weight below 1) are pulled "
                        "towards where they were on the first frame")
    handle = builder.add_cloth(
        world, _face_list(data.loop_total, data.corners), name=obj.name, density=density,
        thickness=s.thickness,
        stretch_stiffness=math.inf if s.use_rigid_stretch else s.stretch_stiffness,
        shear_stiffness=math.inf if s.use_rigid_shear else s.shear_stiffness,
        bend_stiffness=s.bend_stiffness, pin_weights=weights, pin_stiffness=s.pin_stiffness,
        friction=s.friction, drag=s.air_drag)
    to_world = track if track is not None else m[None]
    if track is not None:
        for k in range(len(track)):
            _check_matrix(obj, track[k])
            _check_invertible(obj, track[k])
    return obj.name, obj.jakobsen.type, handle, to_world, data.local


def _read_rigid_body(obj, depsgraph) -> _MeshData:
    where = describe(obj)
    data = _read_mesh(obj, depsgraph, where)
    if len(data.loop_total) == 0:
        raise JakobsenError(f"{where}: the mesh has no faces; a rigid body needs a surface "
                            "to collide with and to give it mass")
    return data


def _rigid_track(obj, track: np.ndarray, scale: np.ndarray, frame_rate: float, offset: np.ndarray,
                 warnings: list[str]) -> Track:
    """The motion of an animated object, sampled per frame (``track``: (frames, 4, 4) matrix_world),
    as an engine ``Track`` of its rigid pose (rotation and translation, scale taken out) times
    ``offset``, one sample a frame (the engine interpolates between them: positions linearly,
    rotations by slerp); warns once if its scale changes (the shape keeps its first size)."""
    where = describe(obj)
    rotations, translations = [], []
    for k in range(len(track)):
        _check_matrix(obj, track[k])
        r, s = _rotation_and_scale(track[k], where, [])
        if not np.allclose(np.abs(s), np.abs(scale), rtol=1e-4):
            warnings.append(f"{where}: its scale changes during the bake; its collision shape keeps the size "
                            "it has on the first frame")
            scale = s  # warn once
        rotations.append(_rigid(r, track[k][:3, 3]) @ offset)
    return Track(rate=frame_rate, values=np.array(rotations))


def _add_collider(builder: ModelBuilder, obj, depsgraph, track, frame_rate: float,
                  warnings: list[str]) -> ColliderBinding:
    where = describe(obj)
    data = _read_mesh(obj, depsgraph, where)
    c = obj.jakobsen.collider
    if len(data.local) == 0:
        raise JakobsenError(f"{where}: the mesh has no vertices to fit a collision shape to")
    m = _matrix(obj.evaluated_get(depsgraph).matrix_world)
    _check_matrix(obj, m)
    rotation, scale = _rotation_and_scale(m, where, warnings)
    shape, cls, size, offset = _fit_shape(c.shape, data.local, scale, where)
    kwargs = dict(size, friction=float(c.friction), restitution=float(c.bounce), name=obj.name)
    if track is None:
        collider = cls(transform=_rigid(rotation, m[:3, 3]) @ offset, **kwargs)
    else:
        collider = cls(motion=_rigid_track(obj, track, scale, frame_rate, offset, warnings), **kwargs)
    index = builder.add_collider(collider)
    return ColliderBinding(object_name=obj.name, role='COLLIDER', shape=shape, index=index,
                           animated=track is not None)


# Follow Position / Rotation: the panel's 0..1 -> the engine's pull in 1/s. At 20/s a critically
# damped pull closes most of a gap within about a tenth of a second (a few frames), so 1 means
# "stays on the animation" while still reacting to hits; small values lag visibly.
FOLLOW_RATE = 20.0


def _damping_rate(fraction: float) -> float:
    """A fraction of velocity lost per second (the panel's 0..1) -> the engine's rate in 1/s."""
    return -math.log(max(1.0 - float(fraction), 1e-6))


def _add_rigid_body(builder: ModelBuilder, obj, depsgraph, track, frame_rate: float,
                    warnings: list[str]) -> BodyBinding | ColliderBinding:
    """A rigid body: an engine body, or for a passive body that collides with its faces a
    triangle-mesh collider (which the cloth and the other bodies meet the same way)."""
    where = describe(obj)
    rb = obj.jakobsen.rigid_body
    data = _read_rigid_body(obj, depsgraph)
    ob_eval = obj.evaluated_get(depsgraph)
    m = _matrix(ob_eval.matrix_world)
    _check_matrix(obj, m)
    rotation, scale = _rotation_and_scale(m, where, warnings)
    world = _world(data.local, m)
    faces = _face_list(data.loop_total, data.corners)
    mode = RIGID_MODES[rb.dynamic]
    shape = RIGID_SHAPES[rb.collision_shape]
    moves = track is not None

    size = max(float(np.ptp(world, axis=0).max()), 1e-9)
    flat = float(np.linalg.svd(world - world.mean(axis=0), compute_uv=False)[-1]) <= 1e-6 * size
    faces_collide = rb.collision_shape == 'STATIC_MESH' or (rb.collision_shape == 'AUTOMATIC' and flat)
    if mode == "kinematic" and faces_collide:
        # Rest-pose world vertices, moved by the object's motion from its rest pose.
        offset = np.linalg.inv(_rigid(rotation, m[:3, 3]))
        motion = _rigid_track(obj, track, scale, frame_rate, offset, warnings) if moves else None
        collider = TriangleMesh.from_mesh(world, faces, where=where, friction=float(rb.friction),
                                          restitution=float(rb.bounce), motion=motion, name=obj.name)
        index = builder.add_collider(collider)
        return ColliderBinding(object_name=obj.name, role='RIGID_BODY', shape='STATIC_MESH', index=index,
                               animated=moves)
    if rb.collision_shape == 'STATIC_MESH' and mode == "dynamic":
        warnings.append(f"{where}: a moving body cannot collide with its faces (Static Mesh is for bodies with "
                        "Dynamic Off); it collides with its convex hull")

    motion = None
    follows = mode != "kinematic" and (rb.follow_position > 0.0 or rb.follow_rotation > 0.0)
    if moves and (mode == "kinematic" or follows):
        # Kinematic bodies move along their animation; with Follow Position / Rotation a dynamic
        # or ghost body is pulled towards it (towards its first pose if it is not animated).
        motion = _rigid_track(obj, track, scale, frame_rate, np.linalg.inv(_rigid(rotation, m[:3, 3])), warnings)
    elif moves:
        warnings.append(f"{where}: it is animated, but the solver moves it (Dynamic {rb.dynamic.title()}); it "
                        "starts at rest from its pose on the first frame and the bake replaces its animation "
                        "(Free Bake puts it back; Follow Position and Rotation pull it along the animation)")
    if mode != "kinematic":
        if obj.parent is not None and _may_move(obj.parent):
            warnings.append(f"{where}: its parent moves during the bake; the bake keys it as if the parent "
                            "stayed where it is on the first frame (clear the parent to bake it in world space)")
        deltas = np.r_[obj.delta_location, obj.delta_rotation_euler, np.subtract(obj.delta_rotation_quaternion,
                                                                                  (1, 0, 0, 0))]
        if np.abs(deltas).max() > 1e-9:
            warnings.append(f"{where}: its delta location or rotation is added again on top of the baked keys; "
                            "clear it (or apply it to the object's own transform) before baking")
        if len(obj.constraints):
            warnings.append(f"{where}: its constraints act again on top of the baked keys; disable them "
                            "or bake it without them")
    handle = builder.add_rigid_body(
        world, faces, name=obj.name,
        mass=None if rb.use_density else float(rb.mass), density=float(rb.density),
        shape=shape, shape_frame=m, friction=float(rb.friction), restitution=float(rb.bounce),
        mode=mode, motion=motion,
        linear_damping=_damping_rate(rb.linear_damping), angular_damping=_damping_rate(rb.angular_damping),
        drag=float(rb.drag), follow_position=FOLLOW_RATE * float(rb.follow_position) if follows else 0.0,
        follow_rotation=FOLLOW_RATE * float(rb.follow_rotation) if follows else 0.0)
    # matrix_basis = to_basis @ matrix_world: the parent (and its inverse matrix) as on the first frame.
    to_basis = _matrix(obj.matrix_basis) @ np.linalg.inv(m) if obj.parent is not None else np.eye(4)
    return BodyBinding(object_name=obj.name, index=handle.index, mode=mode, shape=shape, rest_matrix=m,
                       to_basis=to_basis, keyed=mode != "kinematic", scale=tuple(obj.scale))
