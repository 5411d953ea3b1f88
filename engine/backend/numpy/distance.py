"""Signed distance to each shape kind, vectorised: the reference of ``backend/numba/distance.py``.

``distance(geo, s, q, r, prefer, use_prefer)`` for points q (k, 3), each in the frame of its
shape s (k,), with radii r (k,): the outward unit normal (k, 3) of the surface nearest each point,
in the shape's frame, and the depth (k,) the ball of radius r reaches into the shape (r - signed
distance; > 0 is contact; -inf where a mesh has no triangle near). ``prefer`` (k, 3): the direction
from the shape towards the point's owner, which decides between about equally near faces when
``use_prefer`` is True (bodies), so a box corner on an edge below is pushed up, not sideways.

One routine per kind; the per-point arithmetic is the compiled one's, term by term.
"""

from __future__ import annotations

import numpy as np

from ...geometry.kinds import (BOX, CAPSULE, CYLINDER, EDGE_SNAP, ENTRY_SLACK, ENTRY_TIE, FACE_NEAR, FACE_TIE, HULL,
                               MESH, PLANE, SPHERE)


def _norm3(v):
    return np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])


def _unit(v, fallback):
    length = _norm3(v)
    ok = length > 1e-12
    out = np.empty_like(v)
    out[ok] = v[ok] / length[ok, None]
    out[~ok] = fallback
    return out, length


def _signs(q):
    return np.where(q >= 0.0, 1.0, -1.0)


def box(he, q, r, f, use_prefer):
    a = np.abs(q) - he
    sign = _signs(q)
    smallest = np.minimum(he[:, 0], np.minimum(he[:, 1], he[:, 2]))
    n = np.zeros_like(q)
    depth = np.empty(len(q))
    rows = np.arange(len(q))
    outside = np.any(a > 0.0, axis=1)
    if np.any(outside):
        o = np.flatnonzero(outside)
        qo, ho = q[o], he[o]
        no, dist = _unit(qo - np.clip(qo, -ho, ho), np.array([0.0, 0.0, 1.0]))
        do = r[o] - dist
        if use_prefer:
            beyond = np.count_nonzero(a[o] > 0.0, axis=1)
            edge = (dist < EDGE_SNAP * smallest[o]) & (beyond > 1)
            if np.any(edge):
                e = o[edge]
                score = np.where(a[e] > 0.0, f[e] * sign[e] / he[e], -np.inf)
                k = np.argmax(score, axis=1)
                ne = np.zeros((len(e), 3))
                ne[np.arange(len(e)), k] = sign[e, k]
                no[edge], do[edge] = ne, r[e] - a[e, k]
        n[o], depth[o] = no, do
    inside = np.flatnonzero(~outside)
    if len(inside):
        ai = a[inside]
        top = np.max(ai, axis=1)
        if use_prefer:
            si = smallest[inside]
            second = np.sort(ai, axis=1)[:, 1]
            tol = np.where(top - second <= EDGE_SNAP * si, FACE_TIE * si,
                           np.minimum(FACE_TIE * si, FACE_NEAR * -top + EDGE_SNAP * si))
            score = np.where(ai >= (top - tol)[:, None], f[inside] * sign[inside] / he[inside], -np.inf)
            k = np.argmax(score, axis=1)
        else:
            k = np.argmax(ai, axis=1)
        ni = np.zeros((len(inside), 3))
        ni[np.arange(len(inside)), k] = sign[inside, k]
        n[inside], depth[inside] = ni, r[inside] - ai[np.arange(len(inside)), k]
    del rows
    return n, depth


def cylinder(radius, half, q, r, f, use_prefer):
    radial = np.sqrt(q[:, 0] * q[:, 0] + q[:, 1] * q[:, 1])
    side = radial - radius
    cap = np.abs(q[:, 2]) - half
    ok = radial > 1e-12
    d0 = np.where(ok, q[:, 0] / np.where(ok, radial, 1.0), 1.0)
    d1 = np.where(ok, q[:, 1] / np.where(ok, radial, 1.0), 0.0)
    z = np.where(q[:, 2] >= 0.0, 1.0, -1.0)
    if use_prefer:
        tol = 0.02 * np.minimum(radius, half)
        top = np.maximum(side, cap)
        both = (side >= top - tol) & (cap >= top - tol)
        use_side = np.where(both, (f[:, 0] * d0 + f[:, 1] * d1) / radius >= f[:, 2] * z / half, side >= cap)
    else:
        use_side = side > cap
    n = np.zeros_like(q)
    n[:, 0] = np.where(use_side, d0, 0.0)
    n[:, 1] = np.where(use_side, d1, 0.0)
    n[:, 2] = np.where(use_side, 0.0, z)
    depth = r - np.where(use_side, side, cap)
    rim = (side > 0.0) & (cap > 0.0)
    if np.any(rim):
        v = np.stack([d0[rim] * side[rim], d1[rim] * side[rim], z[rim] * cap[rim]], axis=1)
        dist = _norm3(v)
        n[rim] = v / dist[:, None]
        depth[rim] = r[rim] - dist
    return n, depth


def hull(planes, start, count, size, q, r, f, use_prefer):
    """Per point, its shape's face planes (start:start + count of ``planes`` (H, 4)) in a padded block."""
    width = int(count.max())
    idx = start[:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < count[:, None]
    idx = np.where(valid, idx, start[:, None])
    p = planes[idx]  # (k, width, 4)
    d = p[:, :, 0] * q[:, 0:1] + p[:, :, 1] * q[:, 1:2] + p[:, :, 2] * q[:, 2:3] - p[:, :, 3]
    d = np.where(valid, d, -np.inf)
    top = d.max(axis=1)
    tol = 0.02 * size if use_prefer else np.zeros(len(q))
    if use_prefer:
        score = p[:, :, 0] * f[:, 0:1] + p[:, :, 1] * f[:, 1:2] + p[:, :, 2] * f[:, 2:3]
    else:
        score = -np.broadcast_to(np.arange(width, dtype=np.float64), d.shape)
    score = np.where(valid & (d >= (top - tol)[:, None]), score, -np.inf)
    k = np.argmax(score, axis=1)
    rows = np.arange(len(q))
    pick = p[rows, k]
    return pick[:, :3].copy(), r - d[rows, k]


def closest_on_triangles(p, a, b, c):
    """The points of triangles abc (k, 3 each) closest to points p (k, 3) (Ericson 5.1.5)."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = (ab[:, 0] * ap[:, 0] + ab[:, 1] * ap[:, 1] + ab[:, 2] * ap[:, 2],
              ac[:, 0] * ap[:, 0] + ac[:, 1] * ap[:, 1] + ac[:, 2] * ap[:, 2])
    bp = p - b
    d3, d4 = (ab[:, 0] * bp[:, 0] + ab[:, 1] * bp[:, 1] + ab[:, 2] * bp[:, 2],
              ac[:, 0] * bp[:, 0] + ac[:, 1] * bp[:, 1] + ac[:, 2] * bp[:, 2])
    cp = p - c
    d5, d6 = (ab[:, 0] * cp[:, 0] + ab[:, 1] * cp[:, 1] + ab[:, 2] * cp[:, 2],
              ac[:, 0] * cp[:, 0] + ac[:, 1] * cp[:, 1] + ac[:, 2] * cp[:, 2])
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    denom = va + vb + vc
    denom = np.where(np.abs(denom) < 1e-300, 1e-300, denom)
    v = vb / denom
    w = vc / denom
    out = a + ab * v[:, None] + ac * w[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sel = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        out = np.where(sel[:, None], b + (c - b) * t[:, None], out)
        sel = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        t = d2 / (d2 - d6)
        out = np.where(sel[:, None], a + ac * t[:, None], out)
        sel = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        t = d1 / (d1 - d3)
        out = np.where(sel[:, None], a + ab * t[:, None], out)
    out = np.where(((d6 >= 0) & (d5 <= d6))[:, None], c, out)
    out = np.where(((d3 >= 0) & (d4 <= d3))[:, None], b, out)
    out = np.where(((d1 <= 0) & (d2 <= 0))[:, None], a, out)
    return out


def _cell_key(cells):
    c = cells + (1 << 20)
    return (c[..., 0] << 42) | (c[..., 1] << 21) | c[..., 2]


def mesh(geo, m, q, r):
    """Triangle meshes m (k,): the nearest triangle of the point's grid cell decides."""
    margin, triangles, vertices = geo[7][m], geo[12], geo[13]
    k = len(q)
    n = np.zeros((k, 3))
    n[:, 2] = 1.0
    depth = np.full(k, -np.inf)
    point, tri = _cell_candidates(geo, m, q)
    if not len(point):
        return n, depth
    a, b, c = (vertices[triangles[tri, j]] for j in range(3))
    closest = closest_on_triangles(q[point], a, b, c)
    normal = geo[20][tri]  # (the compiled kernel skips triangles whose plane is too far to win)
    offset = q[point] - closest
    dist = _norm3(offset)
    side = offset[:, 0] * normal[:, 0] + offset[:, 1] * normal[:, 1] + offset[:, 2] * normal[:, 2]
    signed = np.where(side >= 0.0, dist, -dist)
    order = np.lexsort((dist, point))  # per point, the nearest triangle, the first of equals
    first = np.ones(len(order), bool)
    first[1:] = point[order][1:] != point[order][:-1]
    best = order[first]
    p = point[best]
    d = signed[best]
    within = d > -margin[p]
    out = np.where((d < 1e-9)[:, None], normal[best], offset[best] / np.maximum(dist[best], 1e-300)[:, None])
    n[p[within]] = out[within]
    depth[p[within]] = r[p[within]] - d[within]
    return n, depth


def cell_slots(geo, m, key):
    """Where each cell key (k,) is among its mesh's (m (k,)) sorted cell keys, or -1 (numba's
    ``cell_slot``, for many keys at once)."""
    key_start, keys = geo[8], geo[9]
    slot = np.full(len(key), -1, np.int64)
    for mesh_id in np.unique(m):
        sel = np.flatnonzero(m == mesh_id)
        a, b = key_start[mesh_id], key_start[mesh_id + 1]
        at = a + np.searchsorted(keys[a:b], key[sel])
        ok = at < b
        ok[ok] = keys[at[ok]] == key[sel][ok]
        slot[sel[ok]] = at[ok]
    return slot


def _cell_candidates(geo, m, q):
    """Per point q (k, 3) of mesh m (k,): (point, triangle) of its grid cell's triangles, in order."""
    cell_size, ptr, tris = geo[6][m], geo[10], geo[11]
    slot = cell_slots(geo, m, _cell_key(np.floor(q / cell_size[:, None]).astype(np.int64)))
    pts = np.flatnonzero(slot >= 0)
    start, stop = ptr[slot[pts]], ptr[slot[pts] + 1]
    counts = stop - start
    point = np.repeat(pts, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return point, tris[np.repeat(start, counts) + offsets]


def triangle_normals(vertices, triangles, tri):
    a, b, c = (vertices[triangles[tri, j]] for j in range(3))
    e1, e2 = b - a, c - a
    normal = np.stack([e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1], e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
                       e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]], axis=1)
    return normal / np.maximum(_norm3(normal), 1e-300)[:, None]


def mesh_nearest(geo, m, vertices, q):
    """Per point q (k, 3) of mesh m (k,), with the mesh's vertices at ``vertices``: the nearest
    triangle of its grid cell (-1: none), the signed distance (inf: none) and the closest point."""
    k = len(q)
    tri_out, signed_out, closest_out = np.full(k, -1, np.int64), np.full(k, np.inf), np.zeros((k, 3))
    point, tri = _cell_candidates(geo, m, q)
    if not len(point):
        return tri_out, signed_out, closest_out
    triangles = geo[12]
    a, b, c = (vertices[triangles[tri, j]] for j in range(3))
    closest = closest_on_triangles(q[point], a, b, c)
    offset = q[point] - closest
    dist = _norm3(offset)
    order = np.lexsort((dist, point))
    first = np.ones(len(order), bool)
    first[1:] = point[order][1:] != point[order][:-1]
    best = order[first]
    p = point[best]
    normal = triangle_normals(vertices, triangles, tri[best])
    o = offset[best]
    side = o[:, 0] * normal[:, 0] + o[:, 1] * normal[:, 1] + o[:, 2] * normal[:, 2]
    tri_out[p] = tri[best]
    signed_out[p] = np.where(side >= 0.0, dist[best], -dist[best])
    closest_out[p] = closest[best]
    return tri_out, signed_out, closest_out


def barycentric(p, a, b, c):
    """Weights (k, 3) of a, b, c for points p on triangles abc (k, 3 each) (Ericson 3.4)."""
    v0, v1, v2 = b - a, c - a, p - a
    d00 = v0[:, 0] * v0[:, 0] + v0[:, 1] * v0[:, 1] + v0[:, 2] * v0[:, 2]
    d01 = v0[:, 0] * v1[:, 0] + v0[:, 1] * v1[:, 1] + v0[:, 2] * v1[:, 2]
    d11 = v1[:, 0] * v1[:, 0] + v1[:, 1] * v1[:, 1] + v1[:, 2] * v1[:, 2]
    d20 = v2[:, 0] * v0[:, 0] + v2[:, 1] * v0[:, 1] + v2[:, 2] * v0[:, 2]
    d21 = v2[:, 0] * v1[:, 0] + v2[:, 1] * v1[:, 1] + v2[:, 2] * v1[:, 2]
    denom = d00 * d11 - d01 * d01
    flat = np.abs(denom) < 1e-300
    safe = np.where(flat, 1.0, denom)
    v = np.where(flat, 0.0, (d11 * d20 - d01 * d21) / safe)
    w = np.where(flat, 0.0, (d00 * d21 - d01 * d20) / safe)
    return np.stack([np.where(flat, 1.0, 1.0 - v - w), v, w], axis=1)


def _motion(geo, tri, x, weights_at):
    triangles, now, before = geo[12], geo[13], geo[18]
    ia, ib, ic = triangles[tri, 0], triangles[tri, 1], triangles[tri, 2]
    ref = now if weights_at == "now" else before
    w = barycentric(x, ref[ia], ref[ib], ref[ic])
    return (w[:, 0:1] * (now[ia] - before[ia]) + w[:, 1:2] * (now[ib] - before[ib])
            + w[:, 2:3] * (now[ic] - before[ic]))


def surface_motion(geo, tri, x):
    """How far points x (k, 3) of triangles tri (k,) moved over the substep (weights at the current vertices)."""
    return _motion(geo, tri, x, "now")


def start_motion(geo, tri, x):
    """How far points x of triangles tri at the previous vertices moved to the current ones."""
    return _motion(geo, tri, x, "before")


SWEEP_CELLS = 64
EDGE_SLACK = 1e-9


def sweep_box(he, p, d):
    """Per segment p -> p + d (k, 3) against boxes of half extents he (k, 3): (hit, t, normal)."""
    k = len(p)
    t_in, t_out = np.full(k, -np.inf), np.full(k, np.inf)
    axis, sign = np.full(k, -1, np.int64), np.zeros(k)
    miss = np.zeros(k, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(3):
            h, pi, di = he[:, i], p[:, i], d[:, i]
            flat = di == 0.0
            miss |= flat & (np.abs(pi) > h)
            ta = (-h - pi) / di
            tb = (h - pi) / di
            enter = np.where(ta < tb, ta, tb)
            leave = np.where(ta < tb, tb, ta)
            better = ~flat & (enter > t_in)
            t_in = np.where(better, enter, t_in)
            axis = np.where(better, i, axis)
            sign = np.where(better, np.where(di > 0.0, -1.0, 1.0), sign)
            t_out = np.where(~flat & (leave < t_out), leave, t_out)
    hit = ~miss & (axis >= 0) & ~(t_in > t_out) & ~(t_in < 0.0) & ~(t_in > 1.0)
    n = np.zeros((k, 3))
    rows = np.flatnonzero(hit)
    n[rows, axis[rows]] = sign[rows]
    return hit, np.where(hit, t_in, 0.0), n


def sweep_hull(planes, start, count, p, d):
    k = len(p)
    t_in, t_out = np.full(k, -np.inf), np.full(k, np.inf)
    pick = np.full(k, -1, np.int64)
    miss = np.zeros(k, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(int(count.max()) if k else 0):
            valid = j < count
            idx = np.where(valid, start + j, start)
            pl = planes[idx]
            denom = pl[:, 0] * d[:, 0] + pl[:, 1] * d[:, 1] + pl[:, 2] * d[:, 2]
            num = pl[:, 3] - (pl[:, 0] * p[:, 0] + pl[:, 1] * p[:, 1] + pl[:, 2] * p[:, 2])
            flat = valid & (denom == 0.0)
            miss |= flat & (num < 0.0)
            t = num / denom
            go = valid & ~flat
            entering = go & (denom < 0.0) & (t > t_in)
            t_in = np.where(entering, t, t_in)
            pick = np.where(entering, idx, pick)
            t_out = np.where(go & ~(denom < 0.0) & (t < t_out), t, t_out)
    hit = ~miss & (pick >= 0) & ~(t_in > t_out) & ~(t_in < 0.0) & ~(t_in > 1.0)
    n = np.zeros((k, 3))
    n[:, 2] = 1.0
    n[hit] = planes[pick[hit], :3]
    return hit, np.where(hit, t_in, 0.0), n


def sweep_sphere(radius, p, d):
    a = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
    b = p[:, 0] * d[:, 0] + p[:, 1] * d[:, 1] + p[:, 2] * d[:, 2]
    c = p[:, 0] * p[:, 0] + p[:, 1] * p[:, 1] + p[:, 2] * p[:, 2] - radius * radius
    disc = b * b - a * c
    ok = (a > 0.0) & (c > 0.0) & (b < 0.0) & (disc >= 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (-b - np.sqrt(np.where(ok, disc, 0.0))) / np.where(ok, a, 1.0)
    hit = ok & (t >= 0.0) & (t <= 1.0)
    t = np.where(hit, t, 0.0)
    n = np.zeros_like(p)
    n[:, 2] = 1.0
    x = p + t[:, None] * d
    n[hit] = x[hit] / radius[hit, None]
    return hit, t, n


def _segment_triangles(vertices, triangles, tri, p, d):
    """Moller-Trumbore, front faces only, per entry (as the compiled ``_segment_triangle``): t or inf."""
    a = vertices[triangles[tri, 0]]
    e1 = vertices[triangles[tri, 1]] - a
    e2 = vertices[triangles[tri, 2]] - a
    h = np.stack([d[:, 1] * e2[:, 2] - d[:, 2] * e2[:, 1], d[:, 2] * e2[:, 0] - d[:, 0] * e2[:, 2],
                  d[:, 0] * e2[:, 1] - d[:, 1] * e2[:, 0]], axis=1)
    det = e1[:, 0] * h[:, 0] + e1[:, 1] * h[:, 1] + e1[:, 2] * h[:, 2]
    front = det > 0.0
    det = np.where(front, det, 1.0)
    s = p - a
    u = (s[:, 0] * h[:, 0] + s[:, 1] * h[:, 1] + s[:, 2] * h[:, 2]) / det
    k = np.stack([s[:, 1] * e1[:, 2] - s[:, 2] * e1[:, 1], s[:, 2] * e1[:, 0] - s[:, 0] * e1[:, 2],
                  s[:, 0] * e1[:, 1] - s[:, 1] * e1[:, 0]], axis=1)
    v = (d[:, 0] * k[:, 0] + d[:, 1] * k[:, 1] + d[:, 2] * k[:, 2]) / det
    t = (e2[:, 0] * k[:, 0] + e2[:, 1] * k[:, 1] + e2[:, 2] * k[:, 2]) / det
    ok = front & ~(u < -EDGE_SLACK) & ~(u > 1.0 + EDGE_SLACK) & ~(v < -EDGE_SLACK) & ~(u + v > 1.0 + EDGE_SLACK) \
        & ~(t < 0.0) & ~(t > 1.0)
    return np.where(ok, t, np.inf)


def sweep_mesh(geo, m, p, d):
    """Per segment p -> p + d (k, 3) against meshes m (k,): (hit, t, triangle), the first front
    face crossed among the triangles of the grid cells the segment's box covers (all the mesh's
    triangles beyond SWEEP_CELLS cells), in the compiled kernel's order, the first of equal times."""
    k = len(p)
    cell_size = geo[6][m][:, None]
    ptr, tris = geo[10], geo[11]
    lo = np.floor(np.minimum(p, p + d) / cell_size).astype(np.int64)
    hi = np.floor(np.maximum(p, p + d) / cell_size).astype(np.int64)
    span = hi - lo + 1
    count = span[:, 0] * span[:, 1] * span[:, 2]
    big = count > SWEEP_CELLS
    entries_point, entries_tri = [], []
    # Few cells: each point's cells in (x, y, z) order, each cell's triangles in order.
    small = np.flatnonzero(~big)
    cnt = count[small]
    owner = np.repeat(small, cnt)
    local = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    sy, sz = span[owner, 1], span[owner, 2]
    cells = lo[owner] + np.stack([local // (sy * sz), (local // sz) % sy, local % sz], axis=1)
    slot = cell_slots(geo, m[owner], _cell_key(cells))
    found = np.flatnonzero(slot >= 0)
    start, stop = ptr[slot[found]], ptr[slot[found] + 1]
    c = stop - start
    entries_point.append(np.repeat(owner[found], c))
    entries_tri.append(tris[np.repeat(start, c) + np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c)])
    # Many: all the mesh's triangles in order.
    many = np.flatnonzero(big)
    t0, t1 = geo[19][m[many]], geo[19][m[many] + 1]
    c = t1 - t0
    entries_point.append(np.repeat(many, c))
    entries_tri.append(np.repeat(t0, c) + np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c))
    point = np.concatenate(entries_point)
    tri = np.concatenate(entries_tri).astype(np.int64)
    hit = np.zeros(k, bool)
    t_out, tri_out = np.zeros(k), np.full(k, -1, np.int64)
    if not len(point):
        return hit, t_out, tri_out
    t = _segment_triangles(geo[13], geo[12], tri, p[point], d[point])
    order = np.lexsort((np.arange(len(point)), t, point))
    first = np.ones(len(order), bool)
    first[1:] = point[order][1:] != point[order][:-1]
    best = order[first]
    ok = np.isfinite(t[best])
    best = best[ok]
    hit[point[best]] = True
    t_out[point[best]] = t[best]
    tri_out[point[best]] = tri[best]
    return hit, t_out, tri_out


def distance(geo, s, q, r, prefer, use_prefer):
    kind, params = geo[0][s], geo[1][s]
    n = np.zeros_like(q)
    n[:, 2] = 1.0
    depth = np.full(len(q), -np.inf)
    for value in np.unique(kind):
        i = np.flatnonzero(kind == value)
        qi, ri, pi = q[i], r[i], params[i]
        if value == PLANE:
            ni = np.zeros_like(qi)
            ni[:, 2] = 1.0
            di = ri - qi[:, 2]
        elif value == SPHERE:
            ni, length = _unit(qi, np.array([0.0, 0.0, 1.0]))
            di = pi[:, 0] + ri - length
        elif value == CAPSULE:
            axis = np.zeros_like(qi)
            axis[:, 2] = np.minimum(np.maximum(qi[:, 2], -pi[:, 1]), pi[:, 1])
            ni, length = _unit(qi - axis, np.array([1.0, 0.0, 0.0]))
            di = pi[:, 0] + ri - length
        elif value == BOX:
            ni, di = box(pi[:, :3], qi, ri, prefer[i], use_prefer)
        elif value == CYLINDER:
            ni, di = cylinder(pi[:, 0], pi[:, 1], qi, ri, prefer[i], use_prefer)
        elif value == HULL:
            hs = geo[2][s[i]]
            ni, di = hull(geo[3], hs[:, 0], hs[:, 1], pi[:, 0], qi, ri, prefer[i], use_prefer)
        elif value == MESH:
            ni, di = mesh(geo, geo[5][s[i]], qi, ri)
        else:  # BOX_INTERIOR
            limit = np.maximum(pi[:, :3] - ri[:, None], 0.0)
            corr = np.minimum(np.maximum(qi, -limit), limit) - qi
            di = _norm3(corr)
            ni = np.zeros_like(qi)
            ni[:, 2] = 1.0
            ok = di > 0.0
            ni[ok] = corr[ok] / di[ok, None]
        n[i], depth[i] = ni, di
    return n, depth


def _face_dot(normals, v):
    """normals (k, f, 3) . v (k, 3) -> (k, f), the terms added in order (as compiled)."""
    return normals[:, :, 0] * v[:, None, 0] + normals[:, :, 1] * v[:, None, 1] + normals[:, :, 2] * v[:, None, 2]


def entered(geo, s, q, start, r, prefer):
    """The face a body's fixed point came in through, for points q (k, 3) inside their shape s
    (k,) now that were outside it at ``start`` (k, 3; the point at the substep's start in the
    shape's frame then): among the faces whose planes the point was beyond by more than
    ENTRY_SLACK of the shape's size at the start, the nearest (``prefer`` deciding between
    those about as near, as ``distance`` does). Returns (found (k,), normal (k, 3), depth (k,)
    with radius r); where not found (the point outside now, or inside at the start too, or a
    kind without faces) ``distance``'s answer stands.

    Why: ``distance`` takes the nearest face, and a corner that reached into a box in one
    substep can be nearer a face it never crossed. A domino's top corner lies on the next
    domino's side plane (they are as wide); falling 4 mm into its back face in a substep it was
    pushed out sideways, 0 mm, its friction held it 5 mm inside, and the row stopped leaning
    still. Entering through the back face, it is pushed back out through it.
    """
    k = len(q)
    found = np.zeros(k, bool)
    n = np.zeros((k, 3))
    n[:, 2] = 1.0
    depth = np.zeros(k)
    kind = geo[0][s]
    params = geo[1][s]
    for value in (BOX, HULL, CYLINDER):
        i = np.flatnonzero(kind == value)
        if not len(i):
            continue
        if value == BOX:
            he = params[i, :3]
            normals = np.zeros((len(i), 6, 3))
            for axis in range(3):
                normals[:, 2 * axis, axis] = 1.0
                normals[:, 2 * axis + 1, axis] = -1.0
            offset = np.repeat(he, 2, axis=1)
            now = _face_dot(normals, q[i]) - offset
            then = _face_dot(normals, start[i]) - offset
            scale = offset
            size = he.min(axis=1)
        elif value == HULL:
            hs = geo[2][s[i]]
            width = int(hs[:, 1].max())
            idx = hs[:, 0, None] + np.arange(width)[None, :]
            valid = np.arange(width)[None, :] < hs[:, 1, None]
            p = geo[3][np.where(valid, idx, hs[:, 0, None])]
            normals = p[:, :, :3]
            now = np.where(valid, _face_dot(normals, q[i]) - p[:, :, 3], -np.inf)
            then = np.where(valid, _face_dot(normals, start[i]) - p[:, :, 3], -np.inf)
            scale = np.ones(now.shape)
            size = params[i, 0]
        else:
            radius, half = params[i, 0], params[i, 1]
            qi, si = q[i], start[i]
            radial = np.sqrt(qi[:, 0] * qi[:, 0] + qi[:, 1] * qi[:, 1])
            ok = radial > 1e-12
            d0 = np.where(ok, qi[:, 0] / np.where(ok, radial, 1.0), 1.0)
            d1 = np.where(ok, qi[:, 1] / np.where(ok, radial, 1.0), 0.0)
            normals = np.zeros((len(i), 3, 3))
            normals[:, 0, 0], normals[:, 0, 1] = d0, d1
            normals[:, 1, 2], normals[:, 2, 2] = 1.0, -1.0
            now = np.stack([radial - radius, qi[:, 2] - half, -qi[:, 2] - half], axis=1)
            then = np.stack([np.sqrt(si[:, 0] * si[:, 0] + si[:, 1] * si[:, 1]) - radius, si[:, 2] - half,
                             -si[:, 2] - half], axis=1)
            scale = np.stack([radius, half, half], axis=1)
            size = np.minimum(radius, half)
        inside = now.max(axis=1) <= 0.0
        crossed = then > (ENTRY_SLACK * size)[:, None]
        use = inside & crossed.any(axis=1)
        top = np.where(crossed, now, -np.inf).max(axis=1)
        score = _face_dot(normals, prefer[i]) / scale
        near = crossed & (now >= (top - ENTRY_TIE * size)[:, None])
        pick = np.argmax(np.where(near, score, -np.inf), axis=1)
        rows = np.arange(len(i))
        found[i] = use
        n[i[use]] = normals[rows[use], pick[use]]
        depth[i[use]] = r[i[use]] - now[rows[use], pick[use]]
    return found, n, depth
