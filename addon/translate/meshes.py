"""Mesh data as numpy arrays: faces for the engine, face areas, what makes a mesh awkward, and
collider shapes fitted to a mesh. No bpy here."""

from __future__ import annotations

import numpy as np

from jakobsen_engine import Box, Capsule, JakobsenError, Plane, Sphere

from .transforms import rigid


def face_list(loop_total: np.ndarray, corners: np.ndarray, matrix: np.ndarray | None = None):
    """Faces for the engine: an (f, k) array when all faces have k corners, else a list of arrays.

    matrix: the object's world matrix, when the faces go with its world vertices. A mirroring
    one (negative determinant: a negative scale on one axis, as imports and the Mirror tool
    leave) reverses the corners' turn in the world, so each face's corners are reversed: its
    front stays the side Blender shows as outside. (Left so, a mirrored Mesh collider was
    inside out: a cloth fell into the table top and a flat ground let everything through.)"""
    if matrix is not None and np.linalg.det(np.asarray(matrix)[:3, :3]) < 0.0:
        loop_total = np.asarray(loop_total, dtype=np.int64)
        starts = face_starts(loop_total)
        face_of = np.repeat(np.arange(len(loop_total)), loop_total)
        within = np.arange(len(corners)) - starts[face_of]
        corners = corners[starts[face_of] + loop_total[face_of] - 1 - within]
    if len(loop_total) and np.all(loop_total == loop_total[0]):
        return corners.reshape(len(loop_total), int(loop_total[0]))
    return np.split(corners, np.cumsum(loop_total)[:-1])


def face_starts(loop_total) -> np.ndarray:
    """(f,) where each face's corners start in the corner array (Blender's loop_start)."""
    loop_total = np.asarray(loop_total, dtype=np.int64)
    return np.concatenate(([0], np.cumsum(loop_total)[:-1])).astype(np.int64)


def face_areas(world: np.ndarray, loop_total: np.ndarray, corners: np.ndarray) -> np.ndarray:
    starts = face_starts(loop_total)
    face_of = np.repeat(np.arange(len(loop_total)), loop_total)
    nxt = np.arange(len(corners)) + 1
    ends = starts + loop_total
    nxt[ends - 1] = starts
    origin = world[corners[starts[face_of]]]
    cross = np.cross(world[corners] - origin, world[corners[nxt]] - origin)
    return 0.5 * np.linalg.norm(np.add.reduceat(cross, starts, axis=0), axis=1)


def mesh_warnings(where: str, world: np.ndarray, loop_total: np.ndarray, corners: np.ndarray,
                   areas: np.ndarray) -> list[str]:
    """What may make a deforming mesh behave badly, though it can be simulated."""
    out = []
    loose = int(np.count_nonzero(np.bincount(corners, minlength=len(world)) == 0))
    if loose:
        out.append(f"{where}: {loose} loose vertices (in no face) are simulated as free particles, "
                   "joined to nothing")
    # A mesh an import split along its UV seams or sharp edges (glTF, FBX) has two vertices at
    # each place on the seam, one for each side: simulated, the pieces come apart there.
    _, copies = np.unique(world, axis=0, return_counts=True)
    stacked = int(copies[copies > 1].sum())
    if stacked:
        out.append(f"{where}: {stacked} vertices lie exactly on others (the mesh is split there, as imports split "
                   "a mesh along its UV seams), so it comes apart along those seams; join them with Merge by "
                   "Distance (Edit Mode: Mesh > Clean Up) if it is one piece")
    scale = float(np.median(areas)) if len(areas) else 0.0
    flat = int(np.count_nonzero(areas <= max(scale, 1e-12) * 1e-9))
    if flat:
        out.append(f"{where}: {flat} faces have zero area; they add no mass and may fold unpredictably")
    starts = face_starts(loop_total)
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


def fit_shape(shape: str, local: np.ndarray, scale: np.ndarray, where: str):
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
    offset = rigid(np.eye(3), centre)
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
