"""Connector solves, compiled: one Newton step on every joint (``constraints.joints.solve_joints``).

The reference is the numpy code in ``constraints/joints.py`` (``joint_rows``, ``_mechanism_solve``,
``solve_joints``); this is the same mathematics written row by row, so the two agree to rounding
(1e-12 relative), not bit for bit: numpy's einsum, matmul and LAPACK Cholesky sum in their own
order. Each mechanism (joints connected through shared bodies) is one small dense system
J W J^T lambda = -C over its acting rows only (rows that do not act are decoupled identity rows
in the reference, with lambda 0, so leaving them out changes nothing).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .vec import add, conj, cross, dot, exp_rotation, get3, get4, log_rotation, norm, qmul, rotate, sub

JIT = dict(cache=True, nogil=True, error_model="numpy")

# The modes of constraints.joints (Lin, Swing, Twist): LOCKED 0, FREE 1, LIMITED / CONE 2.
LOCKED, LIMITED = 0, 2


@njit(**JIT)
def _wrap(angle):
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


@njit(**JIT)
def _clip(v, lo, hi):
    return min(max(v, lo), hi)


@njit(**JIT)
def _column(q, k):
    """Column k of the rotation matrix of q (as quaternions.to_matrix)."""
    w, x, y, z = q
    if k == 0:
        return 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)
    if k == 1:
        return 2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x)
    return 2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)


@njit(**JIT)
def joint_rows(a, b, local_a, local_b, frame_a, rot_a, rot_b, steer_axis, lin_mode, lin_lower, lin_upper,
               swing_mode, cone, twist_mode, twist_lower, twist_upper, x, q, steer, active, ja, jb, c, on):
    """The rows of every joint at poses x, q (as constraints.joints.joint_rows): Jacobians ja, jb
    (J, 6, 6), errors c (J, 6) and which rows act on (J, 6), written in place."""
    for j in range(a.shape[0]):
        ia, ib = a[j], b[j]
        xa, qa, xb, qb = get3(x, ia), get4(q, ia), get3(x, ib), get4(q, ib)
        p1 = add(xa, rotate(qa, get3(local_a, j)))
        p2 = add(xb, rotate(qb, get3(local_b, j)))
        fq = qmul(qa, get4(frame_a, j))
        d = sub(p2, p1)
        ra = sub(p2, xa)
        r2 = sub(p2, xb)
        for r in range(6):
            for k in range(6):
                ja[j, r, k] = 0.0
                jb[j, r, k] = 0.0
        for r in range(3):
            e = _column(fq, r)
            offset = e[0] * d[0] + e[1] * d[1] + e[2] * d[2]
            mode = lin_mode[j, r]
            limited = offset - _clip(offset, lin_lower[j, r], lin_upper[j, r])
            err = offset if mode == LOCKED else (limited if mode == LIMITED else 0.0)
            acts = (mode == LOCKED or (mode == LIMITED and limited != 0.0)) and active[j]
            ca = cross(ra, e)
            cb = cross(r2, e)
            for k in range(3):
                ja[j, r, k] = -e[k]
                ja[j, r, 3 + k] = -ca[k]
                jb[j, r, k] = e[k]
                jb[j, r, 3 + k] = cb[k]
            c[j, r] = err
            on[j, r] = acts
        local = get4(rot_a, j)
        if steer[j] != 0.0:
            sa = get3(steer_axis, j)
            local = qmul(exp_rotation((sa[0] * steer[j], sa[1] * steer[j], sa[2] * steer[j])), local)
        fa = qmul(qa, local)
        fb = qmul(qb, get4(rot_b, j))
        ez = (0.0, 0.0, 1.0)
        za, zb = rotate(fa, ez), rotate(fb, ez)
        cz = cross(za, zb)
        s = norm(cz)
        swing = math.atan2(s, dot(za, zb))
        if s > 1e-12:
            inv = 1.0 / max(s, 1e-300)
            s_axis = (cz[0] * inv, cz[1] * inv, cz[2] * inv)
        else:
            s_axis = (0.0, 0.0, 0.0)
        rq = qmul(conj(fa), fb)
        twist = _wrap(2.0 * math.atan2(rq[3], rq[0]))
        mid = add(za, zb)
        mn = max(norm(mid), 1e-12)
        mid = (mid[0] / mn, mid[1] / mn, mid[2] / mn)
        helper = (1.0, 0.0, 0.0) if abs(mid[0]) < 0.9 else (0.0, 1.0, 0.0)
        b1 = s_axis if norm(s_axis) > 0.5 else cross(mid, helper)
        bn = norm(b1)
        b1 = (b1[0] / bn, b1[1] / bn, b1[2] / bn)
        b2 = cross(mid, b1)
        sm, tm = swing_mode[j], twist_mode[j]
        swing_err = swing if sm == LOCKED else (max(swing - cone[j], 0.0) if sm == LIMITED else 0.0)
        if tm == LOCKED:
            twist_err = twist
        elif tm == LIMITED:
            twist_err = twist - _clip(twist, twist_lower[j], twist_upper[j])
        else:
            twist_err = 0.0
        if sm == LOCKED and tm == LOCKED:
            turn = log_rotation(qmul(fb, conj(fa)))
        else:
            turn = (b1[0] * swing_err + mid[0] * twist_err, b1[1] * swing_err + mid[1] * twist_err,
                    b1[2] * swing_err + mid[2] * twist_err)
        ang_on = ((sm == LOCKED or (sm == LIMITED and swing_err > 0.0)) and active[j],
                  sm == LOCKED and active[j],
                  (tm == LOCKED or (tm == LIMITED and twist_err != 0.0)) and active[j])
        basis = (b1, b2, mid)
        for r in range(3):
            row = basis[r]
            for k in range(3):
                ja[j, 3 + r, 3 + k] = row[k]
                jb[j, 3 + r, 3 + k] = -row[k]
            c[j, 3 + r] = -(row[0] * turn[0] + row[1] * turn[1] + row[2] * turn[2])
            on[j, 3 + r] = ang_on[r]
        if tm == LOCKED and sm != LOCKED:
            # A universal joint: A's X stays square to B's Y (see the reference).
            xa_axis = rotate(fa, (1.0, 0.0, 0.0))
            yb_axis = rotate(fb, (0.0, 1.0, 0.0))
            u = cross(xa_axis, yb_axis)
            for k in range(3):
                ja[j, 5, 3 + k] = u[k]
                jb[j, 5, 3 + k] = -u[k]
            c[j, 5] = dot(xa_axis, yb_axis)
        for r in range(6):
            if not on[j, r]:
                c[j, r] = 0.0


@njit(**JIT)
def _inverse_mass_times(q, inv_mass, inv_inertia, body, v, out):
    """out (6,) = W v for one body: inv_mass v[:3], R diag(inv_inertia) R^T v[3:]."""
    m = inv_mass[body]
    out[0], out[1], out[2] = m * v[0], m * v[1], m * v[2]
    qb = get4(q, body)
    r0, r1, r2 = _column(qb, 0), _column(qb, 1), _column(qb, 2)
    # R^T v, scaled by the principal inverse inertias, then R times that.
    l0 = (r0[0] * v[3] + r0[1] * v[4] + r0[2] * v[5]) * inv_inertia[body, 0]
    l1 = (r1[0] * v[3] + r1[1] * v[4] + r1[2] * v[5]) * inv_inertia[body, 1]
    l2 = (r2[0] * v[3] + r2[1] * v[4] + r2[2] * v[5]) * inv_inertia[body, 2]
    for k in range(3):
        out[3 + k] = r0[k] * l0 + r1[k] * l1 + r2[k] * l2


@njit(**JIT)
def _solve_spd(m, rhs, n):
    """x with m x = rhs for the n x n symmetric positive definite m (Cholesky); a matrix that is not
    (redundant rows the damping did not make definite) goes to Gaussian elimination with partial
    pivoting, regularised as the reference's general solve is."""
    low = np.zeros((n, n))
    ok = True
    for i in range(n):
        for k in range(i + 1):
            s = m[i, k]
            for p in range(k):
                s -= low[i, p] * low[k, p]
            if i == k:
                if not s > 0.0:
                    ok = False
                    break
                low[i, i] = math.sqrt(s)
            else:
                low[i, k] = s / low[k, k]
        if not ok:
            break
    x = np.zeros(n)
    if ok:
        y = np.zeros(n)
        for i in range(n):
            s = rhs[i]
            for p in range(i):
                s -= low[i, p] * y[p]
            y[i] = s / low[i, i]
        for i in range(n - 1, -1, -1):
            s = y[i]
            for p in range(i + 1, n):
                s -= low[p, i] * x[p]
            x[i] = s / low[i, i]
        return x
    trace = 0.0
    for i in range(n):
        trace += m[i, i]
    g = m[:n, :n].copy()
    for i in range(n):
        g[i, i] += 1e-9 * trace / n
    v = rhs[:n].copy()
    for col in range(n):
        piv = col
        for r in range(col + 1, n):
            if abs(g[r, col]) > abs(g[piv, col]):
                piv = r
        if piv != col:
            for k in range(n):
                g[col, k], g[piv, k] = g[piv, k], g[col, k]
            v[col], v[piv] = v[piv], v[col]
        if g[col, col] == 0.0:
            continue
        for r in range(col + 1, n):
            f = g[r, col] / g[col, col]
            for k in range(col, n):
                g[r, k] -= f * g[col, k]
            v[r] -= f * v[col]
    for i in range(n - 1, -1, -1):
        s = v[i]
        for k in range(i + 1, n):
            s -= g[i, k] * x[k]
        x[i] = s / g[i, i] if g[i, i] != 0.0 else 0.0
    return x


@njit(**JIT)
def _solve_joints(a, b, local_a, local_b, frame_a, rot_a, rot_b, steer_axis, lin_mode, lin_lower, lin_upper,
                 swing_mode, cone, twist_mode, twist_lower, twist_upper, mech_rows, mech_bodies, side_a, side_b,
                 mechanism, x, q, S, inv_mass, inv_inertia, active, steer, impulses, limit_hits, record_hits,
                 damping, max_turn, x_start, q_start, from_start):
    """One Newton step on every joint, adding to S (B+1, 6) (as constraints.joints.solve_joints).

    mech_rows (C, 6 Jmax), mech_bodies (C, Bmax), side_a, side_b, mechanism (J,): the JointLayout.
    limit_hits (J, 6) gets the sign of the error of each acting limit row if record_hits.
    x_start, q_start: the substep's start poses, along which the translation rows of the joints
    ``from_start`` (J,) bool push (see the reference)."""
    count_j = a.shape[0]
    nb = x.shape[0]
    xs = np.empty((nb, 3))
    qs = np.empty((nb, 4))
    for i in range(nb):
        xs[i, 0], xs[i, 1], xs[i, 2] = x[i, 0] + S[i, 0], x[i, 1] + S[i, 1], x[i, 2] + S[i, 2]
        e = exp_rotation((S[i, 3], S[i, 4], S[i, 5]))
        qn = qmul(e, get4(q, i))
        qs[i, 0], qs[i, 1], qs[i, 2], qs[i, 3] = qn
    ja = np.empty((count_j, 6, 6))
    jb = np.empty((count_j, 6, 6))
    c = np.empty((count_j, 6))
    on = np.empty((count_j, 6), np.bool_)
    joint_rows(a, b, local_a, local_b, frame_a, rot_a, rot_b, steer_axis, lin_mode, lin_lower, lin_upper,
               swing_mode, cone, twist_mode, twist_lower, twist_upper, xs, qs, steer, active, ja, jb, c, on)
    if x_start.shape[0] == nb:
        # The translation rows along their directions at the substep's start (see the reference).
        ja0 = np.empty((count_j, 6, 6))
        jb0 = np.empty((count_j, 6, 6))
        c0 = np.empty((count_j, 6))
        on0 = np.empty((count_j, 6), np.bool_)
        joint_rows(a, b, local_a, local_b, frame_a, rot_a, rot_b, steer_axis, lin_mode, lin_lower, lin_upper,
                   swing_mode, cone, twist_mode, twist_lower, twist_upper, x_start, q_start, steer, active, ja0, jb0,
                   c0, on0)
        for j in range(count_j):
            if not from_start[j]:
                continue
            for r in range(3):
                for k in range(6):
                    ja[j, r, k] = ja0[j, r, k]
                    jb[j, r, k] = jb0[j, r, k]
    if record_hits:
        for j in range(count_j):
            for r in range(6):
                limit = (r < 3 and lin_mode[j, r] == LIMITED) or (r == 3 and swing_mode[j] == LIMITED) \
                    or (r == 5 and twist_mode[j] == LIMITED)
                if on[j, r] and limit:
                    limit_hits[j, r] = 1.0 if c[j, r] > 0.0 else (-1.0 if c[j, r] < 0.0 else 0.0)
    per_row = np.zeros((count_j, 6))
    width = mech_rows.shape[1]
    bmax = mech_bodies.shape[1]
    row_joint = np.empty(width, np.int64)
    row_r = np.empty(width, np.int64)
    wv = np.empty(6)
    for m in range(mech_rows.shape[0]):
        # The acting rows of this mechanism, in the layout's order.
        n = 0
        for slot in range(width):
            code = mech_rows[m, slot]
            if code < 0:
                continue
            j, r = code // 6, code % 6
            if on[j, r]:
                row_joint[n] = j
                row_r[n] = r
                n += 1
        if n == 0:
            continue
        # W J^T, (6 Bmax, n): each row's Jacobian blocks moved by its bodies' inverse masses.
        wjt = np.zeros((bmax * 6, n))
        jac = np.zeros((n, bmax * 6))
        for k in range(n):
            j, r = row_joint[k], row_r[k]
            if side_a[j] >= 0:
                for t in range(6):
                    jac[k, side_a[j] * 6 + t] += ja[j, r, t]
            if side_b[j] >= 0:
                for t in range(6):
                    jac[k, side_b[j] * 6 + t] += jb[j, r, t]
        # A row's Jacobian is zero outside the slots of its joint's two bodies (side_a, side_b;
        # -1 for the world), so only those are moved and summed: the same sums in the same
        # order, less their zero terms (the car's four wheels in one mechanism: a third of the
        # products).
        for k in range(n):
            j = row_joint[k]
            for slot_b in (side_a[j], side_b[j]):
                if slot_b < 0:
                    continue
                _inverse_mass_times(q, inv_mass, inv_inertia, mech_bodies[m, slot_b],
                                    jac[k, slot_b * 6:slot_b * 6 + 6], wv)
                for t in range(6):
                    wjt[slot_b * 6 + t, k] = wv[t]
        mat = np.zeros((n, n))
        for i in range(n):
            j = row_joint[i]
            low = min(side_a[j], side_b[j])
            high = max(side_a[j], side_b[j])
            if high == low:
                high = -1  # (a slot once)
            for k in range(n):
                s = 0.0
                for slot_b in (low, high):
                    if slot_b < 0:
                        continue
                    for t in range(slot_b * 6, slot_b * 6 + 6):
                        s += jac[i, t] * wjt[t, k]
                mat[i, k] = s
        mean = 0.0
        for i in range(n):
            mean += mat[i, i]
        mean /= n
        rhs = np.empty(n)
        for i in range(n):
            mat[i, i] += damping * max(mat[i, i], 1e-12 * mean)
            rhs[i] = -c[row_joint[i], row_r[i]]
        lam = _solve_spd(mat, rhs, n)
        delta = np.zeros((bmax, 6))
        for t in range(bmax * 6):
            s = 0.0
            for k in range(n):
                s += wjt[t, k] * lam[k]
            delta[t // 6, t % 6] = s
        # No body turned by more than max_turn in one step (see the reference).
        turn = 0.0
        for slot_b in range(bmax):
            turn = max(turn, math.sqrt(delta[slot_b, 3] ** 2 + delta[slot_b, 4] ** 2 + delta[slot_b, 5] ** 2))
        scale = min(1.0, max_turn / max(turn, 1e-300))
        for slot_b in range(bmax):
            body = mech_bodies[m, slot_b]
            if body < 0:
                continue
            for t in range(6):
                S[body, t] += delta[slot_b, t] * scale
        for k in range(n):
            per_row[row_joint[k], row_r[k]] = lam[k] * scale
    for j in range(count_j):
        for i in range(3):
            s = 0.0
            for r in range(3):
                s += per_row[j, r] * jb[j, r, i] * on[j, r]
            impulses[j, i] += s
        for r in range(3, 6):
            impulses[j, r] += per_row[j, r]


def joint_arguments(joints, layout, x, q, S, inv_mass, inv_inertia, active, steer, impulses, limit_hits=None,
                    x_start=None, q_start=None, from_start=None) -> tuple:
    """``_solve_joints``' arguments from the reference's (see ``solve_joints``): what the fused
    passes of ``rigid.solve_position_passes`` take too."""
    from ...constraints.joints import JOINT_DAMPING, JOINT_MAX_TURN

    j = joints
    hits = limit_hits if limit_hits is not None else np.zeros((j.count, 6))
    return (j.a, j.b, j.local_a, j.local_b, j.frame_a, j.rot_a, j.rot_b, j.steer_axis, j.lin_mode, j.lin_lower,
            j.lin_upper, j.swing_mode, j.cone, j.twist_mode, j.twist_lower, j.twist_upper, layout.rows,
            layout.bodies, layout.side_a, layout.side_b, layout.mechanism, x, q, S, inv_mass, inv_inertia,
            np.ascontiguousarray(active, dtype=np.bool_), np.ascontiguousarray(steer, dtype=np.float64),
            impulses, hits, limit_hits is not None, JOINT_DAMPING, JOINT_MAX_TURN,
            np.zeros((0, 3)) if x_start is None else x_start, np.zeros((0, 4)) if q_start is None else q_start,
            np.ones(j.count, np.bool_) if from_start is None else np.ascontiguousarray(from_start, dtype=np.bool_))


def solve_joints(joints, layout, x, q, S, inv_mass, inv_inertia, active, steer, impulses, limit_hits=None,
                 x_start=None, q_start=None, from_start=None) -> None:
    """One Newton step on every joint, adding to the corrections S (B+1, 6): the reference's
    signature (``constraints.joints.solve_joints``: Joints, JointLayout, arrays) over the compiled
    step."""
    if not len(layout.rows):
        return
    _solve_joints(*joint_arguments(joints, layout, x, q, S, inv_mass, inv_inertia, active, steer, impulses,
                                   limit_hits, x_start, q_start, from_start))
