"""Transforms as numpy arrays: Blender's matrices split into rotation and scale, rigid motions.
No bpy here: these are plain conversions, testable without Blender."""

from __future__ import annotations

import numpy as np

from jakobsen_engine import JakobsenError
from jakobsen_engine.geometry.reproducible import rotation_polar


def matrix(m) -> np.ndarray:
    return np.array(m, dtype=np.float64).reshape(4, 4)


def rotation_and_scale(m: np.ndarray, where: str, warnings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Split a 4x4 into a rotation (3, 3) and per-axis scale (3,) (negative for a mirrored axis)."""
    a = m[:3, :3]
    s = np.linalg.norm(a, axis=0)
    if np.any(s < 1e-12):
        raise JakobsenError(f"{where}: its scale is zero on an axis")
    if np.linalg.det(a) < 0:
        s[0] = -s[0]
    r = a / s
    # The nearest rotation (U V^T of an SVD), without LAPACK: np.linalg.svd gave the follow_path
    # example's wheels a rotation another last bit off on numpy 1.26 than on 2.5 (see
    # ``jakobsen_engine.geometry.reproducible``).
    ortho = rotation_polar(r)
    if np.abs(ortho - r).max() > 1e-4:
        warnings.append(f"{where}: its transform is sheared (non-uniform scale under a rotated parent); "
                        "the collision shape is fitted approximately")
    return ortho, s


def rigid(r: np.ndarray, t: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = r, t
    return m


def affine_inverse(m: np.ndarray) -> np.ndarray:
    """The inverse of affine matrices m (..., 4, 4) (last row 0, 0, 0, 1; rotation, scale and
    shear allowed), by the cross products of the columns (the same arithmetic on every numpy,
    where np.linalg.inv is LAPACK's: see ``rotation_and_scale``)."""
    m = np.asarray(m, dtype=np.float64)
    c0, c1, c2 = m[..., :3, 0], m[..., :3, 1], m[..., :3, 2]
    rows = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=-2)
    det = np.einsum("...i,...i->...", c0, rows[..., 0, :])
    out = np.zeros(m.shape)
    out[..., :3, :3] = rows / det[..., None, None]
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", out[..., :3, :3], m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def world(local: np.ndarray, m: np.ndarray) -> np.ndarray:
    return local @ m[:3, :3].T + m[:3, 3]
