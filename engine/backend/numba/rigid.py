"""Rigid-body kernels, compiled: integration, contact rows, the position and velocity solves.

The reference is ``backend/numpy/rigid.py`` (same arguments, same arithmetic, same order).

Extended XPBD (Muller et al. 2020) with the corrections of a substep linearised: every body
gathers a translation and a small rotation S = [dx, dtheta] that contact projections add to, and
each contact's rows (its normal and two tangents) J and the corrections per unit impulse M are
computed once per substep. The contacts of a pair of bodies are relaxed one after another (a
Gauss-Seidel sweep within the pair), pairs colour by colour: pairs of one colour share no moving
body, so serially here they give exactly what the numpy reference computes for a colour at once.

Arrays are sized B + 1: row B is the static world (inverse mass 0, identity pose).
"""

from __future__ import annotations

import math

import numpy as np
import numba
from numba import njit, prange

from ..numpy.rigid import grouped
from .joints import _solve_joints, joint_arguments
from .motors import _solve_motor_positions, motor_arguments
from .vec import (add, cross, dot, exp_rotation, get3, get4, inertia_times, inv_inertia_times, log_rotation, mul, qmul,
                  qnormalize, rotate, rotate_back, sub)

JIT = dict(cache=True, nogil=True, error_model="numpy")
# The helpers called per contact row are inlined (a call costs more than their arithmetic).
INLINE = dict(JIT, inline="always")


@njit(**JIT)
def integrate_bodies(x, q, v, w, momentum, inertia, inv_inertia, dynamic, accel, h, lin_decay, ang_decay):
    """Free motion over one substep for the dynamic bodies; momentum (B+1, 3) set to each body's
    world angular momentum (held while the orientation advances at the midpoint angular velocity)."""
    for b in range(x.shape[0]):
        momentum[b, 0] = 0.0
        momentum[b, 1] = 0.0
        momentum[b, 2] = 0.0
        if not dynamic[b]:
            continue
        for k in range(3):
            v[b, k] = (v[b, k] + accel[b, k] * h) * lin_decay[b]
            x[b, k] += v[b, k] * h
        qb = get4(q, b)
        L = mul(inertia_times(qb, get3(inertia, b), get3(w, b)), ang_decay[b])
        momentum[b, 0], momentum[b, 1], momentum[b, 2] = L
        q_mid = qnormalize(qmul(exp_rotation(mul(get3(w, b), 0.5 * h)), qb))
        w_mid = inv_inertia_times(q_mid, get3(inv_inertia, b), L)
        q[b, 0], q[b, 1], q[b, 2], q[b, 3] = qnormalize(qmul(exp_rotation(mul(w_mid, h)), qb))


@njit(**JIT)
def _tangents(n):
    """t1, t2 completing the unit normal n (t1 = n x the world axis least aligned with n)."""
    a0, a1, a2 = abs(n[0]), abs(n[1]), abs(n[2])
    if a0 <= a1 and a0 <= a2:
        e = (1.0, 0.0, 0.0)
    elif a1 <= a2:
        e = (0.0, 1.0, 0.0)
    else:
        e = (0.0, 0.0, 1.0)
    t1 = cross(n, e)
    length = math.sqrt(dot(t1, t1))
    t1 = (t1[0] / length, t1[1] / length, t1[2] / length)
    return t1, cross(n, t1)


@njit(**INLINE)
def _contact_row(c, x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, with_friction, J, M,
                 base, wn, wt):
    """Contact c's part of ``contact_rows``."""
    a, b = ints[c, 0], ints[c, 1]
    qa, qb = get4(q, a), get4(q, b)
    p1 = add(get3(x, a), rotate(qa, get3(local_a, c)))
    p2 = add(get3(x, b), rotate(qb, get3(local_b, c)))
    mid = mul(add(p1, p2), 0.5)
    # Lever arms from where each body was at the substep's start, both moved on by the pair's
    # shared step s (its inverse-mass weighted travel): the shared shift keeps the pair's
    # angular momentum exact, and with s the travel of the lighter body (all of it against
    # the static world) a ball rolling on the ground feels no torque from its normal force.
    wa, wb = inv_mass[a], inv_mass[b]
    total = wa + wb
    s0 = s1 = s2 = 0.0
    if total > 0.0:
        s0 = (wa * (x[a, 0] - origin[a, 0]) + wb * (x[b, 0] - origin[b, 0])) / total
        s1 = (wa * (x[a, 1] - origin[a, 1]) + wb * (x[b, 1] - origin[b, 1])) / total
        s2 = (wa * (x[a, 2] - origin[a, 2]) + wb * (x[b, 2] - origin[b, 2])) / total
    r1 = sub(mid, (origin[a, 0] + s0, origin[a, 1] + s1, origin[a, 2] + s2))
    r2 = sub(mid, (origin[b, 0] + s0, origin[b, 1] + s1, origin[b, 2] + s2))
    n = get3(normal, c)
    base[c, 0] = dot(sub(p1, p2), n)
    rows = 1
    t1 = (0.0, 0.0, 0.0)
    t2 = (0.0, 0.0, 0.0)
    if with_friction:
        t1, t2 = _tangents(n)
        slip0 = sub(p1, add(get3(x, b), rotate(qb, get3(anchor, c))))
        base[c, 1] = dot(slip0, t1)
        base[c, 2] = dot(slip0, t2)
        rows = 3
    ia, ib = get3(inv_inertia, a), get3(inv_inertia, b)
    for j in range(rows):
        d = n if j == 0 else (t1 if j == 1 else t2)
        ra = cross(r1, d)
        rb = cross(r2, d)
        ma = inv_inertia_times(qa, ia, ra)
        mb = inv_inertia_times(qb, ib, rb)
        for k in range(3):
            J[c, j, k] = d[k]
            J[c, j, 3 + k] = ra[k]
            J[c, j, 6 + k] = -d[k]
            J[c, j, 9 + k] = -rb[k]
            M[c, j, k] = inv_mass[a] * d[k]
            M[c, j, 3 + k] = ma[k]
            M[c, j, 6 + k] = -inv_mass[b] * d[k]
            M[c, j, 9 + k] = -mb[k]
    wn[c] = _rowdot(J, M, c, 0, 0)
    if with_friction:
        wt[c, 0] = _rowdot(J, M, c, 1, 1)
        wt[c, 1] = _rowdot(J, M, c, 1, 2)
        wt[c, 2] = _rowdot(J, M, c, 2, 2)


@njit(**JIT)
def _contact_rows(x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, count, with_friction,
                  J, M, base, wn, wt):
    for c in range(count):
        _contact_row(c, x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, with_friction, J,
                     M, base, wn, wt)


@njit(parallel=True, **JIT)
def _contact_rows_parallel(x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, count,
                           with_friction, J, M, base, wn, wt):
    for c in prange(count):
        _contact_row(c, x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, with_friction, J,
                     M, base, wn, wt)


def contact_rows(x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, count, with_friction,
                 J, M, base, wn, wt):
    """Rows of contacts 0:count at poses x, q: J (c, 3, 12) the normal and tangent directions
    [d, r1 x d, -d, -(r2 x d)], M (c, 3, 12) the correction per unit impulse along each, base
    (c, 3) their values at S = 0 (separation along n, offset from the friction anchor along t1,
    t2), wn (c,) the generalized inverse mass along n, wt (c, 3) the symmetric 2 x 2 one of the
    tangents (t1 t1, t1 t2, t2 t2). ``origin`` (B+1, 3): where the bodies were at the substep's
    start (the poses x themselves for rows at rest); lever arms reach from there (see below) to
    the middle of the two surface points. with_friction False: the normal row only.
    Each contact's rows are its own: PARALLEL_CONTACTS or more are made on all cores (the same bits)."""
    rows = _contact_rows_parallel if count >= PARALLEL_CONTACTS else _contact_rows
    rows(x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, count, with_friction, J, M, base,
         wn, wt)


@njit(**INLINE)
def _prepare_contact(c, x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints, local_a,
                     local_b, normal, anchor_keys, anchor_residual, anchor, J, M, base, wn, wt, lam, lam_t, stuck,
                     factored, speed_before, gap_start, accel_n):
    """Contact c's part of ``prepare_contacts``: its anchor, its rows, then the rest."""
    kept = anchor_keys.shape[0]
    a, b = ints[c, 0], ints[c, 1]
    qa, qpa, qpb = get4(q, a), get4(q_prev, a), get4(q_prev, b)
    la = get3(local_a, c)
    xa, xpa = get3(x, a), get3(x_prev, a)
    if ints[c, 3] == 1:  # a fixed point of A: exactly where it was
        rolled = add(xpa, rotate(qpa, la))
    else:  # a round surface: A's motion to first order
        rho = rotate(qa, la)
        phi = log_rotation(qmul(qa, (qpa[0], -qpa[1], -qpa[2], -qpa[3])))
        rolled = sub(sub(add(xa, rho), sub(xa, xpa)), cross(phi, rho))
    out = rotate((qpb[0], -qpb[1], -qpb[2], -qpb[3]), sub(rolled, get3(x_prev, b)))
    if kept:
        key = ints[c, 2]
        lo, hi = 0, kept
        while lo < hi:  # the first key >= key (numpy's searchsorted, side "left")
            mid = (lo + hi) // 2
            if anchor_keys[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        slot = min(lo, kept - 1)
        if anchor_keys[slot] == key:
            out = sub(out, get3(anchor_residual, slot))
    anchor[c, 0], anchor[c, 1], anchor[c, 2] = out
    _contact_row(c, x, q, x_prev, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, True, J, M, base, wn,
                 wt)
    lam[c] = 0.0
    lam_t[c, 0] = 0.0
    lam_t[c, 1] = 0.0
    stuck[c] = 0
    factored[c] = -1
    sa = 0.0
    sb = 0.0
    for i in range(3):
        sa += J[c, 0, i] * v_before[a, i]
    for i in range(3):
        sa += J[c, 0, 3 + i] * w_before[a, i]
    for i in range(3):
        sb += J[c, 0, 6 + i] * v_before[b, i]
    for i in range(3):
        sb += J[c, 0, 9 + i] * w_before[b, i]
    speed_before[c] = sa + sb
    n = get3(normal, c)
    start = add(get3(x_prev, a), rotate(get4(q_prev, a), get3(local_a, c)))
    p2 = add(get3(x_prev, b), rotate(get4(q_prev, b), get3(local_b, c)))
    gap_start[c] = dot(sub(start, p2), n)
    da = 1.0 if dynamic[a] else 0.0
    db = 1.0 if dynamic[b] else 0.0
    accel_n[c] = dot(n, sub(mul(get3(accel, a), da), mul(get3(accel, b), db)))


@njit(**JIT)
def _prepare_contacts(x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints, local_a,
                      local_b, normal, count, anchor_keys, anchor_residual, anchor, J, M, base, wn, wt, lam, lam_t,
                      stuck, factored, speed_before, gap_start, accel_n):
    for c in range(count):
        _prepare_contact(c, x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints,
                         local_a, local_b, normal, anchor_keys, anchor_residual, anchor, J, M, base, wn, wt, lam, lam_t,
                         stuck, factored, speed_before, gap_start, accel_n)


@njit(parallel=True, **JIT)
def _prepare_contacts_parallel(x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints,
                               local_a, local_b, normal, count, anchor_keys, anchor_residual, anchor, J, M, base, wn,
                               wt, lam, lam_t, stuck, factored, speed_before, gap_start, accel_n):
    for c in prange(count):
        _prepare_contact(c, x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints,
                         local_a, local_b, normal, anchor_keys, anchor_residual, anchor, J, M, base, wn, wt, lam, lam_t,
                         stuck, factored, speed_before, gap_start, accel_n)


def prepare_contacts(x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints, local_a,
                     local_b, normal, count, anchor_keys, anchor_residual, anchor, J, M, base, wn, wt, lam, lam_t,
                     stuck, factored, speed_before, gap_start, accel_n):
    """A substep's contacts made ready to solve: anchors, rows, cleared impulses, and the normal
    speed, separation and relative acceleration at the substep's start (see the numpy reference).
    Contact by contact, each its own: PARALLEL_CONTACTS or more on all cores (the same bits)."""
    prepare = _prepare_contacts_parallel if count >= PARALLEL_CONTACTS else _prepare_contacts
    prepare(x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints, local_a, local_b,
            normal, count, anchor_keys, anchor_residual, anchor, J, M, base, wn, wt, lam, lam_t, stuck, factored,
            speed_before, gap_start, accel_n)


@njit(**INLINE)
def _rowdot(J, M, c, i, j):
    s = 0.0
    for k in range(12):
        s += J[c, i, k] * M[c, j, k]
    return s


@njit(**INLINE)
def _value(J, S, c, j, a, b):
    """J_j . [S_a, S_b]: how far the contact has moved along row j by the corrections so far."""
    s = 0.0
    for k in range(6):
        s += J[c, j, k] * S[a, k]
    for k in range(6):
        s += J[c, j, 6 + k] * S[b, k]
    return s


@njit(**INLINE)
def _push(M, S, c, j, a, b, impulse):
    for k in range(6):
        S[a, k] += impulse * M[c, j, k]
        S[b, k] += impulse * M[c, j, 6 + k]


# The friction block of a pair is solved in the damped least-squares sense with the damping
# eps = (PAIR_DAMPING * its largest singular value)^2: a face's corners give more rows than the
# two bodies have ways to move, and nearly dependent rows (a box straddling two others) get
# damped rather than inverted, whose exact solution would be a pair of huge opposite impulses.
# With A = J F (F F^T the inverse mass matrix, F = diag(m^-1/2, R I^-1/2) per body) the impulses
# G (G + eps)^-2 r of G = A A^T are A (H + eps)^-2 A^T r with H = A^T A: a 12 x 12 system for the
# pair's 12 ways to move, however many rows its contacts give.
PAIR_DAMPING = 0.05
DOF = 12
# A pair whose restitution rows are all within VELOCITY_TOLERANCE (m/s) of their target speeds
# is left as it is in that pass: a pile at rest is nearly all such pairs.
VELOCITY_TOLERANCE = 1e-5
# A colour of this many pairs or more is solved on all cores (``_threads``): its pairs share no
# moving body, so the threads cannot change the bits (a body that cannot move is shared, but its
# rows of S and vw only ever get zeros added: its M is zero). Smaller colours, and every colour
# of a scene whose colours are all smaller (the car), stay serial: starting the threads costs
# more than a small colour's work. (1,000 boxes awake: colours of several hundred pairs.)
PARALLEL_PAIRS = 128
# Contacts made ready (``prepare_contacts``, ``contact_rows``) on all cores from this many on.
PARALLEL_CONTACTS = 1024


@njit(**INLINE)
def _row_a(J, q, inv_mass, inv_inertia, ints, c, j, swap, out):
    """A = J F of row j of contact c, in the pair's body order (swap: the contact's A is the pair's B)."""
    for u in range(2):
        body = ints[c, u]
        at = 6 * (1 - u) if swap else 6 * u
        sm = math.sqrt(inv_mass[body])
        for k in range(3):
            out[at + k] = J[c, j, 6 * u + k] * sm
        r = rotate_back(get4(q, body), (J[c, j, 6 * u + 3], J[c, j, 6 * u + 4], J[c, j, 6 * u + 5]))
        for k in range(3):
            out[at + 3 + k] = r[k] * math.sqrt(inv_inertia[body, k])


@njit(**INLINE)
def _moves(inv_mass, inv_inertia, body):
    """Whether a body can move at all (a static or kinematic one has no inverse mass or inertia)."""
    return inv_mass[body] != 0.0 or inv_inertia[body, 0] != 0.0 or inv_inertia[body, 1] != 0.0 \
        or inv_inertia[body, 2] != 0.0


@njit(**INLINE)
def _pair_columns(ints, first, inv_mass, inv_inertia):
    """The columns [lo, hi) of a pair's 12 that can be nonzero: a body that cannot move has rows
    A = J F of zeros, so its block of H + eps I is eps I, uncoupled from the other's; the solve
    on the other block alone gives the same numbers."""
    lo = 0 if _moves(inv_mass, inv_inertia, ints[first, 0]) else 6
    hi = DOF if _moves(inv_mass, inv_inertia, ints[first, 1]) else 6
    return lo, hi


@njit(**JIT)
def _factor_block(A, r0, n, lo, width, L):
    """The factor of ``_pair_factor`` for the block [lo, lo + width) (width 6 or 12, constant in
    each call site, so the loops have fixed lengths)."""
    for i in range(width):
        for k in range(i + 1):
            L[lo + i, lo + k] = 0.0
    for r in range(r0, r0 + n):
        for i in range(width):
            ai = A[r, lo + i]
            for k in range(i + 1):
                L[lo + i, lo + k] += ai * A[r, lo + k]
    trace = 0.0
    for i in range(width):
        trace += L[lo + i, lo + i]
    eps = PAIR_DAMPING * PAIR_DAMPING * trace + 1e-300
    for i in range(width):
        L[lo + i, lo + i] += eps
    for k in range(width):
        kk = lo + k
        d = math.sqrt(max(L[kk, kk], 1e-300))
        L[kk, kk] = d
        for i in range(kk + 1, lo + width):
            L[i, kk] = L[i, kk] / d
        for i in range(kk + 1, lo + width):
            lik = L[i, kk]
            for j in range(kk + 1, i + 1):
                L[i, j] -= lik * L[j, kk]


@njit(**JIT)
def _pair_factor(A, r0, n, lo, hi, L):
    """Cholesky factor (lower triangle of L[lo:hi, lo:hi]) of H + eps I for rows A[r0:r0 + n] (12
    wide), H = A^T A, eps = PAIR_DAMPING^2 trace(H) (the trace bounds the largest eigenvalue from
    above, and takes no iterations to find). Right-looking (outer products), as the numpy
    reference does it. (Loops run so that each entry's sum keeps the reference's order while the
    entries proceed side by side. H and the updates are formed on the lower triangle only: the
    lower entries never read the upper ones, and no solve does; the strict upper part of L is
    left as it was.)"""
    if hi - lo == DOF:
        _factor_block(A, r0, n, 0, DOF, L)
    elif hi - lo == 6:
        _factor_block(A, r0, n, lo, 6, L)


@njit(**INLINE)
def _cholesky_solve(L, lo, width, s, out):
    """out = (L L^T)^-1 s on [lo, lo + width), by columns (s is overwritten): each entry takes its
    terms in the order of the row-by-row substitution, the entries side by side."""
    hi = lo + width
    for k in range(lo, hi):
        out[k] = s[k] / L[k, k]
        ok = out[k]
        for i in range(k + 1, hi):
            s[i] -= L[i, k] * ok
    for k in range(lo, hi):
        s[k] = out[k]
    for k in range(hi - 1, lo - 1, -1):
        out[k] = s[k] / L[k, k]
        ok = out[k]
        for i in range(lo, k):
            s[i] -= L[k, i] * ok


@njit(**INLINE)
def _block_solve(A, r0, n, lo, width, L, rhs, y, z, out):
    """``_pair_solve`` on the block [lo, lo + width) (width a constant at each call site, so the
    loops over the block have fixed lengths: the same operations, unrolled)."""
    hi = lo + width
    for i in range(lo, hi):
        y[i] = 0.0
    for r in range(n):
        rr = rhs[r]
        for i in range(lo, hi):
            y[i] += A[r0 + r, i] * rr
    _cholesky_solve(L, lo, width, y, z)
    _cholesky_solve(L, lo, width, z, y)
    for r in range(n):
        out[r] = 0.0
    for i in range(lo, hi):
        yi = y[i]
        for r in range(n):
            out[r] += A[r0 + r, i] * yi


@njit(**INLINE)
def _pair_solve(A, r0, n, lo, hi, L, rhs, y, z, out):
    """out[:n] = A (H + eps)^-2 A^T rhs for rows A[r0:r0 + n], L from ``_pair_factor``."""
    if hi - lo == DOF:
        _block_solve(A, r0, n, 0, DOF, L, rhs, y, z, out)
    elif hi - lo == 6:
        _block_solve(A, r0, n, lo, 6, L, rhs, y, z, out)
    else:
        _block_solve(A, r0, n, lo, hi - lo, L, rhs, y, z, out)


@njit(**INLINE)
def _pair_positions(p, ints, J, M, base, wn, wt, mu, pair_first, lam, lam_t, stuck, S, sweeps, q, inv_mass, inv_inertia,
                    rows_a, factors, factored, rhs, out, y, z):
    """One pair's part of ``solve_contact_positions`` (rhs, out: scratch of 3 rows per contact of
    the pair; y, z: 12)."""
    first, end = pair_first[p], pair_first[p + 1]
    if end <= first:
        return
    for _ in range(sweeps):
        for c in range(first, end):
            a, b = ints[c, 0], ints[c, 1]
            e = _value(J, S, c, 0, a, b) + base[c, 0]
            if lam[c] > 0.0 or e < 0.0:
                dl = max(-e / wn[c], -lam[c])
                lam[c] += dl
                _push(M, S, c, 0, a, b, dl)
    kept = factored[first] >= 0
    if kept:
        for c in range(first, end):
            if factored[c] != (1 if lam[c] > 0.0 else 0):
                kept = False
                break
    n = 0
    far = False  # any friction row off its anchor (else the impulses are zero)
    for c in range(first, end):
        if lam[c] > 0.0:
            rhs[n] = 0.0
            n += 1
            if mu[c] > 0.0:
                a, b = ints[c, 0], ints[c, 1]
                for j in (1, 2):
                    rhs[n] = -(_value(J, S, c, j, a, b) + base[c, j])
                    if rhs[n] != 0.0:
                        far = True
                    n += 1
    if far:
        lo, hi = _pair_columns(ints, first, inv_mass, inv_inertia)
        if not kept:
            pair_a = ints[first, 0]
            r0 = 3 * first
            row = r0
            for c in range(first, end):
                if lam[c] > 0.0:
                    swap = ints[c, 0] != pair_a
                    _row_a(J, q, inv_mass, inv_inertia, ints, c, 0, swap, rows_a[row])
                    row += 1
                    if mu[c] > 0.0:
                        for j in (1, 2):
                            _row_a(J, q, inv_mass, inv_inertia, ints, c, j, swap, rows_a[row])
                            row += 1
            _pair_factor(rows_a, r0, n, lo, hi, factors[first])
            for c in range(first, end):
                factored[c] = 1 if lam[c] > 0.0 else 0
        _pair_solve(rows_a, 3 * first, n, lo, hi, factors[first], rhs, y, z, out)
    else:
        for r in range(n):
            out[r] = 0.0
    k = 0
    for c in range(first, end):
        a, b = ints[c, 0], ints[c, 1]
        d1 = d2 = 0.0
        if lam[c] > 0.0:
            k += 1
            if mu[c] > 0.0:
                d1, d2 = out[k], out[k + 1]
                k += 2
        # Coulomb: the accumulated tangential impulse stays within mu times the normal one.
        t1 = lam_t[c, 0] + d1
        t2 = lam_t[c, 1] + d2
        length = math.sqrt(t1 * t1 + t2 * t2)
        scale = min(mu[c] * lam[c] / max(length, 1e-300), 1.0)
        t1 *= scale
        t2 *= scale
        _push(M, S, c, 1, a, b, t1 - lam_t[c, 0])
        _push(M, S, c, 2, a, b, t2 - lam_t[c, 1])
        lam_t[c, 0] = t1
        lam_t[c, 1] = t2
        stuck[c] = 1 if (scale >= 1.0 and lam[c] > 0.0) else 0


@njit(**JIT)
def solve_contact_positions(ints, J, M, base, wn, wt, mu, pair_first, pair_order, colour_bounds, lam, lam_t, stuck, S,
                            sweeps, q, inv_mass, inv_inertia, rows_a, factors, factored):
    """One pass of contact projection with static friction over the pairs in ``pair_order``
    (colour by colour), on S (B+1, 6). colour_bounds: where each colour starts in ``pair_order``
    (the numpy reference solves a colour at once).

    Per pair: ``sweeps`` Gauss-Seidel sweeps over its contacts, each taking the normal impulse
    that brings it to the surface (the accumulated impulse kept >= 0, so a contact pushed too far
    lets go); then the friction impulses of all its pushing contacts at once, found with their
    normal rows held (friction at one corner alone would mostly turn the body, and the corners'
    fixes fight each other), each within mu times its normal impulse (accumulated over the passes
    of the substep: inside the cone it sticks, ``stuck`` 1, else it slides, 0). Only the
    tangential part is applied.

    A pair's rows A and the factor of its block depend only on which of its contacts push (the
    rows and poses are fixed over a substep), so they are kept from one pass to the next of the
    substep: rows_a (3 c, 12) holds a pair's rows from 3 * its first contact, factors (c, 12, 12)
    its factor at its first contact, factored (c,) per contact whether it pushed when they were
    made (-1 at the first contact: none yet; the caller sets that for every contact each
    substep). Scratch to the numpy reference, which forms them every pass: same numbers."""
    rhs = np.zeros(max(rows_a.shape[0], 1))
    out = np.zeros(max(rows_a.shape[0], 1))
    y = np.zeros(DOF)
    z = np.zeros(DOF)
    for p in pair_order:
        _pair_positions(p, ints, J, M, base, wn, wt, mu, pair_first, lam, lam_t, stuck, S, sweeps, q, inv_mass,
                        inv_inertia, rows_a, factors, factored, rhs, out, y, z)


@njit(**JIT)
def _contact_positions_by_colour(ints, J, M, base, wn, wt, mu, pair_first, pair_order, colour_bounds, lam, lam_t, stuck,
                                 S, sweeps, q, inv_mass, inv_inertia, rows_a, factors, factored, threads):
    """``solve_contact_positions`` with each colour of ``threads[0]`` pairs or more on all cores
    (threads: the least, then per-chunk scratch, see ``_threads``; the serial colours use the
    first chunk's)."""
    least, t_rhs, t_out, t_y, t_z = threads
    for colour in range(colour_bounds.shape[0] - 1):
        lo, hi = colour_bounds[colour], colour_bounds[colour + 1]
        if hi - lo >= least:
            _colour_positions_parallel(lo, hi, ints, J, M, base, wn, wt, mu, pair_first, pair_order, lam, lam_t, stuck,
                                       S, sweeps, q, inv_mass, inv_inertia, rows_a, factors, factored, t_rhs, t_out,
                                       t_y, t_z)
        else:
            for i in range(lo, hi):
                _pair_positions(pair_order[i], ints, J, M, base, wn, wt, mu, pair_first, lam, lam_t, stuck, S, sweeps,
                                q, inv_mass, inv_inertia, rows_a, factors, factored, t_rhs[0], t_out[0], t_y[0],
                                t_z[0])


@njit(parallel=True, **JIT)
def _colour_positions_parallel(lo, hi, ints, J, M, base, wn, wt, mu, pair_first, pair_order, lam, lam_t, stuck, S,
                               sweeps, q, inv_mass, inv_inertia, rows_a, factors, factored, rhs, out, y, z):
    """The pairs pair_order[lo:hi] of one colour in ``rhs.shape[0]`` chunks on all cores."""
    chunks = rhs.shape[0]
    for k in prange(chunks):
        for i in range(lo + (hi - lo) * k // chunks, lo + (hi - lo) * (k + 1) // chunks):
            _pair_positions(pair_order[i], ints, J, M, base, wn, wt, mu, pair_first, lam, lam_t, stuck, S, sweeps, q,
                            inv_mass, inv_inertia, rows_a, factors, factored, rhs[k], out[k], y[k], z[k])


def _threads(pair_first: np.ndarray, colour_bounds: np.ndarray):
    """None where every colour is smaller than PARALLEL_PAIRS (the serial solve), else what the
    colours on all cores need: the least, and scratch for each chunk (a chunk per thread; the
    chunks' pairs share no moving body, so their number cannot change the bits)."""
    if pair_first.shape[0] <= PARALLEL_PAIRS or colour_bounds.shape[0] < 2 \
            or int(np.max(colour_bounds[1:] - colour_bounds[:-1])) < PARALLEL_PAIRS:
        return None
    chunks = numba.get_num_threads()
    rows = 3 * max(int(np.max(pair_first[1:] - pair_first[:-1])), 1)
    return (np.int64(PARALLEL_PAIRS), np.zeros((chunks, rows)), np.zeros((chunks, rows)), np.zeros((chunks, DOF)),
            np.zeros((chunks, DOF)))


@njit(**JIT)
def apply_corrections(x, q, S, momentum, inertia, dynamic, h):
    """The substep's corrections into the poses of the dynamic bodies; the angular impulses that
    turned each body by dtheta into its angular momentum (sum r x P = I_world dtheta / h)."""
    for b in range(x.shape[0]):
        if not dynamic[b]:
            continue
        dth = (S[b, 3], S[b, 4], S[b, 5])
        for k in range(3):
            x[b, k] += S[b, k]
        qb = get4(q, b)
        L = inertia_times(qb, get3(inertia, b), dth)
        for k in range(3):
            momentum[b, k] += L[k] / h
        q[b, 0], q[b, 1], q[b, 2], q[b, 3] = qnormalize(qmul(exp_rotation(dth), qb))


@njit(**JIT)
def velocities(x, q, v, w, x_prev, q_prev, momentum, inv_inertia, dynamic, kinematic, h):
    """Velocities after a substep: linear from the poses; angular from the momentum for dynamic
    bodies (so spin is kept exactly), from the orientations for kinematic ones."""
    for b in range(x.shape[0] - 1):
        for k in range(3):
            v[b, k] = (x[b, k] - x_prev[b, k]) / h
        if dynamic[b]:
            w[b, 0], w[b, 1], w[b, 2] = inv_inertia_times(get4(q, b), get3(inv_inertia, b), get3(momentum, b))
        elif kinematic[b]:
            r = log_rotation(qmul(get4(q, b), (q_prev[b, 0], -q_prev[b, 1], -q_prev[b, 2], -q_prev[b, 3])))
            w[b, 0], w[b, 1], w[b, 2] = r[0] / h, r[1] / h, r[2] / h


@njit(**JIT)
def _position_passes(passes, contacts, motors, joints, threads):
    """``passes`` rounds of contacts, motors and joints in that order; a part that is None is
    left out (numba prunes its branch when it compiles), and so are the threads (``_threads``)."""
    for _ in range(passes):
        if contacts is not None:
            if threads is None:
                solve_contact_positions(*contacts)
            else:
                _contact_positions_by_colour(*contacts, threads)
        if motors is not None:
            _solve_motor_positions(*motors)
        if joints is not None:
            _solve_joints(*joints)


def solve_position_passes(passes: int, contacts, motors, joints) -> None:
    """``passes`` rounds of the bodies' position solve in one compiled call: per round the
    contacts (``solve_contact_positions``' arguments), the motors (``solve_motor_positions``')
    and the joints (``solve_joints``'), each None to leave it out. The same kernels in the same
    order as calling the three ``passes`` times; one call instead of three a round (the car
    example's round was 77 us as three calls, of which about 60 us the kernels' own work).
    Colours of PARALLEL_PAIRS pairs or more are solved on all cores (the same bits)."""
    if motors is not None and not motors[0].count:
        motors = None
    if joints is not None and not len(joints[1].rows):
        joints = None
    threads = None if contacts is None else _threads(contacts[7], contacts[9])
    _position_passes(int(passes), contacts, None if motors is None else motor_arguments(*motors),
                     None if joints is None else joint_arguments(*joints), threads)


@njit(**INLINE)
def _pair_restitution(p, ints, J, M, wn, solved, target, pair_first, vw, q, inv_mass, inv_inertia, rows_a, factors,
                      factored, rhs, out, y, z):
    """One pair's part of a pass of ``solve_contact_restitution`` (scratch as ``_pair_positions``')."""
    first, end = pair_first[p], pair_first[p + 1]
    if end <= first:
        return
    n = 0
    far = False  # any row farther than VELOCITY_TOLERANCE from its target
    for c in range(first, end):
        if solved[c]:
            rhs[n] = target[c] - _value(J, vw, c, 0, ints[c, 0], ints[c, 1])
            if not abs(rhs[n]) <= VELOCITY_TOLERANCE:
                far = True
            n += 1
    if not far:
        return
    lo, hi = _pair_columns(ints, first, inv_mass, inv_inertia)
    r0 = 3 * first
    if factored[first] < 0:  # the pair's rows and factor, once for all the passes
        pair_a = ints[first, 0]
        row = r0
        for c in range(first, end):
            if solved[c]:
                _row_a(J, q, inv_mass, inv_inertia, ints, c, 0, ints[c, 0] != pair_a, rows_a[row])
                row += 1
        _pair_factor(rows_a, r0, n, lo, hi, factors[first])
        factored[first] = 1
    _pair_solve(rows_a, r0, n, lo, hi, factors[first], rhs, y, z, out)
    k = 0
    for c in range(first, end):
        if solved[c]:
            _push(M, vw, c, 0, ints[c, 0], ints[c, 1], out[k])
            k += 1


@njit(**JIT)
def _restitution_passes(ints, J, M, wn, solved, target, pair_first, pair_order, colour_bounds, vw, iterations, q,
                        inv_mass, inv_inertia, rows_a, factors, factored, threads):
    for c in range(factored.shape[0]):
        factored[c] = -1
    rhs = np.zeros(max(rows_a.shape[0], 1))
    out = np.zeros(max(rows_a.shape[0], 1))
    y = np.zeros(DOF)
    z = np.zeros(DOF)
    for it in range(iterations):
        if threads is None:
            for p in pair_order:
                _pair_restitution(p, ints, J, M, wn, solved, target, pair_first, vw, q, inv_mass, inv_inertia, rows_a,
                                  factors, factored, rhs, out, y, z)
        else:
            _restitution_by_colour(ints, J, M, wn, solved, target, pair_first, pair_order, colour_bounds, vw, q,
                                   inv_mass, inv_inertia, rows_a, factors, factored, threads)


@njit(**JIT)
def _restitution_by_colour(ints, J, M, wn, solved, target, pair_first, pair_order, colour_bounds, vw, q, inv_mass,
                           inv_inertia, rows_a, factors, factored, threads):
    """A pass of ``_restitution_passes`` with each colour of ``threads[0]`` pairs or more on all
    cores (the serial colours use the first chunk's scratch)."""
    least, t_rhs, t_out, t_y, t_z = threads
    for colour in range(colour_bounds.shape[0] - 1):
        lo, hi = colour_bounds[colour], colour_bounds[colour + 1]
        if hi - lo >= least:
            _colour_restitution_parallel(lo, hi, ints, J, M, wn, solved, target, pair_first, pair_order, vw, q,
                                         inv_mass, inv_inertia, rows_a, factors, factored, t_rhs, t_out, t_y, t_z)
        else:
            for i in range(lo, hi):
                _pair_restitution(pair_order[i], ints, J, M, wn, solved, target, pair_first, vw, q, inv_mass,
                                  inv_inertia, rows_a, factors, factored, t_rhs[0], t_out[0], t_y[0], t_z[0])


@njit(parallel=True, **JIT)
def _colour_restitution_parallel(lo, hi, ints, J, M, wn, solved, target, pair_first, pair_order, vw, q, inv_mass,
                                 inv_inertia, rows_a, factors, factored, rhs, out, y, z):
    """The pairs pair_order[lo:hi] of one colour in ``rhs.shape[0]`` chunks on all cores."""
    chunks = rhs.shape[0]
    for k in prange(chunks):
        for i in range(lo + (hi - lo) * k // chunks, lo + (hi - lo) * (k + 1) // chunks):
            _pair_restitution(pair_order[i], ints, J, M, wn, solved, target, pair_first, vw, q, inv_mass, inv_inertia,
                              rows_a, factors, factored, rhs[k], out[k], y[k], z[k])


def solve_contact_restitution(ints, J, M, wn, solved, target, pair_first, pair_order, colour_bounds, vw, iterations,
                              q, inv_mass, inv_inertia, rows_a, factors, factored):
    """``iterations`` passes setting the normal speed of the ``solved`` contacts to ``target`` (e
    times the approach speed for a bounce, 0 for a resting contact), pairs colour by colour, each
    pair's contacts at once (the damped least-squares impulses, as for friction): a face landing
    flat shares its impulse evenly over its corners instead of tipping. J, M are the normal rows
    at the corrected poses (lever arms from the centres); vw (B+1, 6) [v, w], in place.

    rows_a, factors, factored: scratch, as for ``solve_contact_positions`` (whose factors this
    overwrites: it marks them all gone). A pair's rows and factor are made in the first pass that
    solves it and kept for the others, which is what the numpy reference computes anew each pass.
    A pair whose rows are all within VELOCITY_TOLERANCE of their targets is left in that pass."""
    _restitution_passes(ints, J, M, wn, solved, target, pair_first, pair_order, colour_bounds, vw, iterations, q,
                        inv_mass, inv_inertia, rows_a, factors, factored, _threads(pair_first, colour_bounds))


@njit(**JIT)
def _colour(pairs, movable, words, colour):
    """Greedy colouring (as the reference): each pair the lowest colour that neither of its movable
    bodies has yet; colours as bits in ``words`` 64-bit words per body."""
    used = np.zeros((movable.shape[0], words), np.uint64)
    for k in range(pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        c = -1
        for word in range(words):
            taken = np.uint64(0)
            if movable[a]:
                taken |= used[a, word]
            if movable[b]:
                taken |= used[b, word]
            if taken != np.uint64(0xFFFFFFFFFFFFFFFF):
                for bit in range(64):
                    if not (taken >> np.uint64(bit)) & np.uint64(1):
                        c = word * 64 + bit
                        break
                break
        colour[k] = c
        mask = np.uint64(1) << np.uint64(c % 64)
        if movable[a]:
            used[a, c // 64] |= mask
        if movable[b]:
            used[b, c // 64] |= mask


def colour_pairs(pairs: np.ndarray, movable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy colouring of pairs (Q, 2) of bodies: no movable body twice in a colour; the pair
    order (colour by colour, pairs in their order within each) and the colour bounds in it. The
    same as the numpy reference's, compiled."""
    count = len(pairs)
    if not count:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    # A pair's colour is below the number of pairs its two bodies are in: enough words for that.
    degree = np.bincount(pairs.ravel(), minlength=len(movable))
    words = int(2 * degree.max()) // 64 + 1
    colour = np.empty(count, np.int64)
    _colour(np.ascontiguousarray(pairs, dtype=np.int64), np.ascontiguousarray(movable, dtype=np.bool_), words, colour)
    return grouped(colour)


@njit(**JIT)
def _waves(order, pairs, movable, wave):
    last = np.full(movable.shape[0], -1, np.int64)
    for k in range(order.shape[0]):
        a, b = pairs[order[k], 0], pairs[order[k], 1]
        w = max(last[a] if movable[a] else -1, last[b] if movable[b] else -1) + 1
        wave[k] = w
        if movable[a]:
            last[a] = w
        if movable[b]:
            last[b] = w


def order_waves(order: np.ndarray, pairs: np.ndarray, movable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The numpy reference's waves (each pair in the wave after the last that holds either of its
    movable bodies), the loop compiled: the same order and bounds."""
    if not len(order):
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    order = np.ascontiguousarray(order, dtype=np.int64)
    wave = np.empty(len(order), np.int64)
    _waves(order, np.ascontiguousarray(pairs, dtype=np.int64), np.ascontiguousarray(movable, dtype=np.bool_), wave)
    by_wave, bounds = grouped(wave)
    return order[by_wave], bounds


@njit(**JIT)
def restitution_targets(lam, restitution, speed_before, gap_start, accel_n, gap_now, pair_first, bounce_speed, h,
                        capacity):
    """The numpy reference's restitution targets, contact by contact."""
    count = speed_before.shape[0]
    pairs = pair_first.shape[0] - 1
    touching = np.zeros(count, np.bool_)
    approaching = np.zeros(count, np.bool_)
    bounce = np.zeros(count, np.bool_)
    soon = np.zeros(count, np.bool_)
    hit = np.zeros(pairs, np.bool_)
    for p in range(pairs):
        for c in range(pair_first[p], min(pair_first[p + 1], count)):
            touching[c] = lam[c] > 0.0
            approaching[c] = speed_before[c] < -bounce_speed and restitution[c] > 0.0
            bounce[c] = touching[c] and approaching[c]
            if bounce[c]:
                hit[p] = True
    target = np.zeros(capacity)
    solved = np.zeros(capacity, np.bool_)
    for p in range(pairs):
        for c in range(pair_first[p], min(pair_first[p + 1], count)):
            soon[c] = approaching[c] and not touching[c] and hit[p] and gap_now[c] < -speed_before[c] * h
            if soon[c]:
                bounce[c] = True
            a = accel_n[c]
            v0 = speed_before[c] + 0.5 * a * h
            if bounce[c]:
                z0 = max(gap_start[c], 0.0)
                tau = min(max(2.0 * z0 / max(-v0 + math.sqrt(max(v0 * v0 - 2.0 * a * z0, 0.0)), 1e-15), 0.0), h)
                target[c] = -restitution[c] * (v0 + a * tau) - 0.5 * a * h
            solved[c] = touching[c] or soon[c]
    return bounce, touching, soon, target, solved


@njit(**JIT)
def stuck_anchors(x, q, ints, local_a, anchor, stuck, lam, count):
    """The numpy reference's carried slip of the contacts static friction held, contact by contact."""
    held = 0
    for c in range(count):
        if stuck[c] == 1 and lam[c] > 0.0 and ints[c, 2] >= 0:
            held += 1
    keys = np.empty(held, np.int64)
    residual = np.empty((held, 3))
    k = 0
    for c in range(count):
        if stuck[c] == 1 and lam[c] > 0.0 and ints[c, 2] >= 0:
            a = ints[c, 0]
            b = ints[c, 1]
            end = add(get3(x, a), rotate(get4(q, a), get3(local_a, c)))
            r = rotate((q[b, 0], -q[b, 1], -q[b, 2], -q[b, 3]), sub(end, get3(x, b)))
            keys[k] = ints[c, 2]
            for i in range(3):
                residual[k, i] = r[i] - anchor[c, i]
            k += 1
    order = np.argsort(keys, kind="mergesort")
    return keys[order], residual[order]
