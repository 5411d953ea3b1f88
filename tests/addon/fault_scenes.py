"""Small scenes for the fault suite (test_faults.py), built from code with bpy.data only (no
bpy.ops, so nothing depends on the context), and the checks the suite shares: what a refused bake
reported, what changed between two snapshots, whether everything a bake wrote is finite."""

from __future__ import annotations

import math
import re

import bpy
import numpy as np

from jakobsen_physics import actions

FLT_MAX = float(np.finfo(np.float32).max)
NAN = float("nan")
INF = float("inf")

CUBE_FACES = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def cube_verts(size: float = 1.0) -> list[tuple[float, float, float]]:
    h = size / 2
    return [(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)]


def grid_data(n: int, size: float):
    """(verts, faces) of an n x n quad grid in the local XY plane, centred on the origin."""
    xs = np.linspace(-size / 2, size / 2, n)
    verts = [(float(x), float(y), 0.0) for y in xs for x in xs]
    faces = [(j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i)
             for j in range(n - 1) for i in range(n - 1)]
    return verts, faces


def link(obj):
    bpy.context.scene.collection.objects.link(obj)
    return obj


def mesh_object(name: str, verts, faces=(), edges=(), *, location=(0.0, 0.0, 0.0)):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(v) for v in verts], [tuple(e) for e in edges], [tuple(f) for f in faces])
    mesh.update()
    obj = link(bpy.data.objects.new(name, mesh))
    obj.location = location
    return obj


def set_co(obj, index: int, co) -> None:
    """Put a vertex anywhere (NaN and inf included: ``from_pydata`` and ``mesh.update`` may not like them)."""
    buf = np.empty(3 * len(obj.data.vertices), np.float32)
    obj.data.vertices.foreach_get("co", buf)
    buf[3 * index:3 * index + 3] = co
    obj.data.vertices.foreach_set("co", buf)


def role_settings(obj):
    j = obj.jakobsen
    return {'RIGID_BODY': j.rigid_body, 'CLOTH': j.cloth, 'SOFT_BODY': j.cloth, 'COLLIDER': j.collider,
            'CONNECTOR': j.connector, 'SPRING': j.spring, 'MOTOR': j.motor}[j.type]


def enable(obj, role: str, **settings):
    obj.jakobsen.enabled = True
    obj.jakobsen.type = role
    group = role_settings(obj)
    for key, value in settings.items():
        setattr(group, key, value)
    return obj


def box(name: str, *, location=(0.0, 0.0, 2.0), size: float = 1.0, role: str = 'RIGID_BODY', **settings):
    return enable(mesh_object(name, cube_verts(size), CUBE_FACES, location=location), role, **settings)


def sheet(name: str, *, n: int = 4, size: float = 1.0, location=(0.0, 0.0, 2.0), role: str = 'CLOTH', **settings):
    verts, faces = grid_data(n, size)
    return enable(mesh_object(name, verts, faces, location=location), role, **settings)


def ground(name: str = "Ground", size: float = 6.0):
    verts, faces = grid_data(2, size)
    return enable(mesh_object(name, verts, faces), 'COLLIDER')


def empty(name: str, role: str | None = None, *, location=(0.0, 0.0, 0.0), **settings):
    obj = link(bpy.data.objects.new(name, None))
    obj.location = location
    if role is not None:
        enable(obj, role, **settings)
    return obj


def frames(first: int, last: int) -> None:
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    scene.frame_set(first)
    bpy.context.view_layer.update()


# -- what the fault suite checks ----------------------------------------------------------------------

def fcurves_of(action) -> list:
    if actions.SLOTTED:
        return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                for fc in bag.fcurves]
    return list(action.fcurves)


def non_finite_output() -> list[str]:
    """Every key (value and handles) of every action and every shape-key coordinate of every mesh
    that is not a finite float32, as one line each (empty: all finite)."""
    problems = []
    for action in bpy.data.actions:
        for fc in fcurves_of(action):
            for attr in ("co", "handle_left", "handle_right"):
                buf = np.empty(2 * len(fc.keyframe_points), np.float32)
                fc.keyframe_points.foreach_get(attr, buf)
                if not np.isfinite(buf).all():
                    problems.append(f"action '{action.name}': {fc.data_path}[{fc.array_index}] {attr} is not finite")
    for mesh in bpy.data.meshes:
        key = mesh.shape_keys
        for kb in key.key_blocks if key is not None else ():
            buf = np.empty(3 * len(kb.data), np.float32)
            kb.data.foreach_get("co", buf)
            if not np.isfinite(buf).all():
                problems.append(f"mesh '{mesh.name}': shape key '{kb.name}' has non-finite coordinates")
            if not math.isfinite(kb.value):
                problems.append(f"mesh '{mesh.name}': shape key '{kb.name}' has a non-finite value")
    return problems


def non_finite_poses(object_names, frame_range) -> list[str]:
    """Each frame on which one of the objects has a non-finite matrix_world."""
    scene = bpy.context.scene
    original = scene.frame_current
    problems = []
    for frame in frame_range:
        scene.frame_set(frame)
        for name in object_names:
            m = np.array(bpy.data.objects[name].matrix_world)
            if not np.isfinite(m).all():
                problems.append(f"'{name}' on frame {frame}: matrix_world is not finite")
    scene.frame_set(original)
    return problems


def differences(before, after, path: str = "", limit: int = 12) -> list[str]:
    """Where two snapshots differ, as short paths (not the whole values: they hold bytes)."""
    out: list[str] = []

    def walk(a, b, where):
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                if key not in a:
                    out.append(f"{where}/{key}: added")
                elif key not in b:
                    out.append(f"{where}/{key}: removed")
                else:
                    walk(a[key], b[key], f"{where}/{key}")
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
            for k, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{where}[{k}]")
        elif a != b:
            def short(v):
                return f"<{len(v)} bytes>" if isinstance(v, bytes) else repr(v)[:160]

            out.append(f"{where}: {short(a)} -> {short(b)}")

    walk(before, after, path)
    return out


def is_report(message: str) -> bool:
    """A message the add-on reported itself (``Error: ...``), not a Python exception escaping an operator."""
    return message.startswith("Error: ") and "Traceback" not in message


def names_object(message: str, name: str) -> bool:
    """The object by its whole name, quoted as the add-on's messages do (``cloth 'Flag'``), or
    in parentheses."""
    return any(f"{left}{name}{right}" in message for left, right in (("'", "'"), ('"', '"'), ("(", ")")))


def names_setting(message: str, label: str) -> bool:
    """The setting as the panel labels it (any case: a message may start a sentence with it)."""
    return re.search(re.escape(label), message, re.IGNORECASE) is not None
