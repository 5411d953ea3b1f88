"""A path for a vehicle to follow: a polyline with its arc length, tangents, curvature and a speed
factor per point, and the closest-point search the controller runs each substep.

Shapes: P points. The path lies on the ground as seen from above: curvature and headings are
measured about the vehicle's up axis (the world's +Z unless given).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import JakobsenError
from ..geometry.reproducible import arctan2, matmul


@dataclass(frozen=True)
class Path:
    """points (P, 3) m; s (P,) arc length from the first point; tangent (P, 3) unit; curvature
    (P,) 1/m, signed (positive: the path turns left about ``up``), smoothed over about a
    wheelbase; sharpness (P,) 1/m, the same of the unsigned turning (an S's bend does not cancel
    out at its middle: what a speed limit needs); speed (P,) factors of the target speed;
    cyclic: the last point joins the first."""

    points: np.ndarray
    s: np.ndarray
    tangent: np.ndarray
    curvature: np.ndarray
    sharpness: np.ndarray
    speed: np.ndarray
    cyclic: bool
    up: np.ndarray

    @property
    def length(self) -> float:
        return float(self.s[-1])

    def closest(self, p: np.ndarray, hint: int, window: int = 64) -> tuple[int, float, np.ndarray]:
        """The segment k, arc length and point of the path closest to ``p`` (3,), searched among
        the segments from ``hint`` - 4 to ``hint`` + ``window`` (all of them when hint < 0), so a
        path that comes back near itself (a figure of eight) is followed in order."""
        n = len(self.points) - 1
        if hint < 0 or n <= window:
            segments = np.arange(n)
        else:
            segments = np.arange(hint - 4, hint + window)
            segments = segments % n if self.cyclic else segments[(segments >= 0) & (segments < n)]
        a, b = self.points[segments], self.points[segments + 1]
        ab = b - a
        u = np.clip(np.einsum("ki,ki->k", p - a, ab) / np.maximum(np.einsum("ki,ki->k", ab, ab), 1e-18), 0.0, 1.0)
        c = a + u[:, None] * ab
        d = np.einsum("ki,ki->k", p - c, p - c)
        i = int(np.argmin(d))
        k = int(segments[i])
        s = float(self.s[k] + u[i] * (self.s[k + 1] - self.s[k]))
        return k, s, c[i]

    def sample(self, s: float, values: np.ndarray) -> np.ndarray:
        """``values`` (P, ...) interpolated at arc length s (wrapped on a cyclic path, held at the ends)."""
        if self.cyclic:
            s = s % self.length
        s = min(max(s, 0.0), self.length)
        k = int(min(max(np.searchsorted(self.s, s, side="right") - 1, 0), len(self.s) - 2))
        span = self.s[k + 1] - self.s[k]
        u = 0.0 if span <= 0 else (s - self.s[k]) / span
        return values[k] + u * (values[k + 1] - values[k])

    def ahead(self, s: float, distance: float) -> tuple[np.ndarray, np.ndarray]:
        """Arc lengths (k,) from s to s + distance along the path (points and the end), and the
        distance (k,) to each from s; a path that ends stops at its end."""
        if self.cyclic:
            offsets = (self.s - s) % self.length
            keep = offsets <= distance
            return self.s[keep], offsets[keep]
        keep = (self.s > s) & (self.s <= s + distance)
        return self.s[keep], self.s[keep] - s


def make_path(points, speed=None, *, cyclic: bool = False, up=(0.0, 0.0, 1.0), smoothing: float = 1.0,
              where: str = "vehicle") -> Path:
    """A ``Path`` through ``points`` (P, 3) world m (consecutive duplicates dropped); speed: (P,)
    factors of the target speed (default 1); smoothing: m, the span curvature is averaged over."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) < 2 or not np.all(np.isfinite(p)):
        raise JakobsenError(f"{where}: its path must be at least two finite points (P, 3)")
    factors = np.ones(len(p)) if speed is None else np.asarray(speed, dtype=np.float64).reshape(-1)
    if len(factors) != len(p) or not np.all(np.isfinite(factors)) or np.any(factors < 0):
        raise JakobsenError(f"{where}: the path's speed factors must be one non-negative number per point")
    up = np.asarray(up, dtype=np.float64)
    up = up / np.linalg.norm(up)
    keep = np.ones(len(p), bool)
    keep[1:] = np.linalg.norm(np.diff(p, axis=0), axis=1) > 1e-6
    p, factors = p[keep], factors[keep]
    if cyclic and np.linalg.norm(p[-1] - p[0]) > 1e-6:
        p, factors = np.vstack([p, p[:1]]), np.append(factors, factors[0])
    if len(p) < 2:
        raise JakobsenError(f"{where}: its path has no length")
    seg = np.diff(p, axis=0)
    # On the ground: the heading is measured in the plane normal to up.
    flat = seg - np.outer(matmul(seg, up), up)
    lengths = np.linalg.norm(seg, axis=1)
    s = np.concatenate([[0.0], np.cumsum(lengths)])
    if s[-1] < 1e-3:
        raise JakobsenError(f"{where}: its path is shorter than a millimetre")
    tangent_seg = flat / np.maximum(np.linalg.norm(flat, axis=1, keepdims=True), 1e-12)
    # Point tangents: the mean of the segments on either side.
    t = np.vstack([tangent_seg[:1], tangent_seg[:-1] + tangent_seg[1:], tangent_seg[-1:]])
    if cyclic:
        t[0] = t[-1] = tangent_seg[0] + tangent_seg[-1]
    t /= np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    # Heading about up (unwrapped) against arc length; curvature is its slope over `smoothing`.
    # Not np.arctan2 nor @: np.arctan2 gave another last bit in 11 of the follow_path example's
    # 97 headings on numpy 1.26 and in 1 on numpy 2.5, which steered the car differently on
    # Blender 4.x and 5.x (see ``geometry.reproducible``).
    e1 = np.cross(up, [1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.cross(up, [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(up, e1)
    heading = np.unwrap(arctan2(matmul(t, e2), matmul(t, e1)))
    half = max(smoothing, 1e-3) / 2
    turning = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(heading)))])
    curvature = _slope(s, heading, half, cyclic)
    # The sharpest local turning within the window (its mean would dip where two bends meet).
    local = _slope(s, turning, half / 4, cyclic)
    gap = np.abs(s[:, None] - s[None, :])
    if cyclic:
        gap = np.minimum(gap, s[-1] - gap)
    sharpness = np.max(np.where(gap <= half, local[None, :], 0.0), axis=1)
    if not math.isfinite(float(np.max(np.abs(curvature)))):
        raise JakobsenError(f"{where}: its path's curvature is not a number")
    return Path(points=p, s=s, tangent=t, curvature=curvature, sharpness=sharpness, speed=factors,
                cyclic=bool(cyclic), up=up)


def _slope(s: np.ndarray, angle: np.ndarray, half: float, cyclic: bool) -> np.ndarray:
    """The mean slope (P,) of ``angle`` against arc length over [s - half, s + half] (wrapped
    on a cyclic path, cut at the ends of an open one)."""
    if cyclic:
        # Extend by one lap either side.
        total, turn = s[-1], angle[-1] - angle[0]
        ss = np.concatenate([s[:-1] - total, s, s[1:] + total])
        aa = np.concatenate([angle[:-1] - turn, angle, angle[1:] + turn])
    else:
        ss, aa = s, angle
    span = np.minimum(s + half, ss[-1]) - np.maximum(s - half, ss[0])
    return (np.interp(s + half, ss, aa) - np.interp(s - half, ss, aa)) / np.maximum(span, 1e-9)
