"""Writing a bake into the .blend, and taking it out again.

Deforming meshes get one shape key per frame (``JK_Bake_0001``, ...), each keyed to 1 on its own
frame and 0 on its neighbours, in a new action on the mesh's shape-key datablock; or a PC2 file
read by a Mesh Cache modifier. Rigid bodies get location and rotation F-curves in a new action,
in the object's rotation mode. Keyframes are written in bulk (``keyframe_points.add`` +
``foreach_set``), never with ``keyframe_insert``.

Nothing of the user's is lost. Every bake leaves a record on the object (the ID property
``jakobsen_bake``: what was written, what was there before) that points at the actions by
reference, not by name: the user's own action is held by that pointer while the bake's action
is assigned instead (so it survives save and reload with no other user), the bake's action is
found again whatever the object or the actions are called since, and ``free_bake`` removes
exactly what the bake added and puts back the user's action, active shape key and shape-key
datablock. The F-curves of the user's action that the bake does not write (a keyed scale, a
material setting, the values of the user's own shape keys) are copied into the bake's action, so
they keep playing while the bake is shown, and a second bake reads the scene exactly as the
first one did.
"""

from __future__ import annotations

import hashlib
import os
import struct
from contextlib import contextmanager

import bpy
import numpy as np
from mathutils import Matrix

from . import actions, tearing
from .blender_io.checks import TWEAK_MODE, describe
from .blender_io.reads import evaluated_world_vertices
from jakobsen_engine import JakobsenError
from jakobsen_engine.geometry import quaternions as quat
from jakobsen_engine.geometry.reproducible import rotation_polar
from .files import cannot_write

RECORD = "jakobsen_bake"
SHAPE_KEY_PREFIX = "JK_Bake_"
ACTION_PREFIX = "JK_Bake "
MODIFIER_NAME = "JK Bake Cache"
PC2_HEADER = struct.Struct("<12siiffi")
# The ID property that marks the actions a bake made (its value says so to a curious user).
ACTION_MARK = "baked by Jakobsen Physics; Free Bake removes it"


def _record_holder(obj):
    """Where the object's bake record is kept: on its mesh for shape keys (they belong to the mesh,
    which outlives a deleted object until Free Bake cleans it), on the object for the others."""
    if RECORD in obj:
        return obj
    if obj.type == 'MESH' and obj.data is not None and RECORD in obj.data:
        return obj.data
    return None


def record_of(obj) -> dict | None:
    """The object's bake record, as a plain dict, or None if it has no bake."""
    holder = _record_holder(obj)
    return None if holder is None else holder[RECORD].to_dict()


def baked_objects(scene) -> list:
    return sorted((o for o in scene.objects if _record_holder(o) is not None), key=lambda o: o.name)


def _our_action(ref):
    """The bake's action a record points at (records written before pointers hold its name)."""
    action = actions.recorded_action(ref)
    return action if action is not None and action.get(RECORD) else None


def storable(values: np.ndarray) -> np.ndarray:
    """``values`` as float32, Blender's precision for coordinates and keys (what is beyond
    +-3.4e38 becomes infinite, not a warning)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(values, dtype=np.float32)


def finite_for_blender(values: np.ndarray, where: str, what: str) -> np.ndarray:
    """``values`` as float32, Blender's precision for coordinates and keys, or a ``JakobsenError``
    naming ``where`` if any of them is not finite there (beyond +-3.4e38, or not a number)."""
    single = storable(values)
    if not np.all(np.isfinite(single)):
        raise JakobsenError(f"{where}: {what} is beyond what Blender can store (not a finite single-precision "
                            "number); something in the scene is far too large or fast: check gravity, wind, "
                            "force fields, motors and masses (or use more substeps)")
    return single


# -- checks before a bake ---------------------------------------------------------------------------

def check_output(obj, vertex_count: int, output: str, cache_directory: str) -> list[str]:
    """Raise ``JakobsenError`` if the bake could not be written to ``obj``; returns warnings."""
    where = f"'{obj.name}'"
    warnings = []
    if output == 'SHAPE_KEYS':
        mesh = obj.data
        if mesh.users - tearing.held_by_records(mesh) > 1:
            raise JakobsenError(f"{where}: its mesh '{mesh.name}' is used by {mesh.users} objects (or has a fake "
                                "user); shape keys would move all of them. Make it single user "
                                "(Object > Relations > Make Single User) or bake to PC2")
        if len(mesh.vertices) != vertex_count:
            raise JakobsenError(f"{where}: its modifiers change the vertex count ({len(mesh.vertices)} -> "
                                f"{vertex_count}); shape keys need the mesh's own vertices. Apply the "
                                "modifiers or bake to PC2")
        key = mesh.shape_keys
        if key is not None and not key.use_relative:
            # (Absolute keys play by the Evaluation Time, not by each key's value: the baked cloth
            # played back lying where it started.)
            raise JakobsenError(f"{where}: its shape keys are absolute (Relative is off in Object Data > Shape "
                                "Keys), so the baked shapes would not play; turn Relative on or bake to PC2 "
                                "(Scene > Jakobsen Physics > Bake > Output)")
        if obj.show_only_shape_key:
            warnings.append(f"{where}: its Shape Key Lock (the pin in Object Data > Shape Keys) shows only the active "
                            "shape key, so the baked shapes do not play; unpin it to see them")
    elif output == 'PC2':
        if cache_directory.startswith("//") and not bpy.data.is_saved:
            raise JakobsenError(f"{where}: the cache directory '{cache_directory}' is relative to the .blend "
                                "file, which is not saved yet; save it or choose an absolute directory")
        why = cannot_write(bpy.path.abspath(cache_directory), directory=True)
        if why:
            raise JakobsenError(f"{where}: the cache directory '{cache_directory}' cannot be written to: {why} "
                                "(Scene > Jakobsen Physics > Bake > Cache Directory)")
        warnings += render_differs(obj)
    else:
        raise JakobsenError(f"unknown bake output {output!r}")
    return warnings


# Modifiers that make new vertices: shown differently in the render than in the viewport, the
# render's mesh has another vertex count than the point cache.
GENERATING_MODIFIERS = {'SUBSURF', 'MULTIRES', 'ARRAY', 'MIRROR', 'SOLIDIFY', 'BEVEL', 'SCREW', 'SKIN',
                        'REMESH', 'DECIMATE', 'TRIANGULATE', 'WELD', 'BOOLEAN', 'WIREFRAME', 'BUILD', 'MASK',
                        'EDGE_SPLIT', 'NODES'}


def render_differs(obj) -> list[str]:
    """Warnings for a PC2 bake of ``obj``: modifiers before the cache that make the render's mesh
    another one than the viewport's, which the bake reads (a Subdivision Surface at Levels
    Viewport 1 and Render 2: the cache holds the viewport's vertices, Blender's Mesh Cache finds
    another count at render time and the render showed the cloth unmoved, silently)."""
    out = []
    for m in obj.modifiers:
        if m.type == 'MESH_CACHE':
            break
        if m.type not in GENERATING_MODIFIERS:
            continue
        if m.show_viewport != m.show_render:
            shown = 'viewport' if m.show_viewport else 'render'
            out.append(f"'{obj.name}': its modifier '{m.name}' is on in the {shown} only, so the render's mesh "
                       "is not the one baked and the render would show it unmoved; show it in both or in neither")
        elif m.show_viewport and m.type in ('SUBSURF', 'MULTIRES') and m.render_levels != m.levels:
            what = "Levels Viewport" if m.type == 'SUBSURF' else "Viewport"
            out.append(f"'{obj.name}': its modifier '{m.name}' renders at level {m.render_levels} but is baked at "
                       f"its {what} level {m.levels}, so the render would show it unmoved; set Render to "
                       f"{m.levels}")
    return out


# -- hiding a previous bake while the scene is read -------------------------------------------------

@contextmanager
def previous_bakes_hidden(object_names, warnings: list[str] | None = None):
    """While inside, the meshes read as they would without their bake (baked shape keys muted, the
    cache modifier off, the baked action swapped for the previous one); restored on the way out.
    warnings: told of a keyed body moved since its bake without a key (``_moved_off_its_keys``)."""
    undo: list = []
    try:
        for name in object_names:
            obj = bpy.data.objects.get(name)
            rec = None if obj is None else record_of(obj)
            if rec is None:
                continue
            if rec["output"] == 'SHAPE_KEYS':
                undo.append(_unmute_modifiers(obj, rec))  # they deform the mesh the bake reads
            if rec.get(tearing.ORIGINAL) is not None and obj.type == 'MESH':
                # A torn cloth's bake wears a split copy of the mesh: read the user's own.
                undo.append(tearing.wear_original(obj, rec))
                if rec["output"] == 'PC2':
                    mod = obj.modifiers.get(rec["modifier"])
                    if mod is not None and mod.show_viewport:
                        mod.show_viewport = False
                        undo.append(lambda mod=mod: setattr(mod, "show_viewport", True))
                continue
            if rec["output"] == 'SHAPE_KEYS' and obj.data.shape_keys is not None:
                for kb in obj.data.shape_keys.key_blocks:
                    if kb.name in rec["shape_keys"] and not kb.mute:
                        kb.mute = True
                        undo.append(lambda kb=kb: setattr(kb, "mute", False))
            elif rec["output"] == 'PC2':
                mod = obj.modifiers.get(rec["modifier"])
                if mod is not None and mod.show_viewport:
                    mod.show_viewport = False
                    undo.append(lambda mod=mod: setattr(mod, "show_viewport", True))
            elif rec["output"] == 'TRANSFORM':
                ours = obj.animation_data.action if obj.animation_data else None
                if ours is not None and ours == _our_action(rec.get("action")):
                    if warnings is not None and _moved_off_its_keys(obj):
                        # (Blender shows an unkeyed move until the frame changes; the bake starts
                        # from the pose before the first bake, which Free Bake puts back.)
                        warnings.append(f"{describe(obj)} was moved since its bake without a key: the bake "
                                        "starts it where it stood before it was first baked, not where it is "
                                        "shown; to start it from there, Free Bake, move it again and bake")
                    shown = transform_values(obj)
                    mixing = (obj.animation_data.action_blend_type, obj.animation_data.action_influence)
                    # Keys set since the bake (a Steering, a scale) went into the bake's action:
                    # into the user's now, so this bake reads them and the next one keeps them.
                    animation = actions.keep_new_keys(obj, ours, rec["animation"], baked_transform_paths(rec))
                    if animation is not rec["animation"]:
                        add_to_record(obj, {"animation": animation})
                    actions.restore_assignment(obj, animation)
                    set_transform_values(obj, rec.get("rest"))
                    undo.append(lambda obj=obj, ours=ours, shown=shown, mixing=mixing: (
                        _reassign(obj, ours, mixing), set_transform_values(obj, shown)))
        yield
    finally:
        for step in reversed(undo):
            step()


def _moved_off_its_keys(obj) -> bool:
    """Whether the object's location or rotation is not what its assigned action gives on the
    current frame (moved by hand since, without a key)."""
    fcurves = actions.assigned_fcurves(obj)
    if fcurves is None:
        return False
    scene = bpy.context.scene
    if scene is None:
        return False
    frame = scene.frame_current + scene.frame_subframe
    for fc in fcurves:
        if fc.data_path in _TRANSFORM_PROPERTIES and not fc.mute:
            if abs(fc.evaluate(frame) - getattr(obj, fc.data_path)[fc.array_index]) > 1e-5:
                return True
    return False


def _reassign(id_data, action, mixing) -> None:
    """Assign the bake's ``action`` again, with the Blending and Influence (``mixing``) it had."""
    anim_data = id_data.animation_data or id_data.animation_data_create()
    anim_data.action = action
    anim_data.action_blend_type, anim_data.action_influence = mixing
    if actions.SLOTTED and len(action.slots):
        anim_data.action_slot = action.slots[0]


# -- shape keys -------------------------------------------------------------------------------------

def write_shape_keys(obj, frame_start: int, local: np.ndarray) -> None:
    """One shape key per frame from ``local`` (frames, n, 3) object-space positions, keyed on for
    its own frame (value 1) and off on its neighbours (0), with linear interpolation between, so a
    subframe (motion blur) blends the two nearest frames. The user's own shape-key animation is
    copied into the bake's action (and their action kept, by the record, to be put back)."""
    where = f"'{obj.name}'"
    local = finite_for_blender(local, where, "a baked vertex position")
    frames = np.arange(frame_start, frame_start + len(local))
    rec = {"output": 'SHAPE_KEYS', "frame_start": int(frames[0]), "frame_end": int(frames[-1]),
           "active_shape_key_index": obj.active_shape_key_index,
           "created_basis": obj.data.shape_keys is None}
    if rec["created_basis"]:
        obj.shape_key_add(name="Basis", from_mix=False)
    key = obj.data.shape_keys
    rec["animation"] = actions.assignment(key)
    users_curves = actions.assigned_fcurves(key)
    names = []
    for k, frame in enumerate(frames):
        kb = obj.shape_key_add(name=f"{SHAPE_KEY_PREFIX}{frame:04d}", from_mix=False)
        kb.points.foreach_set("co", np.ascontiguousarray(local[k]).ravel())
        names.append(kb.name)
    paths = [f'key_blocks["{name}"].value' for name in names]
    action, fcurves = actions.assign_new_action(key, f"{ACTION_PREFIX}{obj.name}")
    action[RECORD] = ACTION_MARK
    rec["action"] = action
    actions.copy_fcurves(users_curves, fcurves, skip=set(paths))
    last = len(frames) - 1
    for k, (path, frame) in enumerate(zip(paths, frames, strict=True)):
        fc = fcurves.new(path, index=0)
        lo, hi = max(k - 1, 0), min(k + 1, last)
        keyed = frames[lo:hi + 1]
        actions.set_keyframes(fc, keyed, (keyed == frame).astype(np.float32))
    rec["shape_keys"] = names
    obj.active_shape_key_index = rec["active_shape_key_index"]
    obj.data[RECORD] = rec


def _free_shape_keys(obj, rec: dict) -> None:
    ours = _our_action(rec.get("action"))
    key = obj.data.shape_keys if obj.type == 'MESH' else None
    if key is not None:
        anim_data = key.animation_data
        # An action the user assigned since the bake is theirs: leave it.
        if anim_data is None or anim_data.action is None or anim_data.action == ours:
            animation = rec["animation"]
            if ours is not None and anim_data is not None and anim_data.action == ours:
                # (a shape key's value keyed while the bake was shown went into the bake's action)
                baked = {f'key_blocks["{name}"].value' for name in rec.get("shape_keys", ())}
                animation = actions.keep_new_keys(key, ours, animation, baked)
            actions.restore_assignment(key, animation)
        if ours is not None:
            bpy.data.actions.remove(ours)
        baked = set(rec.get("shape_keys", ()))
        for kb in [kb for kb in key.key_blocks if kb.name in baked]:
            obj.shape_key_remove(kb)
        if rec.get("created_basis") and len(key.key_blocks) <= 1:
            obj.shape_key_clear()
    elif ours is not None:
        bpy.data.actions.remove(ours)
    count = len(obj.data.shape_keys.key_blocks) if obj.type == 'MESH' and obj.data.shape_keys else 0
    obj.active_shape_key_index = min(rec.get("active_shape_key_index", 0), max(count - 1, 0))


# -- PC2 point cache --------------------------------------------------------------------------------

def pc2_path(obj, cache_directory: str) -> str:
    """The object's PC2 file: its name made safe for a file, and a tag of its exact name and the
    .blend file's path. The safe name alone was not unique: 'Flag.001' and 'Flag_001' are both
    'Flag_001', and two shots in one folder each baking a 'Cloth' wrote one file, the second
    playing in the first, whose Free Bake then deleted the second's cache."""
    tag = hashlib.sha1(f"{bpy.data.filepath}\0{obj.name}".encode("utf-8")).hexdigest()[:8]
    return os.path.join(bpy.path.abspath(cache_directory), f"{bpy.path.clean_name(obj.name)}_{tag}.pc2")


def write_pc2_file(path: str, frame_start: int, local: np.ndarray) -> None:
    """A PC2 file: the 32-byte header, then float32 xyz little-endian, frame after frame. Written
    beside ``path`` first and moved into place, so a failed write leaves no half file."""
    stage_pc2_file(path, frame_start, local)
    os.replace(path + ".tmp", path)


def stage_pc2_file(path: str, frame_start: int, local: np.ndarray) -> str:
    """Write the PC2 file as ``path + ".tmp"``; returns that path (``write_pc2`` moves it into place).

    The bake writes every file this way before it changes anything in the scene, so a disk that
    is full or a directory that cannot be written leaves the scene and the previous bake as they
    were."""
    frames, count = local.shape[:2]
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(PC2_HEADER.pack(b"POINTCACHE2\0", 1, count, float(frame_start), 1.0, frames))
            f.write(np.ascontiguousarray(local, dtype="<f4").tobytes())
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return tmp


def read_pc2_file(path: str) -> tuple[int, np.ndarray]:
    """(start frame, positions (frames, n, 3) float32) of a PC2 file."""
    with open(path, "rb") as f:
        magic, version, count, start, _sampling, frames = PC2_HEADER.unpack(f.read(PC2_HEADER.size))
        if magic != b"POINTCACHE2\0" or version != 1:
            raise ValueError(f"{path} is not a PC2 file")
        data = np.frombuffer(f.read(), dtype="<f4")
    return int(start), data.reshape(frames, count, 3)


def write_pc2(obj, frame_start: int, local: np.ndarray, cache_directory: str, staged: str | None = None) -> None:
    """The frames to a PC2 file and a Mesh Cache modifier, last in the stack, that plays it.
    staged: the file ``stage_pc2_file`` wrote for this object, moved into place instead of writing."""
    path = pc2_path(obj, cache_directory)
    if staged is None:
        staged = stage_pc2_file(path, frame_start,
                                finite_for_blender(local, f"'{obj.name}'", "a baked vertex position"))
    os.replace(staged, path)
    mod = obj.modifiers.new(MODIFIER_NAME, 'MESH_CACHE')
    mod.cache_format = 'PC2'
    mod.filepath = bpy.path.relpath(path) if cache_directory.startswith("//") else path
    mod.frame_start = float(frame_start)
    obj[RECORD] = {"output": 'PC2', "frame_start": int(frame_start), "frame_end": int(frame_start + len(local) - 1),
                   "modifier": mod.name, "file": path, "blend": bpy.data.filepath}


def _free_pc2(obj, rec: dict) -> None:
    path = rec.get("file", "")
    mod = obj.modifiers.get(rec.get("modifier", ""))
    if mod is None or mod.type != 'MESH_CACHE':
        # Renamed by the user since: it is still the Mesh Cache modifier that plays our file.
        mod = next((m for m in obj.modifiers if m.type == 'MESH_CACHE' and path
                    and os.path.abspath(bpy.path.abspath(m.filepath)) == os.path.abspath(path)), None)
    if mod is not None:
        obj.modifiers.remove(mod)
    # The file is this .blend's own unless the bake was made in another (saved as a copy since:
    # the copy's record names the original's file, which the original still plays) or before
    # the file was first saved.
    own = rec.get("blend", "") in ("", bpy.data.filepath)
    if own and path and path.endswith(".pc2") and os.path.isfile(path):
        os.remove(path)


# -- rigid transforms -------------------------------------------------------------------------------

_TRANSFORM_PROPERTIES = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle")


def transform_values(obj) -> dict:
    """The object's own location and rotation properties, as plain lists (what keys replace)."""
    return {name: list(getattr(obj, name)) for name in _TRANSFORM_PROPERTIES}


def set_transform_values(obj, values) -> None:
    for name, value in (values or {}).items():
        setattr(obj, name, value)


def rotations_of(matrices: np.ndarray, scale) -> np.ndarray:
    """Rotation matrices (frames, 3, 3) of local poses ``matrices`` (frames, 4, 4) = T R S of an
    object whose scale property is ``scale`` (3,), negative (mirrored) axes included.

    Blender composes ``matrix_basis`` as translation, rotation, scale, so R = M S^-1; the polar
    factor (the nearest rotation) removes the rounding of float32 matrices. Normalising M's columns
    instead would keep a mirror in R, which no rotation can show: the body baked flipped."""
    m = np.asarray(matrices, dtype=np.float64)[:, :3, :3] / np.asarray(scale, dtype=np.float64)[None, None, :]
    out = np.empty_like(m)
    turned = np.linalg.det(m) > 0.0
    # Without LAPACK where it can (the bits of its SVD change with the numpy release: see
    # ``jakobsen_engine.geometry.reproducible``); Newton's polar needs a positive determinant.
    out[turned] = rotation_polar(m[turned])
    if not np.all(turned):
        u, _, vt = np.linalg.svd(m[~turned])
        flip = np.linalg.det(u @ vt) < 0
        u[flip, :, 2] *= -1.0  # a reflection left over (a mirror the scale does not account for)
        out[~turned] = u @ vt
    return out


# A frame step's rotation, as the simulation gives it (``spins``), is trusted to say how many whole
# turns the body made beyond the short way round only when it is more than half a turn and lies
# along the short way's axis (within about 25 degrees): a body tumbling about a wandering axis, or
# an average angular velocity that is off, changes no key.
_SPIN_ALIGNED = 0.9


def whole_turns(rotations: np.ndarray, spins) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How each frame step of ``rotations`` (frames, 3, 3) really turned, where keys taking the
    short way round would show it turning back: the short way's unit axis (steps, 3) and angle
    (steps,) in [0, pi] of R[k+1] R[k]^T (in the frame the rotations are in), and the whole turns
    (steps,) int the body made beyond it, about that axis: the step turned by angle + 2 pi turns.

    spins: (steps, 3) the rotation vector of each step in the same frame (the average angular
    velocity of its two frames times the frame's duration), or None (no turns). A wheel doing
    more than half a turn a frame shows the same poses on whole frames turning forwards or
    backwards; only the simulation's angular velocity tells which, and by how many turns."""
    r = np.asarray(rotations, dtype=np.float64)
    steps = max(len(r) - 1, 0)
    turns = np.zeros(steps, dtype=np.int64)
    if steps == 0:
        return np.zeros((0, 3)), np.zeros(0), turns
    # (the increments feed a rounding and a sign only: einsum's last bits change nothing)
    step = quat.from_matrix(np.einsum("kij,klj->kil", r[1:], r[:-1]))  # w >= 0: the short way
    sine = np.linalg.norm(step[:, 1:], axis=1)
    angle = 2.0 * np.arctan2(sine, step[:, 0])
    axis = step[:, 1:] / np.maximum(sine, 1e-300)[:, None]
    if spins is None:
        return axis, angle, turns
    v = np.asarray(spins, dtype=np.float64).reshape(steps, 3)
    size = np.linalg.norm(v, axis=1)
    along = np.einsum("ki,ki->k", v, axis)  # the simulated turn, signed about the short way's axis
    trusted = np.isfinite(along) & (size > np.pi) & (np.abs(along) >= _SPIN_ALIGNED * size)
    turns[trusted] = np.rint((along[trusted] - angle[trusted]) / (2.0 * np.pi)).astype(np.int64)
    return axis, angle, turns


def _euler_channel_axes(e, order: str) -> np.ndarray:
    """(3, 3): row i the axis, in the parent's frame, about which Euler channel i (X, Y, Z) of
    ``e`` turns the object: with order "ABC" the matrix is R_C R_B R_A, so C turns about the
    parent's C axis, B about R_C's B axis, A about R_C R_B's A axis (for XYZ: X about the
    object's own X, Y about Rz Y, Z about the parent's Z)."""
    out = np.zeros((3, 3))
    turn = np.eye(3)
    for letter in reversed(order):
        i = "XYZ".index(letter)
        out[i] = turn[:, i]
        j, k = (i + 1) % 3, (i + 2) % 3
        c, s = np.cos(e[i]), np.sin(e[i])
        about = np.eye(3)  # the rotation by e[i] about axis i
        about[j, j], about[j, k], about[k, j], about[k, k] = c, -s, s, c
        turn = turn @ about
    return out


def _euler_with_turns(e, previous, axis: np.ndarray, angle: float, turns: int, order: str):
    """``e`` (the Euler of a frame, compatible with ``previous``, the frame before) with ``turns``
    whole turns added about ``axis`` (the short way's, ``angle`` about it) on the channel that
    turns about it, so the keys between the two frames go the way the body went. Unchanged if no
    channel turns about that axis (the spin is about an axis the Euler order cannot follow)."""
    alignment = _euler_channel_axes(e, order) @ axis
    i = int(np.argmax(np.abs(alignment)))
    if abs(alignment[i]) < _SPIN_ALIGNED:
        return e
    # Where the channel should be: the frame before's value plus the whole step about its axis.
    target = previous[i] + np.sign(alignment[i]) * (angle + 2.0 * np.pi * turns)
    e[i] += 2.0 * np.pi * np.rint((target - e[i]) / (2.0 * np.pi))
    return e


def _axis_angle_keys(quats, axes: np.ndarray, angles: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """(frames, 4) angle, axis x y z of ``quats``; from the first step with whole turns on, each
    frame's the one of its equivalents (angle + 2 pi m about the axis, or its negation about the
    negated axis) that continues the frame before's: the axis kept on the same side, the angle
    moved by what the step turned about it (a wheel spinning about its own axis keys the full
    spin; axis and angle are interpolated apart, so any turn of the body about its axis can be
    shown). Frames before are keyed as they always were: angle in [0, 2 pi]."""
    values = np.array([(q.angle, *q.axis[:]) for q in quats])
    fast = np.flatnonzero(turns)
    if len(fast) == 0:
        return values
    for k in range(fast[0] + 1, len(values)):
        angle, axis = values[k, 0], values[k, 1:]
        before, before_axis = values[k - 1, 0], values[k - 1, 1:]
        if axis @ before_axis < 0.0:
            angle, axis = -angle, -axis
        side = axis @ axes[k - 1]
        expected = before
        if turns[k - 1] and abs(side) >= _SPIN_ALIGNED:
            expected = before + np.sign(side) * (angles[k - 1] + 2.0 * np.pi * turns[k - 1])
        values[k, 0] = angle + 2.0 * np.pi * np.rint((expected - angle) / (2.0 * np.pi))
        values[k, 1:] = axis
    return values


def write_transform_keys(obj, frame_start: int, matrices: np.ndarray, rest: dict | None = None,
                         scale=None, spins=None) -> None:
    """Location and rotation F-curves from ``matrices`` (frames, 4, 4), the object's local
    (``matrix_basis``) pose on each frame, in its rotation mode; scale is left as it is. The
    F-curves of the user's own action that these do not replace are copied into the bake's action.

    rest: the location and rotation values to put back when the bake is freed (or hidden while
    the scene is read for a new bake), since the keys overwrite the properties as they play;
    default: the values the object has now (``transform_values``); scale: the object's scale
    property the poses were made with (default: as it is now); spins: (frames - 1, 3) the rotation
    vector of each frame step in the parent's frame (``whole_turns``), or None.

    Keys are interpolated between frames (motion blur, retiming, sub-frames), and the rotation
    between two poses is ambiguous by whole turns: a body turning more than half a turn a frame
    (a car's wheel at speed) keyed the short way round would spin backwards in between. Where
    ``spins`` says so the keys take the way the body went: an Euler channel turning about the spin
    axis gets the whole turns (any number a frame); axis-angle keys the full angle; a quaternion's
    sign carries the turn up to a full turn a frame (see below). Where every step is less than
    half a turn, the keys are exactly the short way's."""
    where = f"'{obj.name}'"
    matrices = np.asarray(matrices, dtype=np.float64)
    finite_for_blender(matrices, where, "a baked location or rotation")
    frames = np.arange(frame_start, frame_start + len(matrices), dtype=np.float32)
    rec = {"output": 'TRANSFORM', "frame_start": int(frames[0]), "frame_end": int(frames[-1]),
           "animation": actions.assignment(obj), "rest": rest if rest is not None else transform_values(obj)}
    users_curves = actions.assigned_fcurves(obj)
    mode = obj.rotation_mode
    polar = rotations_of(matrices, obj.scale if scale is None else scale)
    axes, angles, turns = whole_turns(polar, spins)
    rotations = [Matrix(r.tolist()) for r in polar]
    if mode == 'QUATERNION' or mode == 'AXIS_ANGLE':
        quats = [r.to_quaternion() for r in rotations]
        for k in range(1, len(quats)):
            # Neighbours on the same side (dot >= 0) show the short way round. A quaternion's
            # components are interpolated one by one (then normalised): between two keys the path
            # is the shorter arc between them on the unit sphere of quaternions, which is less than
            # a full turn of the body, never more; on opposite sides, that is the long way round.
            # So a quaternion can show a step of more than half a turn, up to (not) a full turn,
            # and no whole turns: where the body went the other way than the short one (turns < 0),
            # the long way; where it went the short way's way by more than a turn (turns > 0),
            # the short way (the right way round, a turn less). Its speed is uneven (right half-way,
            # off by up to 20% of the step at a quarter for 0.9 of a turn): Euler and axis-angle
            # modes follow a fast spin exactly.
            flip = (quats[k].dot(quats[k - 1]) < 0) != bool(turns[k - 1] < 0)
            if flip:
                quats[k].negate()
        if mode == 'QUATERNION':
            path, values = "rotation_quaternion", np.array([q[:] for q in quats])
        else:
            path, values = "rotation_axis_angle", _axis_angle_keys(quats, axes, angles, turns)
    else:
        eulers: list[tuple[float, ...]] = []
        previous = None
        for k, r in enumerate(rotations):
            e = r.to_euler(mode) if previous is None else r.to_euler(mode, previous)
            if k and turns[k - 1]:
                e = _euler_with_turns(e, previous, axes[k - 1], angles[k - 1], int(turns[k - 1]), mode)
            eulers.append(e[:])
            previous = e
        path, values = "rotation_euler", np.array(eulers)
    values = finite_for_blender(values, where, "a baked rotation")
    action, fcurves = actions.assign_new_action(obj, f"{ACTION_PREFIX}{obj.name}")
    action[RECORD] = ACTION_MARK
    rec["action"] = action
    actions.copy_fcurves(users_curves, fcurves, skip={"location", path})
    rec["baked_paths"] = ["location", path]
    for channel, data in (("location", matrices[:, :3, 3]), (path, values)):
        for index in range(data.shape[1]):
            fc = fcurves.new(channel, index=index)
            actions.set_keyframes(fc, frames, data[:, index])
    obj[RECORD] = rec


def _free_transform(obj, rec: dict) -> None:
    ours = _our_action(rec.get("action"))
    anim_data = obj.animation_data
    # An action the user assigned since the bake is theirs: leave it.
    if anim_data is None or anim_data.action is None or anim_data.action == ours:
        animation = rec["animation"]
        if ours is not None and anim_data is not None and anim_data.action == ours:
            animation = actions.keep_new_keys(obj, ours, animation, baked_transform_paths(rec))
        actions.restore_assignment(obj, animation)
        # The keys left the pose of the last frame shown in the properties: put back the object's own.
        set_transform_values(obj, rec.get("rest"))
    if ours is not None:
        bpy.data.actions.remove(ours)


# -- free ---------------------------------------------------------------------------------------------

# The channels a transform bake writes (``write_transform_keys``: location and the rotation of
# the object's mode then, kept in its record; any rotation for records from before).
_ROTATION_PATHS = ["rotation_euler", "rotation_quaternion", "rotation_axis_angle"]


def baked_transform_paths(rec: dict) -> set[str]:
    return set(rec.get("baked_paths") or ["location", *_ROTATION_PATHS])


def free_blocker(obj, then: str = "free its bake again") -> str | None:
    """Why the object's bake cannot be freed (or hidden for a new bake) now (its NLA in tweak
    mode: Blender then refuses the action being put back), or None; ``then``: what to do after."""
    rec = record_of(obj)
    if rec is None:
        return None
    holder = obj.animation_data if rec.get("output") == 'TRANSFORM' else \
        (obj.data.shape_keys.animation_data if rec.get("output") == 'SHAPE_KEYS' and obj.type == 'MESH'
         and obj.data.shape_keys is not None else None)
    if holder is not None and holder.use_tweak_mode:
        return f"{describe(obj)}: " + TWEAK_MODE.format(then)
    return None


def free_bake(obj) -> bool:
    """Remove what the bake added to ``obj`` and put back what it replaced; False if it had no bake."""
    rec = record_of(obj)
    if rec is None:
        return False
    output = rec.get("output")
    if output == 'SHAPE_KEYS':
        _free_shape_keys(obj, rec)
        _unmute_modifiers(obj, rec)
    elif output == 'PC2':
        _free_pc2(obj, rec)
    elif output == 'TRANSFORM':
        _free_transform(obj, rec)
    del _record_holder(obj)[RECORD]
    tearing.put_back(obj, rec)
    return True


# Modifiers that move a mesh's vertices: a shape-key bake of the evaluated mesh already includes
# what they did, and they would do it again on top of the keys (an Armature deforming the baked
# cape twice). Others (normals, Smooth by Angle, materials) are left as they are.
DEFORMING_MODIFIERS = {'ARMATURE', 'HOOK', 'LATTICE', 'CURVE', 'MESH_DEFORM', 'SURFACE_DEFORM',
                       'LAPLACIANDEFORM', 'CAST', 'DISPLACE', 'SIMPLE_DEFORM', 'SMOOTH', 'CORRECTIVE_SMOOTH',
                       'LAPLACIANSMOOTH', 'WAVE', 'WARP', 'SHRINKWRAP', 'MESH_CACHE', 'VOLUME_DISPLACE',
                       'MESH_SEQUENCE_CACHE'}
# Modifiers that may move vertices or not, by their settings (Geometry Nodes: a Set Position, or a
# Smooth by Angle that moves none): muted when turning them off moves the evaluated vertices. A
# Set Position node group was applied twice on playback, over keys that already held it.
MAYBE_DEFORMING = {'NODES', 'OCEAN', 'DYNAMIC_PAINT'}


def mute_modifiers(obj) -> list[dict]:
    """Turn off (viewport and render) the deforming modifiers a shape-key bake already includes;
    returns what they were, for the record (Free Bake turns them on again)."""
    muted = []
    for m in obj.modifiers:
        if m.name == MODIFIER_NAME or not (m.show_viewport or m.show_render):
            continue
        if m.type in DEFORMING_MODIFIERS or (m.type in MAYBE_DEFORMING and _moves_vertices(obj, m)):
            muted.append({"name": m.name, "viewport": int(m.show_viewport), "render": int(m.show_render)})
            m.show_viewport = m.show_render = False
    return muted


def _moves_vertices(obj, modifier) -> bool:
    """Whether turning ``modifier`` off (in the viewport) moves the object's evaluated vertices
    now (or changes how many there are); it is left as it was."""
    if not modifier.show_viewport:
        return False  # (the bake read the mesh without it)
    with_it = evaluated_world_vertices(obj, bpy.context.evaluated_depsgraph_get())
    modifier.show_viewport = False
    try:
        bpy.context.evaluated_depsgraph_get().update()
        without = evaluated_world_vertices(obj, bpy.context.evaluated_depsgraph_get())
    finally:
        modifier.show_viewport = True
        bpy.context.evaluated_depsgraph_get().update()
    size = float(np.ptp(with_it, axis=0).max()) if len(with_it) else 0.0
    return with_it.shape != without.shape or bool(np.any(np.abs(with_it - without) > 1e-6 * max(size, 1e-3)))


def mute_shape_keys(obj) -> list[str]:
    """Mute the user's own shape keys (not the Basis, not muted already) under a shape-key bake,
    which already includes what they did (it read the mesh with them, and its pins rode on them):
    played on top of the baked keys, a keyed one that lifted the pinned row lifted it twice.
    Returns their names, for the record (Free Bake unmutes them); their animation is kept."""
    key = obj.data.shape_keys
    if key is None:
        return []
    muted = [kb for kb in key.key_blocks[1:] if not kb.name.startswith(SHAPE_KEY_PREFIX) and not kb.mute]
    for kb in muted:
        kb.mute = True
    return [kb.name for kb in muted]


def _unmute_modifiers(obj, rec: dict):
    """Put the modifiers and shape keys a bake turned off back as they were; returns a function
    undoing that."""
    changed = []
    for entry in rec.get("muted_modifiers", ()):
        m = obj.modifiers.get(entry["name"])
        if m is not None:
            changed.append((m, m.show_viewport, m.show_render))
            m.show_viewport, m.show_render = bool(entry["viewport"]), bool(entry["render"])
    key = obj.data.shape_keys if obj.type == 'MESH' else None
    keys = [key.key_blocks.get(name) for name in rec.get("muted_shape_keys", ())] if key is not None else []
    keys = [kb for kb in keys if kb is not None and kb.mute]
    for kb in keys:
        kb.mute = False

    def undo():
        for m, viewport, render in changed:
            m.show_viewport, m.show_render = viewport, render
        for kb in keys:
            kb.mute = True
    return undo


def add_to_record(obj, values: dict) -> None:
    """Keep ``values`` in the object's bake record too (after a write_* made it)."""
    holder = _record_holder(obj)
    for key, value in values.items():
        holder[RECORD][key] = value


def free_orphans() -> list[str]:
    """What bakes of since deleted objects left: their meshes' baked shape keys (the mesh lives on
    without a user until the file is saved) and the bakes' actions no one uses. Returns the names
    of the meshes cleaned."""
    cleaned = []
    for mesh in [m for m in bpy.data.meshes if m.users == 0 and m.get(RECORD) is not None]:
        holder = bpy.data.objects.new(f"JK free {mesh.name}", mesh)  # shape keys are removed through an object
        try:
            free_bake(holder)
        finally:
            bpy.data.objects.remove(holder)
        cleaned.append(mesh.name)
    for action in [a for a in bpy.data.actions if a.users == 0 and a.get(RECORD)]:
        bpy.data.actions.remove(action)
    return cleaned
