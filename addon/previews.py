"""What a running bake or the playback cache shows in the viewport: drawn, not made of objects.

A modal bake and the simulate-on-playback cache show frames that are not (yet) in the file. They
used to do that with stand-in objects ("JK Preview ...") linked into the scene, which the user saw
in the Outliner, could select, and would have saved into the .blend had they saved mid-bake. Here
nothing is added to ``bpy.data``: each source (``show(key, geometry, hide)``) hands this module a
function that returns plain arrays (world positions and triangles per object), and one
``SpaceView3D`` draw handler (``POST_VIEW``, Blender's ``gpu`` module, the built-in
``SMOOTH_COLOR`` shader with a little shading from the normals) draws them.

The one thing a source changes in the user's data is the view-layer hide flag of the objects it
stands in for (so the original is not seen beside the simulated one). That is undone in one
place (``release``), and around every save (``save_pre`` shows them again, ``save_post`` hides them
once more), so a file saved during a bake is the file as it was; a file loaded drops every source.
Objects are found again by ``session_uid``, so a rename in the meantime does not lose them.

Headless Blender (``bpy.app.background``) has no GPU: there the handler is not added, and the
geometry (``geometry()``) is what the tests look at.
"""

from __future__ import annotations

from typing import Callable, TypedDict

import bpy
import numpy as np
from bpy.app.handlers import persistent

# A source's geometry: {object name: (world positions (n, 3) float32, triangles (t, 3) int32)}.
Geometry = dict[str, tuple[np.ndarray, np.ndarray]]

_sources: dict[str, dict] = {}  # key -> {"geometry": fn, "hidden": [(name, uid)], "view_layer": name, ...}


class _DrawState(TypedDict):
    draws: int  # draws that completed (since the module loaded)
    errors: list[str]  # the first few errors a draw met


_handler = None
_state: _DrawState = {"draws": 0, "errors": []}
COLOUR = np.array((0.62, 0.68, 0.78), np.float32)
LIGHT = np.array((0.3, -0.5, 0.8), np.float32) / np.linalg.norm((0.3, -0.5, 0.8))


def find_object(name: str, uid: int | None):
    """The object with ``session_uid`` ``uid``, looked up by ``name`` first; None if it is gone.
    Without a uid, by name alone."""
    obj = bpy.data.objects.get(name)
    if uid is None or (obj is not None and obj.session_uid == uid):
        return obj
    return next((o for o in bpy.data.objects if o.session_uid == uid), None)


def triangles_of(obj, depsgraph) -> tuple[np.ndarray, np.ndarray]:
    """(object-space vertex positions (n, 3) float32, triangles (t, 3) int32) of ``obj``'s evaluated
    mesh, read with foreach_get from a temporary mesh that never enters ``bpy.data``."""
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    try:
        mesh.calc_loop_triangles()
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        tris = np.empty(len(mesh.loop_triangles) * 3, np.int32)
        mesh.loop_triangles.foreach_get("vertices", tris)
    finally:
        ob_eval.to_mesh_clear()
    return co.reshape(-1, 3), tris.reshape(-1, 3)


# -- sources ---------------------------------------------------------------------------------------

def show(key: str, geometry: Callable[[], Geometry], hide=(), view_layer=None) -> None:
    """Draw what ``geometry()`` returns until ``release(key)``; hide ``hide`` (objects) in
    ``view_layer`` meanwhile (those the user had hidden already stay as they were)."""
    release(key)
    hidden = []
    if view_layer is not None:
        for obj in hide:
            if obj.name in view_layer.objects and not obj.hide_get(view_layer=view_layer):
                obj.hide_set(True, view_layer=view_layer)
                hidden.append((obj.name, obj.session_uid))
    _sources[key] = {"geometry": geometry, "hidden": hidden,
                     "view_layer": view_layer.name if view_layer is not None else "",
                     "scene": view_layer.id_data.name if view_layer is not None else ""}
    _redraw()


def release(key: str) -> None:
    """Stop drawing ``key`` and show again what it hid."""
    source = _sources.pop(key, None)
    if source is None:
        return
    _set_hidden(source, False)
    _redraw()


def active(key: str) -> bool:
    return key in _sources


def hidden_objects() -> list[str]:
    """The names of the objects hidden behind a drawn stand-in, now."""
    out = []
    for source in _sources.values():
        out += [obj.name for obj in (find_object(*h) for h in source["hidden"]) if obj is not None]
    return out


def geometry() -> Geometry:
    """Everything drawn now, of every source (the newest source wins an object drawn twice)."""
    out: Geometry = {}
    for source in list(_sources.values()):
        out.update(source["geometry"]())
    return out


def _set_hidden(source: dict, hidden: bool) -> None:
    scene = bpy.data.scenes.get(source["scene"])
    view_layer = scene.view_layers.get(source["view_layer"]) if scene is not None else None
    if view_layer is None:
        return
    for name, uid in source["hidden"]:
        obj = find_object(name, uid)
        if obj is not None and obj.name in view_layer.objects:
            obj.hide_set(hidden, view_layer=view_layer)


@persistent
def _save_pre(*_args) -> None:
    # What is saved is the user's file: the originals visible, as they were before any preview.
    for source in _sources.values():
        _set_hidden(source, False)


@persistent
def _save_post(*_args) -> None:
    for source in _sources.values():
        _set_hidden(source, True)


@persistent
def _load_pre(*_args) -> None:
    # Another file comes: whatever was drawn belongs to the one going away.
    for key in list(_sources):
        release(key)


# -- drawing --------------------------------------------------------------------------------------

def shaded_colours(positions: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """A colour (n, 4) per vertex: lit from one direction by its smooth normal, both sides alike."""
    a, b, c = positions[tris[:, 0]], positions[tris[:, 1]], positions[tris[:, 2]]
    face = np.cross(b - a, c - a)
    normals = np.zeros_like(positions)
    for k in range(3):
        for axis in range(3):
            normals[:, axis] += np.bincount(tris[:, k], weights=face[:, axis], minlength=len(positions))
    length = np.linalg.norm(normals, axis=1)
    normals /= np.maximum(length, 1e-12)[:, None]
    light = 0.35 + 0.65 * np.abs(normals @ LIGHT)
    out = np.ones((len(positions), 4), np.float32)
    out[:, :3] = COLOUR[None, :] * light[:, None]
    return out


def _draw() -> None:
    if not _sources:
        return
    try:
        import gpu
        from gpu_extras.batch import batch_for_shader

        shader = gpu.shader.from_builtin('SMOOTH_COLOR')
        gpu.state.depth_test_set('LESS_EQUAL')
        gpu.state.depth_mask_set(True)
        for positions, tris in geometry().values():
            if not len(tris):
                continue
            positions = np.ascontiguousarray(positions, np.float32)
            # (The stubs take sequences, not numpy arrays; Blender takes arrays, and faster than lists.)
            batch = batch_for_shader(shader, 'TRIS',
                                     {"pos": positions, "color": shaded_colours(positions, tris)},  # type: ignore[dict-item]
                                     indices=np.ascontiguousarray(tris, np.int32))  # type: ignore[arg-type]
            batch.draw(shader)
        gpu.state.depth_mask_set(False)
        gpu.state.depth_test_set('NONE')
        _state["draws"] += 1
    except Exception as error:  # a draw callback must not raise into Blender's draw loop
        if len(_state["errors"]) < 10:
            _state["errors"].append(f"{type(error).__name__}: {error}")


def draw_count() -> int:
    return _state["draws"]


def errors() -> list[str]:
    return list(_state["errors"])


def _redraw() -> None:
    wm = getattr(bpy.context, "window_manager", None)
    for window in (wm.windows if wm is not None else ()):
        for area in window.screen.areas:
            if area.type == 'VIEW_3D':
                area.tag_redraw()


_HANDLERS = (("save_pre", _save_pre), ("save_post", _save_post), ("load_pre", _load_pre))


def register() -> None:
    global _handler
    for name, fn in _HANDLERS:
        if fn not in getattr(bpy.app.handlers, name):
            getattr(bpy.app.handlers, name).append(fn)
    if not bpy.app.background and _handler is None:
        _handler = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_VIEW')


def unregister() -> None:
    global _handler
    for key in list(_sources):
        release(key)
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if fn in handlers:
            handlers.remove(fn)
    if _handler is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handler, 'WINDOW')
        _handler = None
