"""The hot loops of rigid bodies: integration, contact colouring, position and velocity solves.

Extended XPBD for rigid bodies (Muller et al. 2020, *Detailed Rigid Body Simulation with
Extended Position Based Dynamics*), vectorised over one colour of body pairs at a time, the
contacts of each pair solved together. Within a substep the corrections are linearised: every
body gathers a translation ``dx`` and a small rotation ``dth`` that contact projections add to,
and each contact's lever arms, normal and generalized inverse mass are computed once when the
substep starts (rotations within a substep are tiny). That keeps a colour's work to a few dozen
numpy operations and two small batched pseudo-inverses.

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


def world_inverse_inertia(rot, inv_inertia):
    """World inverse inertia matrices R diag(inv_inertia) R^T (..., 3, 3) for rotations rot
    (..., 3, 3) and principal inverse inertias (..., 3)."""
    return (rot * inv_inertia[..., None, :]) @ np.swapaxes(rot, -1, -2)


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
    """Per-contact quantities fixed for one substep (c contacts, grouped by pair of bodies).

    The solve works on each body's accumulated correction S (B+1, 6) = [dx, dth] (translation,
    small rotation) and, for a contact, on G = [S[a], S[b]] (12,). Rows j of ``J`` (c, k, 12) are
    the contact's constraint directions (k = 3: the normal n, B -> A, and a fixed tangent basis
    t1, t2 of the contact plane; k = 1: the normal only): J_j . G is how far the contact point of A
    has moved along direction j relative to B's, i.e. [d, r1 x d, -d, -(r2 x d)]. Rows of
    ``M`` (c, k, 12) are M^-1 J_j^T, the correction an impulse of 1 along j makes (A's half
    positive, B's negated), so G += P . M applies impulses P (c, k). Rows of ``L`` (c, k, 12) are
    J_j times a square root F of the inverse mass (a body's is blockdiag(1/m, R I^-1 R^T) = F F^T
    with F = blockdiag(m^-1/2, R I^-1/2)), so L L^T = J M^T is the generalized inverse mass
    matrix, across all the contacts of a pair of bodies too; solves go through L, whose size
    is the pair's 12 degrees of freedom however many contacts it has.

    ab: (c, 2) the two bodies; base: (c, k) value of J . G at G = 0: the signed separation along
    n at the solve's start (< 0 penetrating) and how far A's contact point is from its friction
    anchor on B (where it stuck, or where it was when the substep started) along t1, t2; r1, r2:
    (c, 3) lever arms (to the middle of the two surface points, so both bodies feel the impulse
    at one place); n: (c, 3).
    """

    ab: np.ndarray
    J: np.ndarray
    M: np.ndarray
    L: np.ndarray
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
    L = np.empty((c, k, 12))
    L[:, :, 0:3] = np.sqrt(ma)[:, None, None] * dirs
    L[:, :, 6:9] = -np.sqrt(mb)[:, None, None] * dirs
    L[:, :, 3:6] = np.sqrt(inv_inertia[a])[:, None, :] * np.einsum("cji,ckj->cki", rot1, J[:, :, 3:6])
    L[:, :, 9:12] = np.sqrt(inv_inertia[b])[:, None, :] * np.einsum("cji,ckj->cki", rot2, J[:, :, 9:12])
    return ContactRows(np.stack([a, b], axis=1), J, M, L, base, r1, r2, n, contacts.friction)


# A pair's rows L are solved in the damped (Tikhonov) least-squares sense, L^T (L L^T + eps)^-1
# with eps = (PAIR_DAMPING * the largest singular value)^2. A pair usually has more contact rows
# than ways to move (a face's four corners, three ways to move along the normal), so its matrix
# is singular, and the least-norm split spreads the impulse over them evenly; directions much
# weaker than the strongest (a cylinder's rim points on a bump, a box straddling two others:
# nearly dependent rows) get damped instead of inverted, since their exact solution is a pair of
# huge opposite impulses, and clamping one of them at zero launched the bodies.
PAIR_DAMPING = 0.05
# Singular values below this fraction of a pair's largest belong to contact rows that repeat
# others (a box's top and bottom corners pushed along the same normal): see solve_contact_positions.
DEPENDENT = 1e-6
# A contact the pair's least squares would push this far past its surface (relative to the pair's
# deepest penetration) asks for less than the others of its pair and is left out of the solve.
INCONSISTENT = 1e-2


@dataclass
class PairBlocks:
    """Contacts grouped by body pair (P pairs, at most K contacts each, padded), pairs in colour order.

    A pair's contacts act on the same two bodies, so they are solved as one block (a least
    squares solve over the pair) rather than one after another: the corners of a face landing
    flat share the impulse evenly, as they would at the same instant, instead of the first one
    tipping the body.

    ab: (P, 2) the pair's bodies, lower index first (the world, B, is always second); row, slot:
    (c,) where each contact sits in the padded arrays; valid: (P, K); J, M, L: (P, K, k, 12)
    ``ContactRows.J``/``M``/``L`` with G = [S[ab[:, 0]], S[ab[:, 1]]] (halves swapped for contacts
    whose point is on the second body), zero where not valid; base: (P, K, k); friction: (P, K);
    bounds: (colours + 1,) pair row where each colour starts.
    """

    ab: np.ndarray
    row: np.ndarray
    slot: np.ndarray
    valid: np.ndarray
    J: np.ndarray
    M: np.ndarray
    L: np.ndarray
    base: np.ndarray
    friction: np.ndarray
    bounds: np.ndarray

    def pad(self, values, fill=0.0):
        """Per-contact values (c, ...) into the padded layout (P, K, ...)."""
        out = np.full(self.valid.shape + values.shape[1:], fill, dtype=values.dtype)
        out[self.row, self.slot] = values
        return out


def pair_blocks(rows: ContactRows, pair_ab, row, slot, count, bounds) -> PairBlocks:
    """The padded per-pair layout of ``rows`` (contacts sorted by pair row).

    pair_ab: (P, 2) lower, higher body of each pair; row, slot: (c,) each contact's pair row and
    place in it; count: K; bounds: (colours + 1,) pair rows where the colours start.
    """
    P, K = len(pair_ab), count
    swapped = rows.ab[:, 0] != pair_ab[row, 0]
    k = rows.J.shape[1]
    valid = np.zeros((P, K), bool)
    valid[row, slot] = True
    out = []
    for m in (rows.J, rows.M, rows.L):
        m = m.copy()
        m[swapped] = np.roll(m[swapped], 6, axis=-1)
        padded = np.zeros((P, K, k, 12))
        padded[row, slot] = m
        out.append(padded)
    blocks = PairBlocks(pair_ab, row, slot, valid, *out, None, None, bounds)
    blocks.base = blocks.pad(rows.base)
    blocks.friction = blocks.pad(rows.friction)
    return blocks


def _pseudo_inverse(L, active, cache=None, key=None, with_range=False):
    """Pseudo-inverses (P, 12, n) of rows L (P, n, 12) with only the active (P, n) ones kept.

    cache: an optional dict that keeps the last result under ``key`` with its mask: L is fixed
    for a substep, and from pass to pass the set of active contacts mostly is too.
    with_range: also return an orthonormal basis (P, n, r) of what the rows can change together
    (the left singular vectors whose singular values are above ``DEPENDENT`` times the largest;
    the columns beyond are zero): the part of a right-hand side outside it no solve can meet.
    """
    if cache is not None:
        hit = cache.get(key)
        if hit is not None and np.array_equal(hit[0], active):
            return hit[1] if not with_range else (hit[1], hit[2])
    u, sv, vt = np.linalg.svd(np.where(active[:, :, None], L, 0.0), full_matrices=False)
    eps = (PAIR_DAMPING * sv[:, :1]) ** 2 + 1e-300
    Lp = (np.swapaxes(vt, -1, -2) * (sv / (sv * sv + eps))[:, None, :]) @ np.swapaxes(u, -1, -2)
    basis = u * (sv > DEPENDENT * sv[:, :1])[:, None, :]
    if cache is not None:
        cache[key] = (active.copy(), Lp, basis)
    return Lp if not with_range else (Lp, basis)


def _impulses(Lp, r):
    """The least-norm impulses (P, n) that change the constraints by r (P, n): A^+ r, where for
    A = L L^T the pseudo-inverse is A^+ = (L^+)^T L^+ and Lp (P, 12, n) is L^+."""
    return _einsum("pki,pk->pi", Lp, _einsum("pkj,pj->pk", Lp, r))


def colour_slices(blocks: PairBlocks, lam, lam_t, scale):
    """Per colour (pair rows start:stop), the views the position solve reads and writes.

    lam: (P, K), lam_t: (P, K, 2), scale: (P, K), all padded like ``blocks``.
    """
    out = []
    K = blocks.valid.shape[1]
    for s0, s1 in zip(blocks.bounds[:-1], blocks.bounds[1:]):
        if s1 <= s0:
            continue
        s = slice(int(s0), int(s1))
        P = s1 - s0
        out.append((blocks.ab[s], blocks.valid[s], blocks.J[s], blocks.M[s], blocks.base[s],
                    blocks.L[s].reshape(P, 3 * K, 12), blocks.friction[s] > 0.0, blocks.friction[s],
                    lam[s], lam_t[s], scale[s], {}))
    return out


def solve_contact_positions(slices, S):
    """One pass of contact projection with static friction: pair blocks, colour by colour.

    S: (B+1, 6) the translation dx and small rotation dth each body has been moved by in this
    substep so far (updated in place). Per colour (see ``colour_slices``), for each pair of
    bodies: lam (P, K) accumulated normal positional impulses, kg m; lam_t (P, K, 2) accumulated
    tangential (friction) positional impulses along t1, t2. First the contacts that penetrate
    or still push take the normal impulses that bring them all to the surface at once (least
    squares over the pair), the accumulated impulse kept >= 0 so that a contact pushed too far
    lets go; then static friction pulls the pushing contacts back to their anchors, all at
    once, each within mu times its normal impulse; both go out as one impulse. scale: (P, K) 1
    where friction held the contact (it sticks if it also has a normal impulse), less where the
    Coulomb cone cut it.
    """
    einsum, maximum, minimum = _einsum, np.maximum, np.minimum
    for ab, valid, J, M, base, L, grips, mu, lam, lam_t, scale_out, cache in slices:
        P, K = valid.shape
        e = einsum("pkij,pj->pki", J, S[ab].reshape(P, 12))
        e += base
        en = e[:, :, 0]
        active = valid & ((lam > 0.0) | (en < 0.0))
        Ln = L[:, 0::3]
        Lp, basis = _pseudo_inverse(Ln, active, cache, "normal", with_range=True)
        rhs = np.where(active, en, 0.0)
        dlam = -_impulses(Lp, rhs)
        # Contacts whose rows repeat others of the pair but ask for less (a thin box driven deeper
        # than its thickness into the ground: its top corners penetrate less than the bottom ones
        # along the same normal) have no common solution with them; the least squares would split
        # the difference and leave the box straddling the surface, the bottom corners still in
        # and the top ones pushed out (so held back by their impulses, pass after pass). The part
        # of the right-hand side that no impulses can meet shows which; those let go of what they
        # pushed with and the rest of the pair is solved without them.
        unmet = rhs - einsum("pkr,pr->pk", basis, einsum("pkr,pk->pr", basis, rhs))
        deepest = maximum(-rhs, 0.0).max(axis=1)
        over = active & (unmet > INCONSISTENT * deepest[:, None])
        if over.any():
            dlam = _without(over, active, Ln, J[:, :, 0], M[:, :, 0], en, lam, dlam)
        dlam = maximum(dlam, -lam)
        lam += dlam
        # slip along t1, t2 after the normal correction
        e += einsum("pkij,pj->pki", J, einsum("pk,pkj->pj", dlam, M[:, :, 0]))
        # The friction impulses that take the slip back, found with the normal rows held (the
        # tangent rows alone would turn the body about the contact plane's axes, which only
        # the normal rows rule out); only their tangential part is applied, so a cone-limited
        # (sliding) contact does not leave a normal push behind.
        holds = lam > 0.0
        rows = np.repeat(holds[:, :, None], 3, axis=2)
        rows[:, :, 1:] &= grips[:, :, None]
        rhs = np.where(rows, e, 0.0)
        rhs[:, :, 0] = 0.0
        rows = rows.reshape(P, 3 * K)
        dt = -_impulses(_pseudo_inverse(L, rows, cache, "friction"), rhs.reshape(P, 3 * K)).reshape(P, K, 3)[:, :, 1:]
        # Coulomb: the accumulated tangential multiplier (a vector, summed over this substep's
        # passes) stays within mu times the normal one. Inside the cone the contact sticks.
        total = lam_t + dt
        scale = minimum(mu * lam / maximum(np.sqrt(einsum("pki,pki->pk", total, total)), 1e-300), 1.0)
        total *= scale[:, :, None]
        impulse = np.concatenate([dlam[:, :, None], total - lam_t], axis=2)
        lam_t[...] = total
        scale_out[...] = scale
        S[ab] += einsum("pki,pkij->pj", impulse, M).reshape(P, 2, 6)


def _without(over, active, Ln, Jn, Mn, en, lam, dlam):
    """The normal impulses (P, K) of one pass with the ``over`` contacts (P, K) left out: they give
    back their accumulated impulse ``lam`` and the other active ones of their pairs are solved
    for the separations ``en`` that leaves. Pairs with none left out keep ``dlam``."""
    p = np.flatnonzero(over.any(axis=1))
    release = np.where(over[p], -lam[p], 0.0)
    en2 = en[p] + _einsum("pkj,pj->pk", Jn[p], _einsum("pk,pkj->pj", release, Mn[p]))
    keep = active[p] & ~over[p]
    out = dlam.copy()
    out[p] = release - _impulses(_pseudo_inverse(Ln[p], keep), np.where(keep, en2, 0.0))
    return out


def solve_contact_restitution(blocks: PairBlocks, vw, solved, target, iterations):
    """``iterations`` passes that set the normal speed of the ``solved`` contacts (c,) to ``target`` (c,).

    blocks: normal rows (k = 1) at the corrected poses; vw: (B+1, 6) [v, w], updated in place.
    Each pair's contacts are solved together (least squares over the pair), pairs colour by
    colour. The target is e times the approach speed for a bounce, 0 otherwise (which also
    removes the separating speed that projecting a penetration out would otherwise leave behind).
    """
    if not np.any(solved):
        return
    active = blocks.pad(solved, False)
    Lp = _pseudo_inverse(blocks.L[:, :, 0], active)
    tg = np.where(active, blocks.pad(target), 0.0)
    J, M = blocks.J[:, :, 0], blocks.M[:, :, 0]
    parts = []
    for s0, s1 in zip(blocks.bounds[:-1], blocks.bounds[1:]):
        s = slice(int(s0), int(s1))
        if s1 > s0 and np.any(active[s]):
            parts.append((blocks.ab[s], J[s], M[s], Lp[s], tg[s], active[s]))
    for _ in range(iterations):
        for ab, J_c, M_c, Lp_c, t_c, act in parts:
            n = len(ab)
            r = np.where(act, t_c - _einsum("pkj,pj->pk", J_c, vw[ab].reshape(n, 12)), 0.0)
            p = _impulses(Lp_c, r)
            vw[ab] += _einsum("pk,pkj->pj", p, M_c).reshape(n, 2, 6)
