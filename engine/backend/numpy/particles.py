"""Particle kernels in numpy: Verlet integration, stick sweeps, goals, contact response.

The reference implementation of ``backend/numba/particles.py``: the same functions with the same
arguments, and per item the same arithmetic in the same order, so both give the same numbers
(sums of three components are written out, never left to ``einsum``, whose order may differ).

Shapes: n particles; x, x_prev (n, 3) m; h substep s; m sticks.
"""

from __future__ import annotations

import numpy as np

# See project_sticks: sticks strained more than this at a substep's start move along their
# direction now (the same value in backend/numba/particles.py).
SHAKE_STRAIN = 0.01
# A hinge chain's pivot below this share of its diagonal is taken as the diagonal (a chain
# whose hinges cannot all be met: the same value in backend/numba/particles.py).
HINGE_PIVOT = 1e-9
# And a hinge chain's diagonal is this share more than its own (Levenberg-Marquardt): hinges
# can measure the same fold twice (two of a triangle strip's against one free vertex, the rest
# pinned), and rigid, their chain's matrix was singular and the solve blew up.
HINGE_DAMPING = 1e-6


def _dot3(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def verlet_integrate(x, x_prev, movable, accel, decay, h, drag_w, air_velocity):
    """One Verlet substep in place: x' = x + (x - x*) * decay + a h^2, x* = x.

    movable: (n,) 1.0 for particles that move, 0.0 for pinned ones; accel: (n, 3) m/s^2;
    decay: velocity kept per substep (exp(-damping h)); drag_w: (n,) drag * inverse mass (1/m), or
    empty for no drag, applied implicitly (v_rel' = v_rel / (1 + drag_w |v_rel| h)) so that it can
    never reverse the motion; air_velocity: (n, 3) m/s, what drag is relative to.
    """
    disp = x - x_prev
    if len(drag_w):
        air = air_velocity * h
        rel = disp - air
        speed = np.sqrt(_dot3(rel, rel)) / h
        rel /= (1.0 + drag_w * speed * h)[:, None]
        disp = rel + air
    disp = (disp * decay + accel * (h * h)) * movable[:, None]
    x_prev[...] = x
    x += disp


def project_sticks(x, i, j, w_i, w_j, rest, alpha, kind, lam, colour_offsets, passes, sqrt_approximation,
                   x_start=None, chains=None):
    """Gauss-Seidel sweeps over the sticks, in place on x (n, 3) and lam (m,).

    Sticks are sorted by colour (``colour_offsets`` (c + 1,)): within a colour no movable particle
    appears twice, so a colour is projected as one vectorised XPBD update. passes: (p, 3) rows of
    (first colour, end colour, sweeps): each pass sweeps its colours that many times. alpha: (m,)
    XPBD compliance / h^2 (0 = rigid); kind: (m,) 0 equal, 1 at least, 2 at most, 3 broken (torn: skipped);
    lam: (m,) the
    accumulated multipliers (rigid sticks' too).

    x_start: (n, 3) where the particles were at the substep's start, or None: plain projection
    along each stick's direction as it is swept. With x_start each stick moves its ends along its
    direction there, not along its direction now (SHAKE, Ryckaert et al. 1977): the constraint
    force of a step acts along the stick as it was.
    Along the direction now (plain projection), a stick that turns by theta per substep is
    shortened in its turn by about theta^3, and a pendulum at 70 degrees lost a third of its
    amplitude in five swings; along the old direction a steady turn is kept exactly. A stick
    that turned more than 60 degrees in the substep, or was strained more than SHAKE_STRAIN at
    its start (sticks fighting a rigid volume, say: there the old direction fed the fight),
    moves along its direction now.

    passes may have two more columns (first group, end group): a row with groups is solved as
    those groups' chains (``particles.chains``), chains = (chain_sticks, chain_flip,
    chain_offsets, chain_flags, group_offsets) from the Model's Sticks.
    """
    # One contiguous row per axis: 1-D gathers and scatters are several times faster in numpy.
    ax, ay, az = axes = np.ascontiguousarray(x.T)
    live = x_start is None or x_start is x
    bx, by, bz = (ax, ay, az) if live else np.ascontiguousarray(x_start.T)
    for row in passes:
        first, end, sweeps = row[:3]
        if len(row) > 4 and row[4] > row[3]:
            chain_sticks, chain_flip, chain_offsets, chain_flags, group_offsets = chains
            for _ in range(sweeps):
                for g in range(row[3], row[4]):
                    c0, c1 = group_offsets[g], group_offsets[g + 1]
                    _solve_chain_group((ax, ay, az), (bx, by, bz), live, i, j, w_i, w_j, rest, alpha, kind, lam,
                                       chain_sticks, chain_flip, chain_offsets[c0:c1 + 1], chain_flags[c0:c1],
                                       sqrt_approximation)
            continue
        for _ in range(sweeps):
            for c in range(first, end):
                a, b = colour_offsets[c], colour_offsets[c + 1]
                ii, jj = i[a:b], j[a:b]
                wi, wj, L, al, lam_c = w_i[a:b], w_j[a:b], rest[a:b], alpha[a:b], lam[a:b]
                dx, dy, dz = ax[jj] - ax[ii], ay[jj] - ay[ii], az[jj] - az[ii]
                dd = dx * dx + dy * dy + dz * dz
                length = (dd + L * L) / (2.0 * L) if sqrt_approximation else np.sqrt(dd)
                cons = length - L
                if live:
                    ex, ey, ez, length0, cosine = dx, dy, dz, length, 1.0
                else:
                    ex, ey, ez = bx[jj] - bx[ii], by[jj] - by[ii], bz[jj] - bz[ii]
                    ee = ex * ex + ey * ey + ez * ez
                    length0 = (ee + L * L) / (2.0 * L) if sqrt_approximation else np.sqrt(ee)
                    cosine = (dx * ex + dy * ey + dz * ez) / (np.maximum(length, 1e-12) * np.maximum(length0, 1e-12))
                    turned = (cosine < 0.5) | (np.abs(length0 - L) > SHAKE_STRAIN * L)
                    ex, ey, ez = np.where(turned, dx, ex), np.where(turned, dy, ey), np.where(turned, dz, ez)
                    length0 = np.where(turned, length, length0)
                    cosine = np.where(turned, 1.0, cosine)
                k = kind[a:b]
                act = ~(((k == 1) & (cons > 0.0)) | ((k == 2) & (cons < 0.0)) | (k == 3))
                ws = (wi + wj) * cosine + al
                dlam = np.where(act, (-cons - al * lam_c) / ws, 0.0)
                lam_c += dlam
                s = dlam / np.maximum(length0, 1e-12)
                si, sj = s * wi, s * wj
                for p, d in ((ax, ex), (ay, ey), (az, ez)):
                    p[ii] -= si * d
                    p[jj] += sj * d
    x[...] = axes.T


# A chain pinned at both ends gets this times w_p + w_q more on its diagonal (a Levenberg-
# Marquardt damping): rigid and straight, such a chain cannot change its length and its system is
# singular; damped, a pull beyond its length is shared evenly by its sticks (undamped, split in
# two halves solved in turn, the whole excess landed on the stick at the cut: a sheet tore at 3%
# of a pull its factor allowed 50). Its slack is taken up over a few solves.
CHAIN_DAMPING = 1e-2
# A chain's elimination keeps a pivot only above this fraction of its row's diagonal (else the
# diagonal alone: a guard; the chains' systems are positive definite).
CHAIN_PIVOT = 1e-12
# A taut chain's moves are filtered across it (_filter_transverse) where a stick's w c passes
# this, c = -lam / length (its tension x h^2 / length), w its lighter end's inverse mass; by
# what is beyond it. Below it a chain moves as solved, so swings and whips keep their energy
# (filtered from 0, a chain of 8 links released level gained 1.5% as it whipped, and a 10-link
# rope swung from 80 degrees stretched 0.5%). At 0.2 a 1 m rope of 256 links at 10 substeps,
# nudged, blew up, its lower part shaking; at 0.1 it hung (0.04 m/s), though nudged otherwise it
# still blows up: so fine a rope is warned of (solver.rope_warnings).
TRANSVERSE_SLACK = 0.1


def _solve_chain_group(axes, start_axes, live, i, j, w_i, w_j, rest, alpha, kind, lam, chain_sticks, chain_flip,
                       offsets, flags, sqrt_approximation):
    """The chains of one group (no movable particle in two; chain k is positions
    offsets[k]:offsets[k + 1] of chain_sticks), each solved as one linearised XPBD system in place
    on axes and lam: row t is (w_p + w_q) cos + alpha on the diagonal (project_sticks' stick
    projection, SHAKE direction and all), coupled to its neighbours' moves through the particle
    they share (-w (g_t . e_neighbour): g the direction now, e the direction of the move), solved
    by elimination along the chain (Thomas), so the corrections of a whole chain come at once.
    A chain of one stick is project_sticks' projection of it, bit for bit. Vectorised over the
    chains, position by position along them, in the order numba's loop takes. flags: (chains,)
    ``particles.chains`` SHAKE (1): the chain moves along the start directions (start_axes)
    unless live, else along the directions now; DAMPED (2): CHAIN_DAMPING x (w_p + w_q) more on
    its diagonal. Unless live, a chain taut beyond TRANSVERSE_SLACK has its moves filtered
    (_filter_transverse) before they are applied."""
    ax, ay, az = axes
    bx, by, bz = start_axes
    t0, t1 = int(offsets[0]), int(offsets[-1])
    if t1 <= t0:
        return
    st = chain_sticks[t0:t1]
    flip = chain_flip[t0:t1] != 0
    p, q = np.where(flip, j[st], i[st]), np.where(flip, i[st], j[st])
    wp, wq = np.where(flip, w_j[st], w_i[st]), np.where(flip, w_i[st], w_j[st])
    L, al = rest[st], alpha[st]
    dx, dy, dz = ax[q] - ax[p], ay[q] - ay[p], az[q] - az[p]
    dd = dx * dx + dy * dy + dz * dz
    length = (dd + L * L) / (2.0 * L) if sqrt_approximation else np.sqrt(dd)
    cons = length - L
    if live:
        ex, ey, ez, length0, cosine = dx, dy, dz, length, np.ones(len(st))
    else:
        fx, fy, fz = bx[q] - bx[p], by[q] - by[p], bz[q] - bz[p]
        ff = fx * fx + fy * fy + fz * fz
        f_len = (ff + L * L) / (2.0 * L) if sqrt_approximation else np.sqrt(ff)
        f_cos = (dx * fx + dy * fy + dz * fz) / (np.maximum(length, 1e-12) * np.maximum(f_len, 1e-12))
        keep = (f_cos >= 0.5) & (np.abs(f_len - L) <= SHAKE_STRAIN * L) & np.repeat((flags & 1) != 0,
                                                                                   np.diff(offsets))
        ex, ey, ez = np.where(keep, fx, dx), np.where(keep, fy, dy), np.where(keep, fz, dz)
        length0 = np.where(keep, f_len, length)
        cosine = np.where(keep, f_cos, 1.0)
    l0 = np.maximum(length0, 1e-12)
    inv_g, inv_0 = 1.0 / np.maximum(length, 1e-12), 1.0 / l0
    gx, gy, gz = dx * inv_g, dy * inv_g, dz * inv_g
    ux, uy, uz = ex * inv_0, ey * inv_0, ez * inv_0
    k = kind[st]
    act = ~(((k == 1) & (cons > 0.0)) | ((k == 2) & (cons < 0.0)) | (k == 3))
    lens = np.diff(offsets)
    d = (wp + wq) * cosine + al
    d = np.where(np.repeat((flags & 2) != 0, lens), d + CHAIN_DAMPING * (wp + wq), d)
    diag = np.where(act, d, 1.0)
    rhs = np.where(act, -cons - al * lam[st], 0.0)
    n = t1 - t0
    starts = np.asarray(offsets[:-1], np.int64) - t0
    has_prev = np.ones(n, bool)
    has_prev[starts] = False
    has_next = np.ones(n, bool)
    has_next[starts + lens - 1] = False
    prev, nxt = np.maximum(np.arange(n) - 1, 0), np.minimum(np.arange(n) + 1, n - 1)
    low = np.where(act & has_prev, -wp * (gx * ux[prev] + gy * uy[prev] + gz * uz[prev]), 0.0)
    up = np.where(act & has_next, -wq * (gx * ux[nxt] + gy * uy[nxt] + gz * uz[nxt]), 0.0)
    # Position m of chain c at [m, c] (every step of the elimination one row of numpy calls);
    # beyond a chain's end, rows of their own (1 on the diagonal, nothing coupled or asked).
    K, C = int(lens.max()), len(lens)
    m_idx, c_idx = np.arange(n) - np.repeat(starts, lens), np.repeat(np.arange(C), lens)

    def padded(values, fill):
        out = np.full((K, C), fill)
        out[m_idx, c_idx] = values
        return out

    D, LO, UP, R = padded(diag, 1.0), padded(low, 0.0), padded(up, 0.0), padded(rhs, 0.0)
    CP, DP = np.empty((K, C)), np.empty((K, C))
    den = D[0]
    DP[0] = R[0] / den
    CP[0] = UP[0] / den
    for m in range(1, K):
        den = D[m] - LO[m] * CP[m - 1]
        den = np.where(den > CHAIN_PIVOT * D[m], den, D[m])
        DP[m] = (R[m] - LO[m] * DP[m - 1]) / den
        CP[m] = UP[m] / den
    DL = np.empty((K, C))
    DL[K - 1] = DP[K - 1]
    for m in range(K - 2, -1, -1):
        DL[m] = DP[m] - CP[m] * DL[m + 1]  # (a chain's last row: CP 0, so DP itself)
    dl = DL[m_idx, c_idx]
    lam[st] += dl
    sc = dl / l0
    si, sj = sc * wp, sc * wq
    taut = np.zeros(C, bool)
    if not live:
        w_max = np.maximum(wp, wq)
        tension = np.maximum(-lam[st], 0.0)
        taut = np.logical_or.reduceat(tension * w_max > TRANSVERSE_SLACK * L, starts) & (lens > 1)
    if np.any(taut):
        on = np.repeat(taut, lens)
        # each stick's weight: its tension beyond the slack
        wm, Lm = w_max[on], L[on]
        c = np.where(wm > 0.0, (tension[on] * wm - TRANSVERSE_SLACK * Lm) / (Lm * np.where(wm > 0.0, wm, 1.0)), 0.0)
        c = np.where(c > 0.0, c, 0.0)
        _filter_transverse(axes, p[on], q[on], (ex[on], ey[on], ez[on]), l0[on], wp[on], wq[on], si[on], sj[on],
                           c, m_idx[on], (np.cumsum(taut) - 1)[c_idx[on]], int(lens[taut].max()), int(taut.sum()))
        off = ~on
        p, q, si, sj, ex, ey, ez = p[off], q[off], si[off], sj[off], ex[off], ey[off], ez[off]
    # numba moves each chain from its end: a particle between two sticks is moved by the later
    # stick (as its first end) before the earlier (as its second), so all first ends go first.
    for axis, e in ((ax, ex), (ay, ey), (az, ez)):
        axis[p] -= si * e
    for axis, e in ((ax, ex), (ay, ey), (az, ez)):
        axis[q] += sj * e


def _filter_transverse(axes, p, q, e, l0, wp, wq, si, sj, c, m_idx, c_idx, K, C):
    """The solved moves of taut chains (stick t: from p[t] to q[t], position m_idx[t] of chain
    c_idx[t]; C chains of at most K sticks), filtered across the chains before they are applied.

    Why: a chain solved whole carries its full tension every substep, and its transverse waves
    (speed sqrt(T / mu)) are pushed along the sticks' directions at the substep's start, which
    is explicit: beyond w c ~ 0.4 (c = tension h^2 / length) a fine rope or the columns of a fine
    hanging cloth shook without end (1 m in 128 links at 10 substeps: 8-33 m/s; a 65 x 65 cloth
    at 1,000 N, nudged out of its plane, 0.6 m/s after 2 s). So each particle's move is split along
    its tangent (the sum of its sticks' unit directions) and across; across, the moves y solve
    (I + W K) y = move, K the chain's Laplacian weighted by each stick's c beyond
    TRANSVERSE_SLACK: the implicit geometric stiffness of a taut string, the transverse part of
    implicit Euler. K is symmetric and its rows sum to zero, so momentum is kept (angular
    momentum not exactly: the filter's pulls between neighbours are not along their stick; a
    crumpled rope whirled at 10 rad/s lost 7% of its spin in a second, 0.7% at 5); a smooth move
    (a swing) passes, a zigzag (the unstable wave) is held back. Along the chain the moves are
    kept as solved. Only in the solves from the substep's start (project_sticks given x_start:
    each iteration's), not in the contact rounds or the tear relaxations: filtered there, a heavy
    box on a sheet sank through it, the filter spreading the sheet's push to light neighbours.
    Particle by particle (row m of chain k at [m, k]) in numba's arithmetic."""
    rows = (m_idx, c_idx)
    after = (m_idx + 1, c_idx)

    def pad(values, where):
        out = np.zeros((K + 1, C))
        out[where] = values
        return out

    moves, tangent = [], []
    inv = 1.0 / l0
    for d in e:
        mv = np.zeros((K + 1, C))
        mv[rows] -= si * d
        mv[after] += sj * d
        moves.append(mv)
        t = np.zeros((K + 1, C))
        t[after] += d * inv
        t[rows] += d * inv
        tangent.append(t)
    tx, ty, tz = tangent
    tt = tx * tx + ty * ty + tz * tz
    big = tt > 1e-24
    along = np.where(big, (moves[0] * tx + moves[1] * ty + moves[2] * tz) / np.where(big, tt, 1.0), 0.0)
    par = [along * t for t in tangent]
    w = pad(wq, after)
    w[rows] = wp
    cl, cr = pad(c, after), pad(c, rows)
    low = -w * cl
    den = 1.0 + w * (cl + cr)
    up = -w * cr
    fc = np.empty((K + 1, C))
    y = [np.empty((K + 1, C)) for _ in range(3)]
    for m in range(K + 1):
        dm = den[m] - low[m] * fc[m - 1] if m > 0 else den[m]
        inv_dm = 1.0 / dm
        fc[m] = up[m] * inv_dm
        for d in range(3):
            rhs = moves[d][m] - par[d][m]
            if m > 0:
                rhs = rhs - low[m] * y[d][m - 1]
            y[d][m] = rhs * inv_dm
    for m in range(K - 1, -1, -1):
        for d in range(3):
            y[d][m] -= fc[m] * y[d][m + 1]
    particle = pad(q, after).astype(np.int64)
    particle[rows] = p
    on = pad(1.0, after) > 0.0
    on[rows] = True
    for axis, pa, ya in zip(axes, par, y):
        axis[particle[on]] += (pa + ya)[on]


def project_goals(x, index, target, w, alpha, lam):
    """Zero-length XPBD springs pulling x[index] (g,) to target (g, 3); alpha (g,) compliance / h^2;
    lam (g, 3) accumulated over the substep."""
    c = x[index] - target
    dlam = (-c - alpha[:, None] * lam) / (w + alpha)[:, None]
    lam += dlam
    x[index] += w[:, None] * dlam


# A group of hinge chains is solved through each chain's inverse (one product for the group)
# while the group's padded matrices hold at most this many numbers (8 MB: a 65 x 65 cloth's
# groups hold 0.13 million); a bigger one by substitution along its chains, position by
# position (a 65 x 65 cloth's groups took 3 ms a pass so).
HINGE_DENSE = 1_000_000


def _hinge_diagonals(alpha, on, coupling, hs, a, b):
    live = on[hs] != 0
    diag = np.where(live, coupling[a:b, 0] * (1.0 + HINGE_DAMPING) + alpha[hs], 1.0)
    return diag, live.astype(np.float64)


def prepare_hinges(alpha, on, coupling, chain_hinges, chain_offsets, group_offsets):
    """What project_hinges needs of the hinge chains' matrices, which do not change while the
    hinges' compliances and torn edges do not (``model.Hinges``): per group, (chain of each place,
    place in its chain, the chains' inverses (chains, L, L)), or None where that is too big
    (HINGE_DENSE), solved along the chains then. Each chain's matrix: on its diagonal
    coupling_0 (1 + HINGE_DAMPING) + alpha (1 for a hinge whose edge tore), off it coupling_i
    between a hinge and the i-th after it while both are whole."""
    band = coupling.shape[1] - 1
    out = []
    for g in range(len(group_offsets) - 1):
        c0, c1 = int(group_offsets[g]), int(group_offsets[g + 1])
        a, b = int(chain_offsets[c0]), int(chain_offsets[c1])
        lengths = np.diff(chain_offsets[c0:c1 + 1])
        longest = int(lengths.max()) if len(lengths) else 0
        if b <= a or (c1 - c0) * longest * longest > HINGE_DENSE:
            out.append(None)
            continue
        hs = chain_hinges[a:b]
        diag, live = _hinge_diagonals(alpha, on, coupling, hs, a, b)
        chain = np.repeat(np.arange(c1 - c0), lengths)
        place = np.arange(b - a) - (chain_offsets[c0:c1] - a)[chain]
        matrix = np.zeros((c1 - c0, longest, longest))
        matrix[:, np.arange(longest), np.arange(longest)] = 1.0  # (past a chain's end)
        matrix[chain, place, place] = diag
        for i in range(1, band + 1):
            r = np.flatnonzero(place + i < lengths[chain])
            value = coupling[a + r, i] * live[r] * live[r + i]
            matrix[chain[r], place[r], place[r] + i] = value
            matrix[chain[r], place[r] + i, place[r]] = value
        out.append((chain, place, np.linalg.inv(matrix)))
    return out


def _hinge_rows(x, index, weight, target, alpha, on, lam, coupling, hs, a, b):
    """Hinges hs (chain places a..b - 1): the right-hand sides -(v - target) - alpha lam, the
    diagonals coupling_0 (1 + HINGE_DAMPING) + alpha, and which are live (a hinge whose edge tore
    is not: it gets 0 and 1 and no coupling, so it does not move)."""
    idx, k = index[hs], weight[hs]
    width = idx.shape[1]
    v = k[:, 0, None] * x[idx[:, 0]]
    for m in range(1, width):
        v = v + k[:, m, None] * x[idx[:, m]]
    diag, live = _hinge_diagonals(alpha, on, coupling, hs, a, b)
    rhs = np.where(live[:, None] != 0.0, -(v - target[hs]) - alpha[hs, None] * lam[hs], 0.0)
    return rhs, diag, live


def project_hinges(x, index, weight, w, target, alpha, on, lam, chain_hinges, coupling, chain_offsets,
                   group_offsets, first, last, factors):
    """Bending hinges (``particles.bending``), groups first..last - 1, one group at a time.

    index, weight, w: (k, 6) each hinge's vertices, their weights K in the fold vector
    v = sum K x and their inverse masses; target: (k, 3) the fold vector each is held to this
    substep (0 for a hinge flat at rest; see ``Solver._hinge_targets``), m; alpha: (k,)
    compliance / h^2; on: (k,) 0 where the hinge's edge tore; lam: (k, 3) accumulated over the
    substep; chain_hinges, coupling: (P,) and (P, HINGE_BAND + 1) (``model.Hinges``); factors:
    ``prepare_hinges``' for these alpha and on. Each chain is one XPBD system on the vector
    constraint C = v - target (linear: its gradient on vertex p is K_p, the same every step): its
    matrix is banded (a hinge shares vertices with the next HINGE_BAND), solved by LDL^T
    along the chain for the three axes at once (here through each chain's inverse where small
    enough, numba by substitution: the same numbers to rounding), and each vertex moved by
    w K dlam."""
    width = index.shape[1]
    for g in range(first, last):
        c0, c1 = int(group_offsets[g]), int(group_offsets[g + 1])
        a, b = int(chain_offsets[c0]), int(chain_offsets[c1])
        if b <= a:
            continue
        hs = chain_hinges[a:b]
        rhs, diag, live = _hinge_rows(x, index, weight, target, alpha, on, lam, coupling, hs, a, b)
        if factors[g] is not None:
            chain, place, inverse = factors[g]
            padded = np.zeros((inverse.shape[0], inverse.shape[1], 3))
            padded[chain, place] = rhs
            dlam = np.matmul(inverse, padded)[chain, place]
            lam[hs] += dlam
            f = w[hs] * weight[hs]
            moves = (f[:, :, None] * dlam[:, None, :]).reshape(-1, 3)
            at = index[hs].ravel()
            for c in range(3):
                x[:, c] += np.bincount(at, moves[:, c], minlength=len(x))
            continue
        cnt = b - a
        band = coupling.shape[1] - 1
        starts = chain_offsets[c0:c1] - a
        lengths = np.diff(chain_offsets[c0:c1 + 1])
        longest = int(lengths.max())
        d = np.zeros(cnt)
        low = np.zeros((cnt, band + 1))  # low[r, j]: the factor's entry (r, r - j)
        y = np.zeros((cnt, 3))
        for t in range(longest):
            alive = lengths > t
            r = starts[alive] + t
            left = lengths[alive] - t - 1  # how many places follow in the chain
            dt = diag[r].copy()
            for j in range(1, min(t, band) + 1):
                dt = dt - low[r, j] * low[r, j] * d[r - j]
            dt = np.where(dt > HINGE_PIVOT * diag[r], dt, diag[r])
            d[r] = dt
            for i in range(1, band + 1):
                on_i = left >= i
                ri = r[on_i]
                entry = coupling[a + ri, i] * live[ri] * live[ri + i]
                for j in range(1, min(t, band - i) + 1):
                    entry = entry - low[ri + i, i + j] * low[ri, j] * d[ri - j]
                low[ri + i, i] = entry / dt[on_i]
            yt = rhs[r].copy()
            for j in range(1, min(t, band) + 1):
                yt = yt - low[r, j, None] * y[r - j]
            y[r] = yt
        dlam = np.zeros((cnt, 3))
        for t in range(longest - 1, -1, -1):
            alive = lengths > t
            r = starts[alive] + t
            left = lengths[alive] - t - 1
            st = y[r] / d[r, None]
            for i in range(1, band + 1):
                ahead = np.minimum(r + i, cnt - 1)
                st = np.where((left >= i)[:, None], st - low[ahead, i, None] * dlam[ahead], st)
            dlam[r] = st
        lam[hs] += dlam
        for t in range(longest):
            r = starts[np.flatnonzero(lengths > t)] + t
            h = hs[r]
            for m in range(width):
                f = w[h, m] * weight[h, m]
                x[index[h, m]] += f[:, None] * dlam[r]


def respond_to_contacts(x, x_prev, k, corr, depth, surface_disp, accel, mu, e, h, bounce_speed):
    """Contact response for particles k (c,) that penetrate a surface, in place.

    corr: (c, 3) world-space move that takes each particle out; depth: (c,) m of penetration;
    surface_disp: (c, 3) how far the surface under each particle moved this substep;
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
    moved_n = _dot3(xk - pk - surface_disp, n)  # normal travel this substep
    v_in = moved_n / h
    xk += corr
    bounce = (v_in < -bounce_speed) & (e > 0.0)
    target_n = np.zeros(len(k))
    normal_push = depth.copy()
    if np.any(bounce):
        a_n = _dot3(accel[bounce], n[bounce])
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
    slip -= n * _dot3(slip, n)[:, None]
    slip_len = np.sqrt(_dot3(slip, slip))
    limit = mu * normal_push
    keep = np.where(slip_len <= limit, 1.0, limit / np.maximum(slip_len, 1e-15))
    xk -= slip * keep[:, None]
    rel_n = _dot3(xk - pk - surface_disp, n)
    target_n = np.where(bounce, target_n, np.minimum(rel_n, 0.0))
    pk += n * (rel_n - target_n)[:, None]
    x[k] = xk
    x_prev[k] = pk


def _sum_in_order(a):
    """sum(a) added left to right, as numba's loop adds it (``np.sum`` adds pairwise)."""
    return float(np.cumsum(a)[-1]) if len(a) else 0.0


def solve_sticks(x, x_start, i, j, w_i, w_j, rest, alpha, member, lam, colour_offsets, reduction, floor,
                 max_iterations):
    """A global solve of the equal-length sticks' XPBD system for the substep, in place on x and
    lam; returns the conjugate-gradient iterations it took.

    Linearised along each stick's unit direction e at the substep's start (x_start), the
    multipliers that make every stick hold C + alpha lam = 0 after the moves W N lam solve
    (N^T W N + alpha) lam = -C(x), N the (n, m) matrix of +-e. Preconditioned conjugate
    gradients (Jacobi: w_i + w_j + alpha) from lam as given (the last substep's: warm), until the
    largest residual (m) is at most max(reduction times the first one, floor), or
    max_iterations; then x += W N lam. Sticks of another kind (at least, at most, broken) take no
    part and their lam is zeroed. Sums are added in stick order (``_sum_in_order``), scatters
    colour by colour in stick order, as numba's loops do: the same numbers.
    """
    m = len(i)
    act = member.copy()
    ex, ey, ez = x_start[j, 0] - x_start[i, 0], x_start[j, 1] - x_start[i, 1], x_start[j, 2] - x_start[i, 2]
    length0 = np.sqrt(ex * ex + ey * ey + ez * ez)
    dx, dy, dz = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    # project_sticks' rule: along the start direction unless the stick turned or was strained
    cosine = (dx * ex + dy * ey + dz * ez) / (np.maximum(length, 1e-12) * np.maximum(length0, 1e-12))
    turned = (cosine < 0.5) | (np.abs(length0 - rest) > SHAKE_STRAIN * rest)
    ex, ey, ez = np.where(turned, dx, ex), np.where(turned, dy, ey), np.where(turned, dz, ez)
    length0 = np.where(turned, length, length0)
    act &= (length0 > 1e-12) & (w_i + w_j + alpha > 0.0)
    inv = np.where(act, 1.0 / np.maximum(length0, 1e-12), 0.0)
    ex, ey, ez = ex * inv, ey * inv, ez * inv
    cons = np.where(act, length - rest, 0.0)
    lam[~act] = 0.0
    diag = np.where(act, w_i + w_j + alpha, 1.0)
    n = len(x)

    def moves(v):
        # W N v: the particle moves that multipliers v make, per axis
        y = np.zeros((3, n))
        yx, yy, yz = y
        for c in range(len(colour_offsets) - 1):
            a, b = colour_offsets[c], colour_offsets[c + 1]
            ii, jj = i[a:b], j[a:b]
            si, sj = v[a:b] * w_i[a:b], v[a:b] * w_j[a:b]
            for p, d in ((yx, ex[a:b]), (yy, ey[a:b]), (yz, ez[a:b])):
                p[ii] -= si * d
                p[jj] += sj * d
        return y

    def product(v):
        yx, yy, yz = moves(v)
        q = (yx[j] - yx[i]) * ex + (yy[j] - yy[i]) * ey + (yz[j] - yz[i]) * ez + alpha * v
        return np.where(act, q, 0.0)

    r = np.where(act, -cons - product(lam), 0.0)
    worst = float(np.max(np.abs(r), initial=0.0))
    tol = max(reduction * worst, floor)
    z = r / diag
    p = z.copy()
    rz = _sum_in_order(r * z)
    it = 0
    while it < max_iterations and worst > tol:
        q = product(p)
        pq = _sum_in_order(p * q)
        if not pq > 0.0:
            break
        step = rz / pq
        lam += step * p
        r -= step * q
        worst = float(np.max(np.abs(r), initial=0.0))
        z = r / diag
        rz_next = _sum_in_order(r * z)
        p = z + (rz_next / rz) * p
        rz = rz_next
        it += 1
    if m:
        yx, yy, yz = moves(lam)
        x[:, 0] += yx
        x[:, 1] += yy
        x[:, 2] += yz
    return it


# The take-back of a cloth's turn (solver/turn.py): sums over blocks of particles, and the turn.
# Columns of a block's sums: 0-2 sum m r x (x - ref), 3 sum m, 4-6 sum m r, 7-12 sum m r r^T
# (xx, yy, zz, xy, xz, yz), 13-15 sum m (x - ref); r = x_start - ref, m the particle's mass,
# over the block's free particles (mass > 0).
TURN_SUMS = 16
# A cloth gathered on a line has no inertia about it: its inertia gets this times its trace more
# on the diagonal (no turn about that line, nor a division by zero).
TURN_REGULAR = 1e-9


def _turn_sums(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out):
    """Each block's sums (see TURN_SUMS; full False: columns 0-2 and 13-15 alone, the rest left)
    into out (blocks, 16): block k is the particles block_lo[k]:block_hi[k] of group
    block_group[k] (-1: none, left), r measured from ref (groups, 3). Added particle by particle
    in order (as numba's loop)."""
    for k in range(len(block_lo)):
        lo, hi, g = block_lo[k], block_hi[k], block_group[k]
        if g < 0:
            continue
        free = mass[lo:hi] > 0.0
        m = mass[lo:hi][free]
        rx, ry, rz = (x_start[lo:hi, d][free] - ref[g, d] for d in range(3))
        yx, yy, yz = (x[lo:hi, d][free] - ref[g, d] for d in range(3))
        cols = {0: m * (ry * yz - rz * yy), 1: m * (rz * yx - rx * yz), 2: m * (rx * yy - ry * yx),
                13: m * yx, 14: m * yy, 15: m * yz}
        if full:
            cols.update({3: m, 4: m * rx, 5: m * ry, 6: m * rz, 7: m * rx * rx, 8: m * ry * ry, 9: m * rz * rz,
                         10: m * rx * ry, 11: m * rx * rz, 12: m * ry * rz})
        for c, col in cols.items():
            out[k, c] = _sum_in_order(col)


def turn_back(x, x_start, mass, theta, centre, block_lo, block_hi, block_group):
    """x += theta x (x_start - centre) for the free particles (mass > 0) of each block, by its
    group's theta and centre (groups, 3): a small turn about the centre, in place. Blocks of
    group -1, and groups of theta 0, are left."""
    for k in range(len(block_lo)):
        lo, hi, g = block_lo[k], block_hi[k], block_group[k]
        if g < 0:
            continue
        tx, ty, tz = theta[g]
        if tx == 0.0 and ty == 0.0 and tz == 0.0:
            continue  # (as numba's: adding zeros changes no position but -0.0)
        free = np.flatnonzero(mass[lo:hi] > 0.0) + lo
        rx, ry, rz = (x_start[free, d] - centre[g, d] for d in range(3))
        x[free, 0] += ty * rz - tz * ry
        x[free, 1] += tz * rx - tx * rz
        x[free, 2] += tx * ry - ty * rx


def verlet_turn(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, first, ref, block_lo,
                block_hi, block_group, out):
    """The last substep's turn made (turn_back: theta about centre, x_prev its start), then
    verlet_integrate, then _turn_sums (full) into out, about ref (written: each group's particle
    ``first`` (groups,) at the new start), over blocks that cover every particle (group -1:
    Verlet alone). theta is cleared."""
    for g in range(len(first)):
        f = first[g]
        tx, ty, tz = theta[g]
        ref[g] = x[f]
        if not (tx == 0.0 and ty == 0.0 and tz == 0.0):
            rx, ry, rz = x_prev[f, 0] - centre[g, 0], x_prev[f, 1] - centre[g, 1], x_prev[f, 2] - centre[g, 2]
            ref[g, 0] += ty * rz - tz * ry
            ref[g, 1] += tz * rx - tx * rz
            ref[g, 2] += tx * ry - ty * rx
    turn_back(x, x_prev, mass, theta, centre, block_lo, block_hi, block_group)
    verlet_integrate(x, x_prev, movable, accel, decay, h, drag_w, air_velocity)
    theta[...] = 0.0
    _turn_sums(x, x_prev, mass, ref, block_lo, block_hi, block_group, True, out)


def _pin_shares(x, x_start, lam, stick, i, j, at, sign, chunk_lo, chunk_hi, chunk_group, ref, partial, out):
    """The impulses the pins took from their sticks, per group into out (groups, 10), written:
    0-2 sum J, 3 sum |J|, 4-6 sum r x J, 7-9 sum |J| r, with J = sign * lam * the unit
    direction i -> j now and r = x_start[at] - ref[group]; the sticks in chunks
    chunk_lo[k]:chunk_hi[k] of group chunk_group[k] (each chunk's sums into partial (chunks,
    10), stick by stick in order, then added chunk by chunk, as numba's loops); lam is the
    substep's (it starts it at 0); sticks of lam 0 are left out."""
    out[...] = 0.0
    dl = lam[stick]
    for k in range(len(chunk_lo)):
        on = np.arange(chunk_lo[k], chunk_hi[k])
        on = on[dl[on] != 0.0]
        g = chunk_group[k]
        ii, jj, pa = i[on], j[on], at[on]
        dx, dy, dz = (x[jj, d] - x[ii, d] for d in range(3))
        inv = 1.0 / np.maximum(np.sqrt(dx * dx + dy * dy + dz * dz), 1e-12)
        f = sign[on] * dl[on] * inv
        jx, jy, jz = f * dx, f * dy, f * dz
        size = np.sqrt(jx * jx + jy * jy + jz * jz)
        rx, ry, rz = (x_start[pa, d] - ref[g, d] for d in range(3))
        cols = [jx, jy, jz, size, ry * jz - rz * jy, rz * jx - rx * jz, rx * jy - ry * jx, size * rx, size * ry,
                size * rz]
        for c, col in enumerate(cols):
            partial[k, c] = _sum_in_order(col)
    for k in range(len(chunk_lo)):
        out[chunk_group[k]] += partial[k]


def turn_finish(x, x_start, mass, lam, pin_stick, pin_i, pin_j, pin_at, pin_sign, chunk_lo, chunk_hi,
                chunk_group, ref, goals, block_lo, block_hi, block_group, before, after, partial, pins, theta, centre):
    """After a substep's iterations: each group's turn to take back, into theta and centre
    (groups, 3). The angular impulse L of its free particles' moves since ``before`` (_turn_sums
    after verlet_turn; after: scratch of its shape), less goals (groups, 6: what goals moved,
    angular then linear), plus what its pins took (_pin_shares into pins (groups, 10); what the
    free particles gained and the pins' sticks do not account for, at their size-weighted
    place; partial: its scratch); theta = -I^-1 L, I the inertia about the free particles' centre at the start."""
    _turn_sums(x, x_start, mass, ref, block_lo, block_hi, block_group, False, after)
    _pin_shares(x, x_start, lam, pin_stick, pin_i, pin_j, pin_at, pin_sign, chunk_lo, chunk_hi, chunk_group, ref,
               partial, pins)
    count = len(theta)
    s = np.zeros((count, TURN_SUMS))
    for k in range(len(block_lo)):
        g = block_group[k]
        if g >= 0:
            s[g, 0:3] += after[k, 0:3] - before[k, 0:3]
            s[g, 13:16] += after[k, 13:16] - before[k, 13:16]
            s[g, 3:13] += before[k, 3:13]
    lx, ly, lz = (s[:, d] - goals[:, d] + pins[:, 4 + d] for d in range(3))
    # What the pins' sticks miss: -(the free particles' gain) - their sum, at their lever.
    has = pins[:, 3] > 0.0
    size = np.where(has, pins[:, 3], 1.0)
    mx, my, mz = (np.where(has, -(s[:, 13 + d] - goals[:, 3 + d]) - pins[:, d], 0.0) for d in range(3))
    ax, ay, az = (pins[:, 7 + d] / size for d in range(3))
    lx = lx + (ay * mz - az * my)
    ly = ly + (az * mx - ax * mz)
    lz = lz + (ax * my - ay * mx)
    mass_sum = s[:, 3]
    total = np.where(mass_sum > 0.0, mass_sum, 1.0)
    dx, dy, dz = s[:, 4] / total, s[:, 5] / total, s[:, 6] / total
    xx = s[:, 7] - mass_sum * dx * dx
    yy = s[:, 8] - mass_sum * dy * dy
    zz = s[:, 9] - mass_sum * dz * dz
    xy = s[:, 10] - mass_sum * dx * dy
    xz = s[:, 11] - mass_sum * dx * dz
    yz = s[:, 12] - mass_sum * dy * dz
    a00, a11, a22 = yy + zz, xx + zz, xx + yy
    reg = TURN_REGULAR * (a00 + a11 + a22)
    a00, a11, a22 = a00 + reg, a11 + reg, a22 + reg
    a01, a02, a12 = -xy, -xz, -yz
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c11 = a00 * a22 - a02 * a02
    c12 = a01 * a02 - a00 * a12
    c22 = a00 * a11 - a01 * a01
    det = a00 * c00 + a01 * c01 + a02 * c02
    inv = np.where(det > 0.0, 1.0 / np.where(det > 0.0, det, 1.0), 0.0)
    theta[:, 0] = -(c00 * lx + c01 * ly + c02 * lz) * inv
    theta[:, 1] = -(c01 * lx + c11 * ly + c12 * lz) * inv
    theta[:, 2] = -(c02 * lx + c12 * ly + c22 * lz) * inv
    centre[:, 0] = ref[:, 0] + dx
    centre[:, 1] = ref[:, 1] + dy
    centre[:, 2] = ref[:, 2] + dz
