"""Springs between rigid bodies (or a body and the world): Cinema 4D's Spring object, and the
suspension spring of a Wheel Suspension connector.

A linear spring pulls its two anchors towards a rest length (or, with an axis, holds B's anchor
at a rest position along an axis fixed in A); an angular one turns the bodies towards their rest
relative rotation. Forces are applied as impulses at the start of every substep (symplectic Euler,
which keeps an undamped spring's energy); a spring too stiff for the substep (omega h > 1), linear
or angular, is integrated implicitly instead, which is stable at any stiffness but damps a little. Damping is
always exact (exponential), so no setting can make it unstable.

Shapes: S springs, B bodies (index B is the world).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import quaternions as quat
from .connector_common import check_ends
from .checks import FLOAT32_MAX, MAX_COORDINATE, check_range
from .errors import JakobsenError
from .kernels_rigid import world_inverse_inertia

_KINDS = ("linear", "angular", "both")


@dataclass(frozen=True)
class Springs:
    """a, b: (S,) bodies; local_a, local_b: (S, 3) anchors in the bodies' frames; axis_a: (S, 3)
    the axis in A's frame along which the spring acts (zeros: along the line between anchors);
    linear, angular: (S,) bool; rest: (S,) m, the rest length (or position along the axis) at the
    start; stiffness N/m, damping N s/m, angular_stiffness N m/rad, angular_damping N m s/rad:
    (S,); rest_relative: (S, 4) B's orientation relative to A's at rest; elastic_compression,
    elastic_stretch: (S,) m (inf: perfectly elastic); break_stretch, break_compression: (S,) m
    from the original rest (inf: never breaks); names: (S,)."""

    a: np.ndarray
    b: np.ndarray
    local_a: np.ndarray
    local_b: np.ndarray
    axis_a: np.ndarray
    linear: np.ndarray
    angular: np.ndarray
    rest: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    angular_stiffness: np.ndarray
    angular_damping: np.ndarray
    rest_relative: np.ndarray
    elastic_compression: np.ndarray
    elastic_stretch: np.ndarray
    break_stretch: np.ndarray
    break_compression: np.ndarray
    names: tuple

    @property
    def count(self) -> int:
        return len(self.a)


def empty_springs() -> Springs:
    return finalize_springs([], None, 0)


def _setting(value, what: str, where: str, *, infinite: bool = False) -> float:
    v = float(value)
    if math.isnan(v) or v < 0 or (math.isinf(v) and not infinite) or (math.isfinite(v) and v > FLOAT32_MAX):
        raise JakobsenError(f"{where}: {what} must be a non-negative number (finite in single precision), "
                            f"got {value!r}")
    return v


def check_spring(a, b, anchor_a, anchor_b, name: str, body_count: int, *, kind="linear", rest_length=None,
                 stiffness=100.0, damping=0.0, angular_stiffness=0.0, angular_damping=0.0, elastic_limits=None,
                 break_stretch=math.inf, break_compression=math.inf, axis=None) -> dict:
    """Validate one spring; returns the spec ``finalize_springs`` takes."""
    where = f"spring '{name}'"
    if kind not in _KINDS:
        raise JakobsenError(f"{where}: type must be one of {', '.join(_KINDS)}; got {kind!r}")
    check_ends(where, a, b, body_count)
    pa, pb = np.asarray(anchor_a, float), np.asarray(anchor_b, float)
    if pa.shape != (3,) or pb.shape != (3,) or not np.all(np.isfinite(pa) & np.isfinite(pb)):
        raise JakobsenError(f"{where}: the anchors must be 3 finite numbers each")
    check_range(np.stack([pa, pb]), "anchor", where, limit=MAX_COORDINATE, unit="m")
    linear = kind in ("linear", "both")
    if axis is not None:
        u = np.asarray(axis, float)
        u = u / np.linalg.norm(u)
        rest = float(rest_length)  # a signed position along the axis
        if not (math.isfinite(rest) and abs(rest) <= MAX_COORDINATE):
            raise JakobsenError(f"{where}: the rest position must be finite (at most {MAX_COORDINATE:g} m)")
    else:
        u = np.zeros(3)
        distance = float(np.linalg.norm(pb - pa))
        rest = distance if rest_length is None else _setting(rest_length, "the rest length", where)
        if linear and distance < 1e-9 and rest < 1e-9:
            raise JakobsenError(f"{where}: its anchors coincide and its rest length is 0, so it has no direction "
                                "to pull in; move an anchor or give a rest length")
    lo, hi = (math.inf, math.inf) if elastic_limits is None else elastic_limits
    return dict(a=a, b=b, anchor_a=pa, anchor_b=pb, axis=u, linear=linear, angular=kind in ("angular", "both"),
                rest=rest, stiffness=_setting(stiffness, "the stiffness", where),
                damping=_setting(damping, "the damping", where),
                angular_stiffness=_setting(angular_stiffness, "the angular stiffness", where),
                angular_damping=_setting(angular_damping, "the angular damping", where),
                elastic_compression=_setting(lo, "the elastic limit (compression)", where, infinite=True),
                elastic_stretch=_setting(hi, "the elastic limit (stretch)", where, infinite=True),
                break_stretch=_setting(break_stretch, "the breaking stretch", where, infinite=True),
                break_compression=_setting(break_compression, "the breaking compression", where, infinite=True),
                name=name)


def finalize_springs(specs: list[dict], bodies, world: int) -> Springs:
    n = len(specs)

    def col(key, shape=(), dtype=float):
        return np.array([s[key] for s in specs], dtype).reshape((n,) + shape)

    a = np.array([world if s["a"] is None else s["a"] for s in specs], np.int64)
    b = np.array([world if s["b"] is None else s["b"] for s in specs], np.int64)
    if n:
        pos = np.vstack([bodies.rest_position, np.zeros((1, 3))])
        ori = np.vstack([bodies.rest_orientation, [[1.0, 0, 0, 0]]])
        inv_a, inv_b = quat.conjugate(ori[a]), quat.conjugate(ori[b])
        local_a = quat.rotate(inv_a, col("anchor_a", (3,)) - pos[a])
        local_b = quat.rotate(inv_b, col("anchor_b", (3,)) - pos[b])
        axis_a = quat.rotate(inv_a, col("axis", (3,)))
        rest_relative = quat.multiply(inv_a, ori[b])
    else:
        local_a = local_b = axis_a = np.zeros((0, 3))
        rest_relative = np.zeros((0, 4))
    return Springs(a=a, b=b, local_a=local_a, local_b=local_b, axis_a=axis_a, linear=col("linear", (), bool),
                   angular=col("angular", (), bool), rest=col("rest"), stiffness=col("stiffness"),
                   damping=col("damping"), angular_stiffness=col("angular_stiffness"),
                   angular_damping=col("angular_damping"), rest_relative=rest_relative,
                   elastic_compression=col("elastic_compression"), elastic_stretch=col("elastic_stretch"),
                   break_stretch=col("break_stretch"), break_compression=col("break_compression"),
                   names=tuple(s["name"] for s in specs))


def spring_lengths(springs: Springs, x, q):
    """Anchors p1, p2 (S, 3), the direction n (S, 3) the spring pulls B along, and its length
    (S,) m (for an axis spring: B's anchor's position along the axis)."""
    p1 = x[springs.a] + quat.rotate(q[springs.a], springs.local_a)
    p2 = x[springs.b] + quat.rotate(q[springs.b], springs.local_b)
    d = p2 - p1
    along = np.any(springs.axis_a != 0.0, axis=1)
    dist = np.linalg.norm(d, axis=1)
    n = d / np.maximum(dist, 1e-12)[:, None]
    n[along] = quat.rotate(q[springs.a[along]], springs.axis_a[along])
    length = np.where(along, np.einsum("ki,ki->k", n, d), dist)
    return p1, p2, n, length


def apply_springs(springs: Springs, x, q, v, w, inv_mass, inv_inertia, h: float, rest, active) -> None:
    """One substep of the springs' forces as impulses on v, w (B+1, 3), in place. rest: (S,)
    the current rest lengths; active: (S,) False for broken springs."""
    a, b = springs.a, springs.b
    rot_a, rot_b = quat.to_matrix(q[a]), quat.to_matrix(q[b])
    ia, ib = world_inverse_inertia(rot_a, inv_inertia[a]), world_inverse_inertia(rot_b, inv_inertia[b])
    p1, p2, n, length = spring_lengths(springs, x, q)
    r1, r2 = p1 - x[a], p2 - x[b]
    lin = active & springs.linear
    if np.any(lin):
        c1, c2 = quat.cross(r1, n), quat.cross(r2, n)
        w_eff = inv_mass[a] + inv_mass[b] + np.einsum("ki,kij,kj->k", c1, ia, c1) + np.einsum("ki,kij,kj->k", c2, ib, c2)
        u1 = v[a] + quat.cross(w[a], r1)
        u2 = v[b] + quat.cross(w[b], r2)
        vn = np.einsum("ki,ki->k", n, u2 - u1)
        k, c = springs.stiffness, springs.damping
        stretch = length - rest
        explicit = h * h * k * w_eff <= 1.0
        j = np.where(explicit, -k * stretch * h, -h * k * (stretch + h * vn) / (1.0 + h * h * k * w_eff))
        # Damping takes its exact share of the speed the spring had at the substep's start (not
        # of the speed its own impulse just gave, or a hanging weight would sag e^(c h w) too far).
        j -= vn * -np.expm1(-c * h * w_eff) / np.maximum(w_eff, 1e-300)
        j = np.where(lin & (w_eff > 0), j, 0.0)
        impulse = j[:, None] * n
        np.add.at(v, b, inv_mass[b, None] * impulse)
        np.add.at(w, b, np.einsum("kij,kj->ki", ib, quat.cross(r2, impulse)))
        np.subtract.at(v, a, inv_mass[a, None] * impulse)
        np.subtract.at(w, a, np.einsum("kij,kj->ki", ia, quat.cross(r1, impulse)))
    ang = active & springs.angular
    if np.any(ang):
        # How far B has turned relative to A since rest, as a world rotation vector.
        rel = quat.multiply(quat.conjugate(q[a]), q[b])
        phi = quat.rotate(q[a], quat.log_rotation(quat.multiply(rel, quat.conjugate(springs.rest_relative))))
        mass = ia + ib
        rel_w = w[b] - w[a]
        k = springs.angular_stiffness
        # As the linear springs: explicit while the substep resolves the spring (omega h <= 1),
        # implicit (backward Euler along the way it is turned, stable at any stiffness) beyond;
        # explicit, a stiff one gained energy every substep and blew up.
        ahead = phi + h * rel_w
        ahead_len = np.linalg.norm(ahead, axis=1)
        toward = ahead / np.maximum(ahead_len, 1e-300)[:, None]
        w_turn = np.einsum("ki,kij,kj->k", toward, mass, toward)
        explicit = (h * h * k * w_turn <= 1.0)[:, None]
        impulse = np.where(explicit, -k[:, None] * phi * h, -(h * k / (1.0 + h * h * k * w_turn))[:, None] * ahead)
        speed = np.linalg.norm(rel_w, axis=1)
        axis = rel_w / np.maximum(speed, 1e-300)[:, None]
        w_eff = np.einsum("ki,kij,kj->k", axis, mass, axis)
        impulse -= (speed * -np.expm1(-springs.angular_damping * h * w_eff) / np.maximum(w_eff, 1e-300))[:, None] * axis
        impulse[~ang] = 0.0
        np.add.at(w, b, np.einsum("kij,kj->ki", ib, impulse))
        np.subtract.at(w, a, np.einsum("kij,kj->ki", ia, impulse))


def update_springs(springs: Springs, x, q, rest, active, broken_at, t: float) -> None:
    """After a substep: springs past their breaking length break (``broken_at`` gets t), those
    past their elastic limits take a new rest length (plastic), in place."""
    if not springs.count:
        return
    _, _, _, length = spring_lengths(springs, x, q)
    lin = active & springs.linear
    snap = lin & ((length > springs.rest + springs.break_stretch) | (length < springs.rest - springs.break_compression))
    broken_at[snap] = t
    active[snap] = False
    over = lin & ~snap & (length - rest > springs.elastic_stretch)
    rest[over] = length[over] - springs.elastic_stretch[over]
    under = lin & ~snap & (rest - length > springs.elastic_compression)
    rest[under] = length[under] + springs.elastic_compression[under]
