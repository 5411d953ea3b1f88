"""Where two boxes or hulls cross face on face: the reference of ``face_crossings`` in
``backend/numba/contacts.py`` (see there), in plain Python arithmetic term by term as the compiled
kernel does it, so both give the same contacts to the bit. A pair at a time: few pairs of boxes
and hulls are near each other at once in the scenes the reference runs."""

from __future__ import annotations

import math

from ...geometry.kinds import BOX

CROSS_NEAR = 0.01
EDGE_WIN = 0.95
EDGE_SLACK = 5e-4
EDGE_AXES = 64
REF_TIE = 0.05
REF_TIE_ABS = 5e-4
FACE_AGAINST = 0.2


def _add(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _sub(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


def _mul(a, s):
    return a[0] * s, a[1] * s, a[2] * s


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b):
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


def _norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


def _rotate(q, v):
    u = (q[1], q[2], q[3])
    t = _cross(u, v)
    t = (2.0 * t[0], 2.0 * t[1], 2.0 * t[2])
    c = _cross(u, t)
    return v[0] + q[0] * t[0] + c[0], v[1] + q[0] * t[1] + c[1], v[2] + q[0] * t[2] + c[2]


def _rotate_back(q, v):
    return _rotate((q[0], -q[1], -q[2], -q[3]), v)


class _Faces:
    """The shape table's face polygons as Python floats (read once per call)."""

    def __init__(self, geo):
        self.range = geo[22].tolist()
        self.planes = geo[23].tolist()
        self.loops = geo[24].tolist()
        self.points = [tuple(p) for p in geo[25].tolist()]
        self.owner = geo[4].tolist()
        # How many of each shape's first faces hold all its corners (see the compiled kernel's
        # _corner_faces): a box's -x and +x faces, a hull's all.
        self.corner_faces = [2 if k == BOX else r[1] for k, r in zip(geo[0].tolist(), self.range)]
        self.edge_range = geo[26].tolist()
        self.edges = [tuple(e) for e in geo[27].tolist()]


def faces_of(geo) -> _Faces:
    return _Faces(geo)


def _loop_point(F, lp, pos, rot, to_pos, to_rot):
    return _rotate_back(to_rot, _sub(_add(pos, _rotate(rot, F.points[lp])), to_pos))


def _face_query(F, ref, rpos, rrot, inc, ipos, irot, apart):
    shift = _rotate_back(irot, _sub(rpos, ipos))
    best, best_sep = -1, -math.inf
    first, count = F.range[ref]
    for f in range(first, first + count):
        n = tuple(F.planes[f][:3])
        n_inc = _rotate_back(irot, _rotate(rrot, n))
        lowest = math.inf
        g0 = F.range[inc][0]
        for g in range(g0, g0 + F.corner_faces[inc]):
            l0, lk = F.loops[g]
            for lp in range(l0, l0 + lk):
                lowest = min(lowest, _dot(n_inc, _sub(F.points[lp], shift)))
        sep = lowest - F.planes[f][3]
        if sep > best_sep:
            best, best_sep = f, sep
            if sep > apart:
                break
    return best, best_sep


def _edge_overlap(F, so, opos, orot, s, spos, srot):
    e0, ek = F.edge_range[so]
    f0, fk = F.edge_range[s]
    least, best_i, best_j = math.inf, -1, -1
    if ek * fk > EDGE_AXES:
        return least, best_i, best_j
    shift = _rotate_back(srot, _sub(opos, spos))
    for i in range(e0, e0 + ek):
        d_o = _rotate_back(srot, _rotate(orot, F.edges[i]))
        for j in range(f0, f0 + fk):
            axis = _cross(d_o, F.edges[j])
            length = _norm(axis)
            if length < 1e-6:
                continue
            axis = _mul(axis, 1.0 / length)
            axis_o = _rotate_back(orot, _rotate(srot, axis))
            lo_s, hi_s = _projection(F, s, axis, 0.0)
            lo_o, hi_o = _projection(F, so, axis_o, _dot(axis, shift))
            # (a hull's corners are pulled in by SAMPLE_INSET of their distance from its origin,
            # which shortens each interval by about that much of its length)
            overlap = min(hi_o - lo_s, hi_s - lo_o) + EDGE_SLACK * (hi_s - lo_s + hi_o - lo_o)
            if overlap < least:
                least, best_i, best_j = overlap, i, j
    return least, best_i, best_j


def _edge_contact(F, so, opos, orot, s, spos, srot, i, j, feature0, key_stride, target_key):
    d_o = _rotate_back(srot, _rotate(orot, F.edges[i]))
    d_s = F.edges[j]
    axis = _cross(d_o, d_s)
    axis = _mul(axis, 1.0 / max(_norm(axis), 1e-300))
    shift = _rotate_back(srot, _sub(opos, spos))
    axis_o = _rotate_back(orot, _rotate(srot, axis))
    lo_s, hi_s = _projection(F, s, axis, 0.0)
    lo_o, hi_o = _projection(F, so, axis_o, _dot(axis, shift))
    if hi_s - lo_o <= hi_o - lo_s:
        n, depth = axis, hi_s - lo_o
    else:
        n, depth = _mul(axis, -1.0), hi_o - lo_s
    n_o = _rotate_back(orot, _rotate(srot, n))
    p_s = _support(F, s, n)
    p_o = _add(shift, _rotate_back(srot, _rotate(orot, _support(F, so, _mul(n_o, -1.0)))))
    w = _sub(p_o, p_s)
    b = _dot(d_o, d_s)
    denom = 1.0 - b * b
    v = (b * _dot(w, d_s) - _dot(w, d_o)) / max(denom, 1e-12)
    on_o = _add(p_o, _mul(d_o, v))
    total = len(F.points)
    key = (feature0 + total * (total + 2) + i * len(F.edges) + j) * key_stride + target_key
    return _add(spos, _rotate(srot, on_o)), _rotate(srot, n), depth, key


def _support(F, shape, direction):
    best, far = (0.0, 0.0, 0.0), -math.inf
    g0 = F.range[shape][0]
    for g in range(g0, g0 + F.corner_faces[shape]):
        l0, lk = F.loops[g]
        for lp in range(l0, l0 + lk):
            p = F.points[lp]
            h = _dot(direction, p)
            if h > far:
                best, far = p, h
    return best


def _projection(F, shape, axis, offset):
    lo, hi = math.inf, -math.inf
    g0 = F.range[shape][0]
    for g in range(g0, g0 + F.corner_faces[shape]):
        l0, lk = F.loops[g]
        for lp in range(l0, l0 + lk):
            v = offset + _dot(axis, F.points[lp])
            lo = min(lo, v)
            hi = max(hi, v)
    return lo, hi


def _side_normal(F, l_from, l_to, n):
    e = _sub(F.points[l_to], F.points[l_from])
    m = _cross(e, n)
    return _mul(m, 1.0 / max(_norm(m), 1e-300))


def face_crossings(F, so, s, opos, orot, spos, srot, m, feature0, key_stride, target_key):
    """The contacts of owner shape so (at opos, orot) against shape s (at spos, srot): a list of
    (point on the owner (world), normal (world, out of s), depth, key)."""
    found = []
    if F.range[s][1] == 0 or F.range[so][1] == 0:
        return found
    fs, sep_s = _face_query(F, s, spos, srot, so, opos, orot, m)
    if fs < 0 or sep_s > m:
        return found
    fo, sep_o = _face_query(F, so, opos, orot, s, spos, srot, m)
    if fo < 0 or sep_o > m:
        return found
    face_depth = -max(sep_s, sep_o)
    edge_after = False
    i = j = -1
    if face_depth > 0.0:
        edge, i, j = _edge_overlap(F, so, opos, orot, s, spos, srot)
        if edge < -m:
            return found
        if edge < EDGE_WIN * face_depth:
            if edge > m:
                return found
            found.append(_edge_contact(F, so, opos, orot, s, spos, srot, i, j, feature0, key_stride, target_key))
            return found
        edge_after = edge < face_depth and edge <= m
    i_edge, j_edge = i, j
    flip = sep_s < sep_o - (REF_TIE * abs(sep_o) + REF_TIE_ABS)
    if flip:
        ref, rpos, rrot, f, inc, ipos, irot = so, opos, orot, fo, s, spos, srot
    else:
        ref, rpos, rrot, f, inc, ipos, irot = s, spos, srot, fs, so, opos, orot
    n = tuple(F.planes[f][:3])
    d = F.planes[f][3]
    g, most = -1, 0.0
    k0, kk = F.range[inc]
    for k in range(k0, k0 + kk):
        turned = _dot(_rotate_back(rrot, _rotate(irot, tuple(F.planes[k][:3]))), n)
        if turned < most and F.loops[k][1] >= 3:
            g, most = k, turned
    if g < 0 or F.loops[f][1] < 3 or most > -FACE_AGAINST:
        return found
    r0, rk = F.loops[f]
    u0, uk = F.loops[g]
    total = len(F.points)
    n_world = _rotate(rrot, n)

    def emit(p, depth, key):
        if flip:
            on_o = _add(rpos, _rotate(rrot, _add(p, _mul(n, depth))))
            normal = (-n_world[0], -n_world[1], -n_world[2])
        else:
            on_o = _add(rpos, _rotate(rrot, p))
            normal = n_world
        found.append((on_o, normal, depth, key))

    for j in range(uk):
        la, lb = u0 + j, u0 + (j + 1) % uk
        ua = _loop_point(F, la, ipos, irot, rpos, rrot)
        ub = _loop_point(F, lb, ipos, irot, rpos, rrot)
        edge = _sub(ub, ua)
        length = _norm(edge)
        for i in range(rk):
            ra, rb = r0 + i, r0 + (i + 1) % rk
            side = _side_normal(F, ra, rb, n)
            corner_a = F.points[ra]
            a = _dot(side, _sub(ua, corner_a))
            b = _dot(side, _sub(ub, corner_a))
            if (a < 0.0) == (b < 0.0) or a == b:
                continue
            along = a / (a - b)
            tol = CROSS_NEAR * min(length, _norm(_sub(F.points[rb], corner_a)))
            if along * length < tol or (1.0 - along) * length < tol:
                continue
            p = _add(ua, _mul(edge, along))
            depth = d - _dot(n, p)
            if not -m < depth <= m:
                continue
            inside = True
            for i2 in range(rk):
                if i2 != i:
                    c2 = F.points[r0 + i2]
                    if _dot(_side_normal(F, r0 + i2, r0 + (i2 + 1) % rk, n), _sub(p, c2)) > tol:
                        inside = False
                        break
            if not inside:
                continue
            near_corner = False
            for corner in (corner_a, F.points[rb]):
                gap = _sub(p, corner)
                gap = _sub(gap, _mul(n, _dot(gap, n)))
                if _norm(gap) < tol:
                    near_corner = True
            if near_corner:
                continue
            emit(p, depth, (feature0 + la * total + ra) * key_stride + target_key)
    if F.owner[inc] < 0:
        for j in range(uk):
            p = _loop_point(F, u0 + j, ipos, irot, rpos, rrot)
            depth = d - _dot(n, p)
            if not -m < depth <= m or not _inside_face(F, r0, rk, n, p):
                continue
            emit(p, depth, (feature0 + total * total + u0 + j) * key_stride + target_key)
    if F.owner[ref] < 0:
        ng = _rotate_back(rrot, _rotate(irot, tuple(F.planes[g][:3])))
        ua = _loop_point(F, u0, ipos, irot, rpos, rrot)
        for i in range(rk):
            r = F.points[r0 + i]
            p = _add(r, _mul(n, _dot(ng, _sub(ua, r)) / _dot(ng, n)))
            depth = d - _dot(n, p)
            if not -m < depth <= m or not _inside_incident(F, u0, uk, ipos, irot, rpos, rrot, ng, p):
                continue
            emit(p, depth, (feature0 + total * total + total + r0 + i) * key_stride + target_key)
    if not found and edge_after:
        found.append(_edge_contact(F, so, opos, orot, s, spos, srot, i_edge, j_edge, feature0, key_stride, target_key))
    return found


def _inside_face(F, r0, rk, n, p):
    for i in range(rk):
        if _dot(_side_normal(F, r0 + i, r0 + (i + 1) % rk, n), _sub(p, F.points[r0 + i])) > 0.0:
            return False
    return True


def _inside_incident(F, u0, uk, ipos, irot, rpos, rrot, ng, p):
    for j in range(uk):
        ua = _loop_point(F, u0 + j, ipos, irot, rpos, rrot)
        ub = _loop_point(F, u0 + (j + 1) % uk, ipos, irot, rpos, rrot)
        side = _cross(_sub(ub, ua), ng)
        if _dot(side, _sub(p, ua)) > 0.0:
            return False
    return True
