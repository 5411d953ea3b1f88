"""Vectorised unit quaternions, (..., 4) arrays in (w, x, y, z) order, as Blender stores them."""

from __future__ import annotations

import numpy as np

from .reproducible import arctan2


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products of (..., 3) arrays; several times cheaper than np.cross on small arrays."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b, (..., 4)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def conjugate(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def normalize(q: np.ndarray) -> np.ndarray:
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape[:-1] + (3, 3))
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    out[..., 0, 0] = 1 - 2 * (yy + zz)
    out[..., 0, 1] = 2 * (xy - wz)
    out[..., 0, 2] = 2 * (xz + wy)
    out[..., 1, 0] = 2 * (xy + wz)
    out[..., 1, 1] = 1 - 2 * (xx + zz)
    out[..., 1, 2] = 2 * (yz - wx)
    out[..., 2, 0] = 2 * (xz - wy)
    out[..., 2, 1] = 2 * (yz + wx)
    out[..., 2, 2] = 1 - 2 * (xx + yy)
    return out


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
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


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
    angle = 2.0 * arctan2(s, q[..., :1])  # (not np.arctan2: see ``reproducible``)
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
