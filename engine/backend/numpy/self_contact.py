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

Edge pairs (``find_edge_pairs``, ``_push_edges``) are found and pushed the same way: an edge is
kept ``distance`` from another on the side of its line (along their common normal) it started
the substep on, unless it passed the line round an end; beside each other, away from the nearest
points. ``project`` goes over the edge pairs first in every pass, then the vertex-triangle ones.

Shapes: n particles, x, x_prev (n, 3) m; tri (t, 3) particle indices; vert (v,) the
particles of the colliding surfaces; pairs (p,): pair_v into vert, pair_t into tri; edges (e, 2)
particle indices, tri_edges (t, 3) into edges; edge pairs (q,): pair_a < pair_b into edges.
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
        # Near at the start, or through the plane: either only if it ends no further from the
        # triangle than the reach and both their motions (the distance changes by no more than
        # they moved; near at the start implies it, and the compiled search tests it first).
        m = reach[vert_surface[iv]] + motion[p] + np.maximum(np.maximum(motion[t[:, 0]], motion[t[:, 1]]),
                                                             motion[t[:, 2]])
        through = ((g0 < reach2) | ((s0 > 0.0) & (s1 < 0.0)) | ((s0 < 0.0) & (s1 > 0.0))) & (g1 < m * m)
        keep = (g1 < reach2) | through
        found_v.append(iv[keep])
        found_t.append(it[keep])
    return np.concatenate(found_v).astype(np.int64), np.concatenate(found_t).astype(np.int64)


def project(x, x_prev, inverse_masses, friction, tri, vert, pair_v, pair_t, distance, edges, pair_a, pair_b,
            edge_distance, passes):
    """Push the pairs apart in place on x (see the module's docstring); friction (n,) per particle
    (the vertex's is used; an edge pair's, its first edge's first end's); distance (p,) m per pair;
    edges (e, 2) particle indices, pair_a, pair_b (q,) into edges, edge_distance (q,) m."""
    if not len(pair_v) and not len(pair_a):
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
    edges_l = edges.tolist()
    pa = pair_a.tolist()
    pb = pair_b.tolist()
    edist_l = edge_distance.tolist()
    active = list(range(len(pv)))
    live = len(pv)
    active_e = list(range(len(pa)))
    live_e = len(pa)
    for _ in range(passes):
        # The edge pairs first, then the vertex-triangle ones, in the same pass.
        count_e = live_e
        live_e = 0
        for m in range(count_e):
            k = active_e[m]
            if _push_edges(xs, xp, w, mu_l, edges_l, pa[k], pb[k], edist_l[k]):
                active_e[live_e] = k
                live_e += 1
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


# -- edge-edge ----------------------------------------------------------------------------------

# Edges more nearly parallel than this (the squared sine of the angle between them) have no side
# to keep: their common normal turns over at the smallest motion. They are held apart by distance
# alone (two parallel layers are held by their vertices against the triangles anyway).
PARALLEL = 1e-3


def _segments_v(x, a0, a1, b0, b1):
    """The squared distance of the nearest points of segments (a0, a1) and (b0, b1) (k,) each:
    ``_segments``'s first value, array by array, the same operations."""
    d1x, d1y, d1z = x[a1, 0] - x[a0, 0], x[a1, 1] - x[a0, 1], x[a1, 2] - x[a0, 2]
    d2x, d2y, d2z = x[b1, 0] - x[b0, 0], x[b1, 1] - x[b0, 1], x[b1, 2] - x[b0, 2]
    rx, ry, rz = x[a0, 0] - x[b0, 0], x[a0, 1] - x[b0, 1], x[a0, 2] - x[b0, 2]
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    ff = d2x * rx + d2y * ry + d2z * rz
    cc = d1x * rx + d1y * ry + d1z * rz
    bb = d1x * d2x + d1y * d2y + d1z * d2z
    den = aa * ee - bb * bb
    with np.errstate(divide="ignore", invalid="ignore"):
        sl = np.where(den > 0.0, (bb * ff - cc * ee) / den, 0.0)
        s = np.minimum(np.maximum(sl, 0.0), 1.0)
        t = (bb * s + ff) / ee
        low, high = t < 0.0, t > 1.0
        s = np.where(low, np.minimum(np.maximum(-cc / aa, 0.0), 1.0),
                     np.where(high, np.minimum(np.maximum((bb - cc) / aa, 0.0), 1.0), s))
        t = np.where(low, 0.0, np.where(high, 1.0, t))
        gx = rx + s * d1x - t * d2x
        gy = ry + s * d1y - t * d2y
        gz = rz + s * d1z - t * d2z
    g = gx * gx + gy * gy + gz * gz
    return np.where((aa > 0.0) & (ee > 0.0), g, 0.0)  # degenerate: kept


def _side_v(x, a0, a1, b0, b1):
    """``_side`` array by array."""
    d1x, d1y, d1z = x[a1, 0] - x[a0, 0], x[a1, 1] - x[a0, 1], x[a1, 2] - x[a0, 2]
    d2x, d2y, d2z = x[b1, 0] - x[b0, 0], x[b1, 1] - x[b0, 1], x[b1, 2] - x[b0, 2]
    nx = d1y * d2z - d1z * d2y
    ny = d1z * d2x - d1x * d2z
    nz = d1x * d2y - d1y * d2x
    nn = nx * nx + ny * ny + nz * nz
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    h = (x[b0, 0] - x[a0, 0]) * nx + (x[b0, 1] - x[a0, 1]) * ny + (x[b0, 2] - x[a0, 2]) * nz
    return nx, ny, nz, h, ~(nn > PARALLEL * aa * ee)


def _crossed_v(x, x_prev, a0, a1, b0, b1):
    """Whether edge b went from one side of edge a's line to the other over the substep, along
    their common normal (the start's turned to today's orientation). Nearly parallel edges have
    no side (``_push_edges`` holds them by distance alone, within the reach), nor do edges lying
    in one plane (a flat sheet: their distance along the normal is zero)."""
    n0x, n0y, n0z, h0, p0 = _side_v(x_prev, a0, a1, b0, b1)
    n1x, n1y, n1z, h1, p1 = _side_v(x, a0, a1, b0, b1)
    h0 = np.where(n0x * n1x + n0y * n1y + n0z * n1z < 0.0, -h0, h0)
    return ~p0 & ~p1 & (((h0 > 0.0) & (h1 < 0.0)) | ((h0 < 0.0) & (h1 > 0.0)))


def find_edge_pairs(x, x_prev, tri, tri_edges, edges, edge_surface, reach, near_start, near_edges):
    """(pair_a, pair_b) int64, pair_a < pair_b: the candidate edge pairs of one substep, listed by
    pair_a and each one's pair_b ascending. Edges a, b (indices into edges (e, 2)) are a pair when
    a's box over the substep grown by its surface's reach overlaps b's box, they are on the same
    surface, share no end, b is not among a's ``near_edges`` (those within the distance at rest),
    and they are within the reach at the start or the end of the substep, or b went through a's
    line (along their common normal) no further from a than they both moved. By brute force (the
    compiled backend looks in the grid of the triangles' boxes, which hold their edges')."""
    empty = np.zeros(0, np.int64), np.zeros(0, np.int64)
    ne = len(edges)
    if not np.all(np.isfinite(x[edges])) or not np.all(np.isfinite(x_prev[edges])):
        return empty  # the solver refuses the frame; nothing to find
    if ne == 0 or len(tri) == 0:
        return empty
    lo, hi = np.minimum(x, x_prev), np.maximum(x, x_prev)
    elo, ehi = lo[edges].min(axis=1), hi[edges].max(axis=1)
    r = reach[edge_surface]
    qlo, qhi = elo - r[:, None], ehi + r[:, None]
    near = np.sort(np.repeat(np.arange(ne, dtype=np.int64), np.diff(near_start)) * ne + near_edges)
    dx, dy, dz = x[:, 0] - x_prev[:, 0], x[:, 1] - x_prev[:, 1], x[:, 2] - x_prev[:, 2]
    motion = np.sqrt(dx * dx + dy * dy + dz * dz)
    found_a, found_b = [], []
    block = max(1, BLOCK_ENTRIES // ne)
    for b in range(0, ne, block):
        e = min(ne, b + block)
        ok = (edge_surface[b:e, None] == edge_surface[None, :]) & (np.arange(b, e)[:, None] < np.arange(ne)[None, :])
        for a in range(3):
            ok &= (qlo[b:e, a, None] <= ehi[None, :, a]) & (elo[None, :, a] <= qhi[b:e, a, None])
        for c in range(2):
            for d in range(2):
                ok &= edges[b:e, c, None] != edges[None, :, d]
        ia, ib = np.nonzero(ok)
        ia = ia + b
        key = ia * ne + ib
        pos = np.minimum(np.searchsorted(near, key), max(len(near) - 1, 0))
        keep = near[pos] != key if len(near) else np.ones(len(key), bool)
        ia, ib = ia[keep], ib[keep]
        a0, a1, b0, b1 = edges[ia, 0], edges[ia, 1], edges[ib, 0], edges[ib, 1]
        reach2 = r[ia] * r[ia]
        g1 = _segments_v(x, a0, a1, b0, b1)
        g0 = _segments_v(x_prev, a0, a1, b0, b1)
        m = r[ia] + np.maximum(motion[a0], motion[a1]) + np.maximum(motion[b0], motion[b1])
        # Near at the start or through each other: either only if they end no further apart
        # than the reach and their motions (as the vertex-triangle pairs).
        through = ((g0 < reach2) | _crossed_v(x, x_prev, a0, a1, b0, b1)) & (g1 < m * m)
        keep = (g1 < reach2) | through
        found_a.append(ia[keep])
        found_b.append(ib[keep])
    return np.concatenate(found_a).astype(np.int64), np.concatenate(found_b).astype(np.int64)



def find_all_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, tri_edges, edges, edge_surface, reach,
                   near_start, near_tris, near_edge_start, near_edges):
    """(pair_v, pair_t, pair_a, pair_b): ``find_pairs`` and ``find_edge_pairs`` of one substep (the
    compiled backend finds both in one grid of the triangles' boxes)."""
    pair_v, pair_t = find_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris)
    pair_a, pair_b = find_edge_pairs(x, x_prev, tri, tri_edges, edges, edge_surface, reach, near_edge_start,
                                     near_edges)
    return pair_v, pair_t, pair_a, pair_b

def _segments(xs, a0, a1, b0, b1):
    """Segment (a0, a1) against (b0, b1) in xs (a list of [x, y, z]): the squared distance of
    their nearest points, the vector between them (a's minus b's), their parameters (s along a,
    t along b), and whether the lines' nearest points lie on both segments (then they are the
    segments' too)."""
    d1x = xs[a1][0] - xs[a0][0]
    d1y = xs[a1][1] - xs[a0][1]
    d1z = xs[a1][2] - xs[a0][2]
    d2x = xs[b1][0] - xs[b0][0]
    d2y = xs[b1][1] - xs[b0][1]
    d2z = xs[b1][2] - xs[b0][2]
    rx = xs[a0][0] - xs[b0][0]
    ry = xs[a0][1] - xs[b0][1]
    rz = xs[a0][2] - xs[b0][2]
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    if not (aa > 0.0 and ee > 0.0):
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False  # degenerate: kept, never pushed
    ff = d2x * rx + d2y * ry + d2z * rz
    cc = d1x * rx + d1y * ry + d1z * rz
    bb = d1x * d2x + d1y * d2y + d1z * d2z
    den = aa * ee - bb * bb
    sl = (bb * ff - cc * ee) / den if den > 0.0 else 0.0
    tl = (bb * sl + ff) / ee
    inside = den > 0.0 and sl >= 0.0 and sl <= 1.0 and tl >= 0.0 and tl <= 1.0
    s = min(max(sl, 0.0), 1.0)
    t = (bb * s + ff) / ee
    if t < 0.0:
        t = 0.0
        s = min(max(-cc / aa, 0.0), 1.0)
    elif t > 1.0:
        t = 1.0
        s = min(max((bb - cc) / aa, 0.0), 1.0)
    gx = rx + s * d1x - t * d2x
    gy = ry + s * d1y - t * d2y
    gz = rz + s * d1z - t * d2z
    return gx * gx + gy * gy + gz * gz, gx, gy, gz, s, t, inside


def _side(xs, a0, a1, b0, b1):
    """The common normal of edges a and b (a's direction cross b's, not unit), b's distance from
    a's line along it times its length, and whether they are nearly parallel."""
    d1x = xs[a1][0] - xs[a0][0]
    d1y = xs[a1][1] - xs[a0][1]
    d1z = xs[a1][2] - xs[a0][2]
    d2x = xs[b1][0] - xs[b0][0]
    d2y = xs[b1][1] - xs[b0][1]
    d2z = xs[b1][2] - xs[b0][2]
    nx = d1y * d2z - d1z * d2y
    ny = d1z * d2x - d1x * d2z
    nz = d1x * d2y - d1y * d2x
    nn = nx * nx + ny * ny + nz * nz
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    h = (xs[b0][0] - xs[a0][0]) * nx + (xs[b0][1] - xs[a0][1]) * ny + (xs[b0][2] - xs[a0][2]) * nz
    return nx, ny, nz, h, not nn > PARALLEL * aa * ee


def _push_edges(xs, xp, w, mu_l, edges_l, ea, eb, d):
    """Push edges ea and eb apart, in place on xs; whether it pushed.

    Edge b must end the substep on the side of a's line (along their common normal) it started
    on, unless it passed that line round an end of either edge rather than through the other
    edge (where the distance along the normal, linear over the substep, is zero, the lines'
    nearest points are beyond an end): so two edges cannot pass through each other, however far
    they moved. While the nearest points lie inside both edges, or b is on the wrong side, they
    go to ``d`` apart along the normal; beside each other (nearest points at an end), to ``d``
    apart along the line between those points. The four ends move by their inverse masses and
    their weights along the edges; friction cuts the relative sliding of the two points."""
    a0 = edges_l[ea][0]
    a1 = edges_l[ea][1]
    b0 = edges_l[eb][0]
    b1 = edges_l[eb][1]
    wa0 = w[a0]
    wa1 = w[a1]
    wb0 = w[b0]
    wb1 = w[b1]
    if wa0 + wa1 + wb0 + wb1 == 0.0:
        return False
    g, gx, gy, gz, s, t, inside = _segments(xs, a0, a1, b0, b1)
    nx, ny, nz, hn, parallel = _side(xs, a0, a1, b0, b1)
    normal = False
    h = 0.0
    inv = 0.0
    sgn = 1.0
    if not parallel:
        inv = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz)
        h = hn * inv
        # The side of a's line b was on at the start of the substep is the side it must end on.
        mx, my, mz, side, parallel0 = _side(xp, a0, a1, b0, b1)
        if parallel0:
            side = 0.0
        elif mx * nx + my * ny + mz * nz < 0.0:
            side = -side  # the normal turned over: the start side in today's orientation
        if (side > 0.0 and h < 0.0) or (side < 0.0 and h > 0.0):
            # Through each other's line: through each other if, where the distance along the
            # normal (linear over the substep) is zero, the lines' nearest points are on both
            # edges; else round an end.
            h0 = side / math.sqrt(mx * mx + my * my + mz * mz)
            f = h0 / (h0 - h)
            d1x = xp[a1][0] + f * (xs[a1][0] - xp[a1][0]) - (xp[a0][0] + f * (xs[a0][0] - xp[a0][0]))
            d1y = xp[a1][1] + f * (xs[a1][1] - xp[a1][1]) - (xp[a0][1] + f * (xs[a0][1] - xp[a0][1]))
            d1z = xp[a1][2] + f * (xs[a1][2] - xp[a1][2]) - (xp[a0][2] + f * (xs[a0][2] - xp[a0][2]))
            d2x = xp[b1][0] + f * (xs[b1][0] - xp[b1][0]) - (xp[b0][0] + f * (xs[b0][0] - xp[b0][0]))
            d2y = xp[b1][1] + f * (xs[b1][1] - xp[b1][1]) - (xp[b0][1] + f * (xs[b0][1] - xp[b0][1]))
            d2z = xp[b1][2] + f * (xs[b1][2] - xp[b1][2]) - (xp[b0][2] + f * (xs[b0][2] - xp[b0][2]))
            rx = xp[a0][0] + f * (xs[a0][0] - xp[a0][0]) - (xp[b0][0] + f * (xs[b0][0] - xp[b0][0]))
            ry = xp[a0][1] + f * (xs[a0][1] - xp[a0][1]) - (xp[b0][1] + f * (xs[b0][1] - xp[b0][1]))
            rz = xp[a0][2] + f * (xs[a0][2] - xp[a0][2]) - (xp[b0][2] + f * (xs[b0][2] - xp[b0][2]))
            aa = d1x * d1x + d1y * d1y + d1z * d1z
            ee = d2x * d2x + d2y * d2y + d2z * d2z
            bb = d1x * d2x + d1y * d2y + d1z * d2z
            ff = d2x * rx + d2y * ry + d2z * rz
            cc = d1x * rx + d1y * ry + d1z * rz
            den = aa * ee - bb * bb
            through = False
            if den > 0.0 and ee > 0.0:
                sl = (bb * ff - cc * ee) / den
                tl = (bb * sl + ff) / ee
                through = sl >= -THROUGH and sl <= 1.0 + THROUGH and tl >= -THROUGH and tl <= 1.0 + THROUGH
            if through:
                sgn = 1.0 if side > 0.0 else -1.0
            else:
                sgn = 1.0 if h > 0.0 else -1.0
        elif side != 0.0:
            sgn = 1.0 if side > 0.0 else -1.0
        else:
            sgn = 1.0 if h >= 0.0 else -1.0
        # Along the normal while the nearest points are inside both edges, or when b is on the
        # wrong side of a's line (it came through): back to distance d on the side it came from.
        normal = inside or sgn * h < 0.0
    if normal:
        if sgn * h >= d:
            return False
        c = sgn * h - d
        ux = sgn * nx * inv
        uy = sgn * ny * inv
        uz = sgn * nz * inv
    else:
        # Beside each other (nearest points at an end): apart along the line between them.
        if not (g < d * d and g > 0.0):
            return False
        dist = math.sqrt(g)
        c = dist - d
        ux = -gx / dist
        uy = -gy / dist
        uz = -gz / dist
    ws = (1.0 - s) * (1.0 - s) * wa0 + s * s * wa1 + (1.0 - t) * (1.0 - t) * wb0 + t * t * wb1
    if not ws > 0.0:
        return False
    dl = -c / ws
    xs[b0][0] += (1.0 - t) * wb0 * dl * ux
    xs[b0][1] += (1.0 - t) * wb0 * dl * uy
    xs[b0][2] += (1.0 - t) * wb0 * dl * uz
    xs[b1][0] += t * wb1 * dl * ux
    xs[b1][1] += t * wb1 * dl * uy
    xs[b1][2] += t * wb1 * dl * uz
    xs[a0][0] -= (1.0 - s) * wa0 * dl * ux
    xs[a0][1] -= (1.0 - s) * wa0 * dl * uy
    xs[a0][2] -= (1.0 - s) * wa0 * dl * uz
    xs[a1][0] -= s * wa1 * dl * ux
    xs[a1][1] -= s * wa1 * dl * uy
    xs[a1][2] -= s * wa1 * dl * uz
    mu = mu_l[a0]
    if not mu > 0.0:
        return True
    # Friction: b's point's motion over the substep relative to a's, across the normal, is
    # stopped (static) or cut by mu times the push (sliding).
    rx = ((1.0 - t) * (xs[b0][0] - xp[b0][0]) + t * (xs[b1][0] - xp[b1][0])) \
        - ((1.0 - s) * (xs[a0][0] - xp[a0][0]) + s * (xs[a1][0] - xp[a1][0]))
    ry = ((1.0 - t) * (xs[b0][1] - xp[b0][1]) + t * (xs[b1][1] - xp[b1][1])) \
        - ((1.0 - s) * (xs[a0][1] - xp[a0][1]) + s * (xs[a1][1] - xp[a1][1]))
    rz = ((1.0 - t) * (xs[b0][2] - xp[b0][2]) + t * (xs[b1][2] - xp[b1][2])) \
        - ((1.0 - s) * (xs[a0][2] - xp[a0][2]) + s * (xs[a1][2] - xp[a1][2]))
    rn = rx * ux + ry * uy + rz * uz
    tx = rx - rn * ux
    ty = ry - rn * uy
    tz = rz - rn * uz
    tt = math.sqrt(tx * tx + ty * ty + tz * tz)
    if not tt > 0.0:
        return True
    limit = -mu * c
    share = (limit / tt if tt > limit else 1.0) / ws
    xs[b0][0] -= (1.0 - t) * wb0 * share * tx
    xs[b0][1] -= (1.0 - t) * wb0 * share * ty
    xs[b0][2] -= (1.0 - t) * wb0 * share * tz
    xs[b1][0] -= t * wb1 * share * tx
    xs[b1][1] -= t * wb1 * share * ty
    xs[b1][2] -= t * wb1 * share * tz
    xs[a0][0] += (1.0 - s) * wa0 * share * tx
    xs[a0][1] += (1.0 - s) * wa0 * share * ty
    xs[a0][2] += (1.0 - s) * wa0 * share * tz
    xs[a1][0] += s * wa1 * share * tx
    xs[a1][1] += s * wa1 * share * ty
    xs[a1][2] += s * wa1 * share * tz
    return True
