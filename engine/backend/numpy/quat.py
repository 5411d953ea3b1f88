"""Quaternion helpers of the numpy kernels, term by term the compiled ``backend/numba/vec.py``."""

from __future__ import annotations

import numpy as np

from ...geometry.quaternions import conjugate, cross, multiply, rotate
from ...geometry.reproducible import arctan2


def rotate_back(q, v):
    return rotate(conjugate(q), v)


def normalize(q):
    n = np.sqrt(q[..., 0] * q[..., 0] + q[..., 1] * q[..., 1] + q[..., 2] * q[..., 2] + q[..., 3] * q[..., 3])
    return q / n[..., None]


def exp_rotation(r):
    angle = np.sqrt(r[..., 0] * r[..., 0] + r[..., 1] * r[..., 1] + r[..., 2] * r[..., 2])
    half = 0.5 * angle
    s = np.where(angle > 1e-12, np.sin(half) / np.maximum(angle, 1e-300), 0.5 - angle * angle / 48.0)
    return np.concatenate([np.cos(half)[..., None], r * s[..., None]], axis=-1)


def log_rotation(q):
    q = q * np.where(q[..., :1] < 0.0, -1.0, 1.0)
    v = q[..., 1:]
    s = np.sqrt(v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2])
    angle = 2.0 * arctan2(s, q[..., 0])  # math.atan2, as the compiled kernels (``geometry.reproducible``)
    scale = np.where(s > 1e-12, angle / np.maximum(s, 1e-300), 2.0)
    return v * scale[..., None]


def inv_inertia_times(q, inv_inertia, v):
    """World inverse inertia times v: R diag(I^-1) R^T v."""
    return rotate(q, rotate_back(q, v) * inv_inertia)


def inertia_times(q, inertia, v):
    return rotate(q, rotate_back(q, v) * inertia)


__all__ = ["conjugate", "cross", "multiply", "rotate", "rotate_back", "normalize", "exp_rotation", "log_rotation",
           "inv_inertia_times", "inertia_times"]
