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
class ContactFrame:
    """Per-contact quantities fixed for one substep (c contacts).

    r1, r2: (c, 3) lever arms to the contact point (the middle of the two surface points, so both
    bodies feel the impulse at one place) from each body's centre at the substep's start; n: (c, 3) normal, B -> A;
    depth0: (c,) signed separation at the start of the solve (< 0 penetrating); rn1, rn2: r x n;
    k1, k2: I_world^-1 (r x n); w: (c,) generalized inverse mass of the pair along n;
    rot1, rot2: (c, 3, 3); slip0: (c, 3) how far A's contact point is from its friction anchor
    on B (where it stuck, or where it was when the substep started), for static friction.
    """

    a: np.ndarray
    b: np.ndarray
    r1: np.ndarray
    r2: np.ndarray
    n: np.ndarray
    depth0: np.ndarray
    rn1: np.ndarray
    rn2: np.ndarray
    k1: np.ndarray
    k2: np.ndarray
    w: np.ndarray
    rot1: np.ndarray
    rot2: np.ndarray
    slip0: np.ndarray
    friction: np.ndarray
    restitution: np.ndarray


def contact_frame(x, q, origin, inv_mass, inv_inertia, contacts, anchor) -> ContactFrame:
    """anchor: (c, 3) the friction anchor of each contact in B's frame (world for the world body).

    origin: (B+1, 3) the points lever arms are measured from. For the position solve that is
    where each body's centre was when the substep started: v = (x - x_prev) / h turns a
    positional impulse P into an orbital angular momentum change x_prev x P / h, so with the same
    origin for the spin part a pair's angular momentum is conserved exactly. For the velocity
    solve (positions fixed) it is the centre itself.
    """
    a, b, n = contacts.a, contacts.b, contacts.normal
    rot1, rot2 = quat.to_matrix(q[a]), quat.to_matrix(q[b])
    p1 = x[a] + np.einsum("cij,cj->ci", rot1, contacts.local_a)
    p2 = x[b] + np.einsum("cij,cj->ci", rot2, contacts.local_b)
    mid = 0.5 * (p1 + p2)
    r1, r2 = mid - origin[a], mid - origin[b]
    rn1, rn2 = cross(r1, n), cross(r2, n)
    k1 = world_inverse_inertia_times(rot1, inv_inertia[a], rn1)
    k2 = world_inverse_inertia_times(rot2, inv_inertia[b], rn2)
    w = inv_mass[a] + inv_mass[b] + _dot(rn1, k1) + _dot(rn2, k2)
    slip0 = p1 - (x[b] + np.einsum("cij,cj->ci", rot2, anchor))
    return ContactFrame(a, b, r1, r2, n, _dot(p1 - p2, n), rn1, rn2, k1, k2, np.maximum(w, 1e-300),
                        rot1, rot2, slip0, contacts.friction, contacts.restitution)


def _tangent_inverse_mass(f, sel, t, inv_mass, inv_inertia):
    rt1, rt2 = cross(f.r1[sel], t), cross(f.r2[sel], t)
    kt1 = world_inverse_inertia_times(f.rot1[sel], inv_inertia[f.a[sel]], rt1)
    kt2 = world_inverse_inertia_times(f.rot2[sel], inv_inertia[f.b[sel]], rt2)
    wt = inv_mass[f.a[sel]] + inv_mass[f.b[sel]] + _dot(rt1, kt1) + _dot(rt2, kt2)
    return kt1, kt2, np.maximum(wt, 1e-300)


def solve_contact_positions(f: ContactFrame, colours, dx, dth, inv_mass, inv_inertia, lam, lam_t, stuck):
    """One Gauss-Seidel pass of contact projection with static friction, colour by colour.

    dx, dth: (B+1, 3) the translation and small rotation each body has been moved by in this
    substep so far (updated in place); lam: (c,) accumulated normal positional impulses, kg m;
    lam_t: (c, 3) accumulated tangential (friction) positional impulses.
    Static friction pulls a contact point back to its anchor when that needs no more than mu
    times its normal impulse; stuck (c,) records which contacts it held (in place).
    """
    for sel in colours:
        a, b, n = f.a[sel], f.b[sel], f.n[sel]
        depth = f.depth0[sel] + _dot(n, dx[a] - dx[b]) + _dot(f.rn1[sel], dth[a]) - _dot(f.rn2[sel], dth[b])
        dlam = np.where(depth < 0.0, -depth / f.w[sel], 0.0)
        lam[sel] += dlam
        dx[a] += (dlam * inv_mass[a])[:, None] * n
        dth[a] += dlam[:, None] * f.k1[sel]
        dx[b] -= (dlam * inv_mass[b])[:, None] * n
        dth[b] -= dlam[:, None] * f.k2[sel]
        r1, r2 = f.r1[sel], f.r2[sel]
        slip = f.slip0[sel] + (dx[a] + cross(dth[a], r1)) - (dx[b] + cross(dth[b], r2))
        slip -= n * _dot(slip, n)[:, None]
        slip_len = np.sqrt(_dot(slip, slip))
        # Coulomb: the accumulated tangential multiplier (a vector, summed over this substep's
        # passes) stays within mu times the normal one. Inside the cone the contact sticks.
        moving = slip_len > 1e-15
        need = np.zeros_like(slip)
        if np.any(moving):
            s = np.flatnonzero(moving)
            t = slip[s] / slip_len[s, None]
            _, _, wt = _tangent_inverse_mass(f, sel[s], t, inv_mass, inv_inertia)
            need[s] = -slip[s] / wt[:, None]
        total = lam_t[sel] + need
        total_len = np.sqrt(_dot(total, total))
        cap = f.friction[sel] * lam[sel]
        scale = np.where(total_len > cap, cap / np.maximum(total_len, 1e-300), 1.0)
        total *= scale[:, None]
        delta = total - lam_t[sel]
        lam_t[sel] = total
        stuck[sel] = (scale >= 1.0) & (lam[sel] > 0.0)
        dx[a] += inv_mass[a, None] * delta
        dth[a] += world_inverse_inertia_times(f.rot1[sel], inv_inertia[a], cross(r1, delta))
        dx[b] -= inv_mass[b, None] * delta
        dth[b] -= world_inverse_inertia_times(f.rot2[sel], inv_inertia[b], cross(r2, delta))


def solve_contact_restitution(f: ContactFrame, colours, v, w, inv_mass, touching, target):
    """One Gauss-Seidel pass that sets each touching contact's normal speed to its target (c,).

    The target is e times the approach speed for a bounce, 0 otherwise (which also removes the
    separating speed that projecting a penetration out would otherwise leave behind).
    """
    for sel in colours:
        sel = sel[touching[sel]]
        if not len(sel):
            continue
        a, b, n = f.a[sel], f.b[sel], f.n[sel]
        vn = _dot(n, v[a] - v[b]) + _dot(f.rn1[sel], w[a]) - _dot(f.rn2[sel], w[b])
        p = (target[sel] - vn) / f.w[sel]
        v[a] += (p * inv_mass[a])[:, None] * n
        w[a] += p[:, None] * f.k1[sel]
        v[b] -= (p * inv_mass[b])[:, None] * n
        w[b] -= p[:, None] * f.k2[sel]


def solve_contact_friction(f: ContactFrame, colours, v, w, inv_mass, inv_inertia, touching, budget):
    """Dynamic friction: remove tangential speed, at most ``budget`` (c,) m/s = mu * normal impulse / m."""
    for sel in colours:
        sel = sel[touching[sel]]
        if not len(sel):
            continue
        a, b, n = f.a[sel], f.b[sel], f.n[sel]
        rel = (v[a] + cross(w[a], f.r1[sel])) - (v[b] + cross(w[b], f.r2[sel]))
        vt = rel - n * _dot(rel, n)[:, None]
        vt_len = np.sqrt(_dot(vt, vt))
        move = vt_len > 1e-12
        if not np.any(move):
            continue
        s = np.flatnonzero(move)
        t = vt[s] / vt_len[s, None]
        kt1, kt2, wt = _tangent_inverse_mass(f, sel[s], t, inv_mass, inv_inertia)
        # the impulse that stops the sliding, capped by the friction budget
        p = -np.minimum(vt_len[s] / wt, budget[sel[s]])
        sa, sb = a[s], b[s]
        v[sa] += (p * inv_mass[sa])[:, None] * t
        w[sa] += p[:, None] * kt1
        v[sb] -= (p * inv_mass[sb])[:, None] * t
        w[sb] -= p[:, None] * kt2
