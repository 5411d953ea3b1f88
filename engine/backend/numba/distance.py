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

from ...geometry.kinds import (BOX, CAPSULE, CYLINDER, EDGE_SNAP, ENTRY_SLACK, ENTRY_TIE, FACE_NEAR, FACE_TIE, HULL,
                               MESH, PLANE, SPHERE)

# No reference counting (_nrt=False): these are helpers called per point or feature, and none
# makes an array. With it, each call of one that takes the shape table (22 arrays) counted a
# reference to every array on entry and back on exit, atomically: about 2 us a call, a thousand
# times the arithmetic of a plane test (particle_contacts spent 1.6 us on each cloth vertex over a
# plane). The caller holds the arrays meanwhile, so nothing can free them.
JIT = dict(cache=True, nogil=True, error_model="numpy", _nrt=False)
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
    # (see FACE_TIE: faces about as near as the nearest, not a quarter of the box deeper, unless
    # the point is at an edge: the corners of a box sunk into one it is aligned with)
    tol = 0.0
    if use_prefer:
        second = max(min(a0, a1), min(max(a0, a1), a2))  # the middle one, exactly (numpy sorts)
        tol = FACE_TIE * smallest if top - second <= EDGE_SNAP * smallest else \
            min(FACE_TIE * smallest, FACE_NEAR * -top + EDGE_SNAP * smallest)
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
    keys, ptr, tris, triangles, vertices, normals = geo[9], geo[10], geo[11], geo[12], geo[13], geo[20]
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
        n0, n1, n2 = normals[tri, 0], normals[tri, 1], normals[tri, 2]
        # The distance to the triangle is at least the distance to its plane: a triangle whose
        # plane is farther than the best so far (by more than rounding) cannot win, so its
        # closest point is not worked out (the same choice, fewer operations).
        plane = abs((q0 - a0) * n0 + (q1 - a1) * n1 + (q2 - a2) * n2)
        if plane > best_dist * (1.0 + 1e-9) + 1e-9:
            continue
        b0, b1, b2 = vertices[ib, 0], vertices[ib, 1], vertices[ib, 2]
        c0, c1, c2 = vertices[ic, 0], vertices[ic, 1], vertices[ic, 2]
        x0, x1, x2 = closest_on_triangle(q0, q1, q2, a0, a1, a2, b0, b1, b2, c0, c1, c2)
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
def triangle_normal(vertices, triangles, tri):
    """Unit normal of triangle ``tri`` (as ``shapes.face_normals`` computes it)."""
    ia, ib, ic = triangles[tri, 0], triangles[tri, 1], triangles[tri, 2]
    e10, e11, e12 = (vertices[ib, 0] - vertices[ia, 0], vertices[ib, 1] - vertices[ia, 1],
                     vertices[ib, 2] - vertices[ia, 2])
    e20, e21, e22 = (vertices[ic, 0] - vertices[ia, 0], vertices[ic, 1] - vertices[ia, 1],
                     vertices[ic, 2] - vertices[ia, 2])
    n0 = e11 * e22 - e12 * e21
    n1 = e12 * e20 - e10 * e22
    n2 = e10 * e21 - e11 * e20
    nl = max(math.sqrt(n0 * n0 + n1 * n1 + n2 * n2), 1e-300)
    return n0 / nl, n1 / nl, n2 / nl


@njit(**JIT)
def mesh_nearest(geo, m, vertices, q0, q1, q2):
    """The nearest triangle of mesh m's grid cell to q, the mesh's vertices at ``vertices`` (the
    current ones, or the previous substep's): (triangle or -1, signed distance (inf: none in the
    cell), closest point). Only where a substep's motion matters (the start of a sweep, a
    deforming surface's motion), so nothing is skipped."""
    cell_size = geo[6][m]
    key_start, key_end = geo[8][m], geo[8][m + 1]
    keys, ptr, tris, triangles = geo[9], geo[10], geo[11], geo[12]
    key = _cell_key(int(math.floor(q0 / cell_size)), int(math.floor(q1 / cell_size)), int(math.floor(q2 / cell_size)))
    lo = cell_slot(keys, key_start, key_end, key)
    best_tri, best_dist, best_signed = -1, math.inf, math.inf
    bx0, bx1, bx2 = 0.0, 0.0, 0.0
    if lo < 0:
        return best_tri, best_signed, bx0, bx1, bx2
    for t in range(ptr[lo], ptr[lo + 1]):
        tri = tris[t]
        ia, ib, ic = triangles[tri, 0], triangles[tri, 1], triangles[tri, 2]
        x0, x1, x2 = closest_on_triangle(q0, q1, q2, vertices[ia, 0], vertices[ia, 1], vertices[ia, 2],
                                         vertices[ib, 0], vertices[ib, 1], vertices[ib, 2],
                                         vertices[ic, 0], vertices[ic, 1], vertices[ic, 2])
        o0, o1, o2 = q0 - x0, q1 - x1, q2 - x2
        dist = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
        if dist < best_dist:
            n0, n1, n2 = triangle_normal(vertices, triangles, tri)
            best_tri, best_dist = tri, dist
            best_signed = dist if (o0 * n0 + o1 * n1 + o2 * n2) >= 0.0 else -dist
            bx0, bx1, bx2 = x0, x1, x2
    return best_tri, best_signed, bx0, bx1, bx2


@njit(**JIT)
def barycentric(p0, p1, p2, a0, a1, a2, b0, b1, b2, c0, c1, c2):
    """Weights (u, v, w) of a, b, c for point p on triangle abc (Ericson 3.4)."""
    v00, v01, v02 = b0 - a0, b1 - a1, b2 - a2
    v10, v11, v12 = c0 - a0, c1 - a1, c2 - a2
    v20, v21, v22 = p0 - a0, p1 - a1, p2 - a2
    d00 = v00 * v00 + v01 * v01 + v02 * v02
    d01 = v00 * v10 + v01 * v11 + v02 * v12
    d11 = v10 * v10 + v11 * v11 + v12 * v12
    d20 = v20 * v00 + v21 * v01 + v22 * v02
    d21 = v20 * v10 + v21 * v11 + v22 * v12
    denom = d00 * d11 - d01 * d01
    if abs(denom) < 1e-300:
        return 1.0, 0.0, 0.0
    v = (d11 * d20 - d01 * d21) / denom
    w = (d00 * d21 - d01 * d20) / denom
    return 1.0 - v - w, v, w


@njit(**JIT)
def surface_motion(geo, tri, x0, x1, x2):
    """How far the point (x0, x1, x2) of triangle ``tri`` moved over the substep with its
    vertices (vertices_prev -> vertices, the weights taken at the current ones)."""
    triangles, now, before = geo[12], geo[13], geo[18]
    ia, ib, ic = triangles[tri, 0], triangles[tri, 1], triangles[tri, 2]
    u, v, w = barycentric(x0, x1, x2, now[ia, 0], now[ia, 1], now[ia, 2], now[ib, 0], now[ib, 1], now[ib, 2],
                          now[ic, 0], now[ic, 1], now[ic, 2])
    d0 = u * (now[ia, 0] - before[ia, 0]) + v * (now[ib, 0] - before[ib, 0]) + w * (now[ic, 0] - before[ic, 0])
    d1 = u * (now[ia, 1] - before[ia, 1]) + v * (now[ib, 1] - before[ib, 1]) + w * (now[ic, 1] - before[ic, 1])
    d2 = u * (now[ia, 2] - before[ia, 2]) + v * (now[ib, 2] - before[ib, 2]) + w * (now[ic, 2] - before[ic, 2])
    return d0, d1, d2


@njit(**JIT)
def start_motion(geo, tri, x0, x1, x2):
    """How far the point (x0, x1, x2) of triangle ``tri`` at the previous substep's vertices moved
    to the current ones (the weights taken at the previous ones)."""
    triangles, now, before = geo[12], geo[13], geo[18]
    ia, ib, ic = triangles[tri, 0], triangles[tri, 1], triangles[tri, 2]
    u, v, w = barycentric(x0, x1, x2, before[ia, 0], before[ia, 1], before[ia, 2], before[ib, 0], before[ib, 1],
                          before[ib, 2], before[ic, 0], before[ic, 1], before[ic, 2])
    d0 = u * (now[ia, 0] - before[ia, 0]) + v * (now[ib, 0] - before[ib, 0]) + w * (now[ic, 0] - before[ic, 0])
    d1 = u * (now[ia, 1] - before[ia, 1]) + v * (now[ib, 1] - before[ib, 1]) + w * (now[ic, 1] - before[ic, 1])
    d2 = u * (now[ia, 2] - before[ia, 2]) + v * (now[ib, 2] - before[ib, 2]) + w * (now[ic, 2] - before[ic, 2])
    return d0, d1, d2


# Sweeps (continuous collision of points): the first time t in [0, 1] at which the segment
# p -> p + d (in the shape's frame) enters the shape from outside, and the outward normal of the
# face it enters through; (False, ...) when it does not. A segment's box over more cells of a
# mesh's grid than this is tested against all the mesh's triangles instead.
SWEEP_CELLS = 64
EDGE_SLACK = 1e-9  # barycentric slack: a point crossing exactly on an edge hits a triangle


@njit(**JIT)
def sweep_box(hx, hy, hz, p0, p1, p2, d0, d1, d2):
    t_in, t_out, axis, sign = -math.inf, math.inf, -1, 0.0
    for i in range(3):
        h = hx if i == 0 else (hy if i == 1 else hz)
        p = p0 if i == 0 else (p1 if i == 1 else p2)
        d = d0 if i == 0 else (d1 if i == 1 else d2)
        if d == 0.0:
            if abs(p) > h:
                return False, 0.0, 0.0, 0.0, 1.0
            continue
        ta = (-h - p) / d
        tb = (h - p) / d
        enter, leave = (ta, tb) if ta < tb else (tb, ta)
        if enter > t_in:
            t_in, axis, sign = enter, i, (-1.0 if d > 0.0 else 1.0)
        if leave < t_out:
            t_out = leave
    if axis < 0 or t_in > t_out or t_in < 0.0 or t_in > 1.0:
        return False, 0.0, 0.0, 0.0, 1.0
    return True, t_in, sign if axis == 0 else 0.0, sign if axis == 1 else 0.0, sign if axis == 2 else 0.0


@njit(**JIT)
def sweep_hull(planes, start, count, p0, p1, p2, d0, d1, d2):
    t_in, t_out, pick = -math.inf, math.inf, -1
    for k in range(start, start + count):
        denom = planes[k, 0] * d0 + planes[k, 1] * d1 + planes[k, 2] * d2
        num = planes[k, 3] - (planes[k, 0] * p0 + planes[k, 1] * p1 + planes[k, 2] * p2)
        if denom == 0.0:
            if num < 0.0:
                return False, 0.0, 0.0, 0.0, 1.0
            continue
        t = num / denom
        if denom < 0.0:
            if t > t_in:
                t_in, pick = t, k
        elif t < t_out:
            t_out = t
    if pick < 0 or t_in > t_out or t_in < 0.0 or t_in > 1.0:
        return False, 0.0, 0.0, 0.0, 1.0
    return True, t_in, planes[pick, 0], planes[pick, 1], planes[pick, 2]


@njit(**JIT)
def sweep_sphere(radius, p0, p1, p2, d0, d1, d2):
    a = d0 * d0 + d1 * d1 + d2 * d2
    b = p0 * d0 + p1 * d1 + p2 * d2
    c = p0 * p0 + p1 * p1 + p2 * p2 - radius * radius
    disc = b * b - a * c
    if a <= 0.0 or c <= 0.0 or b >= 0.0 or disc < 0.0:
        return False, 0.0, 0.0, 0.0, 1.0
    t = (-b - math.sqrt(disc)) / a
    if t < 0.0 or t > 1.0:
        return False, 0.0, 0.0, 0.0, 1.0
    return True, t, (p0 + t * d0) / radius, (p1 + t * d1) / radius, (p2 + t * d2) / radius


@njit(**INLINE)
def _segment_triangle(vertices, triangles, tri, p0, p1, p2, d0, d1, d2):
    """Moller-Trumbore, front faces only (the segment moving against the face's normal): t or inf."""
    ia, ib, ic = triangles[tri, 0], triangles[tri, 1], triangles[tri, 2]
    a0, a1, a2 = vertices[ia, 0], vertices[ia, 1], vertices[ia, 2]
    e10, e11, e12 = vertices[ib, 0] - a0, vertices[ib, 1] - a1, vertices[ib, 2] - a2
    e20, e21, e22 = vertices[ic, 0] - a0, vertices[ic, 1] - a1, vertices[ic, 2] - a2
    h0 = d1 * e22 - d2 * e21
    h1 = d2 * e20 - d0 * e22
    h2 = d0 * e21 - d1 * e20
    det = e10 * h0 + e11 * h1 + e12 * h2
    if not det > 0.0:
        return math.inf
    s0, s1, s2 = p0 - a0, p1 - a1, p2 - a2
    u = (s0 * h0 + s1 * h1 + s2 * h2) / det
    if u < -EDGE_SLACK or u > 1.0 + EDGE_SLACK:
        return math.inf
    k0 = s1 * e12 - s2 * e11
    k1 = s2 * e10 - s0 * e12
    k2 = s0 * e11 - s1 * e10
    v = (d0 * k0 + d1 * k1 + d2 * k2) / det
    if v < -EDGE_SLACK or u + v > 1.0 + EDGE_SLACK:
        return math.inf
    t = (e20 * k0 + e21 * k1 + e22 * k2) / det
    if t < 0.0 or t > 1.0:
        return math.inf
    return t


@njit(**JIT)
def sweep_mesh(geo, m, p0, p1, p2, d0, d1, d2):
    """The first front face of mesh m that the segment crosses: (hit, t, triangle), testing the
    triangles of the grid cells the segment's box covers (in order; the first of equal times)."""
    cell_size = geo[6][m]
    key_start, key_end = geo[8][m], geo[8][m + 1]
    keys, ptr, tris, triangles, vertices = geo[9], geo[10], geo[11], geo[12], geo[13]
    lo0 = int(math.floor(min(p0, p0 + d0) / cell_size))
    lo1 = int(math.floor(min(p1, p1 + d1) / cell_size))
    lo2 = int(math.floor(min(p2, p2 + d2) / cell_size))
    hi0 = int(math.floor(max(p0, p0 + d0) / cell_size))
    hi1 = int(math.floor(max(p1, p1 + d1) / cell_size))
    hi2 = int(math.floor(max(p2, p2 + d2) / cell_size))
    best_t, best_tri = math.inf, -1
    if (hi0 - lo0 + 1) * (hi1 - lo1 + 1) * (hi2 - lo2 + 1) > SWEEP_CELLS:
        for tri in range(geo[19][m], geo[19][m + 1]):
            t = _segment_triangle(vertices, triangles, tri, p0, p1, p2, d0, d1, d2)
            if t < best_t:
                best_t, best_tri = t, tri
    else:
        for i in range(lo0, hi0 + 1):
            for j in range(lo1, hi1 + 1):
                for k in range(lo2, hi2 + 1):
                    slot = cell_slot(keys, key_start, key_end, _cell_key(i, j, k))
                    if slot < 0:
                        continue
                    for e in range(ptr[slot], ptr[slot + 1]):
                        tri = tris[e]
                        t = _segment_triangle(vertices, triangles, tri, p0, p1, p2, d0, d1, d2)
                        if t < best_t:
                            best_t, best_tri = t, tri
    return best_tri >= 0, best_t, best_tri


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


@njit(**INLINE)
def _entry_face(now, then, n0, n1, n2, scale, f0, f1, f2, slack, best_now, best_score, tie, pick, k, p0, p1, p2):
    """One face's turn in ``entered``'s two passes: with tie < 0 the first (the nearest crossed
    face's plane value), else the second (the face facing the owner among those within tie)."""
    if then <= slack:
        return best_now, best_score, pick, p0, p1, p2
    if tie < 0.0:
        return max(best_now, now), best_score, pick, p0, p1, p2
    if now >= best_now - tie:
        score = (n0 * f0 + n1 * f1 + n2 * f2) / scale
        if score > best_score:
            return best_now, score, k, n0, n1, n2
    return best_now, best_score, pick, p0, p1, p2


@njit(**JIT)
def entered(geo, s, q0, q1, q2, s0, s1, s2, r, f0, f1, f2):
    """``backend/numpy/distance.py``'s ``entered`` for one point q, at s0..s2 at the substep's
    start: (found, n0, n1, n2, depth)."""
    kind, params = geo[0][s], geo[1]
    if kind == BOX:
        hx, hy, hz = params[s, 0], params[s, 1], params[s, 2]
        if abs(q0) > hx or abs(q1) > hy or abs(q2) > hz:
            return False, 0.0, 0.0, 1.0, 0.0
        slack = ENTRY_SLACK * min(hx, min(hy, hz))
        tie = ENTRY_TIE * min(hx, min(hy, hz))
        top, best = -math.inf, -math.inf
        pick, n0, n1, n2 = -1, 0.0, 0.0, 1.0
        for rnd in range(2):
            t = -1.0 if rnd == 0 else tie
            b = top
            for face in range(6):
                axis, sign = face // 2, 1.0 if face % 2 == 0 else -1.0
                h = hx if axis == 0 else (hy if axis == 1 else hz)
                qa = q0 if axis == 0 else (q1 if axis == 1 else q2)
                sa = s0 if axis == 0 else (s1 if axis == 1 else s2)
                e0 = sign if axis == 0 else 0.0
                e1 = sign if axis == 1 else 0.0
                e2 = sign if axis == 2 else 0.0
                b, best, pick, n0, n1, n2 = _entry_face(sign * qa - h, sign * sa - h, e0, e1, e2, h, f0, f1, f2,
                                                        slack, b, best, t, pick, face, n0, n1, n2)
            top = b
        if pick < 0:
            return False, 0.0, 0.0, 1.0, 0.0
        axis, sign = pick // 2, 1.0 if pick % 2 == 0 else -1.0
        h = hx if axis == 0 else (hy if axis == 1 else hz)
        qa = q0 if axis == 0 else (q1 if axis == 1 else q2)
        return True, n0, n1, n2, r - (sign * qa - h)
    if kind == HULL:
        planes, first, count, size = geo[3], geo[2][s, 0], geo[2][s, 1], params[s, 0]
        for k in range(first, first + count):
            if planes[k, 0] * q0 + planes[k, 1] * q1 + planes[k, 2] * q2 - planes[k, 3] > 0.0:
                return False, 0.0, 0.0, 1.0, 0.0
        slack, tie = ENTRY_SLACK * size, ENTRY_TIE * size
        top, best = -math.inf, -math.inf
        pick, n0, n1, n2 = -1, 0.0, 0.0, 1.0
        for rnd in range(2):
            t = -1.0 if rnd == 0 else tie
            b = top
            for k in range(first, first + count):
                a0, a1, a2, w = planes[k, 0], planes[k, 1], planes[k, 2], planes[k, 3]
                now, then = a0 * q0 + a1 * q1 + a2 * q2 - w, a0 * s0 + a1 * s1 + a2 * s2 - w
                b, best, pick, n0, n1, n2 = _entry_face(now, then, a0, a1, a2, 1.0, f0, f1, f2, slack, b, best, t,
                                                        pick, k, n0, n1, n2)
            top = b
        if pick < 0:
            return False, 0.0, 0.0, 1.0, 0.0
        return True, n0, n1, n2, r - (n0 * q0 + n1 * q1 + n2 * q2 - planes[pick, 3])
    if kind == CYLINDER:
        radius, half = params[s, 0], params[s, 1]
        radial = math.sqrt(q0 * q0 + q1 * q1)
        if radial - radius > 0.0 or abs(q2) - half > 0.0:
            return False, 0.0, 0.0, 1.0, 0.0
        if radial > 1e-12:
            d0, d1 = q0 / radial, q1 / radial
        else:
            d0, d1 = 1.0, 0.0
        size = min(radius, half)
        slack, tie = ENTRY_SLACK * size, ENTRY_TIE * size
        top, best = -math.inf, -math.inf
        pick, n0, n1, n2 = -1, 0.0, 0.0, 1.0
        then_side = math.sqrt(s0 * s0 + s1 * s1) - radius
        for rnd in range(2):
            t = -1.0 if rnd == 0 else tie
            b = top
            b, best, pick, n0, n1, n2 = _entry_face(radial - radius, then_side, d0, d1, 0.0, radius, f0, f1, f2,
                                                    slack, b, best, t, pick, 0, n0, n1, n2)
            b, best, pick, n0, n1, n2 = _entry_face(q2 - half, s2 - half, 0.0, 0.0, 1.0, half, f0, f1, f2, slack, b,
                                                    best, t, pick, 1, n0, n1, n2)
            b, best, pick, n0, n1, n2 = _entry_face(-q2 - half, -s2 - half, 0.0, 0.0, -1.0, half, f0, f1, f2, slack,
                                                    b, best, t, pick, 2, n0, n1, n2)
            top = b
        if pick < 0:
            return False, 0.0, 0.0, 1.0, 0.0
        now = radial - radius if pick == 0 else (q2 - half if pick == 1 else -q2 - half)
        return True, n0, n1, n2, r - now
    return False, 0.0, 0.0, 1.0, 0.0
