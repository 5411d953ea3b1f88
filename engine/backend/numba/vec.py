"""Small vector and quaternion helpers for the compiled kernels: tuples, no allocation, and the
same arithmetic, term by term, as ``geometry/quaternions.py`` and the numpy kernels."""

from __future__ import annotations

import math

from numba import njit

INLINE = dict(cache=True, nogil=True, error_model="numpy", inline="always")


@njit(**INLINE)
def get3(a, i):
    return a[i, 0], a[i, 1], a[i, 2]


@njit(**INLINE)
def get4(a, i):
    return a[i, 0], a[i, 1], a[i, 2], a[i, 3]


@njit(**INLINE)
def put3(a, i, v):
    a[i, 0] = v[0]
    a[i, 1] = v[1]
    a[i, 2] = v[2]


@njit(**INLINE)
def add(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


@njit(**INLINE)
def sub(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


@njit(**INLINE)
def mul(a, s):
    return a[0] * s, a[1] * s, a[2] * s


@njit(**INLINE)
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(**INLINE)
def cross(a, b):
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


@njit(**INLINE)
def norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(**INLINE)
def rotate(q, v):
    """q (w, x, y, z) applied to v: v + w t + u x t with t = 2 u x v (as quaternions.rotate)."""
    u = (q[1], q[2], q[3])
    t = cross(u, v)
    t = (2.0 * t[0], 2.0 * t[1], 2.0 * t[2])
    c = cross(u, t)
    return v[0] + q[0] * t[0] + c[0], v[1] + q[0] * t[1] + c[1], v[2] + q[0] * t[2] + c[2]


@njit(**INLINE)
def conj(q):
    return q[0], -q[1], -q[2], -q[3]


@njit(**INLINE)
def rotate_back(q, v):
    return rotate(conj(q), v)


@njit(**INLINE)
def qmul(a, b):
    return (a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
            a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
            a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
            a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0])


@njit(**INLINE)
def qnormalize(q):
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return q[0] / n, q[1] / n, q[2] / n, q[3] / n


@njit(**INLINE)
def exp_rotation(r):
    """The unit quaternion of rotation vector r (as quaternions.exp_rotation)."""
    angle = math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2])
    half = 0.5 * angle
    if angle > 1e-12:
        s = math.sin(half) / max(angle, 1e-300)
    else:
        s = 0.5 - angle * angle / 48.0
    return math.cos(half), r[0] * s, r[1] * s, r[2] * s


@njit(**INLINE)
def log_rotation(q):
    """The rotation vector of unit quaternion q, the shorter way round (as quaternions.log_rotation)."""
    sign = -1.0 if q[0] < 0.0 else 1.0
    w, x, y, z = q[0] * sign, q[1] * sign, q[2] * sign, q[3] * sign
    s = math.sqrt(x * x + y * y + z * z)
    angle = 2.0 * math.atan2(s, w)
    scale = angle / max(s, 1e-300) if s > 1e-12 else 2.0
    return x * scale, y * scale, z * scale


@njit(**INLINE)
def inv_inertia_times(q, inv_inertia, v):
    """World inverse inertia times v: R diag(I^-1) R^T v, with R the body's rotation q."""
    b = rotate_back(q, v)
    return rotate(q, (b[0] * inv_inertia[0], b[1] * inv_inertia[1], b[2] * inv_inertia[2]))


@njit(**INLINE)
def inertia_times(q, inertia, v):
    b = rotate_back(q, v)
    return rotate(q, (b[0] * inertia[0], b[1] * inertia[1], b[2] * inertia[2]))
