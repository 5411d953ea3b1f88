"""Vectorised unit quaternions, (..., 4) arrays in (w, x, y, z) order, as Blender stores them."""

from __future__ import annotations

import numpy as np


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b, (..., 4)."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], axis=-1)


def conjugate(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def normalize(q: np.ndarray) -> np.ndarray:
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4)."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
    ], axis=-2)


def from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) of rotation matrices (..., 3, 3), with w >= 0."""
    m = np.asarray(m, dtype=np.float64)
    shape = m.shape[:-2]
    m = m.reshape(-1, 3, 3)
    # Shepperd's method: pick the largest of the four squared components for stability.
    t = np.stack([m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2], m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]], axis=1)
    k = np.argmax(t, axis=1)
    q = np.empty((len(m), 4))
    for case in range(4):
        s = k == case
        if not np.any(s):
            continue
        a = m[s]
        if case == 0:
            r = np.sqrt(1.0 + a[:, 0, 0] + a[:, 1, 1] + a[:, 2, 2]) * 2
            q[s] = np.stack([0.25 * r, (a[:, 2, 1] - a[:, 1, 2]) / r, (a[:, 0, 2] - a[:, 2, 0]) / r,
                             (a[:, 1, 0] - a[:, 0, 1]) / r], axis=1)
        elif case == 1:
            r = np.sqrt(1.0 + a[:, 0, 0] - a[:, 1, 1] - a[:, 2, 2]) * 2
            q[s] = np.stack([(a[:, 2, 1] - a[:, 1, 2]) / r, 0.25 * r, (a[:, 0, 1] + a[:, 1, 0]) / r,
                             (a[:, 0, 2] + a[:, 2, 0]) / r], axis=1)
        elif case == 2:
            r = np.sqrt(1.0 + a[:, 1, 1] - a[:, 0, 0] - a[:, 2, 2]) * 2
            q[s] = np.stack([(a[:, 0, 2] - a[:, 2, 0]) / r, (a[:, 0, 1] + a[:, 1, 0]) / r, 0.25 * r,
                             (a[:, 1, 2] + a[:, 2, 1]) / r], axis=1)
        else:
            r = np.sqrt(1.0 + a[:, 2, 2] - a[:, 0, 0] - a[:, 1, 1]) * 2
            q[s] = np.stack([(a[:, 1, 0] - a[:, 0, 1]) / r, (a[:, 0, 2] + a[:, 2, 0]) / r,
                             (a[:, 1, 2] + a[:, 2, 1]) / r, 0.25 * r], axis=1)
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return normalize(q).reshape(*shape, 4)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    u = q[..., 1:]
    w = q[..., :1]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def exp_rotation(rotvec: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) of rotation vectors (..., 3): axis * angle."""
    angle = np.linalg.norm(rotvec, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(half) / angle, with its limit 1/2 for tiny angles
    scale = np.where(angle > 1e-12, np.sin(half) / np.maximum(angle, 1e-300), 0.5 - angle * angle / 48.0)
    return np.concatenate([np.cos(half), rotvec * scale], axis=-1)


def log_rotation(q: np.ndarray) -> np.ndarray:
    """Rotation vectors (..., 3) of unit quaternions (..., 4), taking the shorter way round."""
    q = q * np.where(q[..., :1] < 0, -1.0, 1.0)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    scale = np.where(s > 1e-12, angle / np.maximum(s, 1e-300), 2.0)
    return v * scale


def integrate(q: np.ndarray, omega: np.ndarray, h: float) -> np.ndarray:
    """Advance orientations q by world angular velocity omega (..., 3) for h seconds, exactly.

    The exponential map (not the first-order q + h/2 [omega] q) matters: the first-order form
    and its inverse lose a fraction (h |omega| / 2)^2 / 2 of the spin every step, which is the
    spin bleed the thesis warns of (a wheel at 5 rev/s would keep a third of its spin after 2 s).
    """
    return normalize(multiply(exp_rotation(omega * h), q))


def angular_velocity(q_new: np.ndarray, q_old: np.ndarray, h: float) -> np.ndarray:
    """World angular velocity (..., 3) that turns q_old into q_new in h seconds (exact inverse of integrate)."""
    return log_rotation(multiply(q_new, conjugate(q_old))) / h
