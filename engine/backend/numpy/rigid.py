"""Rigid-body kernels in numpy: the reference of ``backend/numba/rigid.py`` (see there for the
method); loops over the bodies there are vectorised here, loops over a pair's contacts run slot by
slot over every pair of a colour at once.

Arrays are sized B + 1: row B is the static world (inverse mass 0, identity pose).
"""

from __future__ import annotations

import numpy as np

from ...geometry.quaternions import log_rotation as _log_rotation
from . import quat as Q


def world_inverse_inertia(rot, inv_inertia):
    """World inverse inertia matrices R diag(inv_inertia) R^T (..., 3, 3) for rotations rot
    (..., 3, 3) and principal inverse inertias (..., 3). (For the connectors' solves.)"""
    return (rot * inv_inertia[..., None, :]) @ np.swapaxes(rot, -1, -2)


def _dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def integrate_bodies(x, q, v, w, momentum, inertia, inv_inertia, dynamic, accel, h, lin_decay, ang_decay):
    momentum[...] = 0.0
    d = np.flatnonzero(dynamic)
    if not len(d):
        return
    v[d] = (v[d] + accel[d] * h) * lin_decay[d, None]
    x[d] += v[d] * h
    qd = q[d]
    L = Q.inertia_times(qd, inertia[d], w[d]) * ang_decay[d, None]
    momentum[d] = L
    q_mid = Q.normalize(Q.multiply(Q.exp_rotation(w[d] * (0.5 * h)), qd))
    w_mid = Q.inv_inertia_times(q_mid, inv_inertia[d], L)
    q[d] = Q.normalize(Q.multiply(Q.exp_rotation(w_mid * h), qd))


def _tangents(n):
    a = np.abs(n)
    pick = np.where((a[:, 0] <= a[:, 1]) & (a[:, 0] <= a[:, 2]), 0, np.where(a[:, 1] <= a[:, 2], 1, 2))
    e = np.zeros_like(n)
    e[np.arange(len(n)), pick] = 1.0
    t1 = Q.cross(n, e)
    t1 = t1 / np.sqrt(_dot(t1, t1))[:, None]
    return t1, Q.cross(n, t1)


def _rowdot(J, M, i, j):
    """Sum over the 12 columns, in order, of J[:, i] M[:, j]."""
    s = np.zeros(len(J))
    for k in range(12):
        s = s + J[:, i, k] * M[:, j, k]
    return s


def contact_rows(x, q, origin, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, count, with_friction,
                 J, M, base, wn, wt):
    c = slice(0, count)
    a, b = ints[c, 0], ints[c, 1]
    qa, qb = q[a], q[b]
    p1 = x[a] + Q.rotate(qa, local_a[c])
    p2 = x[b] + Q.rotate(qb, local_b[c])
    mid = (p1 + p2) * 0.5
    wa, wb = inv_mass[a], inv_mass[b]
    total = wa + wb
    safe = np.where(total > 0.0, total, 1.0)
    shift = np.stack([(wa * (x[a, k] - origin[a, k]) + wb * (x[b, k] - origin[b, k])) / safe for k in range(3)], axis=1)
    shift[total <= 0.0] = 0.0
    r1 = mid - (origin[a] + shift)
    r2 = mid - (origin[b] + shift)
    n = normal[c]
    base[c, 0] = _dot(p1 - p2, n)
    dirs = [n]
    if with_friction:
        t1, t2 = _tangents(n)
        slip0 = p1 - (x[b] + Q.rotate(qb, anchor[c]))
        base[c, 1] = _dot(slip0, t1)
        base[c, 2] = _dot(slip0, t2)
        dirs += [t1, t2]
    ia, ib = inv_inertia[a], inv_inertia[b]
    for j, d in enumerate(dirs):
        ra, rb = Q.cross(r1, d), Q.cross(r2, d)
        J[c, j, 0:3] = d
        J[c, j, 3:6] = ra
        J[c, j, 6:9] = -d
        J[c, j, 9:12] = -rb
        M[c, j, 0:3] = inv_mass[a][:, None] * d
        M[c, j, 3:6] = Q.inv_inertia_times(qa, ia, ra)
        M[c, j, 6:9] = -inv_mass[b][:, None] * d
        M[c, j, 9:12] = -Q.inv_inertia_times(qb, ib, rb)
    Jc, Mc = J[c], M[c]
    wn[c] = _rowdot(Jc, Mc, 0, 0)
    if with_friction:
        wt[c, 0] = _rowdot(Jc, Mc, 1, 1)
        wt[c, 1] = _rowdot(Jc, Mc, 1, 2)
        wt[c, 2] = _rowdot(Jc, Mc, 2, 2)


def prepare_contacts(x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints, local_a,
                     local_b, normal, count, anchor_keys, anchor_residual, anchor, J, M, base, wn, wt, lam, lam_t,
                     stuck, factored, speed_before, gap_start, accel_n):
    """A substep's contacts 0:count made ready to solve (see ``RigidStepper.find_contacts``): their
    friction anchors (B's frame: where A's point was at the substep's start, exactly for a fixed
    point of A (``ints[:, 3]`` 1), else carried by A's motion to first order; less the slip
    ``anchor_residual`` a contact of the same key, among the sorted ``anchor_keys``, was left
    with), their rows (``contact_rows``), the solve's impulses
    and factors cleared, and per contact the normal speed at the substep's start
    (``speed_before``), the separation then (``gap_start``) and the relative normal acceleration
    (``accel_n``)."""
    c = slice(0, count)
    a, b = ints[c, 0], ints[c, 1]
    start = x_prev[a] + Q.rotate(q_prev[a], local_a[c])
    rho = Q.rotate(q[a], local_a[c])
    phi = _log_rotation(Q.multiply(q[a], Q.conjugate(q_prev[a])))
    rolled = x[a] + rho - (x[a] - x_prev[a]) - Q.cross(phi, rho)
    rolled = np.where(ints[c, 3, None] == 1, start, rolled)
    out = Q.rotate(Q.conjugate(q_prev[b]), rolled - x_prev[b])
    if len(anchor_keys):
        key = ints[c, 2]
        slot = np.minimum(np.searchsorted(anchor_keys, key), len(anchor_keys) - 1)
        kept = anchor_keys[slot] == key
        out[kept] -= anchor_residual[slot[kept]]
    anchor[c] = out
    contact_rows(x, q, x_prev, inv_mass, inv_inertia, ints, local_a, local_b, normal, anchor, count, True, J, M, base,
                 wn, wt)
    lam[c] = 0.0
    lam_t[c] = 0.0
    stuck[c] = 0
    factored[c] = -1
    before = np.hstack([v_before, w_before])
    J0 = J[c, 0]
    speed_before[c] = np.einsum("ci,ci->c", J0[:, :6], before[a]) + np.einsum("ci,ci->c", J0[:, 6:], before[b])
    n = normal[c]
    p2 = x_prev[b] + Q.rotate(q_prev[b], local_b[c])
    gap_start[c] = np.einsum("ci,ci->c", start - p2, n)
    accel_n[c] = np.einsum("ci,ci->c", n, accel[a] * dynamic[a, None] - accel[b] * dynamic[b, None])


def _value(J, S, c, j, a, b):
    """J_j . [S_a, S_b], the twelve terms added in order (one gather of each, then columns)."""
    prod = J[c, j] * np.concatenate([S[a], S[b]], axis=1)
    s = np.zeros(len(c))
    for k in range(12):
        s = s + prod[:, k]
    return s


def _push(M, S, c, j, a, b, impulse):
    S[a] += impulse[:, None] * M[c, j, 0:6]
    S[b] += impulse[:, None] * M[c, j, 6:12]


def _colours(pair_first, pair_order, colour_bounds):
    """Per colour: for each slot k, the contacts at slot k of the colour's pairs (those that have one)."""
    out = []
    for ci in range(len(colour_bounds) - 1):
        pairs = pair_order[colour_bounds[ci]:colour_bounds[ci + 1]]
        first = pair_first[pairs]
        size = pair_first[pairs + 1] - first
        width = int(size.max()) if len(size) else 0
        out.append([first[size > k] + k for k in range(width)])
    return out


PAIR_DAMPING = 0.05
DOF = 12
# A pair whose restitution rows are all within VELOCITY_TOLERANCE (m/s) of their target speeds
# is left as it is in that pass: a pile at rest is nearly all such pairs.
VELOCITY_TOLERANCE = 1e-5


def _cholesky_solve(L, rhs):
    n = L.shape[1]
    s = rhs.copy()
    out = np.zeros_like(rhs)
    for k in range(n):  # forward: column by column, each row's terms in increasing k
        out[:, k] = s[:, k] / L[:, k, k]
        s[:, k + 1:] = s[:, k + 1:] - L[:, k + 1:, k] * out[:, k:k + 1]
    s = out.copy()
    for k in range(n - 1, -1, -1):  # backward: each row's terms from the far end
        out[:, k] = s[:, k] / L[:, k, k]
        s[:, :k] = s[:, :k] - L[:, k, :k] * out[:, k:k + 1]
    return out


def _rows_a(J, q, inv_mass, inv_inertia, ints, rc, rj, swap):
    """A = J F (P, n, 12) of the rows, in each pair's body order."""
    A = np.zeros(rc.shape + (DOF,))
    for u in range(2):
        body = ints[rc, u]
        half = np.zeros(rc.shape + (6,))
        half[..., :3] = J[rc, rj, 6 * u:6 * u + 3] * np.sqrt(inv_mass[body])[..., None]
        half[..., 3:] = Q.rotate_back(q[body], J[rc, rj, 6 * u + 3:6 * u + 6]) * np.sqrt(inv_inertia[body])
        mine = np.where(swap, 1 - u, u)
        A[..., 0:6] = np.where((mine == 0)[..., None], half, A[..., 0:6])
        A[..., 6:12] = np.where((mine == 1)[..., None], half, A[..., 6:12])
    return A


def _pair_impulses(A, rhs):
    """A (H + eps)^-2 A^T rhs for rows A (P, n, 12) (padded rows zero), H = A^T A."""
    P, n, _ = A.shape
    H = np.zeros((P, DOF, DOF))
    for r in range(n):
        H = H + A[:, r, :, None] * A[:, r, None, :]
    trace = np.zeros(P)
    for i in range(DOF):
        trace = trace + H[:, i, i]
    eps = PAIR_DAMPING * PAIR_DAMPING * trace + 1e-300
    L = H.copy()
    L[:, np.arange(DOF), np.arange(DOF)] += eps[:, None]
    for k in range(DOF):
        d = np.sqrt(np.maximum(L[:, k, k], 1e-300))
        L[:, k, k] = d
        L[:, k + 1:, k] = L[:, k + 1:, k] / d[:, None]
        col = L[:, k + 1:, k]
        L[:, k + 1:, k + 1:] = L[:, k + 1:, k + 1:] - col[:, :, None] * col[:, None, :]
    L = np.tril(L)  # (the strict upper part held the updates; the solves read the lower one)
    y = np.zeros((P, DOF))
    for r in range(n):
        y = y + A[:, r, :] * rhs[:, r:r + 1]
    y = _cholesky_solve(L, _cholesky_solve(L, y))
    out = np.zeros((P, n))
    for i in range(DOF):
        out = out + A[:, :, i] * y[:, i:i + 1]
    return out


def solve_contact_positions(ints, J, M, base, wn, wt, mu, pair_first, pair_order, colour_bounds, lam, lam_t, stuck, S,
                            sweeps, q, inv_mass, inv_inertia, rows_a=None, factors=None, factored=None):
    # rows_a, factors, factored: the compiled kernel's scratch (rows and factors kept over a substep).
    for ci in range(len(colour_bounds) - 1):
        pairs = pair_order[colour_bounds[ci]:colour_bounds[ci + 1]]
        if not len(pairs):
            continue
        first = pair_first[pairs]
        size = pair_first[pairs + 1] - first
        width = int(size.max())
        slots = [first[size > k] + k for k in range(width)]
        for _ in range(sweeps):
            for c in slots:
                a, b = ints[c, 0], ints[c, 1]
                e = _value(J, S, c, 0, a, b) + base[c, 0]
                act = (lam[c] > 0.0) | (e < 0.0)
                dl = np.where(act, np.maximum(-e / wn[c], -lam[c]), 0.0)
                lam[c] += dl
                _push(M, S, c, 0, a, b, dl)
        # Each pair's friction rows, compact in the order (contact, row), padded at the end.
        P = len(pairs)
        kk = np.arange(width)
        has = kk[None, :] < size[:, None]
        C = np.where(has, first[:, None] + kk[None, :], 0)  # (P, K) the colour's contacts, pair by pair
        pushing = has & (lam[C] > 0.0)
        gripping = pushing & (mu[C] > 0.0)
        nrow = pushing.astype(np.int64) + 2 * gripping
        offset = np.cumsum(nrow, axis=1) - nrow
        n_max = int(nrow.sum(axis=1).max())
        out = np.zeros((P, max(n_max, 1)))
        if n_max:
            rows_c = np.zeros((P, n_max), np.int64)
            rows_j = np.zeros((P, n_max), np.int64)
            valid = np.zeros((P, n_max), bool)
            pp = np.broadcast_to(np.arange(P)[:, None], C.shape)
            for j, on in ((0, pushing), (1, gripping), (2, gripping)):
                at = offset[on] + j
                rows_c[pp[on], at] = C[on]
                rows_j[pp[on], at] = j
                valid[pp[on], at] = True
            rhs = np.zeros((P, n_max))
            tangent = valid & (rows_j > 0)
            tc, tj = rows_c[tangent], rows_j[tangent]
            rhs[tangent] = -(_value_rows(J, S, tc, tj, ints) + base[tc, tj])
            rc = np.where(valid, rows_c, 0)
            swap = ints[rc, 0] != ints[np.where(size > 0, first, 0), 0][:, None]
            A = np.where(valid[..., None], _rows_a(J, q, inv_mass, inv_inertia, ints, rc, rows_j, swap), 0.0)
            out = _pair_impulses(A, rhs)
        # The friction impulse of each contact (its two tangent rows; 0 where it has none), within
        # the Coulomb cone of its accumulated normal impulse.
        pk = np.broadcast_to(np.arange(P)[:, None], C.shape)
        d1 = np.where(gripping, out[pk, np.minimum(offset + 1, out.shape[1] - 1)], 0.0)
        d2 = np.where(gripping, out[pk, np.minimum(offset + 2, out.shape[1] - 1)], 0.0)
        c = C[has]
        t1 = lam_t[c, 0] + d1[has]
        t2 = lam_t[c, 1] + d2[has]
        length = np.sqrt(t1 * t1 + t2 * t2)
        scale = np.minimum(mu[c] * lam[c] / np.maximum(length, 1e-300), 1.0)
        t1 = t1 * scale
        t2 = t2 * scale
        # The impulses in the compiled kernel's order: contact by contact, its t1 row then its t2 row.
        imp = np.stack([t1 - lam_t[c, 0], t2 - lam_t[c, 1]], axis=1).ravel()
        cc = np.repeat(c, 2)
        jj = np.tile([1, 2], len(c))
        # Each row's A-side then its B-side, one list: a body on the B side of one contact and the
        # A side of the next gets them in that order, as the kernel adds them.
        bodies = np.stack([ints[cc, 0], ints[cc, 1]], axis=1).ravel()
        values = np.stack([imp[:, None] * M[cc, jj, 0:6], imp[:, None] * M[cc, jj, 6:12]], axis=1).reshape(-1, 6)
        np.add.at(S, bodies, values)
        lam_t[c, 0] = t1
        lam_t[c, 1] = t2
        stuck[c] = np.where((scale >= 1.0) & (lam[c] > 0.0), 1, 0)


def _value_rows(J, S, c, j, ints):
    return _value(J, S, c, j, ints[c, 0], ints[c, 1])


def apply_corrections(x, q, S, momentum, inertia, dynamic, h):
    d = np.flatnonzero(dynamic)
    if not len(d):
        return
    dth = S[d, 3:]
    x[d] += S[d, :3]
    qd = q[d]
    momentum[d] += Q.inertia_times(qd, inertia[d], dth) / h
    q[d] = Q.normalize(Q.multiply(Q.exp_rotation(dth), qd))


def velocities(x, q, v, w, x_prev, q_prev, momentum, inv_inertia, dynamic, kinematic, h):
    n = len(x) - 1
    v[:n] = (x[:n] - x_prev[:n]) / h
    d = np.flatnonzero(dynamic[:n])
    w[d] = Q.inv_inertia_times(q[d], inv_inertia[d], momentum[d])
    k = np.flatnonzero(kinematic[:n])
    w[k] = Q.log_rotation(Q.multiply(q[k], Q.conjugate(q_prev[k]))) / h


def solve_contact_restitution(ints, J, M, wn, solved, target, pair_first, pair_order, colour_bounds, vw, iterations,
                              q, inv_mass, inv_inertia, rows_a=None, factors=None, factored=None):
    # rows_a, factors, factored: the compiled kernel's scratch (rows and factors kept over the passes).
    for _ in range(iterations):
        for ci in range(len(colour_bounds) - 1):
            pairs = pair_order[colour_bounds[ci]:colour_bounds[ci + 1]]
            if not len(pairs):
                continue
            first = pair_first[pairs]
            size = pair_first[pairs + 1] - first
            width = int(size.max())
            if not width:
                continue
            P = len(pairs)
            rows_c = np.zeros((P, width), np.int64)
            valid = np.zeros((P, width), bool)
            count = np.zeros(P, np.int64)
            for k in range(width):
                has = size > k
                c = np.where(has, first + k, 0)
                r = np.flatnonzero(has & solved[c])
                rows_c[r, count[r]] = c[r]
                valid[r, count[r]] = True
                count[r] += 1
            if not np.any(valid):
                continue
            rc = np.where(valid, rows_c, 0)
            rj = np.zeros_like(rc)
            now = _value_rows(J, vw, rc.ravel(), rj.ravel(), ints).reshape(rc.shape)
            rhs = np.where(valid, target[rc] - now, 0.0)
            swap = ints[rc, 0] != ints[np.where(size > 0, first, 0), 0][:, None]
            A = np.where(valid[..., None], _rows_a(J, q, inv_mass, inv_inertia, ints, rc, rj, swap), 0.0)
            out = _pair_impulses(A, rhs)
            out[np.all(np.abs(rhs) <= VELOCITY_TOLERANCE, axis=1)] = 0.0  # (padding: rhs 0)
            for k in range(width):
                sel = np.flatnonzero(valid[:, k])
                if len(sel):
                    c = rc[sel, k]
                    _push(M, vw, c, 0, ints[c, 0], ints[c, 1], out[sel, k])


def colour_pairs(pairs: np.ndarray, movable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy colouring of pairs (Q, 2) of bodies: no movable body twice in a colour. Returns the
    pair order (colour by colour, pairs in their order within each) and the colour bounds in it.
    Deterministic; the numba backend's is the same greedy colouring compiled (the same result)."""
    count = len(pairs)
    if not count:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    used: dict[int, int] = {}
    mov = movable.tolist()
    colour = np.empty(count, np.int64)
    for k, (a, b) in enumerate(pairs.tolist()):
        taken = (used.get(a, 0) if mov[a] else 0) | (used.get(b, 0) if mov[b] else 0)
        c = (~taken & (taken + 1)).bit_length() - 1
        colour[k] = c
        bit = 1 << c
        if mov[a]:
            used[a] = used.get(a, 0) | bit
        if mov[b]:
            used[b] = used.get(b, 0) | bit
    return grouped(colour)


def grouped(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Items numbered by group (n,) >= 0, n > 0: their indices group by group (in their order within
    each) and where each group starts in that, with the end (the colourings' and waves' result)."""
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(int(group.max()) + 2))
    return order.astype(np.int64), bounds.astype(np.int64)


def order_waves(order: np.ndarray, pairs: np.ndarray, movable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``order`` (indices into pairs (Q, 2) of bodies) regrouped into waves: each pair in
    the wave after the last one that holds either of its movable bodies. Pairs that share a
    movable body keep their order and the others share none, so solving wave by wave is solving
    ``order`` in sequence (the same numbers) in as few groups as its chains of shared bodies
    allow. Returns the new order (wave by wave, in ``order``'s sequence within each) and the
    waves' bounds in it; the numba backend's is the same loop compiled."""
    if not len(order):
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    last = np.full(len(movable), -1, np.int64)
    mov = movable.tolist()
    wave = np.empty(len(order), np.int64)
    for k, (a, b) in enumerate(pairs[order].tolist()):
        w = max(last[a] if mov[a] else -1, last[b] if mov[b] else -1) + 1
        wave[k] = w
        if mov[a]:
            last[a] = w
        if mov[b]:
            last[b] = w
    by_wave, bounds = grouped(wave)
    return np.asarray(order, np.int64)[by_wave], bounds


def restitution_targets(lam, restitution, speed_before, gap_start, accel_n, gap_now, pair_first, bounce_speed, h,
                        capacity):
    """Which of the substep's ``count`` contacts the restitution solve takes, and the normal speed
    each should leave with (see ``RigidStepper._restitution``): bounce, touching, soon (count,)
    bools and target, solved (capacity,). lam: the contacts' normal impulses (touching where
    positive); speed_before, gap_start, accel_n: their normal speed and gap at the substep's start
    and relative normal acceleration; gap_now: their gap at the corrected poses."""
    count = len(speed_before)
    touching = lam > 0.0
    approaching = (speed_before < -bounce_speed) & (restitution > 0.0)
    bounce = touching & approaching
    pair_of = np.repeat(np.arange(len(pair_first) - 1), np.diff(pair_first))
    hit = np.zeros(len(pair_first) - 1, bool)
    hit[pair_of[bounce]] = True
    soon = approaching & ~touching & hit[pair_of] & (gap_now < -speed_before * h)
    bounce |= soon
    v0 = speed_before + 0.5 * accel_n * h
    z0 = np.maximum(gap_start, 0.0)
    tau = np.clip(2.0 * z0 / np.maximum(-v0 + np.sqrt(np.maximum(v0 * v0 - 2.0 * accel_n * z0, 0.0)), 1e-15),
                  0.0, h)
    target = np.zeros(capacity)
    target[:count] = np.where(bounce, -restitution * (v0 + accel_n * tau) - 0.5 * accel_n * h, 0.0)
    solved = np.zeros(capacity, bool)
    solved[:count] = touching | soon
    return bounce, touching, soon, target, solved


def stuck_anchors(x, q, ints, local_a, anchor, stuck, lam, count):
    """The contacts that static friction held in the last pass (stuck, pushing, with a key): their
    keys, sorted, and the slip each still has in B's frame (where A's point is now, less its
    anchor), which carries over to its next anchor."""
    c = slice(0, count)
    held = np.flatnonzero((stuck[c] == 1) & (lam[c] > 0.0) & (ints[c, 2] >= 0))
    a, b = ints[held, 0], ints[held, 1]
    end = x[a] + Q.rotate(q[a], local_a[held])
    residual = Q.rotate(Q.conjugate(q[b]), end - x[b]) - anchor[held]
    keys = ints[held, 2]
    order = np.argsort(keys, kind="stable")
    return keys[order], residual[order]


def solve_position_passes(passes: int, contacts, motors, joints) -> None:
    """``passes`` rounds of the bodies' position solve: per round the contacts
    (``solve_contact_positions``' arguments), the motors (``solve_motor_positions``') and the
    joints (``solve_joints``'), each None to leave it out (the compiled backend does the rounds in
    one call)."""
    from .joints import solve_joints
    from .motors import solve_motor_positions

    for _ in range(passes):
        if contacts is not None:
            solve_contact_positions(*contacts)
        if motors is not None:
            solve_motor_positions(*motors)
        if joints is not None:
            solve_joints(*joints)
