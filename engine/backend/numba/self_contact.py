"""Self-collision kernels compiled with numba: the functions of ``backend/numpy/self_contact.py``
with the same arguments and the same numbers.

``find_pairs`` finds the same candidate set as the reference's brute force through a grid of
cells (a triangle's box is entered in every cell it covers, a vertex looks in every cell its box
covers; dense or hashed, see ``_bucket_boxes``), and lists each vertex's triangles in ascending
order, as the reference does; the projection is the reference's Gauss-Seidel loop, pair by pair
in that order, term by term. ``find_edge_pairs`` looks in a grid of the edges' boxes (each
entry's box stored beside it) and lists each edge's partners ascending, as the reference's brute
force does; ``find_all_pairs`` finds both kinds in one call (the pairs do not depend on the
cells, only the time does). Large cloths search on all cores in fixed chunks joined in order
(``PARALLEL_SEARCH``); the rest is serial: the same order, the same bits, every run.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

JIT = dict(cache=True, nogil=True, error_model="numpy")
# How far outside a triangle (in barycentric terms) a vertex may pass its plane and still count
# as through it: the plane distance is taken as linear over the substep, which it nearly is.
THROUGH = 0.05
# Cloths with at least this many self-colliding vertices (or edges) search their vertex-triangle
# (or edge) pairs on all cores, in SEARCH_CHUNKS chunks, each chunk's pairs then joined in order:
# the same pairs in the same order as one serial search (each vertex's or edge's partners depend
# on it alone), whatever the cores. Below it starting the threads costs more than it saves.
PARALLEL_SEARCH = 8_000
SEARCH_CHUNKS = 16
# A grid is dense (a slot for every cell of its boxes' bounds) when that is at most this many
# slots an entry, else hashed (see _bucket_boxes).
DENSE_CELLS = 4


@njit(**JIT)
def _cell(value, origin, cell):
    return int(math.floor((value - origin) / cell))


@njit(**JIT)
def _hash(i, j, k, mask):
    return ((i * 73856093) ^ (j * 19349663) ^ (k * 83492791)) & mask


@njit(inline="always", **JIT)
def _span(lo, hi, origin, cell, n):
    """The cells first..last that the side lo..hi of a box covers; within a dense grid's n cells
    (nothing lies outside them), all of them in a hashed grid (n = 0)."""
    first = _cell(lo, origin, cell)
    last = _cell(hi, origin, cell)
    if n > 0:
        first = max(first, 0)
        last = min(last, n - 1)
    return first, last


@njit(inline="always", **JIT)
def _slot(i, j, k, layout):
    """The slot of cell (i, j, k) in a grid's ``layout`` (``_bucket_boxes``): its index in a
    dense grid, its hash in a hashed one."""
    if layout[0] > 0:
        return (i * layout[1] + j) * layout[2] + k
    return _hash(i, j, k, layout[3])


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
def _finite(x, x_prev, vert):
    for k in range(vert.shape[0]):
        for a in range(3):
            if not (math.isfinite(x[vert[k], a]) and math.isfinite(x_prev[vert[k], a])):
                return False
    return True


@njit(**JIT)
def _vertex_boxes(x, x_prev, vert, vert_surface, reach):
    """Each vertex's box over the substep grown by its surface's reach, and the largest side."""
    nv = vert.shape[0]
    vlo = np.empty((nv, 3))
    vhi = np.empty((nv, 3))
    vext_max = 0.0
    for k in range(nv):
        p = vert[k]
        r = reach[vert_surface[k]]
        for a in range(3):
            vlo[k, a] = min(x[p, a], x_prev[p, a]) - r
            vhi[k, a] = max(x[p, a], x_prev[p, a]) + r
        vext_max = max(vext_max, vhi[k, 0] - vlo[k, 0], vhi[k, 1] - vlo[k, 1], vhi[k, 2] - vlo[k, 2])
    return vlo, vhi, vext_max


@njit(**JIT)
def find_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris):
    if not _finite(x, x_prev, vert):
        return np.empty(0, np.int64), np.empty(0, np.int64)  # the solver refuses the frame; nothing to find
    if tri.shape[0] == 0 or vert.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    vlo, vhi, vext_max = _vertex_boxes(x, x_prev, vert, vert_surface, reach)
    tlo, thi, origin, cell, layout, start, bucket = _grid(x, x_prev, tri, _largest(reach), vext_max)
    return _vertex_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris, vlo, vhi,
                         tlo, thi, origin, cell, layout, start, bucket)


@njit(**JIT)
def find_all_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, tri_edges, edges, edge_surface, reach,
                   near_start, near_tris, near_edge_start, near_edges):
    """``find_pairs`` and ``find_edge_pairs`` of one substep in one call: the vertices looked up
    in the grid of the triangles' boxes, the edges in that of the edges' boxes (the pairs do not
    depend on the cells)."""
    none = np.empty(0, np.int64)
    if not _finite(x, x_prev, vert):
        return none, none, none, none  # the solver refuses the frame; nothing to find
    if tri.shape[0] == 0 or vert.shape[0] == 0:
        return none, none, none, none
    vlo, vhi, vext_max = _vertex_boxes(x, x_prev, vert, vert_surface, reach)
    elo, ehi, qext_max = _edge_boxes(x, x_prev, edges, edge_surface, reach)
    tlo, thi, origin, cell, layout, start, bucket = _grid(x, x_prev, tri, _largest(reach), vext_max)
    pair_v, pair_t = _vertex_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris,
                                   vlo, vhi, tlo, thi, origin, cell, layout, start, bucket)
    if edges.shape[0] == 0:
        return pair_v, pair_t, none, none
    origin, cell, layout, start, bucket, box = _edge_grid(elo, ehi, _largest(reach), qext_max)
    pair_a, pair_b = _edge_pairs(x, x_prev, edges, edge_surface, reach, near_edge_start, near_edges, elo, ehi,
                                 origin, cell, layout, start, bucket, box)
    return pair_v, pair_t, pair_a, pair_b


@njit(**JIT)
def _largest(reach):
    r = 0.0
    for s in range(reach.shape[0]):
        r = max(r, reach[s])
    return r


@njit(inline="always", **JIT)
def _walk(lo0, lo1, lo2, hi0, hi1, hi2, tlo, thi, origin, cell, layout, start, bucket, seen, stamp, out):
    """The triangles of the grid whose boxes overlap the box (lo, hi), each once, in the grid's
    order: how many, into out (room for every triangle). A triangle is skipped once ``seen`` holds
    ``stamp`` for it (the walk sets it: a triangle is in every cell its box covers). Inlined: as a
    call (growing and returning its array) it made the searches more than twice as slow."""
    n = 0
    i0, i1 = _span(lo0, hi0, origin[0], cell, layout[0])
    j0, j1 = _span(lo1, hi1, origin[1], cell, layout[1])
    k0, k1 = _span(lo2, hi2, origin[2], cell, layout[2])
    for i in range(i0, i1 + 1):
        for j in range(j0, j1 + 1):
            for k in range(k0, k1 + 1):
                h = _slot(i, j, k, layout)
                for q in range(start[h], start[h + 1]):
                    t = bucket[q]
                    if seen[t] == stamp:
                        continue
                    seen[t] = stamp
                    if not (lo0 <= thi[t, 0] and tlo[t, 0] <= hi0 and lo1 <= thi[t, 1]
                            and tlo[t, 1] <= hi1 and lo2 <= thi[t, 2] and tlo[t, 2] <= hi2):
                        continue
                    out[n] = t
                    n += 1
    return n


@njit(**JIT)
def _motion(x, x_prev, particles):
    """How far each of the particles moved over the substep, m (by particle; 0 for the others)."""
    motion = np.zeros(x.shape[0])
    for k in range(particles.shape[0]):
        q = particles[k]
        dx = x[q, 0] - x_prev[q, 0]
        dy = x[q, 1] - x_prev[q, 1]
        dz = x[q, 2] - x_prev[q, 2]
        motion[q] = math.sqrt(dx * dx + dy * dy + dz * dz)
    return motion


@njit(**JIT)
def _vertex_pairs(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris, vlo, vhi,
                  tlo, thi, origin, cell, layout, start, bucket):
    """Each vertex's triangles through the grid of the triangles' boxes, ascending. Large cloths
    on all cores (``PARALLEL_SEARCH``)."""
    nt = tri.shape[0]
    nv = vert.shape[0]
    motion = _motion(x, x_prev, vert)
    if nv >= PARALLEL_SEARCH:
        return _vertex_pairs_parallel(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris,
                                      vlo, vhi, tlo, thi, origin, cell, layout, start, bucket, motion)
    mark = np.full(nt, -1, np.int64)
    near = np.empty(nt, np.int64)
    capacity = 64 + 2 * nv  # as a chunk's first row: searched again only in a deep pile
    while True:
        pair_v = np.empty(capacity, np.int64)
        found = np.empty(capacity, np.int64)
        count = _vertex_pairs_range(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris,
                                    vlo, vhi, tlo, thi, origin, cell, layout, start, bucket, motion, mark, near, 0, nv,
                                    pair_v, found)
        if count >= 0:
            return pair_v[:count].copy(), found[:count].copy()
        capacity *= 4
        mark[:] = -1


@njit(inline="always", **JIT)
def _insert_in_run(found, first, count, value):
    """found[first:count] (ascending) with value inserted in order at found[first:count + 1]
    (there is room)."""
    w = count
    while w > first and found[w - 1] > value:
        found[w] = found[w - 1]
        w -= 1
    found[w] = value


@njit(**JIT)
def _chunks(n):
    """The parallel search of n elements: the chunks' bounds (SEARCH_CHUNKS or fewer), their
    counts (-1: not searched yet), the first rows' length and empty rows."""
    chunks = max(1, min(n, SEARCH_CHUNKS))
    bounds = np.empty(chunks + 1, np.int64)
    for c in range(chunks + 1):
        bounds[c] = (n * c) // chunks
    empty = np.empty((chunks, 0), np.int64)
    return bounds, np.full(chunks, -1, np.int64), 64 + 2 * (n // chunks), empty, empty.copy()


@njit(**JIT)
def _regrow(out_a, out_b, counts, capacity):
    """The chunks' rows made ``capacity`` long, the pairs of the chunks done kept."""
    grown_a = np.empty((counts.shape[0], capacity), np.int64)
    grown_b = np.empty((counts.shape[0], capacity), np.int64)
    for c in range(counts.shape[0]):
        for w in range(counts[c]):
            grown_a[c, w] = out_a[c, w]
            grown_b[c, w] = out_b[c, w]
    return grown_a, grown_b


@njit(**JIT)
def _join(out_a, out_b, counts):
    """The chunks' pairs, one after the other."""
    total = 0
    for c in range(counts.shape[0]):
        total += counts[c]
    pair_a = np.empty(total, np.int64)
    pair_b = np.empty(total, np.int64)
    w = 0
    for c in range(counts.shape[0]):
        for m in range(counts[c]):
            pair_a[w] = out_a[c, m]
            pair_b[w] = out_b[c, m]
            w += 1
    return pair_a, pair_b


@njit(parallel=True, **JIT)
def _vertex_pairs_parallel(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris, vlo, vhi,
                           tlo, thi, origin, cell, layout, start, bucket, motion):
    nt = tri.shape[0]
    nv = vert.shape[0]
    bounds, counts, capacity, out_v, out_t = _chunks(nv)
    while True:  # as _edge_pairs_parallel
        out_v, out_t = _regrow(out_v, out_t, counts, capacity)
        for c in prange(bounds.shape[0] - 1):
            if counts[c] < 0:
                mark = np.full(nt, -1, np.int64)
                near = np.empty(nt, np.int64)
                counts[c] = _vertex_pairs_range(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start,
                                                near_tris, vlo, vhi, tlo, thi, origin, cell, layout, start, bucket,
                                                motion, mark, near, bounds[c], bounds[c + 1], out_v[c], out_t[c])
        if np.all(counts >= 0):
            return _join(out_v, out_t, counts)
        capacity *= 4


@njit(**JIT)
def _vertex_pairs_range(x, x_prev, tri, tri_surface, vert, vert_surface, reach, near_start, near_tris, vlo, vhi,
                        tlo, thi, origin, cell, layout, start, bucket, motion, mark, near, v_first, v_stop, pair_v,
                        found):
    """The triangles of vertices v_first to v_stop - 1 into pair_v and found (each vertex's
    ascending): how many, or -1 if they do not fit."""
    count = 0
    room = found.shape[0]
    for v in range(v_first, v_stop):
        for m in range(near_start[v], near_start[v + 1]):
            mark[near_tris[m]] = v
        s = vert_surface[v]
        p = vert[v]
        reach2 = reach[s] * reach[s]
        first = count
        # The near triangles are marked already: the walk skips them.
        n = _walk(vlo[v, 0], vlo[v, 1], vlo[v, 2], vhi[v, 0], vhi[v, 1], vhi[v, 2], tlo, thi, origin, cell,
                        layout, start, bucket, mark, v, near)
        for u in range(n):
            t = near[u]
            if tri_surface[t] != s:
                continue
            g1, s1 = _gap2(x, p, tri[t, 0], tri[t, 1], tri[t, 2])
            if not g1 < reach2:
                # Ending further from the triangle than the reach and both their motions, the
                # vertex cannot have been within the reach at the start, nor come through it:
                # most candidates stop here, before the start's distance is computed.
                m = reach[s] + motion[p] + max(motion[tri[t, 0]], motion[tri[t, 1]],
                                               motion[tri[t, 2]])
                if not g1 < m * m:
                    continue
                g0, s0 = _gap2(x_prev, p, tri[t, 0], tri[t, 1], tri[t, 2])
                if not g0 < reach2:
                    if not ((s0 > 0.0 and s1 < 0.0) or (s0 < 0.0 and s1 > 0.0)):
                        continue
            if count == room:
                return -1
            _insert_in_run(found, first, count, t)  # this vertex's run, kept ascending
            count += 1
        for w in range(first, count):
            pair_v[w] = v
    return count


@njit(**JIT)
def project(x, x_prev, inverse_masses, friction, tri, vert, pair_v, pair_t, distance, edges, pair_a, pair_b,
            edge_distance, passes):
    active = np.empty(pair_v.shape[0], np.int64)
    live = pair_v.shape[0]
    for k in range(live):
        active[k] = k
    active_e = np.empty(pair_a.shape[0], np.int64)
    live_e = pair_a.shape[0]
    for k in range(live_e):
        active_e[k] = k
    for _ in range(passes):
        # The edge pairs first, then the vertex-triangle ones, in the same pass.
        count_e = live_e
        live_e = 0
        for m in range(count_e):
            k = active_e[m]
            if _push_edges(x, x_prev, inverse_masses, friction, edges, pair_a[k], pair_b[k], edge_distance[k]):
                active_e[live_e] = k
                live_e += 1
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


# -- edge-edge ----------------------------------------------------------------------------------

# Edges more nearly parallel than this (the squared sine of the angle between them) have no side
# to keep: their common normal turns over at the smallest motion. They are held apart by distance
# alone (two parallel layers are held by their vertices against the triangles anyway).
PARALLEL = 1e-3


@njit(**JIT)
def _segments(x, a0, a1, b0, b1):
    """Segment (a0, a1) against (b0, b1) in x: the squared distance of their nearest points, the
    vector between them (a's minus b's), their parameters (s along a, t along b), and whether the
    lines' nearest points lie on both segments (then they are the segments' too)."""
    d1x = x[a1, 0] - x[a0, 0]
    d1y = x[a1, 1] - x[a0, 1]
    d1z = x[a1, 2] - x[a0, 2]
    d2x = x[b1, 0] - x[b0, 0]
    d2y = x[b1, 1] - x[b0, 1]
    d2z = x[b1, 2] - x[b0, 2]
    rx = x[a0, 0] - x[b0, 0]
    ry = x[a0, 1] - x[b0, 1]
    rz = x[a0, 2] - x[b0, 2]
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


@njit(**JIT)
def _crossed(x, x_prev, a0, a1, b0, b1):
    """Whether edge b went from one side of edge a's line to the other over the substep, along
    their common normal (the start's turned to today's orientation). Nearly parallel edges have
    no side (``_push_edges`` holds them by distance alone, within the reach), nor do edges lying
    in one plane (a flat sheet: their distance along the normal is zero)."""
    n0x, n0y, n0z, h0, p0 = _side(x_prev, a0, a1, b0, b1)
    n1x, n1y, n1z, h1, p1 = _side(x, a0, a1, b0, b1)
    if p0 or p1:
        return False
    if n0x * n1x + n0y * n1y + n0z * n1z < 0.0:
        h0 = -h0
    return (h0 > 0.0 and h1 < 0.0) or (h0 < 0.0 and h1 > 0.0)


@njit(**JIT)
def _side(x, a0, a1, b0, b1):
    """The common normal of edges a and b (a's direction cross b's, not unit), b's distance from
    a's line along it times its length, and whether they are nearly parallel."""
    d1x = x[a1, 0] - x[a0, 0]
    d1y = x[a1, 1] - x[a0, 1]
    d1z = x[a1, 2] - x[a0, 2]
    d2x = x[b1, 0] - x[b0, 0]
    d2y = x[b1, 1] - x[b0, 1]
    d2z = x[b1, 2] - x[b0, 2]
    nx = d1y * d2z - d1z * d2y
    ny = d1z * d2x - d1x * d2z
    nz = d1x * d2y - d1y * d2x
    nn = nx * nx + ny * ny + nz * nz
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    h = (x[b0, 0] - x[a0, 0]) * nx + (x[b0, 1] - x[a0, 1]) * ny + (x[b0, 2] - x[a0, 2]) * nz
    return nx, ny, nz, h, not nn > PARALLEL * aa * ee


@njit(**JIT)
def _bucket_boxes(lo, hi, origin, cell):
    """Boxes (lo, hi: (n, 3)) into a grid of cells ``cell`` wide from ``origin``: (layout, start,
    bucket), the boxes in slot h being bucket[start[h]:start[h + 1]], ascending (a box is in every
    cell it covers).

    layout (4,): the cells along x, y and z and 0 for a dense grid, whose slots are the cells of
    the boxes' bounds in order (z fastest): a cloth's neighbouring triangles then fill and read
    neighbouring memory; or 0, 0, 0 and the mask of a hashed grid (at least twice as many slots as
    entries), for boxes spread too far for a dense grid of DENSE_CELLS slots an entry."""
    n = lo.shape[0]
    # Each box's cells, first and last along x, y and z (worked out once: the floors and
    # divisions were most of the build), and how many entries they make.
    span = np.empty((n, 6), np.int64)
    entries = 0
    last = np.zeros(3, np.int64)
    for t in range(n):
        count = 1
        for a in range(3):
            first_a = _cell(lo[t, a], origin[a], cell)
            last_a = _cell(hi[t, a], origin[a], cell)
            span[t, 2 * a] = first_a
            span[t, 2 * a + 1] = last_a
            count *= last_a - first_a + 1
            if t == 0 or last_a > last[a]:
                last[a] = last_a
        entries += count
    layout = np.zeros(4, np.int64)
    # (origin lies below every box, so the first cells are never negative; in floats: a box
    # flung far away must not overflow the product.)
    cells = 1.0
    for a in range(3):
        cells *= float(last[a]) + 1.0
    if n > 0 and cells <= DENSE_CELLS * max(entries, 64):
        for a in range(3):
            layout[a] = last[a] + 1
        size = layout[0] * layout[1] * layout[2]
    else:
        size = 1
        while size < 2 * entries:
            size *= 2
        layout[3] = size - 1
    start = np.zeros(size + 1, np.int64)
    for t in range(n):
        for i in range(span[t, 0], span[t, 1] + 1):
            for j in range(span[t, 2], span[t, 3] + 1):
                for k in range(span[t, 4], span[t, 5] + 1):
                    start[_slot(i, j, k, layout) + 1] += 1
    for b in range(size):
        start[b + 1] += start[b]
    fill = start[:size].copy()
    bucket = np.empty(entries, np.int64)
    for t in range(n):
        for i in range(span[t, 0], span[t, 1] + 1):
            for j in range(span[t, 2], span[t, 3] + 1):
                for k in range(span[t, 4], span[t, 5] + 1):
                    h = _slot(i, j, k, layout)
                    bucket[fill[h]] = t
                    fill[h] += 1
    return layout, start, bucket


@njit(**JIT)
def _grid(x, x_prev, tri, reach_max, qext_max):
    """The grid of the triangles' boxes over the substep: (tlo, thi, origin, cell, layout,
    start, bucket); queries of boxes up to qext_max a side cover at most 9 cells a side."""
    nt = tri.shape[0]
    tlo = np.empty((nt, 3))
    thi = np.empty((nt, 3))
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
            origin[a] = min(origin[a], lo - reach_max)
        e = max(thi[t, 0] - tlo[t, 0], thi[t, 1] - tlo[t, 1], thi[t, 2] - tlo[t, 2])
        ext_sum += e
        ext_max = max(ext_max, e)
    # A cell about a query's size (a triangle's or edge's box grown by the reach on both sides):
    # a query then covers two or so cells a side instead of three or four (cells of a bare
    # triangle's size), and reads fewer entries that miss it. The pairs do not depend on the cells.
    cell = max(ext_sum / max(nt, 1) + 2.0 * reach_max, ext_max / 8.0, qext_max / 8.0, 1e-9)
    layout, start, bucket = _bucket_boxes(tlo, thi, origin, cell)
    return tlo, thi, origin, cell, layout, start, bucket


@njit(**JIT)
def _edge_boxes(x, x_prev, edges, edge_surface, reach):
    """Each edge's box over the substep (not grown), and the largest side of one grown by its
    surface's reach."""
    ne = edges.shape[0]
    elo = np.empty((ne, 3))
    ehi = np.empty((ne, 3))
    qext_max = 0.0
    for e in range(ne):
        r = reach[edge_surface[e]]
        for a in range(3):
            lo = min(x[edges[e, 0], a], x_prev[edges[e, 0], a], x[edges[e, 1], a], x_prev[edges[e, 1], a])
            hi = max(x[edges[e, 0], a], x_prev[edges[e, 0], a], x[edges[e, 1], a], x_prev[edges[e, 1], a])
            elo[e, a] = lo
            ehi[e, a] = hi
            qext_max = max(qext_max, hi - lo + 2.0 * r)
    return elo, ehi, qext_max


@njit(**JIT)
def find_edge_pairs(x, x_prev, tri, tri_edges, edges, edge_surface, reach, near_start, near_edges):
    if not _finite(x, x_prev, edges.ravel()):
        return np.empty(0, np.int64), np.empty(0, np.int64)  # the solver refuses the frame; nothing to find
    if edges.shape[0] == 0 or tri.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    elo, ehi, qext_max = _edge_boxes(x, x_prev, edges, edge_surface, reach)
    origin, cell, layout, start, bucket, box = _edge_grid(elo, ehi, _largest(reach), qext_max)
    return _edge_pairs(x, x_prev, edges, edge_surface, reach, near_start, near_edges, elo, ehi, origin, cell, layout,
                       start, bucket, box)


@njit(**JIT)
def _edge_grid(elo, ehi, reach_max, qext_max):
    """The grid of the edges' boxes over the substep: (origin, cell, layout, start, bucket,
    box), each entry's box (lo, hi) stored beside it (read in order, not through the edge)."""
    ne = elo.shape[0]
    origin = np.full(3, np.inf)
    ext_sum = 0.0
    for e in range(ne):
        for a in range(3):
            origin[a] = min(origin[a], elo[e, a] - reach_max)
        ext_sum += max(ehi[e, 0] - elo[e, 0], ehi[e, 1] - elo[e, 1], ehi[e, 2] - elo[e, 2])
    # A cell about a query's size (an edge's box grown by the reach on both sides), as _grid's.
    cell = max(ext_sum / max(ne, 1) + 2.0 * reach_max, qext_max / 8.0, 1e-9)
    layout, start, bucket = _bucket_boxes(elo, ehi, origin, cell)
    box = np.empty((bucket.shape[0], 6))
    for q in range(bucket.shape[0]):
        e = bucket[q]
        for a in range(3):
            box[q, a] = elo[e, a]
            box[q, 3 + a] = ehi[e, a]
    return origin, cell, layout, start, bucket, box


@njit(**JIT)
def _edge_pairs(x, x_prev, edges, edge_surface, reach, near_start, near_edges, elo, ehi, origin, cell, layout, start,
                bucket, box):
    """Each edge's partners through the grid of the edges' boxes (``_edge_grid``): an entry of a
    lower edge is passed over before its box is read (each pair from its lower edge), the box read
    beside the entry; ``mark`` keeps each partner once (an edge is in every cell its box covers).
    Large cloths on all cores (``PARALLEL_SEARCH``)."""
    ne = edges.shape[0]
    motion = _motion(x, x_prev, edges.ravel())
    if ne >= PARALLEL_SEARCH:
        return _edge_pairs_parallel(x, x_prev, edges, edge_surface, reach, near_start, near_edges, elo, ehi, origin,
                                    cell, layout, start, bucket, box, motion)
    mark = np.full(ne, -1, np.int64)
    capacity = 64 + 2 * ne  # as a chunk's first row: searched again only in a deep pile
    while True:
        pair_a = np.empty(capacity, np.int64)
        found = np.empty(capacity, np.int64)
        count = _edge_pairs_range(x, x_prev, edges, edge_surface, reach, near_start, near_edges, elo, ehi, origin,
                                  cell, layout, start, bucket, box, motion, mark, 0, ne, pair_a, found)
        if count >= 0:
            return pair_a[:count].copy(), found[:count].copy()
        capacity *= 4
        mark[:] = -1


@njit(parallel=True, **JIT)
def _edge_pairs_parallel(x, x_prev, edges, edge_surface, reach, near_start, near_edges, elo, ehi, origin, cell, layout,
                         start, bucket, box, motion):
    ne = edges.shape[0]
    bounds, counts, capacity, out_a, out_b = _chunks(ne)
    # A chunk that finds more pairs than its row holds is searched again with rows four times
    # longer (rare: a cloth piled in many layers); the chunks done keep theirs.
    while True:
        out_a, out_b = _regrow(out_a, out_b, counts, capacity)
        for c in prange(bounds.shape[0] - 1):
            if counts[c] < 0:
                mark = np.full(ne, -1, np.int64)
                counts[c] = _edge_pairs_range(x, x_prev, edges, edge_surface, reach, near_start, near_edges, elo,
                                              ehi, origin, cell, layout, start, bucket, box, motion, mark, bounds[c],
                                              bounds[c + 1], out_a[c], out_b[c])
        if np.all(counts >= 0):
            return _join(out_a, out_b, counts)
        capacity *= 4


@njit(**JIT)
def _edge_pairs_range(x, x_prev, edges, edge_surface, reach, near_start, near_edges, elo, ehi, origin, cell, layout,
                      start, bucket, box, motion, mark, e_first, e_stop, pair_a, found):
    """The partners of edges e_first to e_stop - 1 into pair_a and found (each edge's ascending):
    how many, or -1 if they do not fit."""
    count = 0
    room = found.shape[0]
    for e in range(e_first, e_stop):
        for m in range(near_start[e], near_start[e + 1]):
            mark[near_edges[m]] = e
        s = edge_surface[e]
        r = reach[s]
        reach2 = r * r
        a0 = edges[e, 0]
        a1 = edges[e, 1]
        qlo0 = elo[e, 0] - r
        qlo1 = elo[e, 1] - r
        qlo2 = elo[e, 2] - r
        qhi0 = ehi[e, 0] + r
        qhi1 = ehi[e, 1] + r
        qhi2 = ehi[e, 2] + r
        first = count
        i0, i1 = _span(qlo0, qhi0, origin[0], cell, layout[0])
        j0, j1 = _span(qlo1, qhi1, origin[1], cell, layout[1])
        k0, k1 = _span(qlo2, qhi2, origin[2], cell, layout[2])
        for i in range(i0, i1 + 1):
            for j in range(j0, j1 + 1):
                for k in range(k0, k1 + 1):
                    h = _slot(i, j, k, layout)
                    # A cell's entries ascend: read from the top down to this edge's own.
                    for q in range(start[h + 1] - 1, start[h] - 1, -1):
                        f = bucket[q]
                        # Each pair once, from its lower edge; never an edge sharing a corner.
                        if f <= e:
                            break
                        if not (qlo0 <= box[q, 3] and box[q, 0] <= qhi0 and qlo1 <= box[q, 4]
                                and box[q, 1] <= qhi1 and qlo2 <= box[q, 5] and box[q, 2] <= qhi2):
                            continue
                        if mark[f] == e:
                            continue
                        mark[f] = e
                        if edge_surface[f] != s:
                            continue
                        b0 = edges[f, 0]
                        b1 = edges[f, 1]
                        if b0 == a0 or b0 == a1 or b1 == a0 or b1 == a1:
                            continue
                        g1 = _segments(x, a0, a1, b0, b1)[0]
                        if not g1 < reach2:
                            # Ending further apart than the reach and both their motions, they
                            # were not within it at the start, nor passed through each other.
                            mv = r + max(motion[a0], motion[a1]) + max(motion[b0], motion[b1])
                            if not g1 < mv * mv:
                                continue
                            g0 = _segments(x_prev, a0, a1, b0, b1)[0]
                            if not g0 < reach2:
                                if not _crossed(x, x_prev, a0, a1, b0, b1):
                                    continue
                        if count == room:
                            return -1
                        _insert_in_run(found, first, count, f)  # this edge's run, kept ascending
                        count += 1
        for w in range(first, count):
            pair_a[w] = e
    return count


@njit(**JIT)
def _push_edges(x, x_prev, inverse_masses, friction, edges, ea, eb, d):
    """Push edges ea and eb apart (see the reference); whether it pushed."""
    a0 = edges[ea, 0]
    a1 = edges[ea, 1]
    b0 = edges[eb, 0]
    b1 = edges[eb, 1]
    wa0 = inverse_masses[a0]
    wa1 = inverse_masses[a1]
    wb0 = inverse_masses[b0]
    wb1 = inverse_masses[b1]
    if wa0 + wa1 + wb0 + wb1 == 0.0:
        return False
    g, gx, gy, gz, s, t, inside = _segments(x, a0, a1, b0, b1)
    nx, ny, nz, hn, parallel = _side(x, a0, a1, b0, b1)
    normal = False
    h = 0.0
    inv = 0.0
    sgn = 1.0
    if not parallel:
        inv = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz)
        h = hn * inv
        # The side of a's line b was on at the start of the substep is the side it must end on.
        mx, my, mz, side, parallel0 = _side(x_prev, a0, a1, b0, b1)
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
            d1x = x_prev[a1, 0] + f * (x[a1, 0] - x_prev[a1, 0]) - (x_prev[a0, 0] + f * (x[a0, 0] - x_prev[a0, 0]))
            d1y = x_prev[a1, 1] + f * (x[a1, 1] - x_prev[a1, 1]) - (x_prev[a0, 1] + f * (x[a0, 1] - x_prev[a0, 1]))
            d1z = x_prev[a1, 2] + f * (x[a1, 2] - x_prev[a1, 2]) - (x_prev[a0, 2] + f * (x[a0, 2] - x_prev[a0, 2]))
            d2x = x_prev[b1, 0] + f * (x[b1, 0] - x_prev[b1, 0]) - (x_prev[b0, 0] + f * (x[b0, 0] - x_prev[b0, 0]))
            d2y = x_prev[b1, 1] + f * (x[b1, 1] - x_prev[b1, 1]) - (x_prev[b0, 1] + f * (x[b0, 1] - x_prev[b0, 1]))
            d2z = x_prev[b1, 2] + f * (x[b1, 2] - x_prev[b1, 2]) - (x_prev[b0, 2] + f * (x[b0, 2] - x_prev[b0, 2]))
            rx = x_prev[a0, 0] + f * (x[a0, 0] - x_prev[a0, 0]) - (x_prev[b0, 0] + f * (x[b0, 0] - x_prev[b0, 0]))
            ry = x_prev[a0, 1] + f * (x[a0, 1] - x_prev[a0, 1]) - (x_prev[b0, 1] + f * (x[b0, 1] - x_prev[b0, 1]))
            rz = x_prev[a0, 2] + f * (x[a0, 2] - x_prev[a0, 2]) - (x_prev[b0, 2] + f * (x[b0, 2] - x_prev[b0, 2]))
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
    x[b0, 0] += (1.0 - t) * wb0 * dl * ux
    x[b0, 1] += (1.0 - t) * wb0 * dl * uy
    x[b0, 2] += (1.0 - t) * wb0 * dl * uz
    x[b1, 0] += t * wb1 * dl * ux
    x[b1, 1] += t * wb1 * dl * uy
    x[b1, 2] += t * wb1 * dl * uz
    x[a0, 0] -= (1.0 - s) * wa0 * dl * ux
    x[a0, 1] -= (1.0 - s) * wa0 * dl * uy
    x[a0, 2] -= (1.0 - s) * wa0 * dl * uz
    x[a1, 0] -= s * wa1 * dl * ux
    x[a1, 1] -= s * wa1 * dl * uy
    x[a1, 2] -= s * wa1 * dl * uz
    mu = friction[a0]
    if not mu > 0.0:
        return True
    # Friction: b's point's motion over the substep relative to a's, across the normal, is
    # stopped (static) or cut by mu times the push (sliding).
    rx = ((1.0 - t) * (x[b0, 0] - x_prev[b0, 0]) + t * (x[b1, 0] - x_prev[b1, 0])) \
        - ((1.0 - s) * (x[a0, 0] - x_prev[a0, 0]) + s * (x[a1, 0] - x_prev[a1, 0]))
    ry = ((1.0 - t) * (x[b0, 1] - x_prev[b0, 1]) + t * (x[b1, 1] - x_prev[b1, 1])) \
        - ((1.0 - s) * (x[a0, 1] - x_prev[a0, 1]) + s * (x[a1, 1] - x_prev[a1, 1]))
    rz = ((1.0 - t) * (x[b0, 2] - x_prev[b0, 2]) + t * (x[b1, 2] - x_prev[b1, 2])) \
        - ((1.0 - s) * (x[a0, 2] - x_prev[a0, 2]) + s * (x[a1, 2] - x_prev[a1, 2]))
    rn = rx * ux + ry * uy + rz * uz
    tx = rx - rn * ux
    ty = ry - rn * uy
    tz = rz - rn * uz
    tt = math.sqrt(tx * tx + ty * ty + tz * tz)
    if not tt > 0.0:
        return True
    limit = -mu * c
    share = (limit / tt if tt > limit else 1.0) / ws
    x[b0, 0] -= (1.0 - t) * wb0 * share * tx
    x[b0, 1] -= (1.0 - t) * wb0 * share * ty
    x[b0, 2] -= (1.0 - t) * wb0 * share * tz
    x[b1, 0] -= t * wb1 * share * tx
    x[b1, 1] -= t * wb1 * share * ty
    x[b1, 2] -= t * wb1 * share * tz
    x[a0, 0] += (1.0 - s) * wa0 * share * tx
    x[a0, 1] += (1.0 - s) * wa0 * share * ty
    x[a0, 2] += (1.0 - s) * wa0 * share * tz
    x[a1, 0] += s * wa1 * share * tx
    x[a1, 1] += s * wa1 * share * ty
    x[a1, 2] += s * wa1 * share * tz
    return True
