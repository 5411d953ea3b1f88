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

from ...geometry.kinds import BOX, BOX_INTERIOR, CAPSULE, CYLINDER, EDGE_SNAP, HULL, MESH, PLANE, SPHERE


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
            tol = 0.25 * smallest[inside]
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
    cell_size, margin, key_start = geo[6][m], geo[7][m], geo[8]
    keys, ptr, tris, triangles, vertices = geo[9], geo[10], geo[11], geo[12], geo[13]
    k = len(q)
    n = np.zeros((k, 3))
    n[:, 2] = 1.0
    depth = np.full(k, -np.inf)
    key = _cell_key(np.floor(q / cell_size[:, None]).astype(np.int64))
    lo, hi = key_start[m], key_start[m + 1]
    slot = np.empty(k, np.int64)
    for mesh_id in np.unique(m):
        sel = m == mesh_id
        a, b = key_start[mesh_id], key_start[mesh_id + 1]
        slot[sel] = a + np.searchsorted(keys[a:b], key[sel])
    found = (slot < hi) & (slot >= lo)
    found[found] = keys[slot[found]] == key[found]
    pts = np.flatnonzero(found)
    if not len(pts):
        return n, depth
    start, stop = ptr[slot[pts]], ptr[slot[pts] + 1]
    counts = stop - start
    point = np.repeat(pts, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    tri = tris[np.repeat(start, counts) + offsets]
    a, b, c = (vertices[triangles[tri, j]] for j in range(3))
    closest = closest_on_triangles(q[point], a, b, c)
    e1, e2 = b - a, c - a
    normal = np.stack([e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1], e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
                       e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]], axis=1)
    normal /= np.maximum(_norm3(normal), 1e-300)[:, None]
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
