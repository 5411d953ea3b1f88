"""A torn cloth's bake: its mesh split where it tore, so the render comes apart as the cloth did.

Shape keys and point caches cannot change a mesh's topology, so a cloth that tore is baked onto a
copy of its mesh in which every face with a torn edge has vertices of its own (split off along
its edges, Blender's Edge Split on just those edges; UVs, materials, vertex groups and the user's
shape keys come along). Until its edge tears, such a face's vertices follow the vertices they
were split from, so the cloth looks whole; from the frame its edge tore, the face shrinks to its
centre (a zero-area face renders as nothing), so a tear opens one face wide and the pieces are
separate meshes in the render.

The user's own mesh is kept, unchanged, in the bake record (a reference, which keeps it in the
file); Free Bake puts it back on the object and removes the copy. Nothing of the user's is lost.
"""

from __future__ import annotations

import bmesh
import bpy
import numpy as np

ORIGINAL = "original_mesh"
SUFFIX = " (torn)"
ORIGIN = "jk_original_index"  # a temporary point attribute of the copy while it is split


def split_mesh(mesh, torn_pairs: np.ndarray, torn_frames: np.ndarray, local: np.ndarray):
    """A copy of the cloth's own ``mesh`` split at its torn faces, and the baked positions for it.

    torn_pairs: (k, 2) vertex indices of the torn edges (pairs that are not mesh edges are
    ignored: a torn diagonal); torn_frames: (k,) the index into ``local`` of the
    first frame each is torn on; local: (frames, n, 3) positions of the mesh's vertices.
    Returns (mesh, local for the split mesh (frames, n', 3)), or (None, local) if no edge tore.
    """
    n = len(mesh.vertices)
    edge_keys: np.ndarray = np.empty(len(mesh.edges) * 2, np.int64)  # flat for foreach_get, then (e, 2)
    mesh.edges.foreach_get("vertices", edge_keys)
    edge_keys = edge_keys.reshape(-1, 2)
    edge_keys.sort(axis=1)
    pairs = np.sort(np.asarray(torn_pairs, np.int64).reshape(-1, 2), axis=1)
    key = edge_keys[:, 0] * n + edge_keys[:, 1]
    torn_key = pairs[:, 0] * n + pairs[:, 1]
    torn_edge = np.isin(key, torn_key)
    if not np.any(torn_edge):
        return None, local
    # When each mesh edge tore (the first of its sticks' times).
    order = np.argsort(torn_key, kind="stable")
    slot = np.searchsorted(torn_key[order], key[torn_edge])
    edge_frame = np.full(len(key), np.iinfo(np.int64).max)
    edge_frame[torn_edge] = np.asarray(torn_frames, np.int64)[order][slot]

    # The faces with a torn edge, and the first frame one of their edges is torn on.
    loop_total = np.empty(len(mesh.polygons), np.int64)
    mesh.polygons.foreach_get("loop_total", loop_total)
    loop_edge = np.empty(len(mesh.loops), np.int64)
    mesh.loops.foreach_get("edge_index", loop_edge)
    face_of_loop = np.repeat(np.arange(len(loop_total)), loop_total)
    face_frame = np.full(len(loop_total), np.iinfo(np.int64).max)
    np.minimum.at(face_frame, face_of_loop, edge_frame[loop_edge])
    torn_faces = np.flatnonzero(face_frame < np.iinfo(np.int64).max)

    copy = mesh.copy()
    copy.name = mesh.name + SUFFIX
    # Which vertex each vertex of the split mesh came from: an attribute the split copies along.
    origin = copy.attributes.new(ORIGIN, 'INT', 'POINT')
    origin.data.foreach_set("value", np.arange(n, dtype=np.int32))
    bm = bmesh.new()
    try:
        bm.from_mesh(copy)
        bm.faces.ensure_lookup_table()
        faces = [bm.faces[k] for k in torn_faces.tolist()]
        bmesh.ops.split_edges(bm, edges=list({e for f in faces for e in f.edges}))
        bm.to_mesh(copy)  # (the faces keep their order; the new vertices come after the old)
    finally:
        bm.free()
    source = np.empty(len(copy.vertices), np.int32)
    copy.attributes[ORIGIN].data.foreach_get("value", source)
    copy.attributes.remove(copy.attributes[ORIGIN])
    corners = np.empty(len(copy.loops), np.int64)
    copy.loops.foreach_get("vertex_index", corners)
    starts = np.concatenate(([0], np.cumsum(loop_total)[:-1]))
    out = np.ascontiguousarray(local[:, source])
    for face in torn_faces.tolist():
        first = face_frame[face]
        if first < len(out):
            verts = corners[starts[face]:starts[face] + loop_total[face]]
            out[first:, verts] = out[first:, verts].mean(axis=1, keepdims=True)
    return copy, out


def put_on(obj, torn_mesh) -> dict:
    """Give ``obj`` the torn mesh; returns what the bake record keeps to put the user's own back
    (a reference to it, which also keeps it in the file while the object wears the copy)."""
    original = obj.data
    obj.data = torn_mesh
    torn_mesh.name = original.name + SUFFIX  # the previous bake's copy (freed by now) had the name
    return {ORIGINAL: original}


def wear_original(obj, rec: dict):
    """Put the user's own mesh on a torn cloth's object for a while (to read the scene as it is
    without the bake); returns the function that puts the torn copy back."""
    torn = obj.data
    obj.data = rec[ORIGINAL]

    def undo():
        obj.data = torn
    return undo


def held_by_records(mesh) -> int:
    """How many of ``mesh``'s users are torn bakes' records keeping it (not objects using it)."""
    from .baking import RECORD

    count = 0
    for holder in list(bpy.data.meshes) + list(bpy.data.objects):
        rec = holder.get(RECORD)
        if rec is not None and hasattr(rec, "get") and rec.get(ORIGINAL) == mesh:
            count += 1
    return count


def put_back(obj, rec: dict) -> None:
    """Free Bake of a torn cloth: its own mesh back on the object, the torn copy removed."""
    original = rec.get(ORIGINAL)
    if original is None or obj.type != 'MESH':
        return
    torn = obj.data
    obj.data = original
    if torn is not None and torn != original and torn.users == 0:
        bpy.data.meshes.remove(torn)
