"""Tracks: what changes over time, as data the model holds (no Python callables in the model or
the solver's loop).

A ``Track`` is values sampled at a uniform rate from t = 0 (sample i at t = i / rate); between
samples it is interpolated linearly (poses: positions linearly, rotations by slerp), and after the
last sample the last value holds. The add-on fills tracks from what it samples per frame; an engine
user may still pass a function, which ``ModelBuilder.finalize`` samples once, at the builder's
``track_rate`` over its ``track_duration``.

``BodyTracks`` packs the pose tracks of every body that follows an animation (kinematic bodies,
moving colliders, and the targets of Follow Position / Rotation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import JakobsenError
from .geometry import quaternions as quat
from .geometry.reproducible import arccos


@dataclass(frozen=True)
class Track:
    """Samples (k, ...) at ``rate`` per second from t = 0: numbers (k,) for a setting, or
    transforms (k, 4, 4) for a motion (the transform from the rest pose to the pose at t)."""

    rate: float
    values: np.ndarray

    def __post_init__(self):
        values = np.asarray(self.values, dtype=np.float64)
        if not (math.isfinite(self.rate) and self.rate > 0.0):
            raise JakobsenError(f"track: rate must be a positive number of samples per second, got {self.rate}")
        if len(values) == 0 or not np.all(np.isfinite(values)):
            raise JakobsenError("track: values must be a non-empty array of finite numbers")
        object.__setattr__(self, "values", values)

    @staticmethod
    def from_function(function, rate: float, duration: float, where: str) -> "Track":
        """Sample ``function(t)`` at ``rate`` over [0, duration]."""
        count = int(math.ceil(duration * rate)) + 1
        out = []
        for i in range(count):
            t = i / rate
            try:
                value = np.asarray(function(t), dtype=np.float64)
            except Exception as error:  # the user's function failed: say where
                raise JakobsenError(f"{where}: calling it at t = {t:g} s failed ({type(error).__name__}: {error})")
            if not np.all(np.isfinite(value)):
                raise JakobsenError(f"{where}: its value at t = {t:g} s is not a finite number")
            out.append(value)
        return Track(rate=rate, values=np.array(out))

    def __call__(self, t: float) -> np.ndarray:
        return self.at(t)

    def at(self, t: float) -> np.ndarray:
        """Linear interpolation at time t (numbers; for poses use ``BodyTracks``)."""
        u = min(max(t * self.rate, 0.0), len(self.values) - 1.0)
        k = min(int(u), len(self.values) - 2) if len(self.values) > 1 else 0
        if len(self.values) == 1:
            return self.values[0]
        a = u - k
        return self.values[k] + a * (self.values[k + 1] - self.values[k])


def as_track(value, rate: float, duration: float, where: str):
    """A number stays a number; a ``Track`` stays; a function becomes a ``Track`` sampled now."""
    if isinstance(value, Track):
        return value
    if callable(value):  # (a Track is callable too, for the code that evaluates settings over time)
        return Track.from_function(value, rate, duration, where)
    return value


@dataclass(frozen=True)
class BodyTracks:
    """Sampled poses of the bodies that follow an animation (B bodies, N samples in all).

    start: (B + 1,) body k's samples are start[k]:start[k + 1] (none: it has no animation);
    rate: (B,) samples per second; position (N, 3) m and orientation (N, 4): the body's centre of
    mass and body frame in the world at t = i / rate.
    """

    start: np.ndarray
    rate: np.ndarray
    position: np.ndarray
    orientation: np.ndarray

    def has(self, k: int) -> bool:
        return self.start[k + 1] > self.start[k]

    def poses(self, bodies: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Positions (k, 3) and orientations (k, 4) of ``bodies`` (k,), each with a track, at time t."""
        first, end = self.start[bodies], self.start[bodies + 1]
        u = np.clip(t * self.rate[bodies], 0.0, (end - first - 1).astype(np.float64))
        i = np.minimum(np.floor(u).astype(np.int64), np.maximum(end - first - 2, 0))
        a = (u - i)[:, None]
        lo = first + i
        hi = np.minimum(lo + 1, end - 1)
        x = self.position[lo] + a * (self.position[hi] - self.position[lo])
        return x, slerp(self.orientation[lo], self.orientation[hi], a[:, 0])


def slerp(q0: np.ndarray, q1: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Spherical interpolation (k, 4) from q0 to q1 by fractions a (k,), the short way round."""
    dot = np.sum(q0 * q1, axis=1)
    q1 = np.where((dot < 0.0)[:, None], -q1, q1)
    dot = np.minimum(np.abs(dot), 1.0)
    theta = arccos(dot)  # (not np.arccos: see ``geometry.reproducible``)
    small = theta < 1e-6
    s = np.sin(np.where(small, 1.0, theta))
    w0 = np.where(small, 1.0 - a, np.sin((1.0 - a) * theta) / s)
    w1 = np.where(small, a, np.sin(a * theta) / s)
    return quat.normalize(w0[:, None] * q0 + w1[:, None] * q1)


def body_tracks(motions, rest_position, rest_orientation, names, rate: float, duration: float) -> BodyTracks:
    """Pack every body's motion (None, a ``Track`` of transforms (k, 4, 4), or a function of t
    giving one) into ``BodyTracks``: the body's pose is the transform applied to its rest pose."""
    starts, rates, positions, orientations = [0], [], [], []
    for k, motion in enumerate(motions):
        rates.append(rate)
        if motion is None:
            starts.append(starts[-1])
            continue
        where = f"rigid body '{names[k]}': its motion"
        track = motion if isinstance(motion, Track) else Track.from_function(motion, rate, duration, where)
        if track.values.ndim == 1:
            raise JakobsenError(f"{where} must give 4x4 transforms, not numbers")
        m = track.values
        if m.ndim != 3 or m.shape[1:] != (4, 4):
            raise JakobsenError(f"{where} must give 4x4 transforms, got shape {m.shape[1:]}")
        rot = m[:, :3, :3]
        if not np.allclose(np.einsum("kji,kjl->kil", rot, rot), np.eye(3), atol=1e-5) or \
                np.any(np.linalg.det(rot) < 0.0):
            raise JakobsenError(f"{where} must be rotations and translations (no scale or shear)")
        rates[-1] = track.rate
        positions.append(np.einsum("kij,j->ki", rot, rest_position[k]) + m[:, :3, 3])
        q = quat.multiply(quat.from_matrix(rot), np.broadcast_to(rest_orientation[k], (len(m), 4)))
        for i in range(1, len(q)):  # the short way round from sample to sample
            if np.dot(q[i], q[i - 1]) < 0.0:
                q[i] = -q[i]
        orientations.append(q)
        starts.append(starts[-1] + len(m))
    return BodyTracks(start=np.array(starts, dtype=np.int64), rate=np.array(rates, dtype=np.float64),
                      position=np.concatenate(positions) if positions else np.zeros((0, 3)),
                      orientation=np.concatenate(orientations) if orientations else np.zeros((0, 4)))
