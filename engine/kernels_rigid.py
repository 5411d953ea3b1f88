"""The hot loops of rigid bodies: integration, contact colouring, position and velocity solves.

Extended XPBD for rigid bodies (Muller et al. 2020, *Detailed Rigid Body Simulation with
Extended Position Based Dynamics*), vectorised over one colour of contacts at a time.

Arrays are sized B + 1: row B is the static world (inverse mass 0, identity pose), so a contact
with a collider is a contact with body B. x: (B+1, 3) m; q: (B+1, 4); v, w: (B+1, 3);
inv_mass: (B+1,); inv_inertia: (B+1, 3) principal, body frame.
"""

from __future__ import annotations

import numpy as np

from . import quaternions as quat


def integrate_bodies(x, q, v, w, inertia, inv_inertia, dynamic, accel, h, lin_decay, ang_decay):
    """Free motion over one substep, in place, for the bodies where ``dynamic`` (B+1,) is True.

    Linear: v += a h, x += v h (Verlet in velocity form). Angular: the world angular momentum
    L = I_world w is what free rotation conserves, so it is held fixed while the orientation
    advances at the midpoint angular velocity I_world(q_mid)^-1 L; an asymmetric body then
    precesses and tumbles as it should instead of spinning about a fixed axis.
    """
    d = np.flatnonzero(dynamic)
    if not len(d):
        return
    v[d] = (v[d] + accel[d] * h) * lin_decay[d, None]
    x[d] += v[d] * h
    qd = q[d]
    rot = quat.to_matrix(qd)
    momentum = np.einsum("kij,kj->ki", rot, inertia[d] * np.einsum("kji,kj->ki", rot, w[d]))
    q_mid = quat.integrate(qd, w[d], 0.5 * h)
    rot_mid = quat.to_matrix(q_mid)
    w_mid = np.einsum("kij,kj->ki", rot_mid, inv_inertia[d] * np.einsum("kji,kj->ki", rot_mid, momentum))
    q[d] = quat.integrate(qd, w_mid * ang_decay[d, None], h)


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


def _gen_inv_mass(rot, inv_mass, inv_inertia, r, direction):
    """Generalized inverse mass (c,) of bodies at offsets r (c, 3) along unit directions (c, 3)."""
    k = np.einsum("cji,cj->ci", rot, np.cross(r, direction))
    return inv_mass + np.einsum("ci,ci->c", inv_inertia * k, k)


def _apply_positional(x, q, rot, inv_mass, inv_inertia, body, r, impulse, sign):
    """Move bodies by a positional impulse (c, 3) at offsets r, in place (no body repeats)."""
    x[body] += sign * impulse * inv_mass[body, None]
    dtheta = np.einsum("cij,cj->ci", rot, inv_inertia[body] * np.einsum("cji,cj->ci", rot, np.cross(r, impulse)))
    dq = np.concatenate([np.zeros((len(body), 1)), sign * dtheta], axis=1)
    q[body] = quat.normalize(q[body] + 0.5 * quat.multiply(dq, q[body]))


def solve_contact_positions(x, q, x_prev, q_prev, inv_mass, inv_inertia, contacts, colours, lam):
    """One Gauss-Seidel pass of contact projection with static friction, colour by colour.

    lam: (c,) accumulated normal multipliers (positional impulse, kg m) for this substep.
    """
    a, b, la, lb, n = contacts.a, contacts.b, contacts.local_a, contacts.local_b, contacts.normal
    for sel in colours:
        ca, cb, nn = a[sel], b[sel], n[sel]
        ra_rot, rb_rot = quat.to_matrix(q[ca]), quat.to_matrix(q[cb])
        r1 = np.einsum("cij,cj->ci", ra_rot, la[sel])
        r2 = np.einsum("cij,cj->ci", rb_rot, lb[sel])
        depth = np.einsum("ci,ci->c", (x[ca] + r1) - (x[cb] + r2), nn)
        active = depth < 0.0
        w1 = _gen_inv_mass(ra_rot, inv_mass[ca], inv_inertia[ca], r1, nn)
        w2 = _gen_inv_mass(rb_rot, inv_mass[cb], inv_inertia[cb], r2, nn)
        dlam = np.where(active, -depth / np.maximum(w1 + w2, 1e-300), 0.0)
        lam[sel] += dlam
        impulse = dlam[:, None] * nn
        _apply_positional(x, q, ra_rot, inv_mass, inv_inertia, ca, r1, impulse, 1.0)
        _apply_positional(x, q, rb_rot, inv_mass, inv_inertia, cb, r2, impulse, -1.0)
        # Static friction: undo the tangential slip of the contact points over this substep,
        # if that takes no more than mu times the normal correction.
        ra_rot, rb_rot = quat.to_matrix(q[ca]), quat.to_matrix(q[cb])
        p1 = x[ca] + np.einsum("cij,cj->ci", ra_rot, la[sel])
        p2 = x[cb] + np.einsum("cij,cj->ci", rb_rot, lb[sel])
        p1_prev = x_prev[ca] + quat.rotate(q_prev[ca], la[sel])
        p2_prev = x_prev[cb] + quat.rotate(q_prev[cb], lb[sel])
        slip = (p1 - p1_prev) - (p2 - p2_prev)
        slip -= nn * np.einsum("ci,ci->c", slip, nn)[:, None]
        slip_len = np.linalg.norm(slip, axis=1)
        stick = (lam[sel] > 0.0) & (slip_len > 1e-15) & (slip_len < contacts.friction[sel] * lam[sel])
        if np.any(stick):
            s = np.flatnonzero(stick)
            t = slip[s] / slip_len[s, None]
            r1s, r2s = p1[s] - x[ca[s]], p2[s] - x[cb[s]]
            w1 = _gen_inv_mass(ra_rot[s], inv_mass[ca[s]], inv_inertia[ca[s]], r1s, t)
            w2 = _gen_inv_mass(rb_rot[s], inv_mass[cb[s]], inv_inertia[cb[s]], r2s, t)
            impulse = (-slip_len[s] / np.maximum(w1 + w2, 1e-300))[:, None] * t
            _apply_positional(x, q, ra_rot[s], inv_mass, inv_inertia, ca[s], r1s, impulse, 1.0)
            _apply_positional(x, q, rb_rot[s], inv_mass, inv_inertia, cb[s], r2s, impulse, -1.0)


def _apply_velocity(v, w, rot, inv_mass, inv_inertia, body, r, impulse, sign):
    v[body] += sign * impulse * inv_mass[body, None]
    w[body] += sign * np.einsum("cij,cj->ci", rot, inv_inertia[body] * np.einsum("cji,cj->ci", rot, np.cross(r, impulse)))


def solve_contact_velocities(x, q, v, w, inv_mass, inv_inertia, contacts, colours, lam, speed_before, h,
                             bounce_speed, friction_used):
    """Restitution and dynamic friction on velocities, colour by colour (after the position solve).

    speed_before: (c,) normal relative velocity of each contact at the substep's start (< 0 when
    approaching). A contact that approached faster than bounce_speed leaves at e times that speed;
    friction removes tangential speed by at most mu times the normal impulse over all passes of
    a substep (friction_used: (c,) m/s of that budget spent so far, updated in place).
    """
    a, b, la, lb, n = contacts.a, contacts.b, contacts.local_a, contacts.local_b, contacts.normal
    for sel in colours:
        touching = lam[sel] > 0.0
        if not np.any(touching):
            continue
        sel = sel[touching]
        ca, cb, nn = a[sel], b[sel], n[sel]
        ra_rot, rb_rot = quat.to_matrix(q[ca]), quat.to_matrix(q[cb])
        r1 = np.einsum("cij,cj->ci", ra_rot, la[sel])
        r2 = np.einsum("cij,cj->ci", rb_rot, lb[sel])
        rel = (v[ca] + np.cross(w[ca], r1)) - (v[cb] + np.cross(w[cb], r2))
        vn = np.einsum("ci,ci->c", rel, nn)
        vt = rel - nn * vn[:, None]
        vt_len = np.linalg.norm(vt, axis=1)
        budget = np.maximum(contacts.friction[sel] * lam[sel] / h - friction_used[sel], 0.0)
        friction_dv = np.minimum(budget, vt_len)
        friction_used[sel] += friction_dv
        dv = -vt * (friction_dv / np.maximum(vt_len, 1e-15))[:, None]
        before = speed_before[sel]
        e = np.where(before < -bounce_speed, contacts.restitution[sel], 0.0)
        dv += nn * (-vn + np.maximum(-e * before, 0.0))[:, None]
        dv_len = np.linalg.norm(dv, axis=1)
        move = dv_len > 1e-12
        if not np.any(move):
            continue
        d = dv[move] / dv_len[move, None]
        w1 = _gen_inv_mass(ra_rot[move], inv_mass[ca[move]], inv_inertia[ca[move]], r1[move], d)
        w2 = _gen_inv_mass(rb_rot[move], inv_mass[cb[move]], inv_inertia[cb[move]], r2[move], d)
        impulse = dv[move] / np.maximum(w1 + w2, 1e-300)[:, None]
        _apply_velocity(v, w, ra_rot[move], inv_mass, inv_inertia, ca[move], r1[move], impulse, 1.0)
        _apply_velocity(v, w, rb_rot[move], inv_mass, inv_inertia, cb[move], r2[move], impulse, -1.0)
