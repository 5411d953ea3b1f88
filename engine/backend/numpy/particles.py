"""The hot loops: integration, projection sweeps, contact response.

A narrow array-in, array-out layer: plain numpy arrays in, positions updated in place, no
knowledge of builders, models or Blender. A compiled backend can replace these functions one by
one with the same signatures.

Shapes: n particles; x, x_prev (n, 3) m; h substep s.
"""

from __future__ import annotations

import numpy as np


def verlet_integrate(x, x_prev, movable, accel, decay, h, drag_w=None, air_velocity=None):
    """One Verlet substep in place: x' = x + (x - x*) * decay + a h^2, x* = x.

    movable: (n,) 1.0 for particles that move, 0.0 for pinned ones; accel: (n, 3) or (3,) m/s^2;
    decay: velocity kept per substep (exp(-damping h)); drag_w: (n,) drag * inverse mass (1/m),
    applied implicitly (v_rel' = v_rel / (1 + drag_w |v_rel| h)) so that it can never reverse the
    motion; air_velocity: (3,) or per particle (n, 3) m/s, what drag is relative to.
    """
    disp = x - x_prev
    if drag_w is not None:
        air = air_velocity * h
        rel = disp - air
        speed = np.sqrt(np.einsum("ij,ij->i", rel, rel)) / h
        rel /= (1.0 + drag_w * speed * h)[:, None]
        disp = rel + air
    disp *= decay
    disp += accel * (h * h)
    disp *= movable[:, None]
    x_prev[...] = x
    x += disp


class StickBatch:
    """One colour of sticks, prepared for projection: no movable particle appears twice.

    ij: (2k,) the i ends then the j ends, so a colour is one gather and one scatter per axis.
    """

    __slots__ = ("ij", "k", "w_i", "w_j", "rest", "alpha", "kind", "w_sum", "start", "stop")

    def __init__(self, i, j, inv_mass, rest, compliance, kind, h, start, stop):
        self.ij = np.concatenate([i, j]).astype(np.intp)
        self.k = len(i)
        self.w_i, self.w_j = inv_mass[i], inv_mass[j]
        self.rest = rest
        self.alpha = compliance / (h * h) if np.any(compliance) else None  # XPBD alpha tilde
        self.kind = kind if np.any(kind != 0) else None
        self.w_sum = self.w_i + self.w_j + (0.0 if self.alpha is None else self.alpha)
        self.start, self.stop = start, stop


def project_sticks(axes, batches, lam, sqrt_approximation=False):
    """One Gauss-Seidel sweep over colours, each colour projected as one vectorised XPBD update.

    axes: (3, n) positions, one contiguous row per axis (1-D gathers and scatters are several
    times faster in numpy than gathering rows of an (n, 3) array), updated in place;
    lam: (m,) accumulated multipliers for this substep (0 at its start).
    """
    ax, ay, az = axes
    for b in batches:
        k = b.k
        px, py, pz = ax.take(b.ij), ay.take(b.ij), az.take(b.ij)
        dx, dy, dz = px[k:] - px[:k], py[k:] - py[:k], pz[k:] - pz[:k]
        dd = dx * dx + dy * dy + dz * dz
        if sqrt_approximation:
            # Jakobsen's first-order sqrt: |d| ~ (d.d + L^2) / 2L near the rest length.
            length = (dd + b.rest * b.rest) / (2.0 * b.rest)
        else:
            length = np.sqrt(dd)
        c = length - b.rest
        if b.kind is not None:
            inactive = ((b.kind == 1) & (c > 0.0)) | ((b.kind == 2) & (c < 0.0))
            c[inactive] = 0.0
        if b.alpha is not None:
            lam_b = lam[b.start:b.stop]
            dlam = (-c - b.alpha * lam_b) / b.w_sum
            if b.kind is not None:
                dlam[inactive] = 0.0
            lam_b += dlam
        else:
            dlam = -c / b.w_sum
        s = dlam / np.maximum(length, 1e-12)
        si, sj = s * b.w_i, s * b.w_j
        for p, d in ((px, dx), (py, dy), (pz, dz)):
            p[:k] -= si * d
            p[k:] += sj * d
        ax[b.ij], ay[b.ij], az[b.ij] = px, py, pz


def project_goals(x, index, target, w, alpha, lam):
    """Zero-length XPBD springs pulling x[index] (g,) to target (g, 3); lam (g, 3)."""
    c = x[index] - target
    dlam = (-c - alpha[:, None] * lam) / (w + alpha)[:, None]
    lam += dlam
    x[index] += w[:, None] * dlam


def respond_to_contacts(x, x_prev, k, corr, depth, surface_disp, accel, mu, e, h, bounce_speed):
    """Contact response for particles k (c,) that penetrate a collider, in place.

    corr: (c, 3) world-space move that takes each particle out; depth: (c,) m of penetration;
    surface_disp: (c, 3) how far the collider surface under each particle moved this substep;
    accel: (c, 3) m/s^2 acting on the particles; mu, e: (c,) friction and restitution;
    bounce_speed: m/s below which contacts do not bounce.

    Position is projected out. A contact that arrived faster than bounce_speed bounces: the
    moment of impact within the substep is found from the start and end heights under constant
    acceleration, the normal velocity there is reversed and scaled by e, and the particle is put
    where that bounce takes it by the end of the substep; so bounce heights follow e^2 and e = 1
    keeps energy. Other contacts lose their outward normal speed (no pop from projection).
    Friction then takes back tangential slip relative to the surface: all of it while the slip is
    within mu times the normal correction (static), else that much of it (kinetic).
    """
    n = corr / np.maximum(depth, 1e-15)[:, None]
    xk, pk = x[k], x_prev[k]
    moved_n = np.einsum("ij,ij->i", xk - pk - surface_disp, n)  # normal travel this substep
    v_in = moved_n / h
    xk += corr
    bounce = (v_in < -bounce_speed) & (e > 0.0)
    target_n = np.zeros(len(k))
    normal_push = depth.copy()
    if np.any(bounce):
        a_n = np.einsum("ij,ij->i", accel[bounce], n[bounce])
        dn, eb = moved_n[bounce], e[bounce]
        z0 = np.maximum(-depth[bounce] - dn, 0.0)  # height above contact at the substep's start
        v0 = dn / h - 0.5 * a_n * h  # normal velocity at the substep's start
        tau = np.clip(2.0 * z0 / np.maximum(-v0 + np.sqrt(np.maximum(v0 * v0 - 2.0 * a_n * z0, 0.0)), 1e-15), 0.0, h)
        v_out = -eb * (v0 + a_n * tau)
        rest = h - tau
        z_end = np.maximum(v_out * rest + 0.5 * a_n * rest * rest, 0.0)
        xk[bounce] += n[bounce] * z_end[:, None]
        # Verlet carries the mean velocity of the substep that ends now.
        target_n[bounce] = (v_out + a_n * rest - 0.5 * a_n * h) * h
        normal_push[bounce] = (1.0 + eb) * np.abs(v0 + a_n * tau) * h
    slip = xk - pk - surface_disp
    slip -= n * np.einsum("ij,ij->i", slip, n)[:, None]
    slip_len = np.sqrt(np.einsum("ij,ij->i", slip, slip))
    limit = mu * normal_push
    keep = np.where(slip_len <= limit, 1.0, limit / np.maximum(slip_len, 1e-15))
    xk -= slip * keep[:, None]
    rel_n = np.einsum("ij,ij->i", xk - pk - surface_disp, n)
    target_n = np.where(bounce, target_n, np.minimum(rel_n, 0.0))
    pk += n * (rel_n - target_n)[:, None]
    x[k] = xk
    x_prev[k] = pk
