"""Springs, compiled: one substep of the springs' forces as impulses (``constraints.springs.
apply_springs``, the numpy reference, which says why each step is as it is). The same arithmetic
spring by spring, in the reference's order of groups: the weak linear springs from the speeds as
they stood, then the weak angular ones, then the others one after another; the two agree to
rounding (numpy's 3 x 3 solve and einsums sum in their own order)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .vec import add, conj, cross, dot, get3, get4, log_rotation, norm, qmul, rotate, sub

JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**JIT)
def _world_inverse_inertia(q, inv_inertia, body, out):
    """out (3, 3) = R diag(inv_inertia) R^T of the body at rotation q."""
    w, x, y, z = q[body, 0], q[body, 1], q[body, 2], q[body, 3]
    r = np.empty((3, 3))
    r[0, 0], r[0, 1], r[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    r[1, 0], r[1, 1], r[1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    r[2, 0], r[2, 1], r[2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    for i in range(3):
        for j in range(3):
            out[i, j] = r[i, 0] * inv_inertia[body, 0] * r[j, 0] + r[i, 1] * inv_inertia[body, 1] * r[j, 1] \
                + r[i, 2] * inv_inertia[body, 2] * r[j, 2]


@njit(**JIT)
def _mat_vec(m, v):
    return (m[0, 0] * v[0] + m[0, 1] * v[1] + m[0, 2] * v[2], m[1, 0] * v[0] + m[1, 1] * v[1] + m[1, 2] * v[2],
            m[2, 0] * v[0] + m[2, 1] * v[1] + m[2, 2] * v[2])


@njit(**JIT)
def _solve3(m, v):
    """x with m x = v (3 x 3, Gaussian elimination with partial pivoting)."""
    g = m.copy()
    r = np.array([v[0], v[1], v[2]])
    for col in range(3):
        piv = col
        for i in range(col + 1, 3):
            if abs(g[i, col]) > abs(g[piv, col]):
                piv = i
        if piv != col:
            for k in range(3):
                g[col, k], g[piv, k] = g[piv, k], g[col, k]
            r[col], r[piv] = r[piv], r[col]
        for i in range(col + 1, 3):
            f = g[i, col] / g[col, col]
            for k in range(col, 3):
                g[i, k] -= f * g[col, k]
            r[i] -= f * r[col]
    out = np.zeros(3)
    for i in range(2, -1, -1):
        s = r[i]
        for k in range(i + 1, 3):
            s -= g[i, k] * out[k]
        out[i] = s / g[i, i]
    return out[0], out[1], out[2]


@njit(**JIT)
def _apply_springs(a, b, local_a, local_b, axis_a, linear, angular, stiffness, damping, ang_stiffness, ang_damping,
                   rest_relative, x, q, v, w, inv_mass, inv_inertia, h, rest, active, accel, has_accel, max_turn):
    count = a.shape[0]
    bodies = inv_mass.shape[0]
    world = bodies - 1
    ia = np.empty((count, 3, 3))
    ib = np.empty((count, 3, 3))
    n = np.empty((count, 3))
    r1 = np.empty((count, 3))
    r2 = np.empty((count, 3))
    phi = np.empty((count, 3))
    w_eff = np.empty(count)
    k = np.empty(count)
    w_ang = np.empty(count)
    strength = np.empty(count)
    stretch = np.empty(count)
    pull = np.zeros(count)
    lin = np.empty(count, np.bool_)
    ang = np.empty(count, np.bool_)
    for s in range(count):
        sa, sb = a[s], b[s]
        _world_inverse_inertia(q, inv_inertia, sa, ia[s])
        _world_inverse_inertia(q, inv_inertia, sb, ib[s])
        qa, qb = get4(q, sa), get4(q, sb)
        p1 = add(get3(x, sa), rotate(qa, get3(local_a, s)))
        p2 = add(get3(x, sb), rotate(qb, get3(local_b, s)))
        d = sub(p2, p1)
        dist = norm(d)
        ax = get3(axis_a, s)
        if ax[0] != 0.0 or ax[1] != 0.0 or ax[2] != 0.0:
            ns = rotate(qa, ax)
            length = dot(ns, d)
        else:
            m = max(dist, 1e-12)
            ns = (d[0] / m, d[1] / m, d[2] / m)
            length = dist
        n[s, 0], n[s, 1], n[s, 2] = ns
        e1, e2 = sub(p1, get3(x, sa)), sub(p2, get3(x, sb))
        r1[s, 0], r1[s, 1], r1[s, 2] = e1
        r2[s, 0], r2[s, 1], r2[s, 2] = e2
        lin[s] = active[s] and linear[s]
        ang[s] = active[s] and angular[s]
        c1, c2 = cross(e1, ns), cross(e2, ns)
        w_turn = dot(c1, _mat_vec(ia[s], c1)) + dot(c2, _mat_vec(ib[s], c2))
        w_eff[s] = inv_mass[sa] + inv_mass[sb] + w_turn
        la, lb = get3(local_a, s), get3(local_b, s)
        bound = dot(la, la) * max(inv_inertia[sa, 0], inv_inertia[sa, 1], inv_inertia[sa, 2]) \
            + dot(lb, lb) * max(inv_inertia[sb, 0], inv_inertia[sb, 1], inv_inertia[sb, 2])
        k[s] = min(stiffness[s], 1.0 / max(h * h * bound, 1e-300))
        w_ang[s] = (ia[s, 0, 0] + ib[s, 0, 0]) + (ia[s, 1, 1] + ib[s, 1, 1]) + (ia[s, 2, 2] + ib[s, 2, 2])
        strength[s] = (h * w_eff[s] * (h * k[s] + damping[s]) if lin[s] else 0.0) \
            + (h * w_ang[s] * (h * ang_stiffness[s] + ang_damping[s]) if ang[s] else 0.0)
        rel = qmul(conj(qa), qb)
        turned = log_rotation(qmul(rel, conj(get4(rest_relative, s))))
        ph = rotate(qa, turned)
        phi[s, 0], phi[s, 1], phi[s, 2] = ph
        stretch[s] = length - rest[s]
        if has_accel:
            fb = 1.0 if inv_mass[sb] > 0 else 0.0
            fa = 1.0 if inv_mass[sa] > 0 else 0.0
            pull[s] = dot(ns, (accel[sb, 0] * fb - accel[sa, 0] * fa, accel[sb, 1] * fb - accel[sa, 1] * fa,
                               accel[sb, 2] * fb - accel[sa, 2] * fa))
    load = np.zeros(bodies)
    for s in range(count):
        load[a[s]] += strength[s]
        load[b[s]] += strength[s]
    load[world] = 0.0
    weak = np.empty(count, np.bool_)
    for s in range(count):
        weak[s] = max(load[a[s]], load[b[s]]) <= 1.0
    # Weak linear springs: all from the speeds as they stood, then all pushed.
    j_lin = np.zeros(count)
    for s in range(count):
        if lin[s] and weak[s]:
            j_lin[s] = _linear_impulse(s, a, b, n, r1, r2, v, w, w_eff, k, damping, stretch, pull, h)
    for s in range(count):
        if lin[s] and weak[s]:
            _push(s, a, b, n, r1, r2, ia, ib, j_lin[s], v, w, inv_mass)
    # Weak angular springs: from the spins after those pushes, then all applied.
    impulses = np.zeros((count, 3))
    for s in range(count):
        if ang[s] and weak[s]:
            imp = _angular_impulse(s, a, b, w, ia, ib, phi, ang_stiffness, ang_damping, w_ang, h)
            impulses[s, 0], impulses[s, 1], impulses[s, 2] = imp
    for s in range(count):
        if ang[s] and weak[s]:
            _turn(s, a, b, ia, ib, get3(impulses, s), w)
    # The others one after another, each seeing what the ones before did.
    for s in range(count):
        if (lin[s] or ang[s]) and not weak[s]:
            if lin[s]:
                j = _linear_impulse(s, a, b, n, r1, r2, v, w, w_eff, k, damping, stretch, pull, h)
                _push(s, a, b, n, r1, r2, ia, ib, j, v, w, inv_mass)
            if ang[s]:
                imp = _angular_impulse(s, a, b, w, ia, ib, phi, ang_stiffness, ang_damping, w_ang, h)
                _turn(s, a, b, ia, ib, imp, w)
    # A body a spring turns by more than max_turn rad in a substep is held there (see the reference).
    held = np.zeros(bodies, np.bool_)
    for s in range(count):
        if active[s]:
            held[a[s]] = True
            held[b[s]] = True
    for body in range(bodies):
        if held[body] and inv_mass[body] > 0.0:
            spin = norm(get3(w, body))
            if spin * h > max_turn:
                scale = max_turn / (spin * h)
                w[body, 0] *= scale
                w[body, 1] *= scale
                w[body, 2] *= scale


@njit(**JIT)
def _linear_impulse(s, a, b, n, r1, r2, v, w, w_eff, k, damping, stretch, pull, h):
    ns = get3(n, s)
    sa, sb = a[s], b[s]
    vb = add(get3(v, sb), cross(get3(w, sb), get3(r2, s)))
    va = add(get3(v, sa), cross(get3(w, sa), get3(r1, s)))
    u = dot(ns, sub(vb, va))
    we, kk = w_eff[s], k[s]
    ahead = u + pull[s] * h
    if h * h * kk * we <= 1.0:
        j = -kk * stretch[s] * h
        seen = u
    else:
        j = -h * kk * (stretch[s] + h * ahead) / (1.0 + h * h * kk * we)
        seen = ahead + we * j
    j -= seen * -math.expm1(-damping[s] * h * we) / max(we, 1e-300)
    return j if we > 0.0 else 0.0


@njit(**JIT)
def _push(s, a, b, n, r1, r2, ia, ib, j, v, w, inv_mass):
    sa, sb = a[s], b[s]
    imp = (j * n[s, 0], j * n[s, 1], j * n[s, 2])
    tb = _mat_vec(ib[s], cross(get3(r2, s), imp))
    ta = _mat_vec(ia[s], cross(get3(r1, s), imp))
    for i in range(3):
        v[sb, i] += inv_mass[sb] * imp[i]
        w[sb, i] += tb[i]
        v[sa, i] -= inv_mass[sa] * imp[i]
        w[sa, i] -= ta[i]


@njit(**JIT)
def _angular_impulse(s, a, b, w, ia, ib, phi, ang_stiffness, ang_damping, w_ang, h):
    W = ia[s] + ib[s]
    kk = ang_stiffness[s]
    rel_w = sub(get3(w, b[s]), get3(w, a[s]))
    ph = get3(phi, s)
    if h * h * kk * w_ang[s] <= 1.0:
        impulse = (-kk * ph[0] * h, -kk * ph[1] * h, -kk * ph[2] * h)
        seen = rel_w
    else:
        system = np.eye(3) + (h * h * kk) * W
        x = _solve3(system, (ph[0] + h * rel_w[0], ph[1] + h * rel_w[1], ph[2] + h * rel_w[2]))
        impulse = (-(h * kk) * x[0], -(h * kk) * x[1], -(h * kk) * x[2])
        seen = add(rel_w, _mat_vec(W, impulse))
    speed = norm(seen)
    sp = max(speed, 1e-300)
    axis = (seen[0] / sp, seen[1] / sp, seen[2] / sp)
    w_axis = dot(axis, _mat_vec(W, axis))
    d = speed * -math.expm1(-ang_damping[s] * h * w_axis) / max(w_axis, 1e-300)
    return impulse[0] - d * axis[0], impulse[1] - d * axis[1], impulse[2] - d * axis[2]


@njit(**JIT)
def _turn(s, a, b, ia, ib, impulse, w):
    tb = _mat_vec(ib[s], impulse)
    ta = _mat_vec(ia[s], impulse)
    for i in range(3):
        w[b[s], i] += tb[i]
        w[a[s], i] -= ta[i]


def apply_springs(springs, x, q, v, w, inv_mass, inv_inertia, h: float, rest, active, accel=None) -> None:
    """The reference's signature (``constraints.springs.apply_springs``) over the kernel."""
    from ...constraints.springs import MAX_TURN

    if not springs.count:
        return
    s = springs
    _apply_springs(s.a, s.b, s.local_a, s.local_b, s.axis_a, s.linear, s.angular, s.stiffness, s.damping,
                   s.angular_stiffness, s.angular_damping, s.rest_relative, x, q, v, w, inv_mass, inv_inertia,
                   float(h), np.ascontiguousarray(rest, dtype=np.float64), np.ascontiguousarray(active, dtype=np.bool_),
                   accel if accel is not None else np.zeros((1, 3)), accel is not None, MAX_TURN)
