"""Self-collision kernels in numpy: the reference of ``backend/numba/self_contact.py``.

A vertex v of a surface and one of its triangles t are a candidate pair for a substep when v's
box over the substep (from x_prev to x, grown by the surface's reach) overlaps t's box over it,
v and t are on the same surface, and t is not among v's ``near_tris`` (the triangles it never
collides with: see ``collision/self_contact.py``). ``find_pairs`` finds them by
brute force (all vertices against all triangles, in blocks; the compiled backend uses a grid and
finds the same set), listed by vertex and each vertex's triangles ascending.

``project`` then pushes each pair apart, one after the other in that order (Gauss-Seidel: a
later pair sees what an earlier one moved), ``passes`` times: a vertex over (or under) its
triangle goes to ``distance`` from its plane on the side it was on at the start of the substep
(so it cannot pass through, however far it moved), a vertex beside the triangle to ``distance``
from the nearest point of its edges; the vertex and the triangle's corners move by their inverse
masses (the corners by their barycentric weights). The loop is plain Python over floats, the
compiled loop's arithmetic term by term, so both give the same bits.

Shapes: n particles, x, x_prev (n, 3) m; tri (t, 3) particle indices; vert (v,) the
particles of the colliding surfaces; pairs (p,): pair_v into vert, pair_t into tri.
"""

from __future__ import annotations

import math

import numpy as np

# Vertices tested against all triangles at once: a block's (block, t) boolean table.
BLOCK_ENTRIES = 2_000_000


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
    for _ in range(passes):
        for k in range(len(pv)):
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
            if side > 0.0:
                sgn = 1.0
            elif side < 0.0:
                sgn = -1.0
            else:
                sgn = 1.0 if h >= 0.0 else -1.0
            if mx * nx + my * ny + mz * nz < 0.0:
                sgn = -sgn
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
