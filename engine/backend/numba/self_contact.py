"""Self-collision kernels compiled with numba: the functions of ``backend/numpy/self_contact.py``
with the same arguments and the same numbers.

``find_pairs`` finds the same candidate set as the reference's brute force through a hashed grid
of cells (a triangle's box is entered in every cell it covers, a vertex looks in every cell its
box covers), and lists each vertex's triangles in ascending order, as the reference does; the
projection is the reference's Gauss-Seidel loop, pair by pair in that order, term by term.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

JIT = dict(cache=True, nogil=True, error_model="numpy")
# How far outside a triangle (in barycentric terms) a vertex may pass its plane and still count
# as through it: the plane distance is taken as linear over the substep, which it nearly is.
THROUGH = 0.05


@njit(**JIT)
def _grow(a, size):
    b = np.empty(max(2 * a.shape[0], size), a.dtype)
    b[:a.shape[0]] = a
    return b


@njit(**JIT)
def _cell(value, origin, cell):
    return int(math.floor((value - origin) / cell))


@njit(**JIT)
def _hash(i, j, k, mask):
    return ((i * 73856093) ^ (j * 19349663) ^ (k * 83492791)) & mask


@njit(**JIT)
def _gap2(x, p, a, b, c):
    """The squared distance of particle p from triangle (a, b, c) (nearest point, edges included)
    and which side of its plane p is on (the sign of the second value)."""
    ax = x[a, 0]
    ay = x[a, 1]
    az = x[a, 2]
    e1x = x[b, 0] - ax
    e1y = x[b, 1] - ay
    e1z = x[b, 2] - az
    e2x = x[c, 0] - ax
    e2y = x[c, 1] - ay
    e2z = x[c, 2] - az
    qx = x[p, 0] - ax
    qy = x[p, 1] - ay
    qz = x[p, 2] - az
    nx = e1y * e2z - e1z * e2y
    ny = e1z * e2x - e1x * e2z
    nz = e1x * e2y - e1y * e2x
    nn = nx * nx + ny * ny + nz * nz
    if not nn > 0.0:
        return 0.0, 0.0  # degenerate: kept
    hn = qx * nx + qy * ny + qz * nz
    d00 = e1x * e1x + e1y * e1y + e1z * e1z
    d01 = e1x * e2x + e1y * e2y + e1z * e2z
    d11 = e2x * e2x + e2y * e2y + e2z * e2z
    d20 = qx * e1x + qy * e1y + qz * e1z
    d21 = qx * e2x + qy * e2y + qz * e2z
    bb = (d11 * d20 - d01 * d21) / nn
    bc = (d00 * d21 - d01 * d20) / nn
    ba = 1.0 - bb - bc
    if ba >= 0.0 and bb >= 0.0 and bc >= 0.0:
        return hn * hn / nn, hn
    best = np.inf
    for edge in range(3):
        if edge == 0:
            sx, sy, sz, dx, dy, dz = 0.0, 0.0, 0.0, e1x, e1y, e1z
        elif edge == 1:
            sx, sy, sz, dx, dy, dz = e1x, e1y, e1z, e2x - e1x, e2y - e1y, e2z - e1z
        else:
            sx, sy, sz, dx, dy, dz = e2x, e2y, e2z, -e2x, -e2y, -e2z
        ll = dx * dx + dy * dy + dz * dz
        f = ((qx - sx) * dx + (qy - sy) * dy + (qz - sz) * dz) / ll if ll > 0.0 else 0.0
        f = min(max(f, 0.0), 1.0)
        rx = qx - (sx + f * dx)
        ry = qy - (sy + f * dy)
        rz = qz - (sz + f * dz)
        best = min(best, rx * rx + ry * ry + rz * rz)
    return best, hn


@njit(**JIT)
def moved_beyond(x, reference, vert, limit):
    """Whether any vertex moved more than ``limit`` from ``reference``, beyond the motion they all
    share (the middle of the range of their displacements, axis by axis)."""
    if vert.shape[0] == 0:
        return False
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for k in range(vert.shape[0]):
        for a in range(3):
            d = x[vert[k], a] - reference[vert[k], a]
            lo[a] = min(lo[a], d)
            hi[a] = max(hi[a], d)
    mx = (lo[0] + hi[0]) * 0.5
    my = (lo[1] + hi[1]) * 0.5
    mz = (lo[2] + hi[2]) * 0.5
    ll = limit * limit
    for k in range(vert.shape[0]):
        p = vert[k]
        dx = x[p, 0] - reference[p, 0] - mx
        dy = x[p, 1] - reference[p, 1] - my
        dz = x[p, 2] - reference[p, 2] - mz
        if not dx * dx + dy * dy + dz * dz <= ll:
            return True
    return False


@njit(**JIT)
def find_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris):
    nt = tri.shape[0]
    nv = vert.shape[0]
    pair_v = np.empty(0, np.int64)
    pair_t = np.empty(0, np.int64)
    for k in range(nv):
        for a in range(3):
            if not (math.isfinite(x[vert[k], a]) and math.isfinite(x_prev[vert[k], a])):
                return pair_v, pair_t  # the solver refuses the frame; nothing to find
    tlo = np.empty((nt, 3))
    thi = np.empty((nt, 3))
    vlo = np.empty((nv, 3))
    vhi = np.empty((nv, 3))
    origin = np.full(3, np.inf)
    ext_sum = 0.0
    ext_max = 0.0
    for t in range(nt):
        for a in range(3):
            lo = np.inf
            hi = -np.inf
            for c in range(3):
                p = tri[t, c]
                lo = min(lo, x[p, a], x_prev[p, a])
                hi = max(hi, x[p, a], x_prev[p, a])
            tlo[t, a] = lo
            thi[t, a] = hi
            origin[a] = min(origin[a], lo)
        e = max(thi[t, 0] - tlo[t, 0], thi[t, 1] - tlo[t, 1], thi[t, 2] - tlo[t, 2])
        ext_sum += e
        ext_max = max(ext_max, e)
    vext_max = 0.0
    for k in range(nv):
        p = vert[k]
        r = reach[vert_surface[k]]
        for a in range(3):
            vlo[k, a] = min(x[p, a], x_prev[p, a]) - r
            vhi[k, a] = max(x[p, a], x_prev[p, a]) + r
            origin[a] = min(origin[a], vlo[k, a])
        vext_max = max(vext_max, vhi[k, 0] - vlo[k, 0], vhi[k, 1] - vlo[k, 1], vhi[k, 2] - vlo[k, 2])
    if nt == 0 or nv == 0:
        return pair_v, pair_t
    # Cells about a triangle's box; no box covers more than 9 of them a side, however far
    # one vertex flew.
    cell = max(ext_sum / nt, ext_max / 8.0, vext_max / 8.0, 1e-9)
    entries = 0
    for t in range(nt):
        entries += ((_cell(thi[t, 0], origin[0], cell) - _cell(tlo[t, 0], origin[0], cell) + 1)
                    * (_cell(thi[t, 1], origin[1], cell) - _cell(tlo[t, 1], origin[1], cell) + 1)
                    * (_cell(thi[t, 2], origin[2], cell) - _cell(tlo[t, 2], origin[2], cell) + 1))
    size = 1
    while size < 2 * entries:
        size *= 2
    mask = size - 1
    start = np.zeros(size + 1, np.int64)
    for t in range(nt):
        for i in range(_cell(tlo[t, 0], origin[0], cell), _cell(thi[t, 0], origin[0], cell) + 1):
            for j in range(_cell(tlo[t, 1], origin[1], cell), _cell(thi[t, 1], origin[1], cell) + 1):
                for k in range(_cell(tlo[t, 2], origin[2], cell), _cell(thi[t, 2], origin[2], cell) + 1):
                    start[_hash(i, j, k, mask) + 1] += 1
    for b in range(size):
        start[b + 1] += start[b]
    fill = start[:size].copy()
    bucket = np.empty(entries, np.int64)
    for t in range(nt):
        for i in range(_cell(tlo[t, 0], origin[0], cell), _cell(thi[t, 0], origin[0], cell) + 1):
            for j in range(_cell(tlo[t, 1], origin[1], cell), _cell(thi[t, 1], origin[1], cell) + 1):
                for k in range(_cell(tlo[t, 2], origin[2], cell), _cell(thi[t, 2], origin[2], cell) + 1):
                    h = _hash(i, j, k, mask)
                    bucket[fill[h]] = t
                    fill[h] += 1
    motion = np.zeros(x.shape[0])
    for k in range(nv):
        q = vert[k]
        dx = x[q, 0] - x_prev[q, 0]
        dy = x[q, 1] - x_prev[q, 1]
        dz = x[q, 2] - x_prev[q, 2]
        motion[q] = math.sqrt(dx * dx + dy * dy + dz * dz)
    mark = np.full(nt, -1, np.int64)
    found = np.empty(64, np.int64)
    count = 0
    for v in range(nv):
        for m in range(near_start[v], near_start[v + 1]):
            mark[near_tris[m]] = v
        s = vert_surface[v]
        p = vert[v]
        reach2 = reach[s] * reach[s]
        first = count
        for i in range(_cell(vlo[v, 0], origin[0], cell), _cell(vhi[v, 0], origin[0], cell) + 1):
            for j in range(_cell(vlo[v, 1], origin[1], cell), _cell(vhi[v, 1], origin[1], cell) + 1):
                for k in range(_cell(vlo[v, 2], origin[2], cell), _cell(vhi[v, 2], origin[2], cell) + 1):
                    h = _hash(i, j, k, mask)
                    for e in range(start[h], start[h + 1]):
                        t = bucket[e]
                        if mark[t] == v:
                            continue
                        mark[t] = v
                        if tri_surface[t] != s:
                            continue
                        if not (vlo[v, 0] <= thi[t, 0] and tlo[t, 0] <= vhi[v, 0] and vlo[v, 1] <= thi[t, 1]
                                and tlo[t, 1] <= vhi[v, 1] and vlo[v, 2] <= thi[t, 2] and tlo[t, 2] <= vhi[v, 2]):
                            continue
                        g1, s1 = _gap2(x, p, tri[t, 0], tri[t, 1], tri[t, 2])
                        if not g1 < reach2:
                            g0, s0 = _gap2(x_prev, p, tri[t, 0], tri[t, 1], tri[t, 2])
                            if not g0 < reach2:
                                if not ((s0 > 0.0 and s1 < 0.0) or (s0 < 0.0 and s1 > 0.0)):
                                    continue
                                # Through the plane: through the triangle only if it ends no
                                # further from it than it and the triangle moved.
                                m = reach[s] + motion[p] + max(motion[tri[t, 0]], motion[tri[t, 1]],
                                                               motion[tri[t, 2]])
                                if not g1 < m * m:
                                    continue
                        if count == found.shape[0]:
                            found = _grow(found, count + 1)
                        # Insertion into this vertex's run, kept ascending.
                        w = count
                        while w > first and found[w - 1] > t:
                            found[w] = found[w - 1]
                            w -= 1
                        found[w] = t
                        count += 1
        if count > pair_v.shape[0]:
            pair_v = _grow(pair_v, count)
        for w in range(first, count):
            pair_v[w] = v
    return pair_v[:count].copy(), found[:count].copy()


@njit(**JIT)
def project(x, x_prev, inverse_masses, friction, tri, vert, pair_v, pair_t, distance, passes):
    active = np.empty(pair_v.shape[0], np.int64)
    live = pair_v.shape[0]
    for k in range(live):
        active[k] = k
    for _ in range(passes):
        count = live
        live = 0
        for m in range(count):
            k = active[m]
            iv = vert[pair_v[k]]
            t = pair_t[k]
            ia = tri[t, 0]
            ib = tri[t, 1]
            ic = tri[t, 2]
            wp = inverse_masses[iv]
            wa = inverse_masses[ia]
            wb = inverse_masses[ib]
            wc = inverse_masses[ic]
            if wp + wa + wb + wc == 0.0:
                continue
            d = distance[k]
            ax = x[ia, 0]
            ay = x[ia, 1]
            az = x[ia, 2]
            e1x = x[ib, 0] - ax
            e1y = x[ib, 1] - ay
            e1z = x[ib, 2] - az
            e2x = x[ic, 0] - ax
            e2y = x[ic, 1] - ay
            e2z = x[ic, 2] - az
            nx = e1y * e2z - e1z * e2y
            ny = e1z * e2x - e1x * e2z
            nz = e1x * e2y - e1y * e2x
            nn = nx * nx + ny * ny + nz * nz
            if not nn > 0.0:
                continue
            qx = x[iv, 0] - ax
            qy = x[iv, 1] - ay
            qz = x[iv, 2] - az
            inv = 1.0 / math.sqrt(nn)
            ux = nx * inv
            uy = ny * inv
            uz = nz * inv
            h = qx * ux + qy * uy + qz * uz
            # The side the vertex was on at the start of the substep is the side it must end on.
            f1x = x_prev[ib, 0] - x_prev[ia, 0]
            f1y = x_prev[ib, 1] - x_prev[ia, 1]
            f1z = x_prev[ib, 2] - x_prev[ia, 2]
            f2x = x_prev[ic, 0] - x_prev[ia, 0]
            f2y = x_prev[ic, 1] - x_prev[ia, 1]
            f2z = x_prev[ic, 2] - x_prev[ia, 2]
            mx = f1y * f2z - f1z * f2y
            my = f1z * f2x - f1x * f2z
            mz = f1x * f2y - f1y * f2x
            side = ((x_prev[iv, 0] - x_prev[ia, 0]) * mx + (x_prev[iv, 1] - x_prev[ia, 1]) * my
                    + (x_prev[iv, 2] - x_prev[ia, 2]) * mz)
            if mx * nx + my * ny + mz * nz < 0.0:
                side = -side  # the triangle turned over: its start side in today's orientation
            if (side > 0.0 and h < 0.0) or (side < 0.0 and h > 0.0):
                # Through the plane: through the triangle if, where the plane distance (linear
                # over the substep) is zero, the vertex is over it; else round its edge.
                h0 = side / math.sqrt(mx * mx + my * my + mz * mz)
                f = h0 / (h0 - h)
                pax = x_prev[ia, 0] + f * (ax - x_prev[ia, 0])
                pay = x_prev[ia, 1] + f * (ay - x_prev[ia, 1])
                paz = x_prev[ia, 2] + f * (az - x_prev[ia, 2])
                g1x = x_prev[ib, 0] + f * (x[ib, 0] - x_prev[ib, 0]) - pax
                g1y = x_prev[ib, 1] + f * (x[ib, 1] - x_prev[ib, 1]) - pay
                g1z = x_prev[ib, 2] + f * (x[ib, 2] - x_prev[ib, 2]) - paz
                g2x = x_prev[ic, 0] + f * (x[ic, 0] - x_prev[ic, 0]) - pax
                g2y = x_prev[ic, 1] + f * (x[ic, 1] - x_prev[ic, 1]) - pay
                g2z = x_prev[ic, 2] + f * (x[ic, 2] - x_prev[ic, 2]) - paz
                g3x = x_prev[iv, 0] + f * (x[iv, 0] - x_prev[iv, 0]) - pax
                g3y = x_prev[iv, 1] + f * (x[iv, 1] - x_prev[iv, 1]) - pay
                g3z = x_prev[iv, 2] + f * (x[iv, 2] - x_prev[iv, 2]) - paz
                c00 = g1x * g1x + g1y * g1y + g1z * g1z
                c01 = g1x * g2x + g1y * g2y + g1z * g2z
                c11 = g2x * g2x + g2y * g2y + g2z * g2z
                c20 = g3x * g1x + g3y * g1y + g3z * g1z
                c21 = g3x * g2x + g3y * g2y + g3z * g2z
                den = c00 * c11 - c01 * c01
                through = False
                if den > 0.0:
                    cb = (c11 * c20 - c01 * c21) / den
                    cc = (c00 * c21 - c01 * c20) / den
                    through = cb >= -THROUGH and cc >= -THROUGH and 1.0 - cb - cc >= -THROUGH
                if through:
                    sgn = 1.0 if side > 0.0 else -1.0
                else:
                    sgn = 1.0 if h > 0.0 else -1.0
            elif side != 0.0:
                sgn = 1.0 if side > 0.0 else -1.0
            else:
                sgn = 1.0 if h >= 0.0 else -1.0
            if sgn * h >= d:
                continue
            d00 = e1x * e1x + e1y * e1y + e1z * e1z
            d01 = e1x * e2x + e1y * e2y + e1z * e2z
            d11 = e2x * e2x + e2y * e2y + e2z * e2z
            d20 = qx * e1x + qy * e1y + qz * e1z
            d21 = qx * e2x + qy * e2y + qz * e2z
            bb = (d11 * d20 - d01 * d21) / nn
            bc = (d00 * d21 - d01 * d20) / nn
            ba = 1.0 - bb - bc
            if ba >= 0.0 and bb >= 0.0 and bc >= 0.0:
                # Inside the triangle: along its normal, to distance d on the side it came from.
                c = sgn * h - d
                gx = sgn * ux
                gy = sgn * uy
                gz = sgn * uz
            else:
                # Beside it: away from the nearest point of its edges, to distance d.
                best = np.inf
                ta = 0.0
                tb = 0.0
                tc = 0.0
                bx = 0.0
                by = 0.0
                bz = 0.0
                for edge in range(3):
                    if edge == 0:
                        sx, sy, sz, dx, dy, dz = 0.0, 0.0, 0.0, e1x, e1y, e1z
                    elif edge == 1:
                        sx, sy, sz, dx, dy, dz = e1x, e1y, e1z, e2x - e1x, e2y - e1y, e2z - e1z
                    else:
                        sx, sy, sz, dx, dy, dz = e2x, e2y, e2z, -e2x, -e2y, -e2z
                    ll = dx * dx + dy * dy + dz * dz
                    f = ((qx - sx) * dx + (qy - sy) * dy + (qz - sz) * dz) / ll if ll > 0.0 else 0.0
                    f = min(max(f, 0.0), 1.0)
                    rx = qx - (sx + f * dx)
                    ry = qy - (sy + f * dy)
                    rz = qz - (sz + f * dz)
                    dd = rx * rx + ry * ry + rz * rz
                    if dd < best:
                        best = dd
                        bx, by, bz = rx, ry, rz
                        if edge == 0:
                            ta, tb, tc = 1.0 - f, f, 0.0
                        elif edge == 1:
                            ta, tb, tc = 0.0, 1.0 - f, f
                        else:
                            ta, tb, tc = f, 0.0, 1.0 - f
                if not (best < d * d and best > 0.0):
                    continue
                dist = math.sqrt(best)
                ba, bb, bc = ta, tb, tc
                c = dist - d
                gx = bx / dist
                gy = by / dist
                gz = bz / dist
            ws = wp + ba * ba * wa + bb * bb * wb + bc * bc * wc
            if not ws > 0.0:
                continue
            active[live] = k  # pushed: looked at again in the next pass
            live += 1
            dl = -c / ws
            x[iv, 0] += wp * dl * gx
            x[iv, 1] += wp * dl * gy
            x[iv, 2] += wp * dl * gz
            x[ia, 0] -= ba * wa * dl * gx
            x[ia, 1] -= ba * wa * dl * gy
            x[ia, 2] -= ba * wa * dl * gz
            x[ib, 0] -= bb * wb * dl * gx
            x[ib, 1] -= bb * wb * dl * gy
            x[ib, 2] -= bb * wb * dl * gz
            x[ic, 0] -= bc * wc * dl * gx
            x[ic, 1] -= bc * wc * dl * gy
            x[ic, 2] -= bc * wc * dl * gz
            mu = friction[iv]
            if not mu > 0.0:
                continue
            # Friction: the vertex's motion over the substep relative to the triangle's point under
            # it, along the surface, is stopped (static) or cut by mu times the push (sliding).
            rx = (x[iv, 0] - x_prev[iv, 0]) - (ba * (x[ia, 0] - x_prev[ia, 0]) + bb * (x[ib, 0] - x_prev[ib, 0])
                                               + bc * (x[ic, 0] - x_prev[ic, 0]))
            ry = (x[iv, 1] - x_prev[iv, 1]) - (ba * (x[ia, 1] - x_prev[ia, 1]) + bb * (x[ib, 1] - x_prev[ib, 1])
                                               + bc * (x[ic, 1] - x_prev[ic, 1]))
            rz = (x[iv, 2] - x_prev[iv, 2]) - (ba * (x[ia, 2] - x_prev[ia, 2]) + bb * (x[ib, 2] - x_prev[ib, 2])
                                               + bc * (x[ic, 2] - x_prev[ic, 2]))
            rn = rx * gx + ry * gy + rz * gz
            tx = rx - rn * gx
            ty = ry - rn * gy
            tz = rz - rn * gz
            tt = math.sqrt(tx * tx + ty * ty + tz * tz)
            if not tt > 0.0:
                continue
            limit = -mu * c
            share = (limit / tt if tt > limit else 1.0) / ws
            x[iv, 0] -= wp * share * tx
            x[iv, 1] -= wp * share * ty
            x[iv, 2] -= wp * share * tz
            x[ia, 0] += ba * wa * share * tx
            x[ia, 1] += ba * wa * share * ty
            x[ia, 2] += ba * wa * share * tz
            x[ib, 0] += bb * wb * share * tx
            x[ib, 1] += bb * wb * share * ty
            x[ib, 2] += bb * wb * share * tz
            x[ic, 0] += bc * wc * share * tx
            x[ic, 1] += bc * wc * share * ty
            x[ic, 2] += bc * wc * share * tz
