"""The sweep of fast bodies, the numpy reference: conservative advancement of the fast queries
(sample points against shapes), all at once. ``backend/numba/sweep.py`` does the same query by
query, with the same arithmetic; ``collision/sweep.py`` says what the sweep is for."""

from __future__ import annotations

import numpy as np

from ...geometry import quaternions as quat
from .distance import distance


def _interpolate(x0, q0, dx, phi, f):
    """Poses at fractions f (k,) of the motion (dx, phi) from (x0, q0): (k, 3), (k, 4)."""
    return x0 + dx * f[:, None], quat.multiply(quat.exp_rotation(phi * f[:, None]), q0)


def advance_queries(geo, x0, q0, dx, phi, local, radius, owner, target, shape, allow, speed, world, iterations,
                    bisections, touch):
    """For each query k (a point ``local`` (k, 3) with ``radius`` of body ``owner`` against shape
    ``shape`` of body ``target``, or of the world): the fraction hit (k,) of the substep's motion
    at which it first touches (clearance within ``touch * allow``), inf where it does not; and
    where it is then: the point p, the owner's and the target's centres xo, xt, the shape's normal
    n (k, 3), the depth (k,) (undefined where hit is inf).

    speed (k,) bounds how fast (m per unit of the motion) each query's clearance can shrink: a
    step of clearance / speed can never pass the surface. A query still short of it after
    ``iterations`` steps (a point gliding in at a shallow angle) but inside at the end of the
    motion is found by ``bisections`` halvings between the two."""
    s_pos, s_rot = geo[15][shape], geo[14][shape]
    body_target = target < world

    def geometry(f, sel):
        xo, qo = _interpolate(x0[owner[sel]], q0[owner[sel]], dx[owner[sel]], phi[owner[sel]], f)
        xt, qt = _interpolate(x0[target[sel]], q0[target[sel]], dx[target[sel]], phi[target[sel]], f)
        p = xo + quat.rotate(qo, local[sel])
        on_body = body_target[sel]
        spos = np.where(on_body[:, None], xt + quat.rotate(qt, s_pos[sel]), s_pos[sel])
        srot = np.where(on_body[:, None], quat.multiply(qt, s_rot[sel]), s_rot[sel])
        back = quat.conjugate(srot)
        q_local = quat.rotate(back, p - spos)
        prefer = quat.rotate(back, xo - spos)
        n_local, depth = distance(geo, shape[sel], q_local, radius[sel], prefer, True)
        return p, xo, xt, quat.rotate(srot, n_local), depth

    def clearance_at(f, sel):
        return -geometry(f, sel)[4]

    k = len(speed)
    f = np.zeros(k)
    hit = np.full(k, np.inf)
    live = np.arange(k)
    for _ in range(iterations):
        if not len(live):
            break
        c = clearance_at(f[live], live)
        touching = c <= touch * allow[live]
        hit[live[touching]] = f[live[touching]]
        f[live] += np.where(touching, 0.0, c / speed[live])
        live = live[~touching & (f[live] < 1.0)]
    if len(live):
        inside = clearance_at(np.ones(len(live)), live) <= touch * allow[live]
        live = live[inside]
        lo, hi = f[live], np.ones(len(live))
        for _ in range(bisections):
            mid = 0.5 * (lo + hi)
            touching = clearance_at(mid, live) <= touch * allow[live]
            hi = np.where(touching, mid, hi)
            lo = np.where(touching, lo, mid)
        hit[live] = hi
    p, xo, xt, n = (np.zeros((k, 3)) for _ in range(4))
    depth = np.zeros(k)
    got = np.flatnonzero(np.isfinite(hit))
    if len(got):
        p[got], xo[got], xt[got], n[got], depth[got] = geometry(hit[got], got)
    return hit, p, xo, xt, n, depth


def _bounds(owner, target, shape, arm, x0, move, spin, thickness, shape_thickness, bound, world, contact_depth):
    """For points at ``arm`` from their owner's centre against ``shape`` of ``target``: the depth
    a substep may drive them in (``contact_depth`` of the thinner shape) and a bound on how fast,
    per unit of the substep's motion, they can close on the surface."""
    thick = np.where(target < world, thickness[target], shape_thickness[shape])
    allow = contact_depth * np.minimum(thickness[owner], thick)
    reach = np.linalg.norm(x0[owner] - x0[target], axis=1) + arm + move[owner] + spin[owner] * bound[owner]
    speed = move[owner] + spin[owner] * arm + np.where(target < world, move[target] + spin[target] * reach, 0.0)
    return allow, speed


def fast_hits(geo, x0, q0, dx, phi, sides, side_first, queries, local, radius, arm, body_arm, thickness,
              shape_thickness, bound, world, contact_depth, iterations, bisections, touch):
    """The hits of the substep's fast queries, in query order: the fraction of the motion at
    which each first touches, its side (a row of ``sides``: owner, target, shape), where it is
    then (p, xo, xt, n) and the depth allowed and found. A query is fast when the bound on its
    closing speed exceeds the depth allowed (``_bounds``); a side is first bounded by its owner's
    longest arm (``body_arm``), so the queries of a slow side are not looked at one by one."""
    move = np.linalg.norm(dx, axis=1)
    spin = np.linalg.norm(phi, axis=1)
    o, t, sh = sides.T
    side_allow, side_speed = _bounds(o, t, sh, body_arm[o], x0, move, spin, thickness, shape_thickness, bound, world,
                                     contact_depth)
    fast_sides = np.flatnonzero(side_speed > side_allow)
    empty3 = np.zeros((0, 3))
    nothing = (np.zeros(0), np.zeros(0, np.int64), empty3, empty3, empty3, empty3, np.zeros(0), np.zeros(0))
    if not len(fast_sides):
        return nothing
    first, counts = side_first[fast_sides], np.diff(side_first)[fast_sides]
    rows = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    side = np.repeat(fast_sides, counts)
    point, owner, target, shape = queries[rows].T
    allow, speed = _bounds(owner, target, shape, arm[point], x0, move, spin, thickness, shape_thickness, bound, world,
                           contact_depth)
    fast = np.flatnonzero(speed > allow)
    if not len(fast):
        return nothing
    point, owner, target, shape, allow, speed, side = (a[fast] for a in (point, owner, target, shape, allow, speed,
                                                                          side))
    hit, p, xo, xt, n, depth = advance_queries(geo, x0, q0, dx, phi, local[point], radius[point], owner, target, shape,
                                               allow, speed, world, iterations, bisections, touch)
    got = np.flatnonzero(np.isfinite(hit))
    return hit[got], side[got], p[got], xo[got], xt[got], n[got], allow[got], depth[got]
