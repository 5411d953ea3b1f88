"""The hot loops of rigid bodies: integration, contact colouring, position and velocity solves.

Extended XPBD for rigid bodies (Muller et al. 2020, *Detailed Rigid Body Simulation with
Extended Position Based Dynamics*), vectorised over one colour of contacts at a time. Within a
substep the corrections are linearised: every body gathers a translation ``dx`` and a small
rotation ``dth`` that contact projections add to, and each contact's lever arms, normal and
generalized inverse mass are computed once when the substep starts (rotations within a substep
are tiny). That keeps a colour's work to a few dozen numpy operations.

Arrays are sized B + 1: row B is the static world (inverse mass 0, identity pose), so a contact
with a collider is a contact with body B. x: (B+1, 3) m; q: (B+1, 4); v, w: (B+1, 3);
inv_mass: (B+1,); inv_inertia: (B+1, 3) principal, body frame. c contacts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quaternions as quat

cross = quat.cross

try:  # np.einsum without its Python wrapper (which only dispatches here when optimize is off)
    from numpy._core._multiarray_umath import c_einsum as _einsum
except ImportError:
    try:
        from numpy.core._multiarray_umath import c_einsum as _einsum
    except ImportError:
        _einsum = np.einsum


def _dot(a, b):
    return np.einsum("ci,ci->c", a, b)


def world_inverse_inertia_times(rot, inv_inertia, vec):
    """I_world^-1 vec for rotations rot (k, 3, 3), principal inverse inertia (k, 3), vectors (k, 3)."""
    return np.einsum("kij,kj->ki", rot, inv_inertia * np.einsum("kji,kj->ki", rot, vec))


def integrate_bodies(x, q, v, w, momentum, inertia, inv_inertia, dynamic, accel, h, lin_decay, ang_decay):
    """Free motion over one substep, in place, for the bodies where ``dynamic`` (B+1,) is True.

    Linear: v += a h, x += v h (Verlet in velocity form). Angular: the world angular momentum
    L = I_world w is what free rotation conserves, so it is held fixed (``momentum`` (B+1, 3) is
    set here and then changed only by constraint impulses) while the orientation advances at the
    midpoint angular velocity I_world(q_mid)^-1 L; an asymmetric body then precesses and tumbles
    as it should instead of spinning about a fixed axis.
    """
    d = np.flatnonzero(dynamic)
    momentum[...] = 0.0
    if not len(d):
        return
    v[d] = (v[d] + accel[d] * h) * lin_decay[d, None]
    x[d] += v[d] * h
    qd = q[d]
    rot = quat.to_matrix(qd)
    momentum[d] = np.einsum("kij,kj->ki", rot, inertia[d] * np.einsum("kji,kj->ki", rot, w[d])) * ang_decay[d, None]
    q_mid = quat.integrate(qd, w[d], 0.5 * h)
    w_mid = world_inverse_inertia_times(quat.to_matrix(q_mid), inv_inertia[d], momentum[d])
    q[d] = quat.integrate(qd, w_mid, h)


def colour_contacts(a, b, movable, seed_order):
    """Colours (c,) for contacts between bodies a and b: no movable body twice in one colour.

    Vectorised rounds (Luby): each round, every contact that has the highest priority among the
    remaining contacts at both its bodies takes the round's colour. Priorities are a fixed
    permutation (``seed_order``) so the colouring, and so the result, is deterministic.
    """
    count = len(a)
    colour = np.full(count, -1, np.int64)
    priority = seed_order[:count] if len(seed_order) >= count else np.arange(count)
    remaining = np.arange(count)
    nbodies = len(movable)
    c = 0
    while len(remaining):
        pa, pb = a[remaining], b[remaining]
        pr = priority[remaining]
        best = np.full(nbodies, -1, np.int64)
        np.maximum.at(best, pa, pr)
        mb = movable[pb]
        np.maximum.at(best, pb[mb], pr[mb])
        chosen = (best[pa] == pr) & (~mb | (best[pb] == pr))
        colour[remaining[chosen]] = c
        remaining = remaining[~chosen]
        c += 1
    return colour


@dataclass
class ContactRows:
    """Per-contact quantities fixed for one substep (c contacts, in colour order).

    The solve works on each body's accumulated correction S (B+1, 6) = [dx, dth] (translation,
    small rotation) and, for a contact, on G = [S[a], S[b]] (12,). Rows j of ``J`` (c, k, 12) are
    the contact's constraint directions (k = 3: the normal n, B -> A, and a fixed tangent basis
    t1, t2 of the contact plane; k = 1: the normal only): J_j . G is how far the contact point of A
    has moved along direction j relative to B's, i.e. [d, r1 x d, -d, -(r2 x d)]. Rows of
    ``M`` (c, k, 12) are M^-1 J_j^T, the correction an impulse of 1 along j makes (A's half
    positive, B's negated), so G += P . M applies impulses P (c, k). ``A`` (c, k, k) = J M is the
    generalized inverse mass matrix; w = A[:, 0, 0] the one along n.

    ab: (c, 2) the two bodies; base: (c, k) value of J . G at G = 0: the signed separation along
    n at the solve's start (< 0 penetrating) and how far A's contact point is from its friction
    anchor on B (where it stuck, or where it was when the substep started) along t1, t2; r1, r2:
    (c, 3) lever arms (to the middle of the two surface points, so both bodies feel the impulse
    at one place); n: (c, 3).
    """

    ab: np.ndarray
    J: np.ndarray
    M: np.ndarray
    A: np.ndarray
    w: np.ndarray
    base: np.ndarray
    r1: np.ndarray
    r2: np.ndarray
    n: np.ndarray
    friction: np.ndarray


def tangent_basis(n):
    """Two unit vectors (c, 3) each, t1 and t2 = n x t1, completing unit normals n (c, 3)."""
    # cross n with the world axis least aligned with it
    k = np.argmin(np.abs(n), axis=1)
    e = np.zeros_like(n)
    e[np.arange(len(n)), k] = 1.0
    t1 = cross(n, e)
    t1 /= np.sqrt(_dot(t1, t1))[:, None]
    return t1, cross(n, t1)


def contact_rows(x, q, origin, inv_mass, inv_inertia, contacts, anchor=None) -> ContactRows:
    """Rows for the contacts' normals, and with ``anchor`` (c, 3) (friction anchors in B's frame,
    world for the world body) also for a tangent basis.

    origin: (B+1, 3) the points lever arms are measured from. For the position solve that is
    where each body's centre was when the substep started: v = (x - x_prev) / h turns a
    positional impulse P into an orbital angular momentum change x_prev x P / h, so with the same
    origin for the spin part a pair's angular momentum is conserved exactly. For the velocity
    solve (positions fixed) it is the centre itself.
    """
    a, b, n = contacts.a, contacts.b, contacts.normal
    c = len(a)
    rot1, rot2 = quat.to_matrix(q[a]), quat.to_matrix(q[b])
    p1 = x[a] + np.einsum("cij,cj->ci", rot1, contacts.local_a)
    p2 = x[b] + np.einsum("cij,cj->ci", rot2, contacts.local_b)
    mid = 0.5 * (p1 + p2)
    r1, r2 = mid - origin[a], mid - origin[b]
    if anchor is None:
        dirs = n[:, None, :]
        base = _dot(p1 - p2, n)[:, None]
    else:
        t1, t2 = tangent_basis(n)
        dirs = np.stack([n, t1, t2], axis=1)
        slip0 = p1 - (x[b] + np.einsum("cij,cj->ci", rot2, anchor))
        base = np.stack([_dot(p1 - p2, n), _dot(slip0, t1), _dot(slip0, t2)], axis=1)
    k = dirs.shape[1]
    J = np.empty((c, k, 12))
    M = np.empty((c, k, 12))
    J[:, :, 0:3] = dirs
    J[:, :, 3:6] = cross(r1[:, None, :], dirs)
    J[:, :, 6:9] = -dirs
    J[:, :, 9:12] = -cross(r2[:, None, :], dirs)
    ma, mb = inv_mass[a], inv_mass[b]
    M[:, :, 0:3] = ma[:, None, None] * dirs
    M[:, :, 6:9] = -mb[:, None, None] * dirs
    # I_world^-1 (r x d) = R diag(I^-1) R^T (r x d), for all k directions at once
    M[:, :, 3:6] = np.einsum("cij,ckj->cki", rot1,
                             inv_inertia[a][:, None, :] * np.einsum("cji,ckj->cki", rot1, J[:, :, 3:6]))
    M[:, :, 9:12] = np.einsum("cij,ckj->cki", rot2,
                              inv_inertia[b][:, None, :] * np.einsum("cji,ckj->cki", rot2, J[:, :, 9:12]))
    A = np.einsum("cil,cjl->cij", J, M)
    w = np.maximum(A[:, 0, 0], 1e-300)
    return ContactRows(np.stack([a, b], axis=1), J, M, A, w, base, r1, r2, n, contacts.friction)


def colour_slices(bounds, rows: ContactRows, lam, lam_t, scale):
    """Per colour (contiguous contacts start:stop), the views the position solve reads and writes."""
    out = []
    neg_w = -rows.w
    for s0, s1 in zip(bounds[:-1], bounds[1:]):
        if s1 <= s0:
            continue
        s = slice(int(s0), int(s1))
        A = rows.A[s]
        out.append((rows.ab[s], rows.base[s], rows.J[s], rows.M[s], neg_w[s], A[:, 1:, 0], A[:, 1:, 1:],
                    rows.friction[s], lam[s], lam_t[s], scale[s], np.empty((s1 - s0, 3))))
    return out


def solve_contact_positions(slices, S):
    """One Gauss-Seidel pass of contact projection with static friction, colour by colour.

    S: (B+1, 6) the translation dx and small rotation dth each body has been moved by in this
    substep so far (updated in place). Per colour (see ``colour_slices``) lam: accumulated normal
    positional impulses, kg m; lam_t: (m, 2) accumulated tangential (friction) positional
    impulses along t1, t2. Each contact first projects out of penetration along n, then static
    friction pulls its point back to its anchor when that needs no more than mu times its normal
    impulse; both go out as one impulse. scale: (m,) 1 where friction held the contact (it
    sticks if it also has a normal impulse), less where the Coulomb cone cut it.
    """
    einsum, maximum, minimum = _einsum, np.maximum, np.minimum
    for ab, base, J, M, neg_w, C, W, mu, lam, lam_t, scale_out, P in slices:
        e = einsum("cij,cj->ci", J, S[ab].reshape(-1, 12))
        e += base
        # out of penetration along n: -depth / w where depth < 0
        dlam = maximum(e[:, 0] / neg_w, 0.0)
        lam += dlam
        # slip along t1, t2 after the normal correction
        s = e[:, 1:]
        s += dlam[:, None] * C
        # -slip / (inverse mass along the slip direction) = -s |s|^2 / (s^T W s)
        f = einsum("ci,ci->c", s, s)
        f /= maximum(einsum("ci,cij,cj->c", s, W, s), 1e-300)
        # Coulomb: the accumulated tangential multiplier (a vector, summed over this substep's
        # passes) stays within mu times the normal one. Inside the cone the contact sticks.
        total = lam_t - s * f[:, None]
        scale = minimum(mu * lam / maximum(np.sqrt(einsum("ci,ci->c", total, total)), 1e-300), 1.0)
        total *= scale[:, None]
        P[:, 0] = dlam
        np.subtract(total, lam_t, out=P[:, 1:])
        lam_t[...] = total
        scale_out[...] = scale
        S[ab] += einsum("ci,cij->cj", P, M).reshape(-1, 2, 6)


def solve_contact_restitution(rows: ContactRows, bounds, vw, touching, target, iterations):
    """``iterations`` Gauss-Seidel passes that set each touching contact's normal speed to its target (c,).

    rows: normal rows (k = 1) at the corrected poses; bounds: (colours + 1,) contact index where
    each colour starts; vw: (B+1, 6) [v, w], updated in place. The target is e times the
    approach speed for a bounce, 0 otherwise (which also removes the separating speed that
    projecting a penetration out would otherwise leave behind).
    """
    idx = np.flatnonzero(touching)
    if not len(idx):
        return
    cb = np.searchsorted(idx, bounds)
    ab, J, M, w, tg = rows.ab[idx], rows.J[idx, 0], rows.M[idx, 0], rows.w[idx], target[idx]
    parts = [(ab[s0:s1], J[s0:s1], M[s0:s1], w[s0:s1], tg[s0:s1]) for s0, s1 in zip(cb[:-1], cb[1:]) if s1 > s0]
    for _ in range(iterations):
        for ab_c, J_c, M_c, w_c, t_c in parts:
            p = (t_c - _einsum("ci,ci->c", J_c, vw[ab_c].reshape(-1, 12))) / w_c
            vw[ab_c] += (p[:, None] * M_c).reshape(-1, 2, 6)
