"""Fixtures for the add-on tests: an empty factory file with the add-on registered, small scenes
built from code, and a snapshot of everything a bake may touch (to prove it touched nothing)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

try:
    import bpy
except ImportError:  # the engine tests run without Blender
    bpy = None


# bpy 4.x (the module, not Blender itself) goes wrong when the process exits after the add-on was
# registered: 4.2 crashes once a property with a Python callback (an update or poll function) has
# been registered, even after unregistering it (its C exit handlers free the Python classes after
# the interpreter is gone: SIGSEGV in bpy_class_free); 4.5 waits forever in a global destructor
# (pthread_cond_destroy). The tests are over by then, so on 4.x the session ends with os._exit
# and the exit status pytest chose, before those handlers run.
_session_status = [0]


def pytest_sessionfinish(session, exitstatus):
    _session_status[0] = int(exitstatus)


def pytest_unconfigure(config):
    if bpy is not None and tuple(bpy.app.version) < (5, 0, 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_session_status[0])


@pytest.fixture
def blender():
    """An empty factory-settings file with the add-on registered; afterwards the add-on is
    unregistered and Blender is back on its factory startup file, as a fresh session starts
    (other tests compare counts of data-blocks against that)."""
    if bpy is None:
        pytest.skip("bpy (Blender as a Python module) is not installed")
    import jakobsen_physics as addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    try:
        yield bpy
    finally:
        addon.unregister()
        bpy.ops.wm.read_factory_settings()


def grid_mesh(name: str, nx: int, ny: int, size: float):
    """A flat quad grid mesh (nx x ny vertices) in the local XY plane, centred on the origin."""
    xs, ys = np.linspace(-size / 2, size / 2, nx), np.linspace(-size / 2, size / 2, ny)
    gx, gy = np.meshgrid(xs, ys)
    verts = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    ix, iy = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1))
    a = (iy * nx + ix).ravel()
    faces = np.stack([a, a + 1, a + 1 + nx, a + nx], axis=1)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts.tolist(), [], faces.tolist())
    mesh.update()
    return mesh


def link(obj):
    bpy.context.scene.collection.objects.link(obj)
    return obj


@pytest.fixture
def pinned_cloth(blender):
    """A 6 x 6 cloth 1.2 m above a ground plane, pinned along its +Y edge, rotated and moved so
    that object space and world space differ; the scene bakes frames 1-8."""

    def make(name: str = "Flag", *, nx: int = 6, ny: int = 6, frames=(1, 8)):
        cloth = link(bpy.data.objects.new(name, grid_mesh(name, nx, ny, 1.0)))
        cloth.location = (0.3, -0.2, 1.2)
        cloth.rotation_euler = (0.2, 0.0, 0.5)
        cloth.scale = (1.5, 1.0, 1.0)
        co = np.empty(len(cloth.data.vertices) * 3, np.float32)
        cloth.data.vertices.foreach_get("co", co)
        group = cloth.vertex_groups.new(name="pin")
        group.add(np.flatnonzero(co.reshape(-1, 3)[:, 1] > 0.49).tolist(), 1.0, 'REPLACE')
        cloth.jakobsen.enabled = True
        cloth.jakobsen.type = 'CLOTH'
        cloth.jakobsen.cloth.pin_group = "pin"
        ground = link(bpy.data.objects.new("Ground", grid_mesh("Ground", 2, 2, 4.0)))
        ground.jakobsen.enabled = True
        ground.jakobsen.type = 'COLLIDER'
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = frames
        scene.frame_set(frames[0])
        bpy.context.view_layer.update()
        return cloth

    return make


def _array(collection, attr: str, size: int, dtype=np.float32) -> bytes:
    buf = np.empty(len(collection) * size, dtype=dtype)
    collection.foreach_get(attr, buf)
    return buf.tobytes()


def _fcurves_of(action):
    if action is None:
        return []
    from jakobsen_physics import actions

    if actions.SLOTTED:
        curves = [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                  for fc in bag.fcurves]
    else:
        curves = list(action.fcurves)
    return sorted((fc.data_path, fc.array_index, _array(fc.keyframe_points, "co", 2)) for fc in curves)


def _animation(id_data):
    ad = id_data.animation_data
    if ad is None:
        return None
    slot = getattr(ad, "action_slot", None)
    return (ad.action.name if ad.action else None, slot.identifier if slot else None)


def snapshot() -> dict:
    """Everything a bake could change, as plain comparable values."""
    scene = bpy.context.scene
    out = {
        "frame": (scene.frame_current, scene.frame_subframe),
        "objects": {}, "meshes": {},
        "actions": {a.name: _fcurves_of(a) for a in bpy.data.actions},
        "counts": (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.actions)),
    }
    view_layer = bpy.context.view_layer
    for obj in bpy.data.objects:
        out["objects"][obj.name] = {
            "matrix_world": tuple(tuple(r) for r in obj.matrix_world),
            "matrix_basis": tuple(tuple(r) for r in obj.matrix_basis),
            "hidden": obj.hide_get(view_layer=view_layer) if obj.name in view_layer.objects else None,
            "modifiers": [(m.name, m.type, m.show_viewport, m.show_render) for m in obj.modifiers],
            "animation": _animation(obj),
            "active_shape_key_index": obj.active_shape_key_index,
            "props": sorted(obj.keys()),
            "data": obj.data.name if obj.data else None,
        }
    for mesh in bpy.data.meshes:
        key = mesh.shape_keys
        out["meshes"][mesh.name] = {
            "co": _array(mesh.vertices, "co", 3),
            "faces": len(mesh.polygons),
            "shape_keys": None if key is None else [
                (kb.name, kb.value, kb.mute, _array(kb.data, "co", 3)) for kb in key.key_blocks],
            "key_animation": None if key is None else _animation(key),
        }
    return out


def evaluated_world(obj) -> np.ndarray:
    """World positions (n, 3) of an object's evaluated mesh (modifiers and shape keys applied)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    ob_eval.to_mesh_clear()
    m = np.array(ob_eval.matrix_world)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def rendered_pieces(points: np.ndarray, faces) -> int:
    """How many separate pieces a mesh renders as: faces of nonzero area joined by shared vertices
    or by vertices at the same place (a torn bake's split faces have vertices of their own, which
    sit on the ones they came from until their edge tears)."""
    _, same = np.unique(np.round(points / 1e-6).astype(np.int64), axis=0, return_inverse=True)
    same = same.ravel()
    parent = np.arange(len(points))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    used = set()
    for f in faces:
        f = np.asarray(f)
        p = points[f]
        area = np.linalg.norm(np.cross(p[1:-1] - p[0], p[2:] - p[0]), axis=1).sum()
        if area <= 1e-10:
            continue
        f = same[f]
        used.update(f.tolist())
        for v in f[1:]:
            parent[find(v)] = find(f[0])
    return len({find(v) for v in used})


def location_keys(obj) -> list:
    """Every F-curve the object's animation shows, as (data path, index, its keys' points as bytes):
    to tell two bakes' keys apart to the bit."""
    from jakobsen_physics import actions

    out = []
    for fc in sorted(actions.assigned_fcurves(obj), key=lambda f: (f.data_path, f.array_index)):
        co = np.empty(len(fc.keyframe_points) * 2, np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out.append((fc.data_path, fc.array_index, co.tobytes()))
    return out


@pytest.fixture
def helpers(blender):
    """The helpers above, for test modules (which cannot import conftest by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(snapshot=snapshot, evaluated_world=evaluated_world, grid_mesh=grid_mesh, link=link,
                           rendered_pieces=rendered_pieces, location_keys=location_keys)
