"""Checks of Blender data that name the object and the setting as the panel shows them."""

from __future__ import annotations

import math

import numpy as np

from jakobsen_engine import JakobsenError


ROLE_NAMES = {'RIGID_BODY': "rigid body", 'CLOTH': "cloth", 'SOFT_BODY': "soft body", 'COLLIDER': "collider",
               'CONNECTOR': "connector", 'SPRING': "spring", 'MOTOR': "motor"}


def describe(obj) -> str:
    """``cloth 'Flag'``: the object's role and name, as messages name it."""
    return f"{ROLE_NAMES.get(obj.jakobsen.type, 'object')} '{obj.name}'"


_ROLE_GROUPS = {'RIGID_BODY': "rigid_body", 'CLOTH': "cloth", 'SOFT_BODY': "cloth", 'COLLIDER': "collider",
                'CONNECTOR': "connector", 'SPRING': "spring", 'MOTOR': "motor"}


def role_settings(obj):
    """The settings group of the object's role (``obj.jakobsen.cloth`` for a cloth)."""
    return getattr(obj.jakobsen, _ROLE_GROUPS[obj.jakobsen.type])


def label(group, name: str) -> str:
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
        raise JakobsenError(f"{where}: its {label(group, low)} ({unit(lo)}) is above its "
                            f"{label(group, high)} ({unit(hi)})")


def check_invertible(obj, m: np.ndarray) -> None:
    """A deforming object's results are written in its own space: its transform must have an inverse."""
    lengths = np.linalg.norm(m[:3, :3], axis=0)
    if np.any(lengths < 1e-12) or abs(np.linalg.det(m[:3, :3])) < 1e-18 * max(float(lengths.max()), 1e-300) ** 3:
        axis = "XYZ"[int(np.argmin(lengths))]
        raise JakobsenError(f"{describe(obj)}: its scale is zero on the {axis} axis (or its transform is flat), so "
                            "the baked shapes could not be written in its own space; give it a non-zero scale "
                            "(Object > Apply > Scale keeps its look)")


def check_matrix(obj, m: np.ndarray) -> None:
    if not np.all(np.isfinite(m)):
        raise JakobsenError(f"{describe(obj)}: its transform is not a number (check its location, "
                            "rotation, scale and parents)")


def written_by_bake(obj) -> bool:
    """Whether a bake writes to the object: cloth and soft bodies, and rigid bodies it moves."""
    role = obj.jakobsen.type
    return role in ('CLOTH', 'SOFT_BODY') or (role == 'RIGID_BODY' and obj.jakobsen.rigid_body.dynamic != 'OFF')


BLENDER_SIMULATIONS = {'CLOTH': "Cloth", 'SOFT_BODY': "Soft Body"}


def check_no_blender_physics(obj, scene) -> None:
    """An object this bake moves must not also be moved by Blender's own physics on playback:
    an active Rigid Body (not Animated) overrides the baked keys, and a Cloth or Soft Body
    modifier simulates the baked shapes again (and its frames would be read as the pins' motion)."""
    role = obj.jakobsen.type
    if not written_by_bake(obj):
        return
    rb, world = obj.rigid_body, scene.rigidbody_world
    if (rb is not None and rb.type == 'ACTIVE' and rb.enabled and not rb.kinematic and world is not None
            and world.enabled and world.collection is not None and obj.name in world.collection.all_objects):
        raise JakobsenError(f"{describe(obj)}: it also has Blender's own Rigid Body (Active), which moves it on "
                            "playback in place of this bake; remove it (Properties > Physics > Rigid Body) or "
                            "tick its Animated, then bake")
    if role not in ('CLOTH', 'SOFT_BODY'):
        return
    for m in obj.modifiers:
        if m.type in BLENDER_SIMULATIONS and (m.show_viewport or m.show_render):
            raise JakobsenError(f"{describe(obj)}: it also has Blender's own {BLENDER_SIMULATIONS[m.type]} "
                                f"modifier '{m.name}', which would simulate it again on top of this bake; remove "
                                f"it (Properties > Physics > {BLENDER_SIMULATIONS[m.type]}) or turn it off in the "
                                "viewport and render, then bake")


def check_not_linked(obj, output: str) -> None:
    """What the bake writes must be the file's own: changes to data linked from a library are not
    saved (a linked crate played its baked fall, and after saving and opening the file again its
    keys were gone)."""
    if not written_by_bake(obj):
        return
    if obj.library is not None:
        raise JakobsenError(f"{describe(obj)}: it is linked from the library '{obj.library.filepath}', and Blender "
                            "does not keep what a bake writes to linked data; make it a library override "
                            "(Object > Library Override > Make) or local (Object > Relations > Make Local), "
                            "then bake")
    mesh = obj.data
    if obj.jakobsen.type in ('CLOTH', 'SOFT_BODY') and output == 'SHAPE_KEYS' and mesh.library is not None:
        raise JakobsenError(f"{describe(obj)}: its mesh '{mesh.name}' is linked from the library "
                            f"'{mesh.library.filepath}', so it cannot keep baked shape keys; make the mesh "
                            "local (Object > Relations > Make Local > Object and Data) or bake to PC2 "
                            "(Scene > Jakobsen Physics > Bake > Output)")


def tweaked_animation(obj, output: str):
    """The animation data a bake of ``obj`` writes (the object's for a rigid body's keys, its
    mesh's shape keys' for a cloth's shape keys) when it is in the NLA's tweak mode, else None."""
    if obj.jakobsen.type == 'RIGID_BODY':
        anim = obj.animation_data
    elif output == 'SHAPE_KEYS' and obj.type == 'MESH' and obj.data is not None and obj.data.shape_keys is not None:
        anim = obj.data.shape_keys.animation_data
    else:
        return None
    return anim if anim is not None and anim.use_tweak_mode else None


TWEAK_MODE = ("its NLA is in tweak mode (a strip's action open for editing), where Blender does not let "
              "its action be replaced; leave tweak mode (Tab in the NLA Editor) and {}")


def check_not_in_tweak_mode(obj, output: str) -> None:
    """The bake assigns its own action to what it writes; in tweak mode Blender refuses that, and
    the bake stopped half written with an internal error (found by the add-on probe)."""
    if written_by_bake(obj) and tweaked_animation(obj, output) is not None:
        raise JakobsenError(f"{describe(obj)}: " + TWEAK_MODE.format("bake again"))
