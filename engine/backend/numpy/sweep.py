"""The sweep of fast bodies, the numpy reference: each body's motion over the substep,
conservative advancement of the fast queries (sample points against shapes), all at once, and
each body's correction from its hits. ``backend/numba/sweep.py`` does the same query by query,
with the same arithmetic; ``collision/sweep.py`` says what the sweep is for."""

from __future__ import annotations

import numpy as np

from ...geometry import quaternions as quat
from .distance import distance


def _interpolate(x0, q0, dx, phi, f):
    """Poses at fractions f (k,) of the motion (dx, phi) from (x0, q0): (k, 3), (k, 4)."""
    return x0 + dx * f[:, None], quat.multiply(quat.exp_rotation(phi * f[:, None]), q0)


def advance_queries(geo, x0, q0, dx, phi, local, radius, owner, target, shape, allow, speed, world, iterations,
                    bisections, touch, samples):
    """For each query k (a point ``local`` (k, 3) with ``radius`` of body ``owner`` against shape
    ``shape`` of body ``target``, or of the world): the fraction hit (k,) of the substep's motion
    at which it first touches (clearance within ``touch * allow``), inf where it does not; and
    where it is then: the point p, the owner's and the target's centres xo, xt, the shape's normal
    n (k, 3), the depth (k,), and the deepest it goes over the rest of the motion, turns and all
    (k,: sampled from the hit to the end, see below, at most ``samples`` times, else inf;
    undefined where hit is inf).

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
    depth, deepest = np.zeros(k), np.zeros(k)
    got = np.flatnonzero(np.isfinite(hit))
    if len(got):
        p[got], xo[got], xt[got], n[got], depth[got] = geometry(hit[got], got)
        # Fractions evenly from the hit to the end, so many that the point closes at most
        # ``allow`` between two (``speed`` bounds that): it cannot pass through a shape (at least
        # four times as thick) unseen. Where that takes more than ``samples``: inf.
        need = speed[got] * (1.0 - hit[got]) / allow[got]
        within = need <= samples
        steps = np.where(within, np.maximum(np.ceil(np.where(within, need, 0.0)), 1.0), 0.0)
        deepest[got] = np.where(within, depth[got], np.inf)
        for j in range(1, int(steps.max(initial=0.0)) + 1):
            sel = np.flatnonzero(j <= steps)
            if len(sel):
                at = hit[got[sel]] + (1.0 - hit[got[sel]]) * j / steps[sel]
                deepest[got[sel]] = np.maximum(deepest[got[sel]], geometry(at, got[sel])[4])
    return hit, p, xo, xt, n, depth, deepest


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
              shape_thickness, bound, world, contact_depth, iterations, bisections, touch, samples):
    """The hits of the substep's fast queries, in query order: the fraction of the motion at
    which each first touches, its side (a row of ``sides``: owner, target, shape), where it is
    then (p, xo, xt, n), the depth allowed and found, and the deepest it goes after (see
    ``advance_queries``: sampled at most ``samples`` times). A query is fast when the bound on its
    closing speed exceeds the depth allowed (``_bounds``); a side is first bounded by its owner's
    longest arm (``body_arm``), so the queries of a slow side are not looked at one by one."""
    move = np.linalg.norm(dx, axis=1)
    spin = np.linalg.norm(phi, axis=1)
    o, t, sh = sides.T
    side_allow, side_speed = _bounds(o, t, sh, body_arm[o], x0, move, spin, thickness, shape_thickness, bound, world,
                                     contact_depth)
    fast_sides = np.flatnonzero(side_speed > side_allow)
    empty3 = np.zeros((0, 3))
    nothing = (np.zeros(0), np.zeros(0, np.int64), empty3, empty3, empty3, empty3, np.zeros(0), np.zeros(0),
               np.zeros(0))
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
    hit, p, xo, xt, n, depth, deepest = advance_queries(geo, x0, q0, dx, phi, local[point], radius[point], owner,
                                                        target, shape, allow, speed, world, iterations, bisections,
                                                        touch, samples)
    got = np.flatnonzero(np.isfinite(hit))
    return hit[got], side[got], p[got], xo[got], xt[got], n[got], allow[got], depth[got], deepest[got]


def relative_motion(x0, q0, x1, q1):
    """The substep's motion of each body from (x0, q0) to (x1, q1): dx (B+1, 3) and the rotation
    vector phi (B+1, 3) of q1 q0^-1 (the world's, the last row, zero)."""
    dx = x1 - x0
    phi = quat.log_rotation(quat.multiply(q1, quat.conjugate(q0)))
    phi[-1] = 0.0
    return dx, phi


def correct_hits(f, side, p, xo, xt, n, allow, depth, deepest, sides, x0, q0, x1, q1, dx, phi, inv_mass, bound,
                 world):
    """Apply, in place on the end poses x1 (B+1, 3) and q1 (B+1, 4), for each body the hit (as
    ``fast_hits`` returns them) that needs the largest correction; the others wait for the next
    round, which sees the corrected motion. Returns whether anything was changed."""
    plans = []
    for g in range(len(f)):
        fg, owner, target = float(f[g]), int(sides[side[g], 0]), int(sides[side[g], 1])
        deep, allowed = max(float(depth[g]), 0.0), float(allow[g])
        # Rotation a body makes after the impact is dropped when it alone could drive the
        # point in deeper than allowed (a spinning plate's corner) and the motion does drive it
        # in that deep (``deepest``, the depth sampled over the rest of the substep, turns and
        # all); its angular momentum is kept. Otherwise (a rolling wheel, whose rim points touch
        # the ground at the bottom of their turn and rise again; a body already resting on what
        # it touches) it turns on as the solve lets it. (On the bound alone a narrow wheel, 6 cm
        # wide for a 10 cm radius, coasting at 8 m/s was stopped turning at each rim point's
        # touch: it slipped, lost 15% of its speed in 2 s and veered 2.6 m.) Bodies that are not
        # moved (kinematic) keep their motion.
        rest = 1.0 - fg
        driven = bool(deepest[g] > allowed)
        turn_owner = bool(driven and fg > 0.0 and inv_mass[owner] > 0.0
                          and np.linalg.norm(phi[owner]) * bound[owner] * rest > allowed)
        turn_target = bool(driven and fg > 0.0 and target < world and inv_mass[target] > 0.0
                           and np.linalg.norm(phi[target]) * bound[target] * rest > allowed)
        # How the point moves relative to the surface under it over the rest of the substep.
        v_point = dx[owner] + (0.0 if turn_owner else quat.cross(phi[owner], p[g] - xo[g]))
        v_surface = dx[target] + (0.0 if turn_target else quat.cross(phi[target], p[g] - xt[g]))
        approach = -float(n[g] @ (v_point - v_surface)) * rest
        shift = deep + approach - allowed
        if shift > 0.0 or turn_owner or turn_target:
            plans.append((-max(shift, 0.0), fg, owner, target, n[g], shift, turn_owner, turn_target))
    done = set()
    changed = False
    for _, fg, owner, target, normal, shift, turn_owner, turn_target in sorted(plans, key=lambda p: p[:4]):
        if owner in done or target in done:
            continue
        done.add(owner)
        if target != world:
            done.add(target)
        if turn_owner:
            q1[owner] = quat.normalize(quat.multiply(quat.exp_rotation(phi[owner] * fg), q0[owner]))
            changed = True
        if turn_target:
            q1[target] = quat.normalize(quat.multiply(quat.exp_rotation(phi[target] * fg), q0[target]))
            changed = True
        w_o, w_t = inv_mass[owner], inv_mass[target]
        if shift > 0.0 and w_o + w_t > 0.0:
            x1[owner] += normal * (shift * w_o / (w_o + w_t))
            x1[target] -= normal * (shift * w_t / (w_o + w_t))
            changed = True
    return changed
