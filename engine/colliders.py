"""Collider shapes that particles are projected out of (or, for ``BoxInterior``, kept inside).

Every shape is defined in its own local frame (at the origin, axis-aligned) and placed in the
world by a rigid ``transform`` (4x4, no scale: size lives in the shape's dimensions). A moving
(kinematic) collider gives ``motion(t) -> 4x4`` instead, evaluated by the solver at every
substep; friction then acts relative to the moving surface.

Contact queries are vectorised: ``penetration(q, r)`` takes local points ``q`` (k, 3) and radii
``r`` (k,) and returns the local correction (k, 3) that moves each point out of the shape, and
the penetration depth (k,) in metres (<= 0 where there is no contact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .errors import JakobsenError

Motion = Callable[[float], np.ndarray]


def _rigid(transform, where: str) -> np.ndarray:
    m = np.asarray(transform, dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)):
        raise JakobsenError(f"{where}: transform must be a finite 4x4 matrix, got shape {m.shape}")
    r = m[:3, :3]
    if not np.allclose(r.T @ r, np.eye(3), atol=1e-6) or np.linalg.det(r) < 0:
        raise JakobsenError(
            f"{where}: transform must be a rotation plus translation (no scale or shear); "
            "put the size into the shape's dimensions")
    return m


def _positive(value: float, what: str, where: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise JakobsenError(f"{where}: {what} must be a positive finite number, got {value}")
    return value


def _check_half_extents(half_extents, where: str) -> None:
    he = np.asarray(half_extents, dtype=np.float64)
    if he.shape != (3,):
        raise JakobsenError(f"{where}: half_extents must have 3 values, got {he.shape}")
    for v in he:
        _positive(v, "each half extent", where)


def _unit(q: np.ndarray, fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    length = np.linalg.norm(q, axis=1)
    safe = length > 1e-12
    n = np.empty_like(q)
    n[safe] = q[safe] / length[safe, None]
    n[~safe] = fallback
    return n, length


@dataclass(frozen=True, kw_only=True)
class _Collider:
    friction: float = 0.5
    restitution: float = 0.0
    transform: np.ndarray = field(default_factory=lambda: np.eye(4))
    motion: Optional[Motion] = None
    name: str = ""

    def validate(self, where: str) -> None:
        for what, value in (("friction", self.friction), ("restitution", self.restitution)):
            if not math.isfinite(value) or value < 0.0:
                raise JakobsenError(f"{where}: {what} must be >= 0, got {value}")
        if self.restitution > 1.0:
            raise JakobsenError(f"{where}: restitution must be <= 1, got {self.restitution}")
        _rigid(self.transform, where)
        if self.motion is not None and not callable(self.motion):
            raise JakobsenError(f"{where}: motion must be a callable t -> 4x4 transform")

    def pose(self, t: float) -> np.ndarray:
        """World transform (4, 4) at time ``t`` seconds."""
        if self.motion is None:
            return np.asarray(self.transform, dtype=np.float64)
        return _rigid(self.motion(t), f"collider {self.name or type(self).__name__} motion({t:g})")

    def penetration(self, q: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Plane(_Collider):
    """Infinite plane z = 0 of its local frame; the solid side is z < 0."""

    @staticmethod
    def from_point_normal(point, normal, **kwargs) -> "Plane":
        """A plane through ``point`` (3,) with outward ``normal`` (3,), in world space."""
        n = np.asarray(normal, dtype=np.float64)
        length = np.linalg.norm(n)
        if not np.isfinite(length) or length < 1e-12:
            raise JakobsenError(f"plane: normal must be a finite non-zero vector, got {normal}")
        z = n / length
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        y = np.cross(z, x)
        m = np.eye(4)
        m[:3, 0], m[:3, 1], m[:3, 2] = x, y, z
        m[:3, 3] = np.asarray(point, dtype=np.float64)
        return Plane(transform=m, **kwargs)

    def penetration(self, q, r):
        depth = r - q[:, 2]
        corr = np.zeros_like(q)
        corr[:, 2] = depth
        return corr, depth


@dataclass(frozen=True, kw_only=True)
class Sphere(_Collider):
    """Solid sphere of ``radius`` metres around the local origin."""

    radius: float = 1.0

    def validate(self, where):
        super().validate(where)
        _positive(self.radius, "radius", where)

    def penetration(self, q, r):
        n, length = _unit(q, np.array([0.0, 0.0, 1.0]))
        depth = self.radius + r - length
        return n * depth[:, None], depth


@dataclass(frozen=True, kw_only=True)
class Capsule(_Collider):
    """Solid capsule along local z: a segment from -half_height to +half_height, swept by radius."""

    radius: float = 0.5
    half_height: float = 0.5

    def validate(self, where):
        super().validate(where)
        _positive(self.radius, "radius", where)
        if not math.isfinite(self.half_height) or self.half_height < 0:
            raise JakobsenError(f"{where}: half_height must be >= 0, got {self.half_height}")

    def penetration(self, q, r):
        axis_point = np.zeros_like(q)
        axis_point[:, 2] = np.clip(q[:, 2], -self.half_height, self.half_height)
        n, length = _unit(q - axis_point, np.array([1.0, 0.0, 0.0]))
        depth = self.radius + r - length
        return n * depth[:, None], depth


@dataclass(frozen=True, kw_only=True)
class Box(_Collider):
    """Solid box with ``half_extents`` (3,) metres, centred on the local origin."""

    half_extents: tuple = (0.5, 0.5, 0.5)

    def validate(self, where):
        super().validate(where)
        _check_half_extents(self.half_extents, where)

    def penetration(self, q, r):
        he = np.asarray(self.half_extents, dtype=np.float64)
        a = np.abs(q) - he
        outside = np.any(a > 0.0, axis=1)
        corr = np.zeros_like(q)
        depth = np.empty(len(q))
        # Outside: push away from the closest surface point (handles edges and corners).
        qo = q[outside]
        n, dist = _unit(qo - np.clip(qo, -he, he), np.array([0.0, 0.0, 1.0]))
        depth[outside] = r[outside] - dist
        corr[outside] = n * depth[outside, None]
        # Inside: leave through the nearest face.
        inside = ~outside
        qi, ai = q[inside], a[inside]
        k = np.argmax(ai, axis=1)
        rows = np.arange(len(qi))
        d_in = r[inside] - ai[rows, k]
        ci = np.zeros_like(qi)
        ci[rows, k] = np.where(qi[rows, k] >= 0.0, 1.0, -1.0) * d_in
        depth[inside] = d_in
        corr[inside] = ci
        return corr, depth


@dataclass(frozen=True, kw_only=True)
class BoxInterior(_Collider):
    """The inside of a box (Jakobsen's cube world): particles are kept within ``half_extents``."""

    half_extents: tuple = (1.0, 1.0, 1.0)

    def validate(self, where):
        super().validate(where)
        _check_half_extents(self.half_extents, where)

    def penetration(self, q, r):
        he = np.asarray(self.half_extents, dtype=np.float64)
        limit = np.maximum(he[None, :] - r[:, None], 0.0)
        corr = np.clip(q, -limit, limit) - q
        depth = np.linalg.norm(corr, axis=1)
        return corr, depth


ColliderShape = _Collider
