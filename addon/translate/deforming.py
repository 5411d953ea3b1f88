"""Deforming mesh colliders: a Collider with Shape Mesh whose mesh changes shape over the frame
range (an armature-deformed character, animated shape keys, hooks, a Wave or any animated
modifier) is read per frame as Blender evaluates it, in world space, for the engine's
``TriangleMesh(deformation=...)``: its triangles re-read every frame and interpolated per substep.

``deforms(obj, scene, frames)`` tells whether it changes shape over the frames; ``deformation``
reads it. Both set the scene's frame and put it back.
"""

from __future__ import annotations

import numpy as np

from jakobsen_engine import JakobsenError

# Modifiers that deform a mesh by something other than time-constant settings.
DEFORMING_MODIFIERS = {'ARMATURE', 'HOOK', 'LATTICE', 'CURVE', 'MESH_DEFORM', 'SURFACE_DEFORM', 'WAVE', 'CAST',
                       'SIMPLE_DEFORM', 'SMOOTH', 'LAPLACIANDEFORM', 'WARP', 'DISPLACE', 'SHRINKWRAP', 'NODES',
                       'MESH_CACHE', 'MESH_SEQUENCE_CACHE', 'CLOTH', 'SOFT_BODY', 'OCEAN', 'DYNAMIC_PAINT'}
# How many frames ``deforms`` compares, and how far (a fraction of the mesh's size) counts as moved.
PROBE_FRAMES = 5
MOVED = 1e-6


def _where(obj) -> str:
    return f"object '{obj.name}'"


def _evaluated(obj, depsgraph, local: bool):
    """(vertices (n, 3) float64, world unless local; triangles (t, 3) int64) of the evaluated mesh."""
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        n = len(mesh.vertices)
        co = np.empty(3 * n, np.float32)
        mesh.vertices.foreach_get("co", co)
        v = co.reshape(n, 3).astype(np.float64)
        mesh.calc_loop_triangles()
        tris = np.empty(3 * len(mesh.loop_triangles), np.int32)
        mesh.loop_triangles.foreach_get("vertices", tris)
        tris = tris.reshape(-1, 3).astype(np.int64)
        if not local:
            m = np.array(evaluated.matrix_world, dtype=np.float64)
            v = v @ m[:3, :3].T + m[:3, 3]
        return v, tris
    finally:
        evaluated.to_mesh_clear()


def _could_deform(obj) -> bool:
    """Whether anything could change the mesh's shape over time: a deforming modifier, shape
    keys, or animation of its modifiers' settings."""
    if obj.type != 'MESH':
        return False
    if any(m.type in DEFORMING_MODIFIERS and m.show_viewport for m in obj.modifiers):
        return True
    keys = obj.data.shape_keys
    if keys is not None and len(keys.key_blocks) > 1:
        return True
    anim = obj.animation_data
    if anim is not None:
        curves = list(anim.action.fcurves) if anim.action is not None and hasattr(anim.action, "fcurves") else []
        curves += list(anim.drivers)
        if any(c.data_path.startswith("modifiers[") for c in curves):
            return True
    return False


def deforms(obj, scene, frames) -> bool:
    """Whether ``obj``'s evaluated mesh changes shape (in its own frame) over ``frames`` (a range
    of frame numbers): nothing that could deform it means no; else its vertices are compared at
    up to PROBE_FRAMES frames spread over the range."""
    frames = list(frames)
    if not frames or not _could_deform(obj):
        return False
    import bpy

    current = scene.frame_current
    try:
        picks = sorted({frames[int(round(k))] for k in np.linspace(0, len(frames) - 1, PROBE_FRAMES)})
        first = None
        for frame in picks:
            scene.frame_set(frame)
            v, tris = _evaluated(obj, bpy.context.evaluated_depsgraph_get(), local=True)
            if first is None:
                first, size = (v, tris), max(float(np.ptp(v, axis=0).max()) if len(v) else 0.0, 1e-9)
                continue
            if v.shape != first[0].shape or tris.shape != first[1].shape or not np.array_equal(tris, first[1]):
                return True  # its topology changes: it certainly deforms (``deformation`` refuses it)
            if float(np.abs(v - first[0]).max(initial=0.0)) > MOVED * size:
                return True
        return False
    finally:
        scene.frame_set(current)


def deformation(obj, scene, frames):
    """The evaluated mesh of ``obj`` at every frame of ``frames`` (consecutive frame numbers) in
    world space: (vertices at the first frame (n, 3) m, triangles (t, 3), samples (F, n, 3) m,
    one a frame from the first) for ``TriangleMesh.from_mesh(vertices, triangles,
    deformation=samples, deformation_rate=frame rate)``. The object's own motion is in the
    samples too (the collider then has no motion of its own). Raises JakobsenError naming the
    object if its triangles change over the range (a modifier that changes topology) or it has
    none."""
    import bpy

    frames = list(frames)
    where = _where(obj)
    if not frames:
        raise JakobsenError(f"{where}: no frames to read its deformation over")
    current = scene.frame_current
    samples, tris0 = [], None
    try:
        for frame in frames:
            scene.frame_set(frame)
            v, tris = _evaluated(obj, bpy.context.evaluated_depsgraph_get(), local=False)
            if tris0 is None:
                if len(tris) == 0:
                    raise JakobsenError(f"{where}: the mesh has no faces to collide with (Shape: Mesh)")
                tris0 = tris
            elif v.shape != samples[0].shape or not np.array_equal(tris, tris0):
                raise JakobsenError(
                    f"{where}: its mesh changes its vertices or faces at frame {frame} (a modifier that changes "
                    "the topology, such as Remesh, Decimate or Geometry Nodes); a deforming Collider (Shape: Mesh) "
                    "must keep them: apply that modifier or move it after a Mesh Cache")
            if not np.all(np.isfinite(v)):
                raise JakobsenError(f"{where}: its deformed mesh has non-finite vertex positions at frame {frame}")
            samples.append(v)
    finally:
        scene.frame_set(current)
    values = np.stack(samples)
    return values[0], tris0, values
