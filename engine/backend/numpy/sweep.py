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
