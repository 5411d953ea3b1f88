"""Signed distance to each shape kind, compiled: ``backend/numpy/distance.py`` point by point.

``distance(geo, s, q0, q1, q2, r, f0, f1, f2, use_prefer)`` for a point q (in shape ``s``'s own
frame) with radius r returns (n0, n1, n2, depth): the outward unit normal of the surface nearest
the point, in the shape frame, and how deep the ball of radius r reaches into the shape
(r - signed distance; > 0 is contact). ``prefer`` f is the direction from the shape towards the
point's owner: where two faces are about equally near (a box's corner resting on another box's
edge), the face facing that way wins, so stacks are not pushed sideways (``use_prefer`` False:
the nearest face, as for particles).

``geo`` is the shape table as a tuple of arrays (``Shapes.kernel_arrays()``).
"""

from __future__ import annotations

import math

from numba import njit

from ...geometry.kinds import BOX, BOX_INTERIOR, CAPSULE, CYLINDER, EDGE_SNAP, HULL, MESH, PLANE, SPHERE

JIT = dict(cache=True, nogil=True, error_model="numpy")
INLINE = dict(JIT, inline="always")


@njit(**INLINE)
def _unit(v0, v1, v2, fallback0, fallback1, fallback2):
    length = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    if length > 1e-12:
        return v0 / length, v1 / length, v2 / length, length
    return fallback0, fallback1, fallback2, length


@njit(**JIT)
def box(hx, hy, hz, q0, q1, q2, r, f0, f1, f2, use_prefer):
    a0 = abs(q0) - hx
    a1 = abs(q1) - hy
    a2 = abs(q2) - hz
    s0 = 1.0 if q0 >= 0.0 else -1.0
    s1 = 1.0 if q1 >= 0.0 else -1.0
    s2 = 1.0 if q2 >= 0.0 else -1.0
    smallest = min(hx, min(hy, hz))
    if a0 > 0.0 or a1 > 0.0 or a2 > 0.0:
        c0 = min(max(q0, -hx), hx)
        c1 = min(max(q1, -hy), hy)
        c2 = min(max(q2, -hz), hz)
        n0, n1, n2, dist = _unit(q0 - c0, q1 - c1, q2 - c2, 0.0, 0.0, 1.0)
        beyond = (1 if a0 > 0.0 else 0) + (1 if a1 > 0.0 else 0) + (1 if a2 > 0.0 else 0)
        if use_prefer and dist < EDGE_SNAP * smallest and beyond > 1:
            # A hair beyond an edge: the plane of the face it is beyond that faces the owner.
            best, k = -math.inf, 0
            if a0 > 0.0 and f0 * s0 / hx > best:
                best, k = f0 * s0 / hx, 0
            if a1 > 0.0 and f1 * s1 / hy > best:
                best, k = f1 * s1 / hy, 1
            if a2 > 0.0 and f2 * s2 / hz > best:
                best, k = f2 * s2 / hz, 2
            if k == 0:
                return s0, 0.0, 0.0, r - a0
            if k == 1:
                return 0.0, s1, 0.0, r - a1
            return 0.0, 0.0, s2, r - a2
        return n0, n1, n2, r - dist
    top = max(a0, max(a1, a2))
    tol = 0.25 * smallest if use_prefer else 0.0
    best, k = -math.inf, 0
    if a0 >= top - tol:
        score = f0 * s0 / hx if use_prefer else 0.0
        if score > best:
            best, k = score, 0
    if a1 >= top - tol:
        score = f1 * s1 / hy if use_prefer else 0.0
        if score > best:
            best, k = score, 1
    if a2 >= top - tol:
        score = f2 * s2 / hz if use_prefer else 0.0
        if score > best:
            best, k = score, 2
    if not use_prefer:  # the deepest face, the first of equals
        k = 0 if a0 >= top else (1 if a1 >= top else 2)
    if k == 0:
        return s0, 0.0, 0.0, r - a0
    if k == 1:
        return 0.0, s1, 0.0, r - a1
    return 0.0, 0.0, s2, r - a2


@njit(**JIT)
def cylinder(radius, half, q0, q1, q2, r, f0, f1, f2, use_prefer):
    radial = math.sqrt(q0 * q0 + q1 * q1)
    side = radial - radius
    cap = abs(q2) - half
    if radial > 1e-12:
        d0, d1 = q0 / radial, q1 / radial
    else:
        d0, d1 = 1.0, 0.0
    z = 1.0 if q2 >= 0.0 else -1.0
    if side > 0.0 and cap > 0.0:  # beyond the rim: from the nearest point of the rim circle
        v0, v1, v2 = d0 * side, d1 * side, z * cap
        dist = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
        return v0 / dist, v1 / dist, v2 / dist, r - dist
    if use_prefer:
        tol = 0.02 * min(radius, half)
        top = max(side, cap)
        use_side = True
        if side >= top - tol and cap >= top - tol:
            use_side = (f0 * d0 + f1 * d1) / radius >= f2 * z / half
        else:
            use_side = side >= cap
    else:
        use_side = side > cap
    if use_side:
        return d0, d1, 0.0, r - side
    return 0.0, 0.0, z, r - cap


@njit(**JIT)
def hull(planes, start, count, size, q0, q1, q2, r, f0, f1, f2, use_prefer):
    top = -math.inf
    for k in range(start, start + count):
        d = planes[k, 0] * q0 + planes[k, 1] * q1 + planes[k, 2] * q2 - planes[k, 3]
        if d > top:
            top = d
    tol = 0.02 * size if use_prefer else 0.0
    best, pick = -math.inf, start
    for k in range(start, start + count):
        d = planes[k, 0] * q0 + planes[k, 1] * q1 + planes[k, 2] * q2 - planes[k, 3]
        if d >= top - tol:
            score = (planes[k, 0] * f0 + planes[k, 1] * f1 + planes[k, 2] * f2) if use_prefer else -float(k)
            if score > best:
                best, pick = score, k
    d = planes[pick, 0] * q0 + planes[pick, 1] * q1 + planes[pick, 2] * q2 - planes[pick, 3]
    return planes[pick, 0], planes[pick, 1], planes[pick, 2], r - d


@njit(**INLINE)
def _cell_key(c0, c1, c2):
    return ((c0 + (1 << 20)) << 42) | ((c1 + (1 << 20)) << 21) | (c2 + (1 << 20))


@njit(**INLINE)
def cell_slot(keys, key_start, key_end, key):
    """Where ``key`` is among a mesh's sorted cell keys keys[key_start:key_end], or -1."""
    lo, hi = key_start, key_end
    while lo < hi:  # the first key >= key
        mid = (lo + hi) // 2
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < key_end and keys[lo] == key else -1


@njit(**JIT)
def closest_on_triangle(p0, p1, p2, a0, a1, a2, b0, b1, b2, c0, c1, c2):
    """The point of triangle abc closest to p (Ericson 5.1.5), as numpy's version computes it."""
    ab0, ab1, ab2 = b0 - a0, b1 - a1, b2 - a2
    ac0, ac1, ac2 = c0 - a0, c1 - a1, c2 - a2
    ap0, ap1, ap2 = p0 - a0, p1 - a1, p2 - a2
    d1 = ab0 * ap0 + ab1 * ap1 + ab2 * ap2
    d2 = ac0 * ap0 + ac1 * ap1 + ac2 * ap2
    bp0, bp1, bp2 = p0 - b0, p1 - b1, p2 - b2
    d3 = ab0 * bp0 + ab1 * bp1 + ab2 * bp2
    d4 = ac0 * bp0 + ac1 * bp1 + ac2 * bp2
    cp0, cp1, cp2 = p0 - c0, p1 - c1, p2 - c2
    d5 = ab0 * cp0 + ab1 * cp1 + ab2 * cp2
    d6 = ac0 * cp0 + ac1 * cp1 + ac2 * cp2
    if d1 <= 0.0 and d2 <= 0.0:
        return a0, a1, a2
    if d3 >= 0.0 and d4 <= d3:
        return b0, b1, b2
    if d6 >= 0.0 and d5 <= d6:
        return c0, c1, c2
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return a0 + ab0 * t, a1 + ab1 * t, a2 + ab2 * t
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        return a0 + ac0 * t, a1 + ac1 * t, a2 + ac2 * t
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return b0 + (c0 - b0) * t, b1 + (c1 - b1) * t, b2 + (c2 - b2) * t
    denom = va + vb + vc
    if abs(denom) < 1e-300:
        denom = 1e-300
    v = vb / denom
    w = vc / denom
    return a0 + ab0 * v + ac0 * w, a1 + ab1 * v + ac1 * w, a2 + ab2 * v + ac2 * w


@njit(**JIT)
def mesh(geo, m, q0, q1, q2, r):
    """A triangle mesh's signed distance: the nearest triangle registered in the point's grid
    cell decides; behind a face within the mesh's margin counts as inside."""
    cell_size, margin = geo[6][m], geo[7][m]
    key_start, key_end = geo[8][m], geo[8][m + 1]
    keys, ptr, tris, triangles, vertices = geo[9], geo[10], geo[11], geo[12], geo[13]
    key = _cell_key(int(math.floor(q0 / cell_size)), int(math.floor(q1 / cell_size)), int(math.floor(q2 / cell_size)))
    lo = cell_slot(keys, key_start, key_end, key)
    if lo < 0:
        return 0.0, 0.0, 1.0, -math.inf
    best_dist, best_signed = math.inf, 0.0
    bn0, bn1, bn2 = 0.0, 0.0, 1.0
    bo0, bo1, bo2 = 0.0, 0.0, 0.0
    for t in range(ptr[lo], ptr[lo + 1]):
        tri = tris[t]
        ia, ib, ic = triangles[tri, 0], triangles[tri, 1], triangles[tri, 2]
        a0, a1, a2 = vertices[ia, 0], vertices[ia, 1], vertices[ia, 2]
        b0, b1, b2 = vertices[ib, 0], vertices[ib, 1], vertices[ib, 2]
        c0, c1, c2 = vertices[ic, 0], vertices[ic, 1], vertices[ic, 2]
        x0, x1, x2 = closest_on_triangle(q0, q1, q2, a0, a1, a2, b0, b1, b2, c0, c1, c2)
        e10, e11, e12 = b0 - a0, b1 - a1, b2 - a2
        e20, e21, e22 = c0 - a0, c1 - a1, c2 - a2
        n0 = e11 * e22 - e12 * e21
        n1 = e12 * e20 - e10 * e22
        n2 = e10 * e21 - e11 * e20
        nl = max(math.sqrt(n0 * n0 + n1 * n1 + n2 * n2), 1e-300)
        n0, n1, n2 = n0 / nl, n1 / nl, n2 / nl
        o0, o1, o2 = q0 - x0, q1 - x1, q2 - x2
        dist = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
        if dist < best_dist:  # the first of equals, as numpy's stable sort
            best_dist = dist
            best_signed = dist if (o0 * n0 + o1 * n1 + o2 * n2) >= 0.0 else -dist
            bn0, bn1, bn2 = n0, n1, n2
            bo0, bo1, bo2 = o0, o1, o2
    if best_dist == math.inf or best_signed <= -margin:
        return 0.0, 0.0, 1.0, -math.inf
    if best_signed < 1e-9:  # behind (or on) the face: out along its normal
        return bn0, bn1, bn2, r - best_signed
    d = max(best_dist, 1e-300)
    return bo0 / d, bo1 / d, bo2 / d, r - best_signed


@njit(**JIT)
def distance(geo, s, q0, q1, q2, r, f0, f1, f2, use_prefer):
    kind, params = geo[0][s], geo[1]
    if kind == PLANE:
        return 0.0, 0.0, 1.0, r - q2
    if kind == SPHERE:
        n0, n1, n2, length = _unit(q0, q1, q2, 0.0, 0.0, 1.0)
        return n0, n1, n2, params[s, 0] + r - length
    if kind == CAPSULE:
        z = min(max(q2, -params[s, 1]), params[s, 1])
        n0, n1, n2, length = _unit(q0, q1, q2 - z, 1.0, 0.0, 0.0)
        return n0, n1, n2, params[s, 0] + r - length
    if kind == BOX:
        return box(params[s, 0], params[s, 1], params[s, 2], q0, q1, q2, r, f0, f1, f2, use_prefer)
    if kind == CYLINDER:
        return cylinder(params[s, 0], params[s, 1], q0, q1, q2, r, f0, f1, f2, use_prefer)
    if kind == HULL:
        return hull(geo[3], geo[2][s, 0], geo[2][s, 1], params[s, 0], q0, q1, q2, r, f0, f1, f2, use_prefer)
    if kind == MESH:
        return mesh(geo, geo[5][s], q0, q1, q2, r)
    # BOX_INTERIOR: kept inside; the correction is towards the inside of the (shrunk) box
    l0 = max(params[s, 0] - r, 0.0)
    l1 = max(params[s, 1] - r, 0.0)
    l2 = max(params[s, 2] - r, 0.0)
    c0 = min(max(q0, -l0), l0) - q0
    c1 = min(max(q1, -l1), l1) - q1
    c2 = min(max(q2, -l2), l2) - q2
    depth = math.sqrt(c0 * c0 + c1 * c1 + c2 * c2)
    if depth > 0.0:
        return c0 / depth, c1 / depth, c2 / depth, depth
    return 0.0, 0.0, 1.0, 0.0
