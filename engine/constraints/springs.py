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

from ..geometry import quaternions as quat
from ..geometry.reproducible import expm1
from ..constraints.common import check_ends
from ..checks import FLOAT32_MAX, MAX_COORDINATE, check_range
from ..errors import JakobsenError
from ..backend.numpy.rigid import world_inverse_inertia

# The most a spring may turn a body in one substep, rad (see apply_springs).
MAX_TURN = 1.0

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


def turn_bound(springs: Springs, inv_inertia) -> np.ndarray:
    """The most (S,) 1/kg the anchors of each spring can turn its bodies, in any pose: the
    rotational part of the inverse mass along the spring, (r x n)^T I^-1 (r x n), is at most
    |r|^2 times the largest principal inverse moment (r the anchor's arm, fixed in its body)."""
    largest = inv_inertia.max(axis=1)
    return np.einsum("ki,ki->k", springs.local_a, springs.local_a) * largest[springs.a] \
        + np.einsum("ki,ki->k", springs.local_b, springs.local_b) * largest[springs.b]


def resolvable_stiffness(stiffness, w_turn, h: float):
    """The stiffness (S,) N/m a substep of h s can resolve of linear springs of ``stiffness``
    (S,) whose anchors turn their bodies by at most w_turn (S,) 1/kg (``turn_bound``: in any
    pose, so that the stiffness held to does not change as the bodies turn, which would make the
    spring gain energy from its own changing stiffness): at most 1 / (h^2 w_turn).

    The implicit step keeps a stiff spring stable along its line, but a spring anchored off a
    body's centre also spins it, at a rate sqrt(k w_turn); beyond one radian a substep the lever
    arm has turned away before the substep ends and the spring pumps energy in (a 6 ug chip on a
    115 N/m spring 0.3 mm off its centre reached 1e9 m/s). Held to this, it turns it about a
    radian a substep at most; the warning is ``spring_warnings``."""
    limit = 1.0 / np.maximum(h * h * w_turn, 1e-300)
    return np.minimum(stiffness, limit)


def spring_warnings(springs: Springs, bodies, h: float, substeps: int) -> list[str]:
    """The linear springs a substep of h s cannot resolve as set (see ``resolvable_stiffness``),
    as warnings naming them and the stiffness they are held to."""
    if not springs.count:
        return []
    count = bodies.count
    inv_inertia = np.vstack([bodies.inverse_inertia, np.zeros((1, 3))])
    a, b = springs.a, springs.b
    held = resolvable_stiffness(springs.stiffness, turn_bound(springs, inv_inertia), h)
    out = []
    for k in np.flatnonzero(springs.linear & (held < springs.stiffness)):
        ends = " and ".join(f"'{bodies.names[e]}'" for e in (a[k], b[k]) if e < count)
        out.append(f"spring '{springs.names[k]}': its stiffness of {springs.stiffness[k]:g} N/m would spin {ends} "
                   f"(its anchors are off their centres) faster than {substeps} substeps of {h:.3g} s can follow; "
                   f"it acts with at most {held[k]:.3g} N/m (more substeps raise the limit)")
    return out


def apply_springs(springs: Springs, x, q, v, w, inv_mass, inv_inertia, h: float, rest, active, accel=None) -> None:
    """One substep of the springs' forces as impulses on v, w (B+1, 3), in place. rest: (S,)
    the current rest lengths; active: (S,) False for broken springs; accel: (B+1, 3) m/s^2 the
    integrator adds after this (gravity), which an implicit spring's step must foresee (else it
    holds a constant load 1 + h^2 k w times too softly: a 1e9 N/m spring let a weight sag 17,000
    times m g / k at 240 Hz).

    Each spring: explicit (symplectic Euler, which keeps an undamped spring's energy) while the
    substep resolves it (omega h <= 1), implicit (backward Euler, stable at any stiffness) beyond;
    damping exact (exponential) of the speed the spring sees: for an explicit spring the speed at
    the substep's start (not of the speed its own impulse just gave, or a hanging weight would sag
    e^(c h w) too far), for an implicit one the speed after its impulse (which has reversed it:
    damping the old speed on top pushed the wrong way and gained energy every substep).

    Springs whose bodies' springs all together are weak (the sum over them of h^2 k w + h c w at
    most 1, w the inverse mass along each) are stepped all at once; the others one after another,
    each seeing what the ones before did (stepped at once, two stiff dampers on one body each
    took back all of its speed, reversing it)."""
    a, b = springs.a, springs.b
    count = len(inv_mass) - 1
    rot_a, rot_b = quat.to_matrix(q[a]), quat.to_matrix(q[b])
    ia, ib = world_inverse_inertia(rot_a, inv_inertia[a]), world_inverse_inertia(rot_b, inv_inertia[b])
    p1, p2, n, length = spring_lengths(springs, x, q)
    r1, r2 = p1 - x[a], p2 - x[b]
    lin = active & springs.linear
    ang = active & springs.angular
    c1, c2 = quat.cross(r1, n), quat.cross(r2, n)
    w_turn = np.einsum("ki,kij,kj->k", c1, ia, c1) + np.einsum("ki,kij,kj->k", c2, ib, c2)
    w_eff = inv_mass[a] + inv_mass[b] + w_turn
    k = resolvable_stiffness(springs.stiffness, turn_bound(springs, inv_inertia), h)
    c = springs.damping
    mass = ia + ib
    w_ang = np.einsum("kii->k", mass)  # the trace bounds the largest eigenvalue
    ka, ca = springs.angular_stiffness, springs.angular_damping
    strength = np.where(lin, h * w_eff * (h * k + c), 0.0) + np.where(ang, h * w_ang * (h * ka + ca), 0.0)
    load = np.zeros(count + 1)
    np.add.at(load, a, strength)
    np.add.at(load, b, strength)
    load[count] = 0.0
    weak = np.maximum(load[a], load[b]) <= 1.0
    explicit = h * h * k * w_eff <= 1.0
    explicit_turn = h * h * ka * w_ang <= 1.0
    rel = quat.multiply(quat.conjugate(q[a]), q[b])
    # How far B has turned relative to A since rest, as a world rotation vector.
    phi = quat.rotate(q[a], quat.log_rotation(quat.multiply(rel, quat.conjugate(springs.rest_relative))))
    stretch = length - rest

    pull = np.zeros(len(a)) if accel is None else np.einsum(
        "ki,ki->k", n, accel[b] * (inv_mass[b] > 0)[:, None] - accel[a] * (inv_mass[a] > 0)[:, None])

    def linear_impulse(sel, u):
        """Impulses (k,) along the springs ``sel`` whose anchors part at speeds u (k,)."""
        we, kk = w_eff[sel], k[sel]
        ahead = u + pull[sel] * h  # the speed the substep would end with, without this spring
        j = np.where(explicit[sel], -kk * stretch[sel] * h,
                     -h * kk * (stretch[sel] + h * ahead) / (1.0 + h * h * kk * we))
        seen = np.where(explicit[sel], u, ahead + we * j)
        j -= seen * -expm1(-c[sel] * h * we) / np.maximum(we, 1e-300)
        return np.where(we > 0.0, j, 0.0)

    def angular_impulse(sel, rel_w):
        """Angular impulses (k, 3) of the springs ``sel`` whose bodies turn apart at rel_w (k, 3)."""
        W, kk = mass[sel], ka[sel]
        impulse = -kk[:, None] * phi[sel] * h
        stiff = ~explicit_turn[sel]
        if np.any(stiff):
            # P = -h k (phi + h (r + W P)), with the whole inverse inertia W (along one axis only,
            # a body with unequal moments overshot the others).
            system = np.eye(3) + (h * h * kk[stiff])[:, None, None] * W[stiff]
            ahead = phi[sel][stiff] + h * rel_w[stiff]
            impulse[stiff] = -(h * kk[stiff])[:, None] * np.linalg.solve(system, ahead[..., None])[..., 0]
        seen = np.where(stiff[:, None], rel_w + np.einsum("kij,kj->ki", W, impulse), rel_w)
        speed = np.linalg.norm(seen, axis=1)
        axis = seen / np.maximum(speed, 1e-300)[:, None]
        w_axis = np.einsum("ki,kij,kj->k", axis, W, axis)
        return impulse - (speed * -expm1(-ca[sel] * h * w_axis) / np.maximum(w_axis, 1e-300))[:, None] * axis

    def parting(sel):
        return np.einsum("ki,ki->k", n[sel], v[b[sel]] + quat.cross(w[b[sel]], r2[sel])
                         - v[a[sel]] - quat.cross(w[a[sel]], r1[sel]))

    sel = np.flatnonzero(lin & weak)
    if len(sel):
        _push(a[sel], b[sel], linear_impulse(sel, parting(sel))[:, None] * n[sel], r1[sel], r2[sel], ia[sel], ib[sel],
              v, w, inv_mass)
    sel = np.flatnonzero(ang & weak)
    if len(sel):
        impulse = angular_impulse(sel, w[b[sel]] - w[a[sel]])
        np.add.at(w, b[sel], np.einsum("kij,kj->ki", ib[sel], impulse))
        np.subtract.at(w, a[sel], np.einsum("kij,kj->ki", ia[sel], impulse))
    for i in np.flatnonzero((lin | ang) & ~weak):
        sel = np.array([i])
        if lin[i]:
            _push(a[sel], b[sel], linear_impulse(sel, parting(sel))[:, None] * n[sel], r1[sel], r2[sel], ia[sel],
                  ib[sel], v, w, inv_mass)
        if ang[i]:
            impulse = angular_impulse(sel, w[b[sel]] - w[a[sel]])[0]
            w[b[i]] += ib[i] @ impulse
            w[a[i]] -= ia[i] @ impulse
    # A body a spring turns by more than MAX_TURN rad in a substep is beyond it: its anchors'
    # lever arms (and its angle from rest) have turned away before the substep ends, and the
    # spring pumps energy in instead of holding it (a spring's damper at an anchor 0.1 mm off a
    # 6 ug chip's centre spun it at 1e4 rad/s, then to 1e9 m/s). So such a body's spin is held
    # there; a free body, with no spring, turns as fast as it likes.
    held = np.unique(np.concatenate([a[active], b[active]]))
    held = held[inv_mass[held] > 0.0]
    if len(held):
        spin = np.linalg.norm(w[held], axis=1)
        fast = spin * h > MAX_TURN
        if np.any(fast):
            w[held[fast]] *= (MAX_TURN / (spin[fast] * h))[:, None]


def _push(a, b, impulse, r1, r2, ia, ib, v, w, inv_mass) -> None:
    """Impulses (k, 3) on the anchors of springs from A to B (B pulled along, A back), in place."""
    np.add.at(v, b, inv_mass[b, None] * impulse)
    np.add.at(w, b, np.einsum("kij,kj->ki", ib, quat.cross(r2, impulse)))
    np.subtract.at(v, a, inv_mass[a, None] * impulse)
    np.subtract.at(w, a, np.einsum("kij,kj->ki", ia, quat.cross(r1, impulse)))


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
