"""Self-collision kernels in numpy: the reference of ``backend/numba/self_contact.py``.

A vertex v of a surface and one of its triangles t are a candidate pair when v's box over the
substep (from x_prev to x, grown by the surface's reach) overlaps t's box over it, v and t are
on the same surface, t is not among v's ``near_tris`` (the triangles it never collides with: see
``collision/self_contact.py``), and v is within the reach of t at the start or the end of the
substep, or went through t's plane no further from t than they both moved. ``find_pairs`` finds
them by brute force (all vertices against all triangles, in blocks; the compiled backend uses a
grid and finds the same set), listed by vertex and each vertex's triangles ascending.

``project`` then pushes each pair apart, one after the other in that order (Gauss-Seidel: a
later pair sees what an earlier one moved); the first pass goes over all pairs, the later ones
over those it pushed. A vertex over (or under) its triangle goes to ``distance`` from its plane
on the side it must be on: the side it started the substep on, unless it passed the plane round
the triangle's edge rather than through it (where the plane distance, taken as linear over the
substep, is zero, the vertex is beside the triangle); so it cannot pass through, however far it
moved. A vertex beside the triangle goes to ``distance`` from the nearest point of its edges.
The vertex and the triangle's corners move by their inverse masses (the corners by their
barycentric weights), and friction cuts their relative sliding. The loop is plain Python over
floats, the compiled loop's arithmetic term by term, so both give the same bits.

Shapes: n particles, x, x_prev (n, 3) m; tri (t, 3) particle indices; vert (v,) the
particles of the colliding surfaces; pairs (p,): pair_v into vert, pair_t into tri.
"""

from __future__ import annotations

import math

import numpy as np

# How far outside a triangle (in barycentric terms) a vertex may pass its plane and still count
# as through it: the plane distance is taken as linear over the substep, which it nearly is.
THROUGH = 0.05
# Vertices tested against all triangles at once: a block's (block, t) boolean table.
BLOCK_ENTRIES = 2_000_000


def _gap2(x, p, a, b, c):
    """The squared distance of particles p (k,) from triangles (a, b, c) (k,) each (nearest
    point, edges included), and which side of its plane each is on (the sign of the second)."""
    ax, ay, az = x[a, 0], x[a, 1], x[a, 2]
    e1x, e1y, e1z = x[b, 0] - ax, x[b, 1] - ay, x[b, 2] - az
    e2x, e2y, e2z = x[c, 0] - ax, x[c, 1] - ay, x[c, 2] - az
    qx, qy, qz = x[p, 0] - ax, x[p, 1] - ay, x[p, 2] - az
    nx = e1y * e2z - e1z * e2y
    ny = e1z * e2x - e1x * e2z
    nz = e1x * e2y - e1y * e2x
    nn = nx * nx + ny * ny + nz * nz
    hn = qx * nx + qy * ny + qz * nz
    d00 = e1x * e1x + e1y * e1y + e1z * e1z
    d01 = e1x * e2x + e1y * e2y + e1z * e2z
    d11 = e2x * e2x + e2y * e2y + e2z * e2z
    d20 = qx * e1x + qy * e1y + qz * e1z
    d21 = qx * e2x + qy * e2y + qz * e2z
    with np.errstate(divide="ignore", invalid="ignore"):
        bb = (d11 * d20 - d01 * d21) / nn
        bc = (d00 * d21 - d01 * d20) / nn
        ba = 1.0 - bb - bc
        best = np.full(len(p), np.inf)
        zero = np.zeros(len(p))
        for sx, sy, sz, dx, dy, dz in ((zero, zero, zero, e1x, e1y, e1z),
                                       (e1x, e1y, e1z, e2x - e1x, e2y - e1y, e2z - e1z),
                                       (e2x, e2y, e2z, -e2x, -e2y, -e2z)):
            ll = dx * dx + dy * dy + dz * dz
            f = np.where(ll > 0.0, ((qx - sx) * dx + (qy - sy) * dy + (qz - sz) * dz) / ll, 0.0)
            f = np.minimum(np.maximum(f, 0.0), 1.0)
            rx = qx - (sx + f * dx)
            ry = qy - (sy + f * dy)
            rz = qz - (sz + f * dz)
            best = np.minimum(best, rx * rx + ry * ry + rz * rz)
        inside = (ba >= 0.0) & (bb >= 0.0) & (bc >= 0.0)
        gap = np.where(inside, hn * hn / nn, best)
    degenerate = ~(nn > 0.0)  # kept
    return np.where(degenerate, 0.0, gap), np.where(degenerate, 0.0, hn)


def moved_beyond(x, reference, vert, limit):
    """Whether any vertex moved more than ``limit`` from ``reference``, beyond the motion they all
    share (the middle of the range of their displacements, axis by axis)."""
    if not len(vert):
        return False
    d = x[vert] - reference[vert]
    mid = (d.min(axis=0) + d.max(axis=0)) * 0.5
    dx = x[vert, 0] - reference[vert, 0] - mid[0]
    dy = x[vert, 1] - reference[vert, 1] - mid[1]
    dz = x[vert, 2] - reference[vert, 2] - mid[2]
    return bool(np.any(~(dx * dx + dy * dy + dz * dz <= limit * limit)))


def find_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris):
    """(pair_v, pair_t) int64: the candidate pairs of one substep. reach (s,) m per surface, how
    far beyond its own motion a vertex looks; near_start (v + 1,), near_tris: per vertex the
    triangles it never collides with, ascending."""
    empty = np.zeros(0, np.int64), np.zeros(0, np.int64)
    nt, nv = len(tri), len(vert)
    if not np.all(np.isfinite(x[vert])) or not np.all(np.isfinite(x_prev[vert])):
        return empty  # the solver refuses the frame; nothing to find
    if nt == 0 or nv == 0:
        return empty
    lo, hi = np.minimum(x, x_prev), np.maximum(x, x_prev)
    tlo, thi = lo[tri].min(axis=1), hi[tri].max(axis=1)
    r = reach[vert_surface][:, None]
    vlo, vhi = lo[vert] - r, hi[vert] + r
    near = np.sort(np.repeat(np.arange(nv, dtype=np.int64), np.diff(near_start)) * nt + near_tris)
    dx, dy, dz = x[:, 0] - x_prev[:, 0], x[:, 1] - x_prev[:, 1], x[:, 2] - x_prev[:, 2]
    motion = np.sqrt(dx * dx + dy * dy + dz * dz)
    found_v, found_t = [], []
    block = max(1, BLOCK_ENTRIES // nt)
    for b in range(0, nv, block):
        e = min(nv, b + block)
        ok = vert_surface[b:e, None] == tri_surface[None, :]
        for a in range(3):
            ok &= (vlo[b:e, a, None] <= thi[None, :, a]) & (tlo[None, :, a] <= vhi[b:e, a, None])
        iv, it = np.nonzero(ok)
        iv = iv + b
        key = iv * nt + it
        pos = np.minimum(np.searchsorted(near, key), max(len(near) - 1, 0))
        keep = near[pos] != key if len(near) else np.ones(len(key), bool)
        iv, it = iv[keep], it[keep]
        # Near enough at the end of the substep or at its start, or through the plane between.
        p, t = vert[iv], tri[it]
        reach2 = reach[vert_surface[iv]] * reach[vert_surface[iv]]
        g1, s1 = _gap2(x, p, t[:, 0], t[:, 1], t[:, 2])
        g0, s0 = _gap2(x_prev, p, t[:, 0], t[:, 1], t[:, 2])
        # Through the plane: through the triangle only if it ends no further from it than it
        # and the triangle moved.
        m = reach[vert_surface[iv]] + motion[p] + np.maximum(np.maximum(motion[t[:, 0]], motion[t[:, 1]]),
                                                             motion[t[:, 2]])
        through = (((s0 > 0.0) & (s1 < 0.0)) | ((s0 < 0.0) & (s1 > 0.0))) & (g1 < m * m)
        keep = (g1 < reach2) | (g0 < reach2) | through
        found_v.append(iv[keep])
        found_t.append(it[keep])
    return np.concatenate(found_v).astype(np.int64), np.concatenate(found_t).astype(np.int64)


def project(x, x_prev, inverse_masses, friction, tri, vert, pair_v, pair_t, distance, passes):
    """Push the pairs apart in place on x (see the module's docstring); friction (n,) per particle
    (the vertex's is used); distance (p,) m per pair."""
    if not len(pair_v):
        return
    xs = x.tolist()
    xp = x_prev.tolist()
    w = inverse_masses.tolist()
    mu_l = friction.tolist()
    tri_l = tri.tolist()
    vert_l = vert.tolist()
    pv = pair_v.tolist()
    pt = pair_t.tolist()
    dist_l = distance.tolist()
    active = list(range(len(pv)))
    live = len(pv)
    for _ in range(passes):
        count = live
        live = 0
        for m in range(count):
            k = active[m]
            iv = vert_l[pv[k]]
            t = pt[k]
            ia = tri_l[t][0]
            ib = tri_l[t][1]
            ic = tri_l[t][2]
            wp = w[iv]
            wa = w[ia]
            wb = w[ib]
            wc = w[ic]
            if wp + wa + wb + wc == 0.0:
                continue
            d = dist_l[k]
            ax = xs[ia][0]
            ay = xs[ia][1]
            az = xs[ia][2]
            e1x = xs[ib][0] - ax
            e1y = xs[ib][1] - ay
            e1z = xs[ib][2] - az
            e2x = xs[ic][0] - ax
            e2y = xs[ic][1] - ay
            e2z = xs[ic][2] - az
            nx = e1y * e2z - e1z * e2y
            ny = e1z * e2x - e1x * e2z
            nz = e1x * e2y - e1y * e2x
            nn = nx * nx + ny * ny + nz * nz
            if not nn > 0.0:
                continue
            qx = xs[iv][0] - ax
            qy = xs[iv][1] - ay
            qz = xs[iv][2] - az
            inv = 1.0 / math.sqrt(nn)
            ux = nx * inv
            uy = ny * inv
            uz = nz * inv
            h = qx * ux + qy * uy + qz * uz
            # The side the vertex was on at the start of the substep is the side it must end on.
            f1x = xp[ib][0] - xp[ia][0]
            f1y = xp[ib][1] - xp[ia][1]
            f1z = xp[ib][2] - xp[ia][2]
            f2x = xp[ic][0] - xp[ia][0]
            f2y = xp[ic][1] - xp[ia][1]
            f2z = xp[ic][2] - xp[ia][2]
            mx = f1y * f2z - f1z * f2y
            my = f1z * f2x - f1x * f2z
            mz = f1x * f2y - f1y * f2x
            side = ((xp[iv][0] - xp[ia][0]) * mx + (xp[iv][1] - xp[ia][1]) * my
                    + (xp[iv][2] - xp[ia][2]) * mz)
            if mx * nx + my * ny + mz * nz < 0.0:
                side = -side  # the triangle turned over: its start side in today's orientation
            if (side > 0.0 and h < 0.0) or (side < 0.0 and h > 0.0):
                # Through the plane: through the triangle if, where the plane distance (linear
                # over the substep) is zero, the vertex is over it; else round its edge.
                h0 = side / math.sqrt(mx * mx + my * my + mz * mz)
                f = h0 / (h0 - h)
                pax = xp[ia][0] + f * (ax - xp[ia][0])
                pay = xp[ia][1] + f * (ay - xp[ia][1])
                paz = xp[ia][2] + f * (az - xp[ia][2])
                g1x = xp[ib][0] + f * (xs[ib][0] - xp[ib][0]) - pax
                g1y = xp[ib][1] + f * (xs[ib][1] - xp[ib][1]) - pay
                g1z = xp[ib][2] + f * (xs[ib][2] - xp[ib][2]) - paz
                g2x = xp[ic][0] + f * (xs[ic][0] - xp[ic][0]) - pax
                g2y = xp[ic][1] + f * (xs[ic][1] - xp[ic][1]) - pay
                g2z = xp[ic][2] + f * (xs[ic][2] - xp[ic][2]) - paz
                g3x = xp[iv][0] + f * (xs[iv][0] - xp[iv][0]) - pax
                g3y = xp[iv][1] + f * (xs[iv][1] - xp[iv][1]) - pay
                g3z = xp[iv][2] + f * (xs[iv][2] - xp[iv][2]) - paz
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
                best = math.inf
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
            xs[iv][0] += wp * dl * gx
            xs[iv][1] += wp * dl * gy
            xs[iv][2] += wp * dl * gz
            xs[ia][0] -= ba * wa * dl * gx
            xs[ia][1] -= ba * wa * dl * gy
            xs[ia][2] -= ba * wa * dl * gz
            xs[ib][0] -= bb * wb * dl * gx
            xs[ib][1] -= bb * wb * dl * gy
            xs[ib][2] -= bb * wb * dl * gz
            xs[ic][0] -= bc * wc * dl * gx
            xs[ic][1] -= bc * wc * dl * gy
            xs[ic][2] -= bc * wc * dl * gz
            mu = mu_l[iv]
            if not mu > 0.0:
                continue
            # Friction: the vertex's motion over the substep relative to the triangle's point under
            # it, along the surface, is stopped (static) or cut by mu times the push (sliding).
            rx = (xs[iv][0] - xp[iv][0]) - (ba * (xs[ia][0] - xp[ia][0]) + bb * (xs[ib][0] - xp[ib][0])
                                               + bc * (xs[ic][0] - xp[ic][0]))
            ry = (xs[iv][1] - xp[iv][1]) - (ba * (xs[ia][1] - xp[ia][1]) + bb * (xs[ib][1] - xp[ib][1])
                                               + bc * (xs[ic][1] - xp[ic][1]))
            rz = (xs[iv][2] - xp[iv][2]) - (ba * (xs[ia][2] - xp[ia][2]) + bb * (xs[ib][2] - xp[ib][2])
                                               + bc * (xs[ic][2] - xp[ic][2]))
            rn = rx * gx + ry * gy + rz * gz
            tx = rx - rn * gx
            ty = ry - rn * gy
            tz = rz - rn * gz
            tt = math.sqrt(tx * tx + ty * ty + tz * tz)
            if not tt > 0.0:
                continue
            limit = -mu * c
            share = (limit / tt if tt > limit else 1.0) / ws
            xs[iv][0] -= wp * share * tx
            xs[iv][1] -= wp * share * ty
            xs[iv][2] -= wp * share * tz
            xs[ia][0] += ba * wa * share * tx
            xs[ia][1] += ba * wa * share * ty
            xs[ia][2] += ba * wa * share * tz
            xs[ib][0] += bb * wb * share * tx
            xs[ib][1] += bb * wb * share * ty
            xs[ib][2] += bb * wb * share * tz
            xs[ic][0] += bc * wc * share * tx
            xs[ic][1] += bc * wc * share * ty
            xs[ic][2] += bc * wc * share * tz
    x[...] = xs
