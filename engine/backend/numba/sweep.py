"""The sweep of fast bodies, compiled: each body's motion over the substep, conservative
advancement of each fast query (a sample point of one body against a shape of another or of the
world) to where it first touches, and each body's correction from its hits.

The reference is ``backend/numpy/sweep.py`` (numpy over all queries at once; the corrections
hit by hit); this is the same arithmetic query by query and hit by hit, with the same distance
routine, so the two give the same numbers (``collision/sweep.py`` says what the sweep is for).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import distance as _distances
from .vec import add, conj, cross, dot, exp_rotation, get3, get4, log_rotation, norm, qmul, qnormalize, rotate, sub

JIT = dict(cache=True, nogil=True, error_model="numpy")
# The per-evaluation helpers are inlined: as calls each passes the whole shape table (geo, 22
# arrays), which cost several times the box or mesh test itself (the car example's wheels:
# about 1 us a query as calls).
INLINE = dict(JIT, inline="always")
# The two kernels run without reference counting: inlined or not, a helper handed the shape table
# counted its 22 arrays in and out at each evaluation (numba refuses _nrt=False only where a
# function makes an array, so their buffers come from the callers).
KERNEL = dict(JIT, _nrt=False)
distance = njit(**INLINE)(_distances.distance.py_func)


@njit(**INLINE)
def _geometry(geo, x0, q0, dx, phi, local, radius, o, t, s, world, f):
    """At fraction f of the substep's motion: the point p, its owner's and the target's centres,
    the shape's normal (world) and the point's depth in the shape."""
    xo = (x0[o, 0] + dx[o, 0] * f, x0[o, 1] + dx[o, 1] * f, x0[o, 2] + dx[o, 2] * f)
    qo = qmul(exp_rotation((phi[o, 0] * f, phi[o, 1] * f, phi[o, 2] * f)), get4(q0, o))
    xt = (x0[t, 0] + dx[t, 0] * f, x0[t, 1] + dx[t, 1] * f, x0[t, 2] + dx[t, 2] * f)
    qt = qmul(exp_rotation((phi[t, 0] * f, phi[t, 1] * f, phi[t, 2] * f)), get4(q0, t))
    p = add(xo, rotate(qo, local))
    s_pos = (geo[15][s, 0], geo[15][s, 1], geo[15][s, 2])
    s_rot = (geo[14][s, 0], geo[14][s, 1], geo[14][s, 2], geo[14][s, 3])
    if t < world:
        spos = add(xt, rotate(qt, s_pos))
        srot = qmul(qt, s_rot)
    else:
        spos, srot = s_pos, s_rot
    back = conj(srot)
    ql = rotate(back, sub(p, spos))
    prefer = rotate(back, sub(xo, spos))
    n0, n1, n2, depth = distance(geo, s, ql[0], ql[1], ql[2], radius, prefer[0], prefer[1], prefer[2], True)
    return p, xo, xt, rotate(srot, (n0, n1, n2)), depth


@njit(**INLINE)
def _advance_one(geo, x0, q0, dx, phi, pl, radius, o, t, s, allow, speed, world, iterations, bisections, touch):
    """The fraction of the motion at which one query first touches (inf if not within it)."""
    limit = touch * allow
    f = 0.0
    found = math.inf
    live = True
    for _ in range(iterations):
        c = -_geometry(geo, x0, q0, dx, phi, pl, radius, o, t, s, world, f)[4]
        if c <= limit:
            found = f
            live = False
            break
        f += c / speed
        if not f < 1.0:
            live = False
            break
    if live and -_geometry(geo, x0, q0, dx, phi, pl, radius, o, t, s, world, 1.0)[4] <= limit:
        lo, hi = f, 1.0
        for _ in range(bisections):
            mid = 0.5 * (lo + hi)
            if -_geometry(geo, x0, q0, dx, phi, pl, radius, o, t, s, world, mid)[4] <= limit:
                hi = mid
            else:
                lo = mid
        found = hi
    return found


@njit(**INLINE)
def _deepest_after(geo, x0, q0, dx, phi, pl, radius, o, t, s, world, found, depth, allow, speed, samples):
    """The deepest the point goes over the rest of the motion after its hit at ``found``, turns
    and all: its depth there and at fractions evenly to the end, so many that it closes at most
    ``allow`` between two (``speed`` bounds that per unit of motion), so it cannot pass through
    a shape (at least four times as thick) unseen; inf if that takes more than ``samples``."""
    need = speed * (1.0 - found) / allow
    if not need <= samples:
        return math.inf
    steps = max(math.ceil(need), 1)
    deepest = depth
    for j in range(1, steps + 1):
        d = _geometry(geo, x0, q0, dx, phi, pl, radius, o, t, s, world, found + (1.0 - found) * j / steps)[4]
        if d > deepest:
            deepest = d
    return deepest


@njit(**KERNEL)
def advance(geo, x0, q0, dx, phi, local, radius, owner, target, shape, allow, speed, world, iterations, bisections,
            touch, samples, hit, p_out, xo_out, xt_out, n_out, depth_out, deepest_out):
    """For each query k: hit[k] the fraction of the motion at which it first touches (inf if not
    within the substep), and where it is then (p, xo, xt, n, depth) and the deepest it goes after,
    as the reference's ``_advance`` followed by ``geometry`` at the hits."""
    for k in range(owner.shape[0]):
        o, t, s = owner[k], target[k], shape[k]
        pl = get3(local, k)
        found = _advance_one(geo, x0, q0, dx, phi, pl, radius[k], o, t, s, allow[k], speed[k], world, iterations,
                             bisections, touch)
        hit[k] = found
        if found < math.inf:
            p, xo, xt, n, depth = _geometry(geo, x0, q0, dx, phi, pl, radius[k], o, t, s, world, found)
            for i in range(3):
                p_out[k, i] = p[i]
                xo_out[k, i] = xo[i]
                xt_out[k, i] = xt[i]
                n_out[k, i] = n[i]
            depth_out[k] = depth
            deepest_out[k] = _deepest_after(geo, x0, q0, dx, phi, pl, radius[k], o, t, s, world, found, depth,
                                            allow[k], speed[k], samples)


def advance_queries(geo, x0, q0, dx, phi, local, radius, owner, target, shape, allow, speed, world, iterations,
                    bisections, touch, samples):
    """hit (k,), and p, xo, xt, n (k, 3), depth (k,), deepest (k,) at the hits (undefined where
    hit is inf)."""
    k = len(owner)
    hit = np.empty(k)
    p, xo, xt, n = (np.zeros((k, 3)) for _ in range(4))
    depth, deepest = np.zeros(k), np.zeros(k)
    advance(geo, x0, q0, dx, phi, np.ascontiguousarray(local), np.ascontiguousarray(radius), owner, target, shape,
            allow, speed, world, iterations, bisections, touch, samples, hit, p, xo, xt, n, depth, deepest)
    return hit, p, xo, xt, n, depth, deepest


@njit(**KERNEL)
def _fast_hits(geo, x0, q0, dx, phi, sides, side_first, queries, local, radius, arm, body_arm, thickness,
               shape_thickness, bound, world, contact_depth, iterations, bisections, touch, samples, f_out, side_out,
               p_out, xo_out, xt_out, n_out, allow_out, depth_out, deepest_out, move, spin):
    for b in range(x0.shape[0]):
        move[b] = math.sqrt(dx[b, 0] * dx[b, 0] + dx[b, 1] * dx[b, 1] + dx[b, 2] * dx[b, 2])
        spin[b] = math.sqrt(phi[b, 0] * phi[b, 0] + phi[b, 1] * phi[b, 1] + phi[b, 2] * phi[b, 2])
    c = 0
    for k in range(sides.shape[0]):
        o, t, s = sides[k, 0], sides[k, 1], sides[k, 2]
        thick = thickness[t] if t < world else shape_thickness[s]
        allow = contact_depth * min(thickness[o], thick)
        d0, d1, d2 = x0[o, 0] - x0[t, 0], x0[o, 1] - x0[t, 1], x0[o, 2] - x0[t, 2]
        apart = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        base_reach = apart + body_arm[o] + move[o] + spin[o] * bound[o]
        side_speed = move[o] + spin[o] * body_arm[o] + (move[t] + spin[t] * base_reach if t < world else 0.0)
        if not side_speed > allow:
            continue  # no point of this side is fast (most of a pile at rest)
        for row in range(side_first[k], side_first[k + 1]):
            point = queries[row, 0]
            a = arm[point]
            reach = apart + a + move[o] + spin[o] * bound[o]
            speed = move[o] + spin[o] * a + (move[t] + spin[t] * reach if t < world else 0.0)
            if not speed > allow:
                continue
            pl = get3(local, point)
            found = _advance_one(geo, x0, q0, dx, phi, pl, radius[point], o, t, s, allow, speed, world, iterations,
                                 bisections, touch)
            if found < math.inf:
                p, xo, xt, n, depth = _geometry(geo, x0, q0, dx, phi, pl, radius[point], o, t, s, world, found)
                f_out[c] = found
                side_out[c] = k
                for i in range(3):
                    p_out[c, i] = p[i]
                    xo_out[c, i] = xo[i]
                    xt_out[c, i] = xt[i]
                    n_out[c, i] = n[i]
                allow_out[c] = allow
                depth_out[c] = depth
                deepest_out[c] = _deepest_after(geo, x0, q0, dx, phi, pl, radius[point], o, t, s, world, found, depth,
                                                allow, speed, samples)
                c += 1
    return c


def fast_hits(geo, x0, q0, dx, phi, sides, side_first, queries, local, radius, arm, body_arm, thickness,
              shape_thickness, bound, world, contact_depth, iterations, bisections, touch, samples):
    """The hits of the substep's fast queries, in query order (see the numpy reference)."""
    k = len(queries)
    f, side = np.empty(k), np.empty(k, np.int64)
    p, xo, xt, n = (np.empty((k, 3)) for _ in range(4))
    allow, depth, deepest = np.empty(k), np.empty(k), np.empty(k)
    move, spin = np.empty(len(x0)), np.empty(len(x0))  # each body's motion and turn over the substep
    c = _fast_hits(geo, x0, q0, dx, phi, sides, side_first, queries, local, radius, arm, body_arm, thickness,
                   shape_thickness, bound, world, contact_depth, iterations, bisections, touch, samples, f, side, p, xo,
                   xt, n, allow, depth, deepest, move, spin)
    return f[:c], side[:c], p[:c], xo[:c], xt[:c], n[:c], allow[:c], depth[:c], deepest[:c]


@njit(**JIT)
def relative_motion(x0, q0, x1, q1):
    """The numpy reference's motion of each body over the substep, body by body: dx, phi."""
    count = x0.shape[0]
    dx = np.empty((count, 3))
    phi = np.zeros((count, 3))
    for b in range(count):
        for i in range(3):
            dx[b, i] = x1[b, i] - x0[b, i]
        if b < count - 1:  # (the world's stays zero)
            r = log_rotation(qmul(get4(q1, b), conj(get4(q0, b))))
            for i in range(3):
                phi[b, i] = r[i]
    return dx, phi


@njit(**JIT)
def _before(key, a, b):
    """Whether plan a sorts before plan b: by its key's columns in order (stable: by index last)."""
    for c in range(key.shape[1]):
        if key[a, c] != key[b, c]:
            return key[a, c] < key[b, c]
    return a < b


@njit(**JIT)
def correct_hits(f, side, p, xo, xt, n, allow, depth, deepest, sides, x0, q0, x1, q1, dx, phi, inv_mass, bound,
                 world):
    """The numpy reference's correction of the hits, hit by hit with the same arithmetic (see
    ``backend/numpy/sweep.py``), in place on x1 and q1; whether anything was changed."""
    k = f.shape[0]
    key = np.empty((k, 4))  # -max(shift, 0), f, owner, target: the order the plans are applied in
    shifts = np.empty(k)
    turns = np.zeros((k, 2), np.bool_)
    which = np.empty(k, np.int64)
    count = 0
    for g in range(k):
        fg = f[g]
        owner = sides[side[g], 0]
        target = sides[side[g], 1]
        deep = max(depth[g], 0.0)
        allowed = allow[g]
        rest = 1.0 - fg
        driven = deepest[g] > allowed
        turn_owner = (driven and fg > 0.0 and inv_mass[owner] > 0.0
                      and norm(get3(phi, owner)) * bound[owner] * rest > allowed)
        turn_target = (driven and fg > 0.0 and target < world and inv_mass[target] > 0.0
                       and norm(get3(phi, target)) * bound[target] * rest > allowed)
        pg = get3(p, g)
        v_point = get3(dx, owner)
        if not turn_owner:
            v_point = add(v_point, cross(get3(phi, owner), sub(pg, get3(xo, g))))
        v_surface = get3(dx, target)
        if not turn_target:
            v_surface = add(v_surface, cross(get3(phi, target), sub(pg, get3(xt, g))))
        approach = -dot(get3(n, g), sub(v_point, v_surface)) * rest
        shift = deep + approach - allowed
        if shift > 0.0 or turn_owner or turn_target:
            key[count, 0] = -max(shift, 0.0)
            key[count, 1] = fg
            key[count, 2] = owner
            key[count, 3] = target
            shifts[count] = shift
            turns[count, 0] = turn_owner
            turns[count, 1] = turn_target
            which[count] = g
            count += 1
    order = np.arange(count)
    for a in range(1, count):  # insertion sort: a handful of plans
        m = order[a]
        b = a - 1
        while b >= 0 and _before(key, m, order[b]):
            order[b + 1] = order[b]
            b -= 1
        order[b + 1] = m
    done = np.zeros(x1.shape[0], np.bool_)
    changed = False
    for r in range(count):
        c = order[r]
        g = which[c]
        owner = sides[side[g], 0]
        target = sides[side[g], 1]
        if done[owner] or done[target]:
            continue
        done[owner] = True
        if target != world:
            done[target] = True
        fg = f[g]
        for body, turn in ((owner, turns[c, 0]), (target, turns[c, 1])):
            if turn:
                e = exp_rotation((phi[body, 0] * fg, phi[body, 1] * fg, phi[body, 2] * fg))
                turned = qnormalize(qmul(e, get4(q0, body)))
                for i in range(4):
                    q1[body, i] = turned[i]
                changed = True
        w_o = inv_mass[owner]
        w_t = inv_mass[target]
        shift = shifts[c]
        if shift > 0.0 and w_o + w_t > 0.0:
            so = shift * w_o / (w_o + w_t)
            st = shift * w_t / (w_o + w_t)
            for i in range(3):
                x1[owner, i] += n[g, i] * so
                x1[target, i] -= n[g, i] * st
            changed = True
    return changed
