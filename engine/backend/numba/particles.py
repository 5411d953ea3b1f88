"""Particle kernels compiled with numba: the functions of ``backend/numpy/particles.py`` with the
same arguments and, per item, the same arithmetic in the same order (so the same numbers).

A colour's sticks share no movable particle, so projecting them one after another (or, for a big
colour, on all cores at once) equals numpy's projecting them at once: the same bits.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

JIT = dict(cache=True, nogil=True, error_model="numpy")
# Cloths with a colour of at least this many sticks are projected on all cores, colour by colour;
# below it starting the threads costs more than it saves. (Measured on 2 cores, 10 substeps: a
# 33 x 33 cloth, colours of about 500 sticks, 1.96 -> 1.72 ms a frame; 65 x 65 7.2 -> 5.1; a
# 17 x 17 cloth at a threshold of 100, 0.98 -> 1.18.)
PARALLEL_STICKS = 500
# numpy's SHAKE_STRAIN (see its project_sticks), written here so that numba's cache, which knows
# only this file, compiles it in; the kernel tests check that both agree.
SHAKE_STRAIN = 0.01
# numpy's CHAIN_PIVOT and CHAIN_DAMPING (see its _solve_chain_group), likewise.
CHAIN_PIVOT = 1e-12
CHAIN_DAMPING = 1e-2
# numpy's TRANSVERSE_SLACK (see its _solve_chain_group), likewise.
TRANSVERSE_SLACK = 0.1
# numpy's HINGE_PIVOT and HINGE_DAMPING (see its project_hinges), likewise.
HINGE_PIVOT = 1e-9
HINGE_DAMPING = 1e-6


# Particles are moved on all cores from this many on (each its own: the same bits).
PARALLEL_PARTICLES = 20000


def verlet_integrate(x, x_prev, movable, accel, decay, h, drag_w, air_velocity):
    """The numpy reference's Verlet step, particle by particle; from PARALLEL_PARTICLES particles
    on, in a chunk per thread on all cores (250,000 particles: 0.6 ms a substep serially)."""
    n = x.shape[0]
    threads = numba.get_num_threads() if n >= PARALLEL_PARTICLES else 1
    if threads > 1:
        _verlet_parallel(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, threads)
    else:
        _verlet_range(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, 0, n)


@njit(parallel=True, **JIT)
def _verlet_parallel(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, chunks):
    n = x.shape[0]
    for k in prange(chunks):
        _verlet_range(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, n * k // chunks,
                      n * (k + 1) // chunks)


@njit(**JIT)
def _verlet_range(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, lo, hi):
    """The step of particles lo:hi (called once per chunk: a helper called per particle made the
    step 2.5 times slower, numba passing each array by its struct)."""
    has_drag = drag_w.shape[0] > 0
    hh = h * h
    for p in range(lo, hi):
        d0 = x[p, 0] - x_prev[p, 0]
        d1 = x[p, 1] - x_prev[p, 1]
        d2 = x[p, 2] - x_prev[p, 2]
        if has_drag:
            a0 = air_velocity[p, 0] * h
            a1 = air_velocity[p, 1] * h
            a2 = air_velocity[p, 2] * h
            r0 = d0 - a0
            r1 = d1 - a1
            r2 = d2 - a2
            speed = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2) / h
            k = 1.0 + drag_w[p] * speed * h
            d0 = r0 / k + a0
            d1 = r1 / k + a1
            d2 = r2 / k + a2
        m = movable[p]
        d0 = (d0 * decay + accel[p, 0] * hh) * m
        d1 = (d1 * decay + accel[p, 1] * hh) * m
        d2 = (d2 * decay + accel[p, 2] * hh) * m
        x_prev[p, 0] = x[p, 0]
        x_prev[p, 1] = x[p, 1]
        x_prev[p, 2] = x[p, 2]
        x[p, 0] += d0
        x[p, 1] += d1
        x[p, 2] += d2


# Chains (see particles/chains.py): the scratch columns per position of a chain (a stick's, or
# for the transverse filter a particle's: one row more).
_E, _L0, _WI, _WJ, _CP, _DP = 0, 3, 4, 5, 6, 7
_PAR, _Y, _FC, _U = 8, 11, 14, 15
CHAIN_SCRATCH = 18


@njit(**JIT)
def _solve_chain(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, chain_sticks, chain_flip, a, b,
                 sqrt_approximation, shake, damped, transverse):
    """One chain's sticks chain_sticks[a:b] solved together: the numpy reference's
    _solve_chain_group for one chain, position by position, in the same arithmetic. One pass
    down the chain builds each row and eliminates the one before it (its coupling to the next
    known only then); one pass back solves, one more moves (or the filter does). Its scratch is its own (a few kB, in
    cache; one array for all chains, 128 bytes a stick, made a 250,000-vertex cloth a tenth
    slower). transverse: a chain taut beyond TRANSVERSE_SLACK has its moves filtered
    (_filter_transverse)."""
    work = np.empty((b - a + 1, CHAIN_SCRATCH))
    # the row before: its unit move direction, its gradient, w_q, whether it takes part, pivot
    pux = puy = puz = 0.0
    pgx = pgy = pgz = 0.0
    p_wj = 0.0
    p_act = False
    p_den = 1.0
    for t in range(a, b):
        r = t - a
        s = chain_sticks[t]
        if chain_flip[t]:
            pi = j[s]
            pj = i[s]
            wi = w_j[s]
            wj = w_i[s]
        else:
            pi = i[s]
            pj = j[s]
            wi = w_i[s]
            wj = w_j[s]
        dx = x[pj, 0] - x[pi, 0]
        dy = x[pj, 1] - x[pi, 1]
        dz = x[pj, 2] - x[pi, 2]
        dd = dx * dx + dy * dy + dz * dz
        L = rest[s]
        if sqrt_approximation:
            length = (dd + L * L) / (2.0 * L)
        else:
            length = math.sqrt(dd)
        c = length - L
        k = kind[s]
        ex = dx
        ey = dy
        ez = dz
        length0 = length
        cosine = 1.0
        if shake:
            fx = x0[pj, 0] - x0[pi, 0]
            fy = x0[pj, 1] - x0[pi, 1]
            fz = x0[pj, 2] - x0[pi, 2]
            ff = fx * fx + fy * fy + fz * fz
            if sqrt_approximation:
                f_len = (ff + L * L) / (2.0 * L)
            else:
                f_len = math.sqrt(ff)
            f_cos = (dx * fx + dy * fy + dz * fz) / (max(length, 1e-12) * max(f_len, 1e-12))
            if f_cos >= 0.5 and abs(f_len - L) <= SHAKE_STRAIN * L:
                ex = fx
                ey = fy
                ez = fz
                length0 = f_len
                cosine = f_cos
        l0 = max(length0, 1e-12)
        inv_g = 1.0 / max(length, 1e-12)
        gx = dx * inv_g
        gy = dy * inv_g
        gz = dz * inv_g
        inv_0 = 1.0 / l0
        ux = ex * inv_0
        uy = ey * inv_0
        uz = ez * inv_0
        work[r, _E] = ex
        work[r, _E + 1] = ey
        work[r, _E + 2] = ez
        work[r, _U] = ux
        work[r, _U + 1] = uy
        work[r, _U + 2] = uz
        work[r, _L0] = l0
        work[r, _WI] = wi
        work[r, _WJ] = wj
        al = alpha[s]
        act = not ((k == 1 and c > 0.0) or (k == 2 and c < 0.0) or k == 3)
        if act:
            d = (wi + wj) * cosine + al
            if damped:
                d = d + CHAIN_DAMPING * (wi + wj)
            rhs = -c - al * lam[s]
        else:
            d = 1.0
            rhs = 0.0
        if t == a:
            den = d
            work[r, _DP] = rhs / den
        else:
            # the row before, coupled to this one's move: now its elimination can finish
            up = -p_wj * (pgx * ux + pgy * uy + pgz * uz) if p_act else 0.0
            work[r - 1, _CP] = up / p_den
            low = -wi * (gx * pux + gy * puy + gz * puz) if act else 0.0
            den = d - low * work[r - 1, _CP]
            if not den > CHAIN_PIVOT * d:
                den = d
            work[r, _DP] = (rhs - low * work[r - 1, _DP]) / den
        pux = ux
        puy = uy
        puz = uz
        pgx = gx
        pgy = gy
        pgz = gz
        p_wj = wj
        p_act = act
        p_den = den
    dlam = 0.0
    taut = False
    filtered = transverse and b - a > 1
    for t in range(b - 1, a - 1, -1):
        r = t - a
        if t == b - 1:
            dlam = work[r, _DP]
        else:
            dlam = work[r, _DP] - work[r, _CP] * dlam
        s = chain_sticks[t]
        lam[s] += dlam
        work[r, _DP] = dlam
        if filtered and not taut:
            taut = max(-lam[s], 0.0) * max(work[r, _WI], work[r, _WJ]) > TRANSVERSE_SLACK * rest[s]
    if taut:
        _filter_transverse(x, i, j, rest, lam, chain_sticks, chain_flip, a, b, work)
        return
    for t in range(b - 1, a - 1, -1):
        r = t - a
        s = chain_sticks[t]
        if chain_flip[t]:
            pi = j[s]
            pj = i[s]
        else:
            pi = i[s]
            pj = j[s]
        sc = work[r, _DP] / work[r, _L0]
        si = sc * work[r, _WI]
        sj = sc * work[r, _WJ]
        x[pi, 0] -= si * work[r, _E]
        x[pi, 1] -= si * work[r, _E + 1]
        x[pi, 2] -= si * work[r, _E + 2]
        x[pj, 0] += sj * work[r, _E]
        x[pj, 1] += sj * work[r, _E + 1]
        x[pj, 2] += sj * work[r, _E + 2]


@njit(**JIT)
def _filter_transverse(x, i, j, rest, lam, chain_sticks, chain_flip, a, b, work):
    """The numpy reference's transverse filter of one taut chain (see its _filter_transverse),
    particle by particle in the same arithmetic: each particle's move (from _DP), split along and
    across its tangent; across, solved through (I + W K) y = move, K the chain's Laplacian
    weighted by each stick's tension beyond TRANSVERSE_SLACK (one pass down the chain
    eliminating, one back solving and moving)."""
    n = b - a
    # carried from the stick before the particle: its unit direction, weight and move of its
    # second end
    lx = ly = lz = 0.0
    cl = 0.0
    qx = qy = qz = 0.0
    for k in range(n + 1):
        tx = lx
        ty = ly
        tz = lz
        if k > 0:
            w = work[k - 1, _WJ]
        if k < n:
            lx = work[k, _U]
            ly = work[k, _U + 1]
            lz = work[k, _U + 2]
            tx += lx
            ty += ly
            tz += lz
            w = work[k, _WI]
            s = chain_sticks[a + k]
            w_max = max(w, work[k, _WJ])
            cr = (max(-lam[s], 0.0) * w_max - TRANSVERSE_SLACK * rest[s]) / (rest[s] * w_max) if w_max > 0.0 else 0.0
            if not cr > 0.0:
                cr = 0.0
            sc = work[k, _DP] / work[k, _L0]
            si = sc * w
            sj = sc * work[k, _WJ]
            mx = 0.0 - si * work[k, _E]
            my = 0.0 - si * work[k, _E + 1]
            mz = 0.0 - si * work[k, _E + 2]
        else:
            cr = 0.0
            mx = my = mz = 0.0
        if k > 0:
            mx += qx
            my += qy
            mz += qz
        if k < n:
            qx = sj * work[k, _E]
            qy = sj * work[k, _E + 1]
            qz = sj * work[k, _E + 2]
        tt = tx * tx + ty * ty + tz * tz
        along = (mx * tx + my * ty + mz * tz) / tt if tt > 1e-24 else 0.0
        px = along * tx
        py = along * ty
        pz = along * tz
        work[k, _PAR] = px
        work[k, _PAR + 1] = py
        work[k, _PAR + 2] = pz
        low = -w * cl
        den = 1.0 + w * (cl + cr)
        if k > 0:
            den = den - low * work[k - 1, _FC]
        inv = 1.0 / den
        work[k, _FC] = -w * cr * inv
        rx = mx - px
        ry = my - py
        rz = mz - pz
        if k > 0:
            rx = rx - low * work[k - 1, _Y]
            ry = ry - low * work[k - 1, _Y + 1]
            rz = rz - low * work[k - 1, _Y + 2]
        work[k, _Y] = rx * inv
        work[k, _Y + 1] = ry * inv
        work[k, _Y + 2] = rz * inv
        cl = cr
    for k in range(n, -1, -1):
        if k < n:
            t = a + k
            s = chain_sticks[t]
            p = j[s] if chain_flip[t] else i[s]
            for d in range(3):
                work[k, _Y + d] -= work[k, _FC] * work[k + 1, _Y + d]
        else:
            t = b - 1
            s = chain_sticks[t]
            p = i[s] if chain_flip[t] else j[s]
        for d in range(3):
            x[p, d] += work[k, _PAR + d] + work[k, _Y + d]


@njit(parallel=True, **JIT)
def _chains_in_parallel(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, chain_sticks, chain_flip, chain_offsets,
                        chain_flags, c0, c1, sqrt_approximation, shake, blocks):
    # Each thread a run of chains with an equal share of the group's sticks (prange alone splits
    # the chains evenly by count, and a cloth's diagonals run from 1 stick to hundreds).
    first = chain_offsets[c0]
    total = chain_offsets[c1] - first
    for t in prange(blocks):
        lo = c0 + np.searchsorted(chain_offsets[c0:c1], first + (total * t) // blocks)
        hi = c0 + np.searchsorted(chain_offsets[c0:c1], first + (total * (t + 1)) // blocks)
        for c in range(lo, hi):
            _solve_chain(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, chain_sticks, chain_flip, chain_offsets[c],
                         chain_offsets[c + 1], sqrt_approximation, shake and (chain_flags[c] & 1) != 0,
                         (chain_flags[c] & 2) != 0, shake)


@njit(**JIT)
def _project_sticks_serial(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, colour_offsets, passes,
                           sqrt_approximation, shake, chain_sticks, chain_flip, chain_offsets, chain_flags,
                           group_offsets):
    for row in range(passes.shape[0]):
        a = colour_offsets[passes[row, 0]]
        b = colour_offsets[passes[row, 1]]
        if passes.shape[1] > 4 and passes[row, 4] > passes[row, 3]:
            for _ in range(passes[row, 2]):
                for g in range(passes[row, 3], passes[row, 4]):
                    for c in range(group_offsets[g], group_offsets[g + 1]):
                        _solve_chain(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, chain_sticks, chain_flip,
                                     chain_offsets[c], chain_offsets[c + 1], sqrt_approximation,
                                     shake and (chain_flags[c] & 1) != 0, (chain_flags[c] & 2) != 0, shake)
            continue
        for _ in range(passes[row, 2]):
            for s in range(a, b):
                pi = i[s]
                pj = j[s]
                dx = x[pj, 0] - x[pi, 0]
                dy = x[pj, 1] - x[pi, 1]
                dz = x[pj, 2] - x[pi, 2]
                dd = dx * dx + dy * dy + dz * dz
                L = rest[s]
                if sqrt_approximation:
                    length = (dd + L * L) / (2.0 * L)
                else:
                    length = math.sqrt(dd)
                c = length - L
                k = kind[s]
                if (k == 1 and c > 0.0) or (k == 2 and c < 0.0) or k == 3:
                    continue
                ex = dx
                ey = dy
                ez = dz
                length0 = length
                cosine = 1.0
                if shake:
                    fx = x0[pj, 0] - x0[pi, 0]
                    fy = x0[pj, 1] - x0[pi, 1]
                    fz = x0[pj, 2] - x0[pi, 2]
                    ff = fx * fx + fy * fy + fz * fz
                    if sqrt_approximation:
                        f_len = (ff + L * L) / (2.0 * L)
                    else:
                        f_len = math.sqrt(ff)
                    f_cos = (dx * fx + dy * fy + dz * fz) / (max(length, 1e-12) * max(f_len, 1e-12))
                    if f_cos >= 0.5 and abs(f_len - L) <= SHAKE_STRAIN * L:
                        ex = fx
                        ey = fy
                        ez = fz
                        length0 = f_len
                        cosine = f_cos
                al = alpha[s]
                ws = (w_i[s] + w_j[s]) * cosine + al
                dlam = (-c - al * lam[s]) / ws
                lam[s] += dlam
                sc = dlam / max(length0, 1e-12)
                si = sc * w_i[s]
                sj = sc * w_j[s]
                x[pi, 0] -= si * ex
                x[pi, 1] -= si * ey
                x[pi, 2] -= si * ez
                x[pj, 0] += sj * ex
                x[pj, 1] += sj * ey
                x[pj, 2] += sj * ez


@njit(**JIT)
def _project_sticks_parallel(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, colour_offsets, passes,
                             sqrt_approximation, shake, chain_sticks, chain_flip, chain_offsets, chain_flags,
                             group_offsets, threads):
    """The serial sweep's passes with each colour's sticks (or each group's chains) on all cores
    (the same arithmetic per stick; the threads stay up from one colour to the next)."""
    for row in range(passes.shape[0]):
        if passes.shape[1] > 4 and passes[row, 4] > passes[row, 3]:
            for _ in range(passes[row, 2]):
                for g in range(passes[row, 3], passes[row, 4]):
                    _chains_in_parallel(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, chain_sticks, chain_flip,
                                        chain_offsets, chain_flags, group_offsets[g], group_offsets[g + 1],
                                        sqrt_approximation, shake, threads)
            continue
        for _ in range(passes[row, 2]):
            for colour in range(passes[row, 0], passes[row, 1]):
                _colour_in_parallel(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, colour_offsets[colour],
                                    colour_offsets[colour + 1], sqrt_approximation, shake)


@njit(parallel=True, **JIT)
def _colour_in_parallel(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, a, b, sqrt_approximation, shake):
    # The serial sweep's stick body, repeated: a helper called per stick, inlined or not, made
    # the sweeps three to four times slower (numba passes each array by its struct).
    for s in prange(a, b):
        pi = i[s]
        pj = j[s]
        dx = x[pj, 0] - x[pi, 0]
        dy = x[pj, 1] - x[pi, 1]
        dz = x[pj, 2] - x[pi, 2]
        dd = dx * dx + dy * dy + dz * dz
        L = rest[s]
        if sqrt_approximation:
            length = (dd + L * L) / (2.0 * L)
        else:
            length = math.sqrt(dd)
        c = length - L
        k = kind[s]
        if (k == 1 and c > 0.0) or (k == 2 and c < 0.0) or k == 3:
            continue
        ex = dx
        ey = dy
        ez = dz
        length0 = length
        cosine = 1.0
        if shake:
            fx = x0[pj, 0] - x0[pi, 0]
            fy = x0[pj, 1] - x0[pi, 1]
            fz = x0[pj, 2] - x0[pi, 2]
            ff = fx * fx + fy * fy + fz * fz
            if sqrt_approximation:
                f_len = (ff + L * L) / (2.0 * L)
            else:
                f_len = math.sqrt(ff)
            f_cos = (dx * fx + dy * fy + dz * fz) / (max(length, 1e-12) * max(f_len, 1e-12))
            if f_cos >= 0.5 and abs(f_len - L) <= SHAKE_STRAIN * L:
                ex = fx
                ey = fy
                ez = fz
                length0 = f_len
                cosine = f_cos
        al = alpha[s]
        ws = (w_i[s] + w_j[s]) * cosine + al
        dlam = (-c - al * lam[s]) / ws
        lam[s] += dlam
        sc = dlam / max(length0, 1e-12)
        si = sc * w_i[s]
        sj = sc * w_j[s]
        x[pi, 0] -= si * ex
        x[pi, 1] -= si * ey
        x[pi, 2] -= si * ez
        x[pj, 0] += sj * ex
        x[pj, 1] += sj * ey
        x[pj, 2] += sj * ez


def project_sticks(x, i, j, w_i, w_j, rest, alpha, kind, lam, colour_offsets, passes, sqrt_approximation,
                   x_start=None, chains=None):
    """The stick passes (see the numpy reference): serial while every colour is small; a cloth
    with a colour of PARALLEL_STICKS sticks or more has each colour projected on all cores. A
    colour's sticks share no movable particle, so the order (or the threads) cannot change the
    bits. (The choice is made here: a compiled sweep that merely could start the threads made
    small cloths three times slower.) x_start: as numpy's."""
    shake = x_start is not None and x_start is not x
    x0 = x if x_start is None else x_start
    if chains is None:
        chains = _no_chains()
    threads = numba.get_num_threads()
    if len(colour_offsets) > 1 and int(np.max(np.diff(colour_offsets))) >= PARALLEL_STICKS \
            and threads > 1:  # (one thread, as on the farm: the serial sweep is faster)
        _project_sticks_parallel(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, colour_offsets, passes,
                                 sqrt_approximation, shake, *chains, threads)
    else:
        _project_sticks_serial(x, x0, i, j, w_i, w_j, rest, alpha, kind, lam, colour_offsets, passes,
                               sqrt_approximation, shake, *chains)


def _no_chains():
    """The chains argument of project_sticks for passes that have none."""
    z = np.zeros(0, np.int64)
    return z, np.zeros(0, np.int8), np.zeros(1, np.int64), np.zeros(0, np.int8), np.zeros(1, np.int64)


@njit(**JIT)
def project_goals(x, index, target, w, alpha, lam):
    for g in range(index.shape[0]):
        p = index[g]
        ws = w[g] + alpha[g]
        for d in range(3):
            c = x[p, d] - target[g, d]
            dlam = (-c - alpha[g] * lam[g, d]) / ws
            lam[g, d] += dlam
            x[p, d] += w[g] * dlam


@njit(**JIT)
def _hinge_factor(alpha, on, coupling, chain_hinges, a, b, d, low):
    """The LDL^T factors of the chain of places a..b - 1 (numpy's prepare_hinges' matrix):
    d[a + t] and low[a + t, j], the factor's entry (t, t - j)."""
    cnt = b - a
    band = coupling.shape[1] - 1
    for t in range(cnt):
        h = chain_hinges[a + t]
        live_t = 1.0 if on[h] != 0 else 0.0
        diag = coupling[a + t, 0] * (1.0 + HINGE_DAMPING) + alpha[h] if live_t != 0.0 else 1.0
        dt = diag
        for j in range(1, min(t, band) + 1):
            dt = dt - low[a + t, j] * low[a + t, j] * d[a + t - j]
        if not dt > HINGE_PIVOT * diag:
            dt = diag
        d[a + t] = dt
        for i in range(1, band + 1):
            if t + i >= cnt:
                break
            live_i = 1.0 if on[chain_hinges[a + t + i]] != 0 else 0.0
            entry = coupling[a + t, i] * live_t * live_i
            for j in range(1, min(t, band - i) + 1):
                entry = entry - low[a + t + i, i + j] * low[a + t, j] * d[a + t - j]
            low[a + t + i, i] = entry / dt


@njit(parallel=True, **JIT)
def _hinge_factors(alpha, on, coupling, chain_hinges, chain_offsets, d, low):
    for c in prange(chain_offsets.shape[0] - 1):
        _hinge_factor(alpha, on, coupling, chain_hinges, chain_offsets[c], chain_offsets[c + 1], d, low)


def prepare_hinges(alpha, on, coupling, chain_hinges, chain_offsets, group_offsets):
    """numpy's prepare_hinges: here the chains' LDL^T factors, (d (P,), low (P, HINGE_BAND + 1))."""
    d = np.zeros(len(chain_hinges))
    low = np.zeros((len(chain_hinges), coupling.shape[1]))
    if len(chain_hinges):
        _hinge_factors(alpha, on, coupling, chain_hinges, chain_offsets, d, low)
    return d, low


@njit(**JIT)
def _hinge_chain(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low, a, b):
    cnt = b - a
    width = index.shape[1]
    band = low.shape[1] - 1
    y = np.zeros((cnt, 3))
    for t in range(cnt):
        h = chain_hinges[a + t]
        r0 = 0.0
        r1 = 0.0
        r2 = 0.0
        if on[h] != 0:
            k = weight[h, 0]
            p0 = index[h, 0]
            v0 = k * x[p0, 0]
            v1 = k * x[p0, 1]
            v2 = k * x[p0, 2]
            for m in range(1, width):
                p = index[h, m]
                k = weight[h, m]
                v0 = v0 + k * x[p, 0]
                v1 = v1 + k * x[p, 1]
                v2 = v2 + k * x[p, 2]
            r0 = -(v0 - target[h, 0]) - alpha[h] * lam[h, 0]
            r1 = -(v1 - target[h, 1]) - alpha[h] * lam[h, 1]
            r2 = -(v2 - target[h, 2]) - alpha[h] * lam[h, 2]
        for j in range(1, min(t, band) + 1):
            r0 = r0 - low[a + t, j] * y[t - j, 0]
            r1 = r1 - low[a + t, j] * y[t - j, 1]
            r2 = r2 - low[a + t, j] * y[t - j, 2]
        y[t, 0] = r0
        y[t, 1] = r1
        y[t, 2] = r2
    dlam = np.zeros((cnt, 3))
    for t in range(cnt - 1, -1, -1):
        for c in range(3):
            st = y[t, c] / d[a + t]
            for i in range(1, band + 1):
                if t + i >= cnt:
                    break
                st = st - low[a + t + i, i] * dlam[t + i, c]
            dlam[t, c] = st
    for t in range(cnt):
        h = chain_hinges[a + t]
        for c in range(3):
            lam[h, c] += dlam[t, c]
        for m in range(width):
            p = index[h, m]
            f = w[h, m] * weight[h, m]
            x[p, 0] += f * dlam[t, 0]
            x[p, 1] += f * dlam[t, 1]
            x[p, 2] += f * dlam[t, 2]


@njit(parallel=True, **JIT)
def _hinge_group_parallel(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low, chain_offsets, c0, c1):
    for c in prange(c0, c1):
        _hinge_chain(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low, chain_offsets[c],
                     chain_offsets[c + 1])


@njit(**JIT)
def _hinge_groups_serial(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low, chain_offsets,
                         group_offsets, first, last):
    for g in range(first, last):
        for c in range(group_offsets[g], group_offsets[g + 1]):
            _hinge_chain(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low, chain_offsets[c],
                         chain_offsets[c + 1])


def project_hinges(x, index, weight, w, target, alpha, on, lam, chain_hinges, coupling, chain_offsets,
                   group_offsets, first, last, factors):
    """The numpy reference's hinge chains, chain by chain (a big group's chains on all cores),
    by substitution with ``prepare_hinges``' factors."""
    if last <= first:
        return
    d, low = factors
    sizes = chain_offsets[group_offsets[first + 1:last + 1]] - chain_offsets[group_offsets[first:last]]
    big = sizes >= PARALLEL_STICKS
    if not big.any():
        _hinge_groups_serial(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low, chain_offsets,
                             group_offsets, first, last)
        return
    for g in range(first, last):
        if big[g - first]:
            _hinge_group_parallel(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low,
                                  chain_offsets, group_offsets[g], group_offsets[g + 1])
        else:
            _hinge_groups_serial(x, index, weight, w, target, alpha, on, lam, chain_hinges, d, low,
                                 chain_offsets, group_offsets, g, g + 1)


@njit(**JIT)
def respond_to_contacts(x, x_prev, k, corr, depth, surface_disp, accel, mu, e, h, bounce_speed):
    for c in range(k.shape[0]):
        p = k[c]
        n0 = corr[c, 0] / max(depth[c], 1e-15)
        n1 = corr[c, 1] / max(depth[c], 1e-15)
        n2 = corr[c, 2] / max(depth[c], 1e-15)
        x0, x1, x2 = x[p, 0], x[p, 1], x[p, 2]
        p0, p1, p2 = x_prev[p, 0], x_prev[p, 1], x_prev[p, 2]
        s0, s1, s2 = surface_disp[c, 0], surface_disp[c, 1], surface_disp[c, 2]
        moved_n = (x0 - p0 - s0) * n0 + (x1 - p1 - s1) * n1 + (x2 - p2 - s2) * n2
        v_in = moved_n / h
        x0 += corr[c, 0]
        x1 += corr[c, 1]
        x2 += corr[c, 2]
        bounce = v_in < -bounce_speed and e[c] > 0.0
        target_n = 0.0
        normal_push = depth[c]
        if bounce:
            a_n = accel[c, 0] * n0 + accel[c, 1] * n1 + accel[c, 2] * n2
            dn = moved_n
            eb = e[c]
            z0 = max(-depth[c] - dn, 0.0)
            v0 = dn / h - 0.5 * a_n * h
            tau = min(max(2.0 * z0 / max(-v0 + math.sqrt(max(v0 * v0 - 2.0 * a_n * z0, 0.0)), 1e-15), 0.0), h)
            v_out = -eb * (v0 + a_n * tau)
            rest = h - tau
            z_end = max(v_out * rest + 0.5 * a_n * rest * rest, 0.0)
            x0 += n0 * z_end
            x1 += n1 * z_end
            x2 += n2 * z_end
            target_n = (v_out + a_n * rest - 0.5 * a_n * h) * h
            normal_push = (1.0 + eb) * abs(v0 + a_n * tau) * h
        l0 = x0 - p0 - s0
        l1 = x1 - p1 - s1
        l2 = x2 - p2 - s2
        ln = l0 * n0 + l1 * n1 + l2 * n2
        l0 -= n0 * ln
        l1 -= n1 * ln
        l2 -= n2 * ln
        slip_len = math.sqrt(l0 * l0 + l1 * l1 + l2 * l2)
        limit = mu[c] * normal_push
        keep = 1.0 if slip_len <= limit else limit / max(slip_len, 1e-15)
        x0 -= l0 * keep
        x1 -= l1 * keep
        x2 -= l2 * keep
        rel_n = (x0 - p0 - s0) * n0 + (x1 - p1 - s1) * n1 + (x2 - p2 - s2) * n2
        if not bounce:
            target_n = min(rel_n, 0.0)
        dp = rel_n - target_n
        x[p, 0], x[p, 1], x[p, 2] = x0, x1, x2
        x_prev[p, 0] = p0 + n0 * dp
        x_prev[p, 1] = p1 + n1 * dp
        x_prev[p, 2] = p2 + n2 * dp


@njit(**JIT)
def _stick_moves(v, idx, i, j, w_i, w_j, e, y):
    # W N v into y (3, n) over the sticks idx that take part: the particle moves that
    # multipliers v make (numpy's ``moves``; the others' moves are zeros).
    y[:] = 0.0
    for k in range(idx.shape[0]):
        s = idx[k]
        si = v[s] * w_i[s]
        sj = v[s] * w_j[s]
        pi = i[s]
        pj = j[s]
        for d in range(3):
            y[d, pi] -= si * e[d, s]
            y[d, pj] += sj * e[d, s]


@njit(**JIT)
def _stick_product(v, idx, i, j, e, alpha, y, q):
    for k in range(idx.shape[0]):
        s = idx[k]
        pi = i[s]
        pj = j[s]
        q[s] = (y[0, pj] - y[0, pi]) * e[0, s] + (y[1, pj] - y[1, pi]) * e[1, s] \
            + (y[2, pj] - y[2, pi]) * e[2, s] + alpha[s] * v[s]


@njit(**JIT)
def solve_sticks(x, x_start, i, j, w_i, w_j, rest, alpha, member, lam, colour_offsets, reduction, floor,
                 max_iterations):
    """numpy's solve_sticks (see there): the same conjugate gradients, sums in stick order (the
    sticks that take no part add zeros there, skipped here)."""
    m = i.shape[0]
    n = x.shape[0]
    e = np.zeros((3, m))
    idx = np.empty(m, dtype=np.int64)
    count = 0
    cons = np.zeros(m)
    diag = np.ones(m)
    for s in range(m):
        pi = i[s]
        pj = j[s]
        ex = x_start[pj, 0] - x_start[pi, 0]
        ey = x_start[pj, 1] - x_start[pi, 1]
        ez = x_start[pj, 2] - x_start[pi, 2]
        length0 = math.sqrt(ex * ex + ey * ey + ez * ez)
        dx = x[pj, 0] - x[pi, 0]
        dy = x[pj, 1] - x[pi, 1]
        dz = x[pj, 2] - x[pi, 2]
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        L = rest[s]
        cosine = (dx * ex + dy * ey + dz * ez) / (max(length, 1e-12) * max(length0, 1e-12))
        if cosine < 0.5 or abs(length0 - L) > SHAKE_STRAIN * L:
            ex = dx
            ey = dy
            ez = dz
            length0 = length
        if member[s] and length0 > 1e-12 and w_i[s] + w_j[s] + alpha[s] > 0.0:
            idx[count] = s
            count += 1
            inv = 1.0 / max(length0, 1e-12)
            e[0, s] = ex * inv
            e[1, s] = ey * inv
            e[2, s] = ez * inv
            cons[s] = length - L
            diag[s] = w_i[s] + w_j[s] + alpha[s]
        else:
            lam[s] = 0.0
    idx = idx[:count]
    y = np.empty((3, n))
    q = np.zeros(m)
    _stick_moves(lam, idx, i, j, w_i, w_j, e, y)
    _stick_product(lam, idx, i, j, e, alpha, y, q)
    r = np.zeros(m)
    z = np.zeros(m)
    p = np.zeros(m)
    worst = 0.0
    rz = 0.0
    for k in range(count):
        s = idx[k]
        r[s] = -cons[s] - q[s]
        worst = max(worst, abs(r[s]))
        z[s] = r[s] / diag[s]
        p[s] = z[s]
        rz += r[s] * z[s]
    tol = max(reduction * worst, floor)
    it = 0
    while it < max_iterations and worst > tol:
        _stick_moves(p, idx, i, j, w_i, w_j, e, y)
        _stick_product(p, idx, i, j, e, alpha, y, q)
        pq = 0.0
        for k in range(count):
            s = idx[k]
            pq += p[s] * q[s]
        if not pq > 0.0:
            break
        step = rz / pq
        worst = 0.0
        rz_next = 0.0
        for k in range(count):
            s = idx[k]
            lam[s] += step * p[s]
            r[s] -= step * q[s]
            worst = max(worst, abs(r[s]))
            z[s] = r[s] / diag[s]
            rz_next += r[s] * z[s]
        beta = rz_next / rz
        for k in range(count):
            s = idx[k]
            p[s] = z[s] + beta * p[s]
        rz = rz_next
        it += 1
    if count:
        _stick_moves(lam, idx, i, j, w_i, w_j, e, y)
        for pp in range(n):
            x[pp, 0] += y[0, pp]
            x[pp, 1] += y[1, pp]
            x[pp, 2] += y[2, pp]
    return it


# numpy's TURN_SUMS and TURN_REGULAR (see its _turn_sums).
TURN_SUMS = 16
TURN_REGULAR = 1e-9


def _many(blocks, items) -> bool:
    """Whether blocks (of particles, or pin sticks) go on all cores: several of them, over
    PARALLEL_PARTICLES items or more (read here, at the call: a compiled kernel would keep the
    value it was compiled with)."""
    return len(blocks) > 1 and len(items) >= PARALLEL_PARTICLES


@njit(**JIT)
def _turn_block(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out, k):
    """Block k's sums, as numpy's _turn_sums adds them (particle by particle, in order; in locals:
    kept in the array, each sum was a store a particle)."""
    g = block_group[k]
    if g < 0:
        return
    fx = ref[g, 0]
    fy = ref[g, 1]
    fz = ref[g, 2]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = s9 = s10 = s11 = s12 = s13 = s14 = s15 = 0.0
    for p in range(block_lo[k], block_hi[k]):
        m = mass[p]
        if not m > 0.0:
            continue
        rx = x_start[p, 0] - fx
        ry = x_start[p, 1] - fy
        rz = x_start[p, 2] - fz
        yx = x[p, 0] - fx
        yy = x[p, 1] - fy
        yz = x[p, 2] - fz
        s0 += m * (ry * yz - rz * yy)
        s1 += m * (rz * yx - rx * yz)
        s2 += m * (rx * yy - ry * yx)
        s13 += m * yx
        s14 += m * yy
        s15 += m * yz
        if full:
            s3 += m
            s4 += m * rx
            s5 += m * ry
            s6 += m * rz
            s7 += m * rx * rx
            s8 += m * ry * ry
            s9 += m * rz * rz
            s10 += m * rx * ry
            s11 += m * rx * rz
            s12 += m * ry * rz
    out[k, 0] = s0
    out[k, 1] = s1
    out[k, 2] = s2
    out[k, 13] = s13
    out[k, 14] = s14
    out[k, 15] = s15
    if full:
        out[k, 3] = s3
        out[k, 4] = s4
        out[k, 5] = s5
        out[k, 6] = s6
        out[k, 7] = s7
        out[k, 8] = s8
        out[k, 9] = s9
        out[k, 10] = s10
        out[k, 11] = s11
        out[k, 12] = s12


@njit(parallel=True, **JIT)
def _turn_sums_parallel(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out):
    for k in prange(block_lo.shape[0]):
        _turn_block(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out, k)


@njit(**JIT)
def _turn_sums_serial(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out):
    for k in range(block_lo.shape[0]):
        _turn_block(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out, k)


@njit(**JIT)
def _turn_sums(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out, parallel):
    # Blocks on all cores (each block's sum its own: the same bits).
    if parallel:
        _turn_sums_parallel(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out)
    else:
        _turn_sums_serial(x, x_start, mass, ref, block_lo, block_hi, block_group, full, out)


@njit(**JIT)
def _turn_back_block(x, x_start, mass, theta, centre, block_lo, block_hi, block_group, k):
    g = block_group[k]
    if g < 0:
        return
    tx = theta[g, 0]
    ty = theta[g, 1]
    tz = theta[g, 2]
    if tx == 0.0 and ty == 0.0 and tz == 0.0:
        return
    cx = centre[g, 0]
    cy = centre[g, 1]
    cz = centre[g, 2]
    for p in range(block_lo[k], block_hi[k]):
        if not mass[p] > 0.0:
            continue
        rx = x_start[p, 0] - cx
        ry = x_start[p, 1] - cy
        rz = x_start[p, 2] - cz
        x[p, 0] += ty * rz - tz * ry
        x[p, 1] += tz * rx - tx * rz
        x[p, 2] += tx * ry - ty * rx


@njit(parallel=True, **JIT)
def _turn_back_parallel(x, x_start, mass, theta, centre, block_lo, block_hi, block_group):
    for k in prange(block_lo.shape[0]):
        _turn_back_block(x, x_start, mass, theta, centre, block_lo, block_hi, block_group, k)


@njit(**JIT)
def _turn_back_serial(x, x_start, mass, theta, centre, block_lo, block_hi, block_group):
    for k in range(block_lo.shape[0]):
        _turn_back_block(x, x_start, mass, theta, centre, block_lo, block_hi, block_group, k)


def turn_back(x, x_start, mass, theta, centre, block_lo, block_hi, block_group):
    """numpy's turn_back, its blocks on all cores from PARALLEL_PARTICLES particles."""
    kernel = _turn_back_parallel if _many(block_lo, x) else _turn_back_serial
    kernel(x, x_start, mass, theta, centre, block_lo, block_hi, block_group)


@njit(**JIT)
def _verlet_turn_block(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, ref, block_lo,
                       block_hi, block_group, out, k):
    # A block at a time, each of the three in turn: its particles are still in the cache.
    _turn_back_block(x, x_prev, mass, theta, centre, block_lo, block_hi, block_group, k)
    _verlet_range(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, block_lo[k], block_hi[k])
    _turn_block(x, x_prev, mass, ref, block_lo, block_hi, block_group, True, out, k)


@njit(parallel=True, **JIT)
def _verlet_turn_parallel(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, ref,
                          block_lo, block_hi, block_group, out):
    for k in prange(block_lo.shape[0]):
        _verlet_turn_block(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, ref,
                           block_lo, block_hi, block_group, out, k)


@njit(**JIT)
def _verlet_turn(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, first, ref,
                 block_lo, block_hi, block_group, out, parallel):
    # Each group's reference: where its first particle is once the turn is made (so, at the new
    # start), as _turn_back_block makes it.
    for g in range(first.shape[0]):
        f = first[g]
        tx = theta[g, 0]
        ty = theta[g, 1]
        tz = theta[g, 2]
        ref[g, 0] = x[f, 0]
        ref[g, 1] = x[f, 1]
        ref[g, 2] = x[f, 2]
        if not (tx == 0.0 and ty == 0.0 and tz == 0.0):
            rx = x_prev[f, 0] - centre[g, 0]
            ry = x_prev[f, 1] - centre[g, 1]
            rz = x_prev[f, 2] - centre[g, 2]
            ref[g, 0] += ty * rz - tz * ry
            ref[g, 1] += tz * rx - tx * rz
            ref[g, 2] += tx * ry - ty * rx
    if parallel:
        _verlet_turn_parallel(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, ref,
                              block_lo, block_hi, block_group, out)
    else:
        for k in range(block_lo.shape[0]):
            _verlet_turn_block(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, ref,
                               block_lo, block_hi, block_group, out, k)
    theta[:, :] = 0.0


def verlet_turn(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, first, ref, block_lo,
                block_hi, block_group, out):
    """numpy's verlet_turn, fused a block at a time (the same bits)."""
    _verlet_turn(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, mass, theta, centre, first, ref, block_lo,
                 block_hi, block_group, out, _many(block_lo, x))


@njit(**JIT)
def _pin_chunk(x, x_start, lam, stick, i, j, at, sign, chunk_lo, chunk_hi, chunk_group, ref, partial, k):
    g = chunk_group[k]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = s9 = 0.0
    fx = ref[g, 0]
    fy = ref[g, 1]
    fz = ref[g, 2]
    for q in range(chunk_lo[k], chunk_hi[k]):
        dl = lam[stick[q]]
        if dl == 0.0:
            continue
        dx = x[j[q], 0] - x[i[q], 0]
        dy = x[j[q], 1] - x[i[q], 1]
        dz = x[j[q], 2] - x[i[q], 2]
        inv = 1.0 / max(math.sqrt(dx * dx + dy * dy + dz * dz), 1e-12)
        f = sign[q] * dl * inv
        jx = f * dx
        jy = f * dy
        jz = f * dz
        size = math.sqrt(jx * jx + jy * jy + jz * jz)
        rx = x_start[at[q], 0] - fx
        ry = x_start[at[q], 1] - fy
        rz = x_start[at[q], 2] - fz
        s0 += jx
        s1 += jy
        s2 += jz
        s3 += size
        s4 += ry * jz - rz * jy
        s5 += rz * jx - rx * jz
        s6 += rx * jy - ry * jx
        s7 += size * rx
        s8 += size * ry
        s9 += size * rz
    partial[k, 0] = s0
    partial[k, 1] = s1
    partial[k, 2] = s2
    partial[k, 3] = s3
    partial[k, 4] = s4
    partial[k, 5] = s5
    partial[k, 6] = s6
    partial[k, 7] = s7
    partial[k, 8] = s8
    partial[k, 9] = s9


@njit(parallel=True, **JIT)
def _pin_chunks_parallel(x, x_start, lam, stick, i, j, at, sign, chunk_lo, chunk_hi, chunk_group, ref, partial):
    for k in prange(chunk_lo.shape[0]):
        _pin_chunk(x, x_start, lam, stick, i, j, at, sign, chunk_lo, chunk_hi, chunk_group, ref, partial, k)


@njit(**JIT)
def _pin_shares(x, x_start, lam, stick, i, j, at, sign, chunk_lo, chunk_hi, chunk_group, ref, partial, out,
                parallel):
    # Chunks on all cores (each chunk's sums its own: the same bits).
    if parallel:
        _pin_chunks_parallel(x, x_start, lam, stick, i, j, at, sign, chunk_lo, chunk_hi, chunk_group, ref,
                             partial)
    else:
        for k in range(chunk_lo.shape[0]):
            _pin_chunk(x, x_start, lam, stick, i, j, at, sign, chunk_lo, chunk_hi, chunk_group, ref, partial,
                       k)
    out[:, :] = 0.0
    for k in range(chunk_lo.shape[0]):
        for c in range(10):
            out[chunk_group[k], c] += partial[k, c]


@njit(**JIT)
def _turn_finish(x, x_start, mass, lam, pin_stick, pin_i, pin_j, pin_at, pin_sign, chunk_lo, chunk_hi,
                 chunk_group, ref, goals, block_lo, block_hi, block_group, before, after, partial, pins, theta, centre,
                 parallel_sums, parallel_pins):
    _turn_sums(x, x_start, mass, ref, block_lo, block_hi, block_group, False, after, parallel_sums)
    _pin_shares(x, x_start, lam, pin_stick, pin_i, pin_j, pin_at, pin_sign, chunk_lo, chunk_hi, chunk_group, ref,
                partial, pins, parallel_pins)
    count = theta.shape[0]
    s = np.zeros((count, TURN_SUMS))
    for k in range(block_lo.shape[0]):
        g = block_group[k]
        if g >= 0:
            for c in range(3):
                s[g, c] += after[k, c] - before[k, c]
            for c in range(13, 16):
                s[g, c] += after[k, c] - before[k, c]
            for c in range(3, 13):
                s[g, c] += before[k, c]
    for g in range(count):
        lx = s[g, 0] - goals[g, 0] + pins[g, 4]
        ly = s[g, 1] - goals[g, 1] + pins[g, 5]
        lz = s[g, 2] - goals[g, 2] + pins[g, 6]
        has = pins[g, 3] > 0.0
        size = pins[g, 3] if has else 1.0
        mx = -(s[g, 13] - goals[g, 3]) - pins[g, 0] if has else 0.0
        my = -(s[g, 14] - goals[g, 4]) - pins[g, 1] if has else 0.0
        mz = -(s[g, 15] - goals[g, 5]) - pins[g, 2] if has else 0.0
        ax = pins[g, 7] / size
        ay = pins[g, 8] / size
        az = pins[g, 9] / size
        lx = lx + (ay * mz - az * my)
        ly = ly + (az * mx - ax * mz)
        lz = lz + (ax * my - ay * mx)
        mass_sum = s[g, 3]
        total = mass_sum if mass_sum > 0.0 else 1.0
        dx = s[g, 4] / total
        dy = s[g, 5] / total
        dz = s[g, 6] / total
        xx = s[g, 7] - mass_sum * dx * dx
        yy = s[g, 8] - mass_sum * dy * dy
        zz = s[g, 9] - mass_sum * dz * dz
        xy = s[g, 10] - mass_sum * dx * dy
        xz = s[g, 11] - mass_sum * dx * dz
        yz = s[g, 12] - mass_sum * dy * dz
        a00 = yy + zz
        a11 = xx + zz
        a22 = xx + yy
        reg = TURN_REGULAR * (a00 + a11 + a22)
        a00 = a00 + reg
        a11 = a11 + reg
        a22 = a22 + reg
        a01 = -xy
        a02 = -xz
        a12 = -yz
        c00 = a11 * a22 - a12 * a12
        c01 = a02 * a12 - a01 * a22
        c02 = a01 * a12 - a02 * a11
        c11 = a00 * a22 - a02 * a02
        c12 = a01 * a02 - a00 * a12
        c22 = a00 * a11 - a01 * a01
        det = a00 * c00 + a01 * c01 + a02 * c02
        inv = 1.0 / det if det > 0.0 else 0.0
        theta[g, 0] = -(c00 * lx + c01 * ly + c02 * lz) * inv
        theta[g, 1] = -(c01 * lx + c11 * ly + c12 * lz) * inv
        theta[g, 2] = -(c02 * lx + c12 * ly + c22 * lz) * inv
        centre[g, 0] = ref[g, 0] + dx
        centre[g, 1] = ref[g, 1] + dy
        centre[g, 2] = ref[g, 2] + dz


def turn_finish(x, x_start, mass, lam, pin_stick, pin_i, pin_j, pin_at, pin_sign, chunk_lo, chunk_hi,
                chunk_group, ref, goals, block_lo, block_hi, block_group, before, after, partial, pins, theta, centre):
    """numpy's turn_finish, in one call (its sums on all cores from PARALLEL_PARTICLES particles or
    pin sticks)."""
    _turn_finish(x, x_start, mass, lam, pin_stick, pin_i, pin_j, pin_at, pin_sign, chunk_lo, chunk_hi,
                 chunk_group, ref, goals, block_lo, block_hi, block_group, before, after, partial, pins, theta, centre,
                 _many(block_lo, x), _many(chunk_lo, pin_stick))
