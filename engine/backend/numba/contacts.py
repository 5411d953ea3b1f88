"""Contact generation, compiled: rigid bodies' features against shapes, particles against shapes.

The reference is ``backend/numpy/contacts.py``; both generate the same contacts in the same order.

A body's features are its fixed sample points (box corners, hull vertices, a sphere's centre and
a capsule's axis points, each with a radius) and, for a cylinder, its support points against the
shape it meets: on each cap, the rim point farthest along the direction into that shape (found
from the shape's normal at the cylinder's centre), so a wheel touches the ground at the true
lowest point of its rim; near flat on a cap it adds 16 points of that cap's rim. Each feature is
tested against the other body's shape (or a world shape) by ``distance``; the contacts of a pair
of bodies come out together, pairs in the order given (colour by colour).

Against anything but a plane a cylinder also tests 16 points of each cap's rim: where an edge of
a box or a hull crosses its rim, neither the box's corners nor the support point against the face
nearest its centre reach into it. (Rim points lie on the true rim, so on a smooth surface they
never touch before the exact support does: no polygon bumps.)

Against a box or a hull, rim points leave through the nearest face, and around each rim point
deeper than its neighbours the deepest point of the rim between is found (golden-section search)
and is a contact too where it is deeper: an edge across the rim between two rim points.

Against a triangle mesh a cylinder also meets the mesh's vertices near it, each tested against the
cylinder's own shape: a bump's peak poked between the rim points (whose triangles it is not in
front of) by up to 4 cm into a 0.33 m wheel on terrain of 0.12 m faces.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from ...geometry.kinds import BOX, CYLINDER, HULL, MESH, PLANE, SPHERE
from . import distance as _distances
from .vec import add, cross, dot, get3, get4, inv_inertia_times, mul, norm, qmul, rotate, rotate_back, sub

JIT = dict(cache=True, nogil=True, error_model="numpy")
# Small helpers called per feature are inlined: a call passes the whole shape table (geo).
INLINE = dict(JIT, inline="always")
# Helpers called per point or per side of a pair, without reference counting (see distance.JIT):
# counting the shape table's 22 arrays on every call cost microseconds (a pile of 1,000 boxes
# makes some 20,000 sides a substep). Not for a function that makes an array: numba refuses those
# without it (so the mesh vertices a wheel meets are gathered into buffers find_contacts makes).
HELPER = dict(JIT, _nrt=False)
# The distance dispatch inlined here too (the same function): as a call it costs far more than a
# plane or a box test itself.
distance = njit(**INLINE)(_distances.distance.py_func)

# Sample points farther from a body's centre than its bounding radius times (1 + this) plus their
# radius and the margins are not tested against its shape.
NEAR_SLACK = 0.05
RIM_POINTS = 16
# Particle contacts from this many candidates on are answered on all cores, in CANDIDATE_CHUNKS
# chunks (a cloth of a few thousand vertices over a mesh table: about 70 ns a candidate).
PARALLEL_CANDIDATES = 1024
CANDIDATE_CHUNKS = 16
# Rigid contacts are found on all cores from this many pairs on (``find_contacts``; the car's
# dozens stay serial, 1,000 boxes' 8,500 do not).
PARALLEL_FIND_PAIRS = 256
# Each cylinder's support features get keys of their own after the fixed points: two supports and
# the rim points of its two caps.
SUPPORT_SLOTS = 2 + 2 * RIM_POINTS
# Against a box or a hull, around each of a cap's rim points that is deeper than both its
# neighbours (and not more than RIM_NEAR of the radius outside), the rim point deepest in it,
# found in RIM_REFINE golden-section steps, is a contact too when it is deeper than that rim point
# (and the support point, if that is near) by RIM_GAIN of the radius: an edge across the rim
# between two rim points (a cylinder tilted over a box's edge) reached 4.7 cm into a 0.4 m
# cylinder, unseen by both.
RIM_REFINE = 16
RIM_GAIN = 0.002
RIM_NEAR = 0.25
GOLDEN = 0.6180339887498949
# Within this angle of a cap's normal the cap lies flat enough to add its rim points.
FLAT_CAP = math.radians(3.0)
# Two boxes or hulls face on face meet where their faces' edges cross (``face_crossings``): a crate
# turned on another, crossed beams, an offset crate, a crate over a table's corner touch there
# with no corner of either inside the other (they fell through each other). A crossing within
# CROSS_NEAR of the shorter of its two edges from a corner is left to that corner. The reference
# face is the target's unless the owner's is clearly better (its separation larger by REF_TIE of
# it plus REF_TIE_ABS), so two equal crates keep one reference face from substep to substep; the
# incident face is turned at least FACE_AGAINST against it (cosine). A crossing or an edge
# contact deeper than the margin is not made: two boxes that deep in each other are left to their
# corners, as before (pushed out along a face or an edge they had not come in through, 2 to 9 cm
# in one substep, tumbling bricks were thrown: energy from nothing).
CROSS_NEAR = 0.01
# Two shapes that overlap along an axis across their edges (the cross product of an edge
# direction of each) by less than EDGE_WIN of how deep they are behind each other's faces touch
# edge on edge: one contact between those edges, along that axis; apart along one by more than the
# margin, they do not touch (the faces alone said they did, and pushed out bricks whose edges only
# passed each other, 9 cm). Axes are counted up to EDGE_AXES (a rounded hull has hundreds).
EDGE_WIN = 0.95
EDGE_SLACK = 5e-4
EDGE_AXES = 64
REF_TIE = 0.05
REF_TIE_ABS = 5e-4
FACE_AGAINST = 0.2


@njit(**INLINE)
def _shape_pose(geo, s, x, q):
    """World position and rotation of shape s (its owner's pose composed with its offset)."""
    owner = geo[4][s]
    pos = (geo[15][s, 0], geo[15][s, 1], geo[15][s, 2])
    rot = (geo[14][s, 0], geo[14][s, 1], geo[14][s, 2], geo[14][s, 3])
    if owner < 0:
        return pos, rot
    qo = get4(q, owner)
    return add(get3(x, owner), rotate(qo, pos)), qmul(qo, rot)


@njit(**INLINE)
def _emit(out, c, a, b, world, x, q, p_world, radius, n_world, depth, friction, restitution, key, material):
    """Write contact c: A's point p_world (with radius) sits depth deep along n_world into B."""
    surface = sub(p_world, mul(n_world, radius - depth))
    on_a = sub(p_world, mul(n_world, radius))
    la = rotate_back(get4(q, a), sub(on_a, get3(x, a)))
    if b == world:
        lb = surface
    else:
        lb = rotate_back(get4(q, b), sub(surface, get3(x, b)))
    ia, fa, la_, lb_, na = out[0], out[1], out[2], out[3], out[4]
    ia[c, 0] = a
    ia[c, 1] = b
    ia[c, 2] = key
    ia[c, 3] = 1 if material else 0
    la_[c, 0], la_[c, 1], la_[c, 2] = la
    lb_[c, 0], lb_[c, 1], lb_[c, 2] = lb
    na[c, 0], na[c, 1], na[c, 2] = n_world
    fa[c, 0] = friction
    fa[c, 1] = restitution
    fa[c, 2] = depth


@njit(**INLINE)
def _test_point(geo, s, spos, srot, prefer, p_world, radius, margin, use_prefer=True):
    """(normal world, depth) of a world point with radius against shape s at (spos, srot)."""
    local = rotate_back(srot, sub(p_world, spos))
    n0, n1, n2, depth = distance(geo, s, local[0], local[1], local[2], radius + margin,
                                 prefer[0], prefer[1], prefer[2], use_prefer)
    return rotate(srot, (n0, n1, n2)), depth - margin, depth > 0.0


@njit(**HELPER)
def _side(geo, x, q, x_prev, q_prev, o, t, s, world, points, point_start, point_radius, point_material, body_shape,
          bound, margin, friction_o, restitution_o, key_stride, target_key, out, c, cap, placed, started, mark, found):
    """The contacts of owner body o's features against shape s (of body t, or the world);
    placed (P, 3): every sample point in the world, started (P, 3): the same at the substep's
    start (x_prev, q_prev); mark, found: ``mesh_vertices_into``'s buffers."""
    spos, srot = _shape_pose(geo, s, x, q)
    spos0, srot0 = _shape_pose(geo, s, x_prev, q_prev)
    xo = get3(x, o)
    prefer = rotate_back(srot, sub(xo, spos))
    m = margin[o] + (0.0 if t == world else margin[t])
    friction = math.sqrt(friction_o * geo[16][s])
    restitution = math.sqrt(restitution_o * geo[17][s])
    always = geo[0][s] == HULL or t == world  # (a hull's depth reaches past its bounding sphere)
    reach2 = 0.0
    if not always:
        xt = get3(x, t)
    for p in range(point_start[o], point_start[o + 1]):
        pw = get3(placed, p)
        r = point_radius[p]
        if not always:
            d = sub(pw, xt)
            reach = bound[t] * (1.0 + NEAR_SLACK) + r + m
            reach2 = reach * reach
            if dot(d, d) > reach2:
                continue
        n, depth, hit = _test_point(geo, s, spos, srot, prefer, pw, r, m)
        if hit:
            # The face it came in through, if it was outside at the substep's start (``entered``).
            now = rotate_back(srot, sub(pw, spos))
            then = rotate_back(srot0, sub(get3(started, p), spos0))
            came, n0, n1, n2, d_in = _distances.entered(geo, s, now[0], now[1], now[2], then[0], then[1], then[2],
                                                        r + m, prefer[0], prefer[1], prefer[2])
            if came:
                n, depth = rotate(srot, (n0, n1, n2)), d_in - m
            if c < cap:
                _emit(out, c, o, t, world, x, q, pw, r, n, depth, friction, restitution,
                      p * key_stride + target_key, point_material[p])
            c += 1
    so = body_shape[o]
    if so >= 0 and geo[0][so] == CYLINDER:
        c = _cylinder_side(geo, x, q, o, t, s, so, world, spos, srot, prefer, m, friction, restitution, out, c, cap,
                           (points.shape[0] + o * SUPPORT_SLOTS) * key_stride + target_key, key_stride)
        if geo[0][s] == MESH:
            c = _mesh_vertices_in_cylinder(geo, x, q, o, t, s, so, world, spos, srot, m, friction, restitution, out,
                                           c, cap, mark, found)
    return c


@njit(**HELPER)
def mesh_vertices_into(geo, mesh, c0, c1, c2, reach, within, mark, found):
    """The vertices (sorted, unique) of the triangles registered in the cells of mesh ``mesh``
    that a box of half-size ``reach`` round (c0, c1, c2) (the mesh's frame) touches; with
    ``within`` (inf: all), only those no farther than that from (c0, c1, c2) (the rest are never
    collected: a wheel's cells hold some 600 corners, of which a few dozen are near it). Written to
    found[:count] (returns count); mark (V,), zero for every vertex, keeps each once (and is zero
    again on return); both as long as the shape table's vertices, so they cannot overflow."""
    vertices = geo[13]
    within2 = within * within
    cell_size = geo[6][mesh]
    key_start, key_end = geo[8][mesh], geo[8][mesh + 1]
    keys, ptr, tris, triangles = geo[9], geo[10], geo[11], geo[12]
    lo0, hi0 = int(math.floor((c0 - reach) / cell_size)), int(math.floor((c0 + reach) / cell_size))
    lo1, hi1 = int(math.floor((c1 - reach) / cell_size)), int(math.floor((c1 + reach) / cell_size))
    lo2, hi2 = int(math.floor((c2 - reach) / cell_size)), int(math.floor((c2 + reach) / cell_size))
    count = 0
    for i in range(lo0, hi0 + 1):
        for j in range(lo1, hi1 + 1):
            for k in range(lo2, hi2 + 1):
                lo = _distances.cell_slot(keys, key_start, key_end, _distances._cell_key(i, j, k))
                if lo < 0:
                    continue
                for e in range(ptr[lo], ptr[lo + 1]):
                    for corner in range(3):
                        v = triangles[tris[e], corner]
                        if mark[v]:
                            continue
                        if within2 < math.inf:
                            d0 = vertices[v, 0] - c0
                            d1 = vertices[v, 1] - c1
                            d2 = vertices[v, 2] - c2
                            if d0 * d0 + d1 * d1 + d2 * d2 > within2:
                                continue
                        mark[v] = 1
                        found[count] = v
                        count += 1
    # Sorted (insertion: a few dozen), and the marks cleared for the next call.
    for a in range(count):
        mark[found[a]] = 0
        v = found[a]
        b = a - 1
        while b >= 0 and found[b] > v:
            found[b + 1] = found[b]
            b -= 1
        found[b + 1] = v
    return count


@njit(**JIT)
def mesh_vertices_near(geo, mesh, c0, c1, c2, reach, within=math.inf):
    """``mesh_vertices_into`` as an array (its own buffers)."""
    n = geo[13].shape[0]
    found = np.empty(n, np.int64)
    count = mesh_vertices_into(geo, mesh, c0, c1, c2, reach, within, np.zeros(n, np.uint8), found)
    return found[:count].copy()


@njit(**HELPER)
def _mesh_vertices_in_cylinder(geo, x, q, o, t, s, so, world, spos, srot, m, friction, restitution, out, c, cap,
                               mark, found):
    """The vertices of mesh shape s within the margin of cylinder so (body o), each a contact
    whose point on o is the cylinder's surface nearest the vertex (key -1: no friction anchor
    carried over, the vertex being no point of o)."""
    cpos, crot = _shape_pose(geo, so, x, q)
    radius, half = geo[1][so, 0], geo[1][so, 1]
    centre = rotate_back(srot, sub(cpos, spos))
    reach = math.sqrt(radius * radius + half * half) + m
    vertices = geo[13]
    # A vertex farther than reach from the centre is more than the margin outside the cylinder
    # (its distance routine is exact outside), so it makes no contact: not collected at all
    # (with a hair of slack, so rounding cannot drop one that would).
    count = mesh_vertices_into(geo, geo[5][s], centre[0], centre[1], centre[2], reach, reach * (1.0 + 1e-6), mark,
                               found)
    for i in range(count):
        v = found[i]
        vw = add(spos, rotate(srot, get3(vertices, v)))
        local = rotate_back(crot, sub(vw, cpos))
        n0, n1, n2, depth = _distances.cylinder(radius, half, local[0], local[1], local[2], 0.0, 0.0, 0.0, 0.0, False)
        if depth > -m:
            out_n = rotate(crot, (-n0, -n1, -n2))  # from the mesh towards the cylinder
            on_cylinder = sub(vw, mul(out_n, depth))
            if c < cap:
                _emit(out, c, o, t, world, x, q, on_cylinder, 0.0, out_n, depth, friction, restitution, -1, False)
            c += 1
    return c


@njit(**INLINE)
def _may_touch(geo, x, o, t, s, world, point_start, point_radius, body_shape, bound, margin, placed):
    """Whether ``_side`` can find anything: False when o has only sample points and every one
    fails its test against t's bounding sphere there (the same test, so nothing is lost), or o is
    a cylinder whose bounding sphere is that far from t's."""
    if geo[0][s] == HULL or t == world:
        return True
    m = margin[o] + margin[t]
    xt = get3(x, t)
    so = body_shape[o]
    if so >= 0 and geo[0][so] == CYLINDER:
        # A cylinder's supports and rim points lie within its bound: two bodies whose bounds
        # (with the slack the sample points get) are apart cannot touch (a car's wheels among
        # themselves: 34 tests each way against the other's cylinder, for nothing).
        d = sub(get3(x, o), xt)
        reach = (bound[o] + bound[t]) * (1.0 + NEAR_SLACK) + m
        return not dot(d, d) > reach * reach
    for p in range(point_start[o], point_start[o + 1]):
        d = sub(get3(placed, p), xt)
        reach = bound[t] * (1.0 + NEAR_SLACK) + point_radius[p] + m
        if not dot(d, d) > reach * reach:
            return True
    return False


@njit(**INLINE)
def _near_bounds(x, a, b, world, bound, margin):
    """Whether bodies a and b (or the world) may touch by their bounding spheres (with the slack
    the sample points get)."""
    if b == world:
        return True
    d = sub(get3(x, a), get3(x, b))
    reach = (bound[a] + bound[b]) * (1.0 + NEAR_SLACK) + margin[a] + margin[b]
    return not dot(d, d) > reach * reach


@njit(**HELPER)
def _cylinder_side(geo, x, q, o, t, s, so, world, spos, srot, prefer, m, friction, restitution, out, c, cap,
                   key0, key_stride):
    """A cylinder's support points against shape s: per cap, its rim point deepest along the
    direction into s (the opposite of s's normal at the cylinder's centre); near flat on a cap,
    that cap's rim points too."""
    cpos, crot = _shape_pose(geo, so, x, q)
    radius, half = geo[1][so, 0], geo[1][so, 1]
    centre_local = rotate_back(srot, sub(cpos, spos))
    n0, n1, n2, _ = distance(geo, s, centre_local[0], centre_local[1], centre_local[2], 0.0,
                             prefer[0], prefer[1], prefer[2], True)
    into = rotate_back(crot, rotate(srot, (-n0, -n1, -n2)))  # into s, in the cylinder's frame
    perp = math.sqrt(into[0] * into[0] + into[1] * into[1])
    total = norm(into)
    if perp > 1e-9 * max(total, 1e-300):
        u0, u1 = into[0] / perp, into[1] / perp
    else:
        u0, u1 = 1.0, 0.0
    flat_cap = 0.0
    if total > 0.0 and perp < math.sin(FLAT_CAP) * total:
        flat_cap = 1.0 if into[2] > 0.0 else -1.0
    for side in range(2):
        cap_sign = -1.0 if side == 0 else 1.0
        local = (radius * u0, radius * u1, cap_sign * half)
        pw = add(cpos, rotate(crot, local))
        n, depth, hit = _test_point(geo, s, spos, srot, prefer, pw, 0.0, m)
        if hit:
            if c < cap:
                _emit(out, c, o, t, world, x, q, pw, 0.0, n, depth, friction, restitution, key0 + side * key_stride,
                      False)
            c += 1
        support = depth
        # Against a box or hull, rim points go out through the nearest face: rolling over an edge,
        # a rim point near it took (the tie-break of ``distance``) a face up to FACE_TIE deeper,
        # and a cylinder sliding off a box's edge was thrown (5.9 kJ in a frame).
        sharp = geo[0][s] == BOX or geo[0][s] == HULL
        if cap_sign == flat_cap or geo[0][s] != PLANE:
            for k in range(RIM_POINTS):
                angle = 2.0 * math.pi * k / RIM_POINTS
                local = (radius * math.cos(angle), radius * math.sin(angle), cap_sign * half)
                pw = add(cpos, rotate(crot, local))
                n, depth, hit = _test_point(geo, s, spos, srot, prefer, pw, 0.0, m, not sharp)
                if hit:
                    if c < cap:
                        _emit(out, c, o, t, world, x, q, pw, 0.0, n, depth, friction, restitution,
                              key0 + (2 + side * RIM_POINTS + k) * key_stride, False)
                    c += 1
        if sharp:
            # An edge of a box or hull across the rim between two rim points (see RIM_REFINE):
            # around each rim point deeper than both its neighbours, the deepest point between.
            z = cap_sign * half
            step = 2.0 * math.pi / RIM_POINTS
            support_angle = math.atan2(u1, u0)
            before = _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius, z, m,
                                2.0 * math.pi * (RIM_POINTS - 1) / RIM_POINTS)
            first = _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, 0.0)
            here = first
            for k in range(RIM_POINTS):
                after = first if k == RIM_POINTS - 1 else _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius,
                                                                     z, m, 2.0 * math.pi * (k + 1) / RIM_POINTS)
                if here > before and here >= after and here > -RIM_NEAR * radius:
                    around = 2.0 * math.pi * k / RIM_POINTS
                    angle, depth = _deepest_on_rim(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, around)
                    floor = here
                    turn = (angle - support_angle) % (2.0 * math.pi)
                    if min(turn, 2.0 * math.pi - turn) < step:
                        floor = max(floor, support)
                    if depth > floor + RIM_GAIN * radius:
                        # Out through the nearest face: it lies where two faces meet, where the
                        # tie-break would take a face up to FACE_TIE deeper.
                        pw = add(cpos, rotate(crot, (radius * math.cos(angle), radius * math.sin(angle), z)))
                        local = rotate_back(srot, sub(pw, spos))
                        n0, n1, n2, depth = distance(geo, s, local[0], local[1], local[2], m, 0.0, 0.0, 0.0, False)
                        n, hit, depth = rotate(srot, (n0, n1, n2)), depth > 0.0, depth - m
                        if hit:
                            if c < cap:
                                _emit(out, c, o, t, world, x, q, pw, 0.0, n, depth, friction, restitution, -1, False)
                            c += 1
                before, here = here, after
    return c


@njit(**INLINE)
def _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, angle):
    """How deep a rim point is in shape s: its true depth, the nearest face's (with the tie-break
    of ``distance``, a search for the deepest point found where two faces meet a face up to
    FACE_TIE deeper, and pushed a cylinder 12.6 cm in one substep)."""
    pw = add(cpos, rotate(crot, (radius * math.cos(angle), radius * math.sin(angle), z)))
    local = rotate_back(srot, sub(pw, spos))
    return distance(geo, s, local[0], local[1], local[2], m, prefer[0], prefer[1], prefer[2], False)[3] - m


@njit(**HELPER)
def _deepest_on_rim(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, around):
    """(angle, depth) of the rim point (the cap at height z) deepest in shape s within a rim
    point's spacing of the angle ``around``, by golden-section search (RIM_REFINE steps)."""
    step = 2.0 * math.pi / RIM_POINTS
    a, b = around - step, around + step
    c1, c2 = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    f1 = _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, c1)
    f2 = _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, c2)
    for _ in range(RIM_REFINE):
        if f1 >= f2:
            b, c2, f2 = c2, c1, f1
            c1 = b - GOLDEN * (b - a)
            f1 = _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, c1)
        else:
            a, c1, f1 = c1, c2, f2
            c2 = a + GOLDEN * (b - a)
            f2 = _rim_depth(geo, s, spos, srot, prefer, cpos, crot, radius, z, m, c2)
    return (c1, f1) if f1 >= f2 else (c2, f2)


@njit(**INLINE)
def _loop_point(geo, lp, pos, rot, to_pos, to_rot):
    """Loop point lp of a shape at (pos, rot), in the frame (to_pos, to_rot)."""
    return rotate_back(to_rot, sub(add(pos, rotate(rot, get3(geo[25], lp))), to_pos))


@njit(**INLINE)
def _corner_faces(geo, shape):
    """How many of a shape's first faces hold all its corners: a box's first two (its -x and +x
    faces, ``shapes.box_faces``), a hull's all (its corners on several faces each, read more
    than once)."""
    return 2 if geo[0][shape] == BOX else geo[22][shape, 1]


@njit(**HELPER)
def _face_query(geo, ref, rpos, rrot, inc, ipos, irot, apart):
    """(face, separation): the face of convex shape ref (at rpos, rrot) that convex shape inc
    reaches least far behind: the largest, over ref's faces, of the least n . p - offset over
    inc's corners p (the separating-axis test over ref's face normals); the first face found
    farther than ``apart`` from inc, if any (they do not touch: a pile's neighbours)."""
    planes, loops = geo[23], geo[24]
    shift = rotate_back(irot, sub(rpos, ipos))  # ref's origin in inc's frame
    best, best_sep = -1, -math.inf
    for f in range(geo[22][ref, 0], geo[22][ref, 0] + geo[22][ref, 1]):
        n = get3(planes, f)
        n_inc = rotate_back(irot, rotate(rrot, n))
        lowest = math.inf
        for g in range(geo[22][inc, 0], geo[22][inc, 0] + _corner_faces(geo, inc)):
            for lp in range(loops[g, 0], loops[g, 0] + loops[g, 1]):
                lowest = min(lowest, dot(n_inc, sub(get3(geo[25], lp), shift)))
        sep = lowest - planes[f, 3]
        if sep > best_sep:
            best, best_sep = f, sep
            if sep > apart:
                break
    return best, best_sep


@njit(**HELPER)
def _edge_overlap(geo, so, opos, orot, s, spos, srot):
    """How far convex shapes so and s (at their poses) overlap along the least of the axes across
    their edges (the cross products of their edge directions; inf when there are none, or more
    than EDGE_AXES of them: a rounded hull's hundreds)."""
    e0, ek = geo[26][so, 0], geo[26][so, 1]
    f0, fk = geo[26][s, 0], geo[26][s, 1]
    least, best_i, best_j = math.inf, -1, -1
    if ek * fk > EDGE_AXES:
        return least, best_i, best_j
    shift = rotate_back(srot, sub(opos, spos))  # so's origin in s's frame
    for i in range(e0, e0 + ek):
        d_o = rotate_back(srot, rotate(orot, get3(geo[27], i)))
        for j in range(f0, f0 + fk):
            axis = cross(d_o, get3(geo[27], j))
            length = norm(axis)
            if length < 1e-6:
                continue  # parallel edges: a face's axis
            axis = mul(axis, 1.0 / length)
            axis_o = rotate_back(orot, rotate(srot, axis))
            lo_s, hi_s = _projection(geo, s, axis, 0.0)
            lo_o, hi_o = _projection(geo, so, axis_o, dot(axis, shift))
            # (a hull's corners are pulled in by SAMPLE_INSET of their distance from its origin,
            # which shortens each interval by about that much of its length)
            overlap = min(hi_o - lo_s, hi_s - lo_o) + EDGE_SLACK * (hi_s - lo_s + hi_o - lo_o)
            if overlap < least:
                least, best_i, best_j = overlap, i, j
    return least, best_i, best_j


@njit(**HELPER)
def _edge_contact(geo, x, q, o, so, t, s, world, opos, orot, spos, srot, i, j, friction, restitution, feature0,
                  key_stride, target_key, out, c, cap):
    """The contact of two convex shapes touching edge on edge, across edge directions i (so's)
    and j (s's): along their cross product, between the nearest points of the two edges (the
    lines through each shape's corner farthest into the other along it)."""
    d_o = rotate_back(srot, rotate(orot, get3(geo[27], i)))  # everything in s's frame
    d_s = get3(geo[27], j)
    axis = cross(d_o, d_s)
    axis = mul(axis, 1.0 / max(norm(axis), 1e-300))
    shift = rotate_back(srot, sub(opos, spos))
    axis_o = rotate_back(orot, rotate(srot, axis))
    lo_s, hi_s = _projection(geo, s, axis, 0.0)
    lo_o, hi_o = _projection(geo, so, axis_o, dot(axis, shift))
    if hi_s - lo_o <= hi_o - lo_s:
        n, depth = axis, hi_s - lo_o  # o beyond s along the axis
    else:
        n, depth = mul(axis, -1.0), hi_o - lo_s
    n_o = rotate_back(orot, rotate(srot, n))
    p_s = _support(geo, s, n)  # s's corner farthest towards o
    p_o = add(shift, rotate_back(srot, rotate(orot, _support(geo, so, mul(n_o, -1.0)))))
    # The nearest points of the lines p_s + u d_s and p_o + v d_o.
    w = sub(p_o, p_s)
    b = dot(d_o, d_s)
    denom = 1.0 - b * b
    v = (b * dot(w, d_s) - dot(w, d_o)) / max(denom, 1e-12)
    on_o = add(p_o, mul(d_o, v))
    key = (feature0 + geo[25].shape[0] * (geo[25].shape[0] + 2) + i * geo[27].shape[0] + j) * key_stride + target_key
    if c < cap:
        _emit(out, c, o, t, world, x, q, add(spos, rotate(srot, on_o)), 0.0, rotate(srot, n), depth, friction,
              restitution, key, False)
    return c + 1


@njit(**INLINE)
def _support(geo, shape, direction):
    """The corner of convex shape ``shape`` farthest along ``direction`` (its frame)."""
    best, far = (0.0, 0.0, 0.0), -math.inf
    for g in range(geo[22][shape, 0], geo[22][shape, 0] + _corner_faces(geo, shape)):
        for lp in range(geo[24][g, 0], geo[24][g, 0] + geo[24][g, 1]):
            p = get3(geo[25], lp)
            h = dot(direction, p)
            if h > far:
                best, far = p, h
    return best


@njit(**INLINE)
def _projection(geo, shape, axis, offset):
    """(least, most) of offset + axis . p over the corners p of convex shape ``shape`` (its frame)."""
    lo, hi = math.inf, -math.inf
    for g in range(geo[22][shape, 0], geo[22][shape, 0] + _corner_faces(geo, shape)):
        for lp in range(geo[24][g, 0], geo[24][g, 0] + geo[24][g, 1]):
            v = offset + dot(axis, get3(geo[25], lp))
            lo = min(lo, v)
            hi = max(hi, v)
    return lo, hi


@njit(**INLINE)
def _side_normal(geo, l_from, l_to, n):
    """The outward unit normal of a face's side through its edge from loop point l_from to l_to
    (the loop counterclockwise about the face's normal n)."""
    e = sub(get3(geo[25], l_to), get3(geo[25], l_from))
    m = cross(e, n)
    return mul(m, 1.0 / max(norm(m), 1e-300))


@njit(**HELPER)
def face_crossings(geo, x, q, o, so, t, s, world, m, friction, restitution, feature0, key_stride, target_key, out, c,
                   cap):
    """Contacts where two convex shapes (boxes, hulls) rest face on face across each other's
    edges (see CROSS_NEAR): the shape reached least far behind a face of the other (the
    reference face; s's on a near tie) meets it with its face most turned against it (the
    incident face), and every point where an edge of the incident face crosses a side of the
    reference face, inside the reference face and no more than the margin m above or below it,
    is a contact. Corners are the sample points' (tested from both sides of a pair of bodies), except
    a world shape's, which has none: its corners inside the other face are contacts here too.
    Where they touch edge on edge instead (see EDGE_WIN), one contact between the edges.
    o (shape so) owns the contacts against t (shape s, or the world); returns c."""
    if geo[22][s, 1] == 0 or geo[22][so, 1] == 0:
        return c
    opos, orot = _shape_pose(geo, so, x, q)
    spos, srot = _shape_pose(geo, s, x, q)
    fs, sep_s = _face_query(geo, s, spos, srot, so, opos, orot, m)
    if fs < 0 or sep_s > m:
        return c
    fo, sep_o = _face_query(geo, so, opos, orot, s, spos, srot, m)
    if fo < 0 or sep_o > m:
        return c
    face_depth = -max(sep_s, sep_o)
    edge_after = False
    ei = ej = -1
    if face_depth > 0.0:
        edge, ei, ej = _edge_overlap(geo, so, opos, orot, s, spos, srot)
        if edge < -m:
            return c  # apart across their edges
        if edge < EDGE_WIN * face_depth:
            if edge > m:
                return c  # deep in: left to the corners (see CROSS_NEAR)
            return _edge_contact(geo, x, q, o, so, t, s, world, opos, orot, spos, srot, ei, ej, friction, restitution,
                                 feature0, key_stride, target_key, out, c, cap)
        # Shallower across the edges than behind the faces, and no crossing of the faces: edge
        # on edge too (two bricks sank into each other 2 mm a substep, unseen).
        edge_after = edge < face_depth and edge <= m
    first = c
    flip = sep_s < sep_o - (REF_TIE * abs(sep_o) + REF_TIE_ABS)
    if flip:
        ref, rpos, rrot, f, inc, ipos, irot = so, opos, orot, fo, s, spos, srot
    else:
        ref, rpos, rrot, f, inc, ipos, irot = s, spos, srot, fs, so, opos, orot
    planes, loops = geo[23], geo[24]
    n = get3(planes, f)
    d = planes[f, 3]
    g, most = -1, 0.0
    for k in range(geo[22][inc, 0], geo[22][inc, 0] + geo[22][inc, 1]):
        turned = dot(rotate_back(rrot, rotate(irot, get3(planes, k))), n)
        if turned < most and loops[k, 1] >= 3:
            g, most = k, turned
    if g < 0 or loops[f, 1] < 3 or most > -FACE_AGAINST:
        return c
    r0, rk = loops[f, 0], loops[f, 1]
    u0, uk = loops[g, 0], loops[g, 1]
    total = geo[25].shape[0]
    n_world = rotate(rrot, n)
    for j in range(uk):
        la, lb = u0 + j, u0 + (j + 1) % uk
        ua = _loop_point(geo, la, ipos, irot, rpos, rrot)
        ub = _loop_point(geo, lb, ipos, irot, rpos, rrot)
        edge = sub(ub, ua)
        length = norm(edge)
        for i in range(rk):
            ra, rb = r0 + i, r0 + (i + 1) % rk
            side = _side_normal(geo, ra, rb, n)
            corner_a = get3(geo[25], ra)
            a = dot(side, sub(ua, corner_a))
            b = dot(side, sub(ub, corner_a))
            if (a < 0.0) == (b < 0.0) or a == b:
                continue
            along = a / (a - b)
            tol = CROSS_NEAR * min(length, norm(sub(get3(geo[25], rb), corner_a)))
            if along * length < tol or (1.0 - along) * length < tol:
                continue  # an incident corner's
            p = add(ua, mul(edge, along))
            depth = d - dot(n, p)
            if not -m < depth <= m:
                continue
            inside = True
            for i2 in range(rk):
                if i2 != i:
                    c2 = get3(geo[25], r0 + i2)
                    if dot(_side_normal(geo, r0 + i2, r0 + (i2 + 1) % rk, n), sub(p, c2)) > tol:
                        inside = False
                        break
            if not inside:
                continue
            near_corner = False
            for corner in (corner_a, get3(geo[25], rb)):
                gap = sub(p, corner)
                gap = sub(gap, mul(n, dot(gap, n)))
                if norm(gap) < tol:
                    near_corner = True
            if near_corner:
                continue  # a reference corner's
            key = (feature0 + la * total + ra) * key_stride + target_key
            c = _emit_crossing(geo, out, c, cap, o, t, world, x, q, rpos, rrot, p, n, n_world, depth, flip, friction,
                               restitution, key)
    if geo[4][inc] < 0:  # the world's corners of the incident face inside the reference face
        for j in range(uk):
            p = _loop_point(geo, u0 + j, ipos, irot, rpos, rrot)
            depth = d - dot(n, p)
            if not -m < depth <= m or not _inside_face(geo, r0, rk, n, p):
                continue
            key = (feature0 + total * total + u0 + j) * key_stride + target_key
            c = _emit_crossing(geo, out, c, cap, o, t, world, x, q, rpos, rrot, p, n, n_world, depth, flip, friction,
                               restitution, key)
    if geo[4][ref] < 0:  # the world's corners of the reference face under the incident face
        ng = rotate_back(rrot, rotate(irot, get3(planes, g)))
        ua = _loop_point(geo, u0, ipos, irot, rpos, rrot)
        for i in range(rk):
            r = get3(geo[25], r0 + i)
            # The point of the incident face's plane straight above the corner (along n).
            p = add(r, mul(n, dot(ng, sub(ua, r)) / dot(ng, n)))
            depth = d - dot(n, p)
            if not -m < depth <= m or not _inside_incident(geo, u0, uk, ipos, irot, rpos, rrot, ng, p):
                continue
            key = (feature0 + total * total + total + r0 + i) * key_stride + target_key
            c = _emit_crossing(geo, out, c, cap, o, t, world, x, q, rpos, rrot, p, n, n_world, depth, flip, friction,
                               restitution, key)
    if c == first and edge_after:
        c = _edge_contact(geo, x, q, o, so, t, s, world, opos, orot, spos, srot, ei, ej, friction, restitution,
                          feature0, key_stride, target_key, out, c, cap)
    return c


@njit(**INLINE)
def _inside_face(geo, r0, rk, n, p):
    """Whether p (the face's frame) lies within every side of the face with loop r0:r0 + rk."""
    for i in range(rk):
        if dot(_side_normal(geo, r0 + i, r0 + (i + 1) % rk, n), sub(p, get3(geo[25], r0 + i))) > 0.0:
            return False
    return True


@njit(**HELPER)
def _inside_incident(geo, u0, uk, ipos, irot, rpos, rrot, ng, p):
    """Whether p (the reference frame) lies within every side of the incident face (loop
    u0:u0 + uk, normal ng in the reference frame)."""
    for j in range(uk):
        ua = _loop_point(geo, u0 + j, ipos, irot, rpos, rrot)
        ub = _loop_point(geo, u0 + (j + 1) % uk, ipos, irot, rpos, rrot)
        side = cross(sub(ub, ua), ng)
        if dot(side, sub(p, ua)) > 0.0:
            return False
    return True


@njit(**INLINE)
def _emit_crossing(geo, out, c, cap, o, t, world, x, q, rpos, rrot, p, n, n_world, depth, flip, friction, restitution,
                   key):
    """Write a contact at p, depth behind the reference face (normal n; both in its frame): as
    o's point sunk into t's face, or (flip: the reference face is o's) o's face point above p
    against t's point p, the normal reversed."""
    if flip:
        on_o = add(rpos, rotate(rrot, add(p, mul(n, depth))))
        normal = (-n_world[0], -n_world[1], -n_world[2])
    else:
        on_o = add(rpos, rotate(rrot, p))
        normal = n_world
    if c < cap:
        # Not a fixed point of o (material False): where an edge crosses a side slides along both
        # as they move, so its friction anchor follows o's motion as a rolling surface's does.
        _emit(out, c, o, t, world, x, q, on_o, 0.0, normal, depth, friction, restitution, key, False)
    return c + 1


def find_chunks() -> int:
    """How many chunks ``find_contacts`` splits a large list of pairs into: two per thread (the
    pairs' contacts vary, the ground's many), none with one thread."""
    threads = numba.get_num_threads()
    return 2 * threads if threads > 1 else 0


def find_contacts(geo, x, q, x_prev, q_prev, pairs, points, point_start, point_radius, point_material, body_shape,
                  body_friction, body_restitution, bound, margin, world, key_stride, out, pair_first, spare=None):
    """Contacts of every pair (Q, 3): (body a, body b or ``world``, shape of b). For body pairs both
    sides are tested (a's features against b's shape, then b's against a's). Writes ``out`` (the
    contact buffers, see ``ContactBuffers``) and ``pair_first`` (Q + 1,): pair k's contacts are
    pair_first[k]:pair_first[k + 1]. Returns the number of contacts; if it exceeds the buffers'
    capacity nothing beyond it is written and the caller grows them and calls again.

    x_prev, q_prev: the poses at the substep's start, from which a fixed point that reached inside a
    box, hull or cylinder in the substep takes the face it came in through (``distance.entered``).

    spare: None, or buffers like ``out``'s with a first axis of ``find_chunks() - 1`` (and the
    same capacity): then from PARALLEL_FIND_PAIRS pairs on, the pairs are split into that many
    chunks plus one, found on all cores (the first chunk into ``out``, the others into ``spare``),
    and the chunks' contacts joined in order: the serial answer's bits."""
    placed = _placed(x, q, points, point_start, world)
    started = _placed(x_prev, q_prev, points, point_start, world)
    if spare is None or spare[0].shape[0] == 0 or pairs.shape[0] < PARALLEL_FIND_PAIRS:
        # The buffers of the mesh vertices a cylinder meets (see mesh_vertices_into).
        mark = np.zeros(geo[13].shape[0], np.uint8)
        found = np.empty(geo[13].shape[0], np.int64)
        return _find_pair_contacts(geo, x, q, x_prev, q_prev, pairs, 0, pairs.shape[0], points, point_start,
                                   point_radius, point_material, body_shape, body_friction, body_restitution, bound,
                                   margin, world, key_stride, out, pair_first, placed, started, mark, found)
    return _find_contacts_parallel(geo, x, q, x_prev, q_prev, pairs, points, point_start, point_radius, point_material,
                                   body_shape, body_friction, body_restitution, bound, margin, world, key_stride, out,
                                   pair_first, placed, started, spare)


@njit(**JIT)
def _placed(x, q, points, point_start, world):
    """Every sample point in the world once (a body meets a dozen others in a pile)."""
    placed = np.empty((points.shape[0], 3))
    for o in range(world):
        if point_start[o + 1] > point_start[o]:
            xo, qo = get3(x, o), get4(q, o)
            for p in range(point_start[o], point_start[o + 1]):
                placed[p, 0], placed[p, 1], placed[p, 2] = add(xo, rotate(qo, get3(points, p)))
    return placed


@njit(parallel=True, **JIT)
def _find_contacts_parallel(geo, x, q, x_prev, q_prev, pairs, points, point_start, point_radius, point_material,
                            body_shape, body_friction, body_restitution, bound, margin, world, key_stride, out,
                            pair_first, placed, started, spare):
    """``find_contacts`` in chunks of pairs on all cores: chunk 0 writes into ``out`` from slot 0,
    chunk k > 0 into spare[.][k - 1] from slot 0 (each chunk's pair_first counted from its own
    start); then the chunks are moved into place one after the other and their pair_first shifted.
    The count returned is the serial one, so a caller that grows the buffers to it and calls again
    gets room for every chunk too (a chunk never holds more than all of them)."""
    chunks = spare[0].shape[0] + 1
    total = pairs.shape[0]
    counts = np.zeros(chunks, np.int64)
    vertices = geo[13].shape[0]
    for k in prange(chunks):
        lo, hi = total * k // chunks, total * (k + 1) // chunks
        mark = np.zeros(vertices, np.uint8)
        found = np.empty(vertices, np.int64)
        if k == 0:
            counts[k] = _find_pair_contacts(geo, x, q, x_prev, q_prev, pairs, lo, hi, points, point_start,
                                            point_radius, point_material, body_shape, body_friction, body_restitution,
                                            bound, margin, world, key_stride, out, pair_first, placed, started, mark,
                                            found)
        else:
            mine = (spare[0][k - 1], spare[1][k - 1], spare[2][k - 1], spare[3][k - 1], spare[4][k - 1])
            counts[k] = _find_pair_contacts(geo, x, q, x_prev, q_prev, pairs, lo, hi, points, point_start,
                                            point_radius, point_material, body_shape, body_friction, body_restitution,
                                            bound, margin, world, key_stride, mine, pair_first, placed, started, mark,
                                            found)
    cap = out[0].shape[0]
    at = counts[0]
    for k in range(1, chunks):
        lo, hi = total * k // chunks, total * (k + 1) // chunks
        for i in range(lo, hi):
            pair_first[i] += at
        n = counts[k]
        if at + n <= cap:
            _copy_rows(spare[0][k - 1], out[0], at, n)
            _copy_rows(spare[1][k - 1], out[1], at, n)
            _copy_rows(spare[2][k - 1], out[2], at, n)
            _copy_rows(spare[3][k - 1], out[3], at, n)
            _copy_rows(spare[4][k - 1], out[4], at, n)
        at += n
    pair_first[total] = at
    return at


@njit(**INLINE)
def _copy_rows(src, dst, at, n):
    """dst[at:at + n] = src[:n]."""
    for c in range(n):
        for i in range(src.shape[1]):
            dst[at + c, i] = src[c, i]


@njit(**HELPER)
def _find_pair_contacts(geo, x, q, x_prev, q_prev, pairs, first, end, points, point_start, point_radius, point_material,
                        body_shape, body_friction, body_restitution, bound, margin, world, key_stride, out, pair_first,
                        placed, started, mark, found):
    """find_contacts' loop over the pairs first:end, writing from slot 0 of ``out`` (pair_first
    counted from there, and pair_first[end] written too when end is the last pair), apart from its
    buffers: without reference counting, which in the loop counted the shape table's 22 arrays at
    every inlined test (_may_touch)."""
    cap = out[0].shape[0]
    c = 0
    for k in range(first, end):
        pair_first[k] = c
        a, b, s = pairs[k, 0], pairs[k, 1], pairs[k, 2]
        target_key = b if b < world else world + 1 + s
        if _may_touch(geo, x, a, b, s, world, point_start, point_radius, body_shape, bound, margin, placed):
            c = _side(geo, x, q, x_prev, q_prev, a, b, s, world, points, point_start, point_radius, point_material,
                      body_shape, bound, margin, body_friction[a], body_restitution[a], key_stride, target_key, out, c,
                      cap, placed, started, mark, found)
        if body_shape[a] >= 0 and _near_bounds(x, a, b, world, bound, margin):
            m = margin[a] + (0.0 if b == world else margin[b])
            c = face_crossings(geo, x, q, a, body_shape[a], b, s, world, m,
                               math.sqrt(body_friction[a] * geo[16][s]), math.sqrt(body_restitution[a] * geo[17][s]),
                               points.shape[0] + world * SUPPORT_SLOTS, key_stride, target_key, out, c, cap)
        if b < world and body_shape[a] >= 0 and _may_touch(geo, x, b, a, body_shape[a], world, point_start,
                                                           point_radius, body_shape, bound, margin, placed):
            c = _side(geo, x, q, x_prev, q_prev, b, a, body_shape[a], world, points, point_start, point_radius,
                      point_material, body_shape, bound, margin, body_friction[b], body_restitution[b], key_stride, a,
                      out, c, cap, placed, started, mark, found)
    if end == pairs.shape[0]:
        pair_first[end] = c
    return c


@njit(**HELPER)
def particle_sweep(geo, s, s0, s1, s2, e0, e1, e2, r):
    """Continuous collision of a particle against shape s (a mesh, box, hull or sphere), in the
    shape's frame: from its start s (where it was one substep ago, in the shape's pose of then)
    to its end e (now, in the shape's pose of now). If it started outside and the segment enters
    the shape, the contact is at the face it entered through: (True, normal, depth (the radius
    plus how far the end is behind that face's plane), triangle or -1, the entry point). A
    deforming mesh's start is first carried with the surface point nearest it (its vertices'
    motion over the substep), so the segment is the motion relative to the surface."""
    kind = geo[0][s]
    n0, n1, n2, t, tri = 0.0, 0.0, 1.0, 0.0, -1
    if kind == MESH:
        m = geo[5][s]
        near, signed, c0, c1, c2 = _distances.mesh_nearest(geo, m, geo[18], s0, s1, s2)
        if near >= 0 and not signed > 0.0:
            return False, 0.0, 0.0, 1.0, 0.0, -1, 0.0, 0.0, 0.0
        if near >= 0 and geo[21][m] != 0:
            m0, m1, m2 = _distances.start_motion(geo, near, c0, c1, c2)
            s0, s1, s2 = s0 + m0, s1 + m1, s2 + m2
        hit, t, tri = _distances.sweep_mesh(geo, m, s0, s1, s2, e0 - s0, e1 - s1, e2 - s2)
        if not hit:
            return False, 0.0, 0.0, 1.0, 0.0, -1, 0.0, 0.0, 0.0
        n0, n1, n2 = geo[20][tri, 0], geo[20][tri, 1], geo[20][tri, 2]
    else:
        _, _, _, depth0 = distance(geo, s, s0, s1, s2, 0.0, 0.0, 0.0, 0.0, False)
        if not depth0 < 0.0:  # it started on or in the shape
            return False, 0.0, 0.0, 1.0, 0.0, -1, 0.0, 0.0, 0.0
        params = geo[1]
        if kind == BOX:
            hit, t, n0, n1, n2 = _distances.sweep_box(params[s, 0], params[s, 1], params[s, 2], s0, s1, s2, e0 - s0,
                                                      e1 - s1, e2 - s2)
        elif kind == HULL:
            hit, t, n0, n1, n2 = _distances.sweep_hull(geo[3], geo[2][s, 0], geo[2][s, 1], s0, s1, s2, e0 - s0,
                                                       e1 - s1, e2 - s2)
        else:
            hit, t, n0, n1, n2 = _distances.sweep_sphere(params[s, 0], s0, s1, s2, e0 - s0, e1 - s1, e2 - s2)
        if not hit:
            return False, 0.0, 0.0, 1.0, 0.0, -1, 0.0, 0.0, 0.0
    x0, x1, x2 = s0 + t * (e0 - s0), s1 + t * (e1 - s1), s2 + t * (e2 - s2)
    depth = r - ((e0 - x0) * n0 + (e1 - x1) * n1 + (e2 - x2) * n2)
    return True, n0, n1, n2, depth, tri, x0, x1, x2


def particle_contacts(geo, x, q, x_prev, q_prev, particles, particles_prev, radii, candidates, shape_count, out_k,
                      out_corr, out_depth, out_surface, out_shape):
    """Particles against shapes: for each candidate (particle, shape) (sorted by particle), the
    deepest contact of each particle. Writes per contact the particle, its correction (world), its
    depth, how far the surface under it moved over the substep (its owner's motion, and a
    deforming mesh's own) and the shape; returns the number written. World shapes do not move.

    Continuous: a particle whose motion over the substep relative to a mesh, box, hull or
    sphere may cross its surface (its motion in the shape's frame plus how far a deforming
    mesh's vertices moved is at least the end's distance from the surface, which bounds how far
    away any crossing can be) is swept (``particle_sweep``); if it entered
    from outside, its contact is at the face it entered through, so a thin shape (a paddle, a
    table top) or a fast one holds it on the side it came from instead of pushing it out of the
    far side.

    Many candidates (PARALLEL_CANDIDATES) are answered on all cores, in chunks of whole particles
    joined in order: each particle's answer is its own, so the same contacts in the same order.
    """
    n = candidates.shape[0]
    if n >= PARALLEL_CANDIDATES and numba.get_num_threads() > 1:
        return _particle_contacts_parallel(geo, x, q, x_prev, q_prev, particles, particles_prev, radii, candidates,
                                           out_k, out_corr, out_depth, out_surface, out_shape)
    return _particle_contacts_range(geo, x, q, x_prev, q_prev, particles, particles_prev, radii, candidates, 0, n, 0,
                                    out_k, out_corr, out_depth, out_surface, out_shape)


@njit(**HELPER)
def _particle_contacts_range(geo, x, q, x_prev, q_prev, particles, particles_prev, radii, candidates, k_first, k_stop,
                             c_first, out_k, out_corr, out_depth, out_surface, out_shape):
    """The contacts of candidates k_first to k_stop - 1 (whole particles), written from c_first
    on: how many."""
    c = c_first
    k = k_first
    n = k_stop
    while k < n:
        p = candidates[k, 0]
        best_depth = 0.0
        best_s = -1
        best_tri = -1
        bn = (0.0, 0.0, 0.0)
        best_rot = (1.0, 0.0, 0.0, 0.0)
        best_local = (0.0, 0.0, 0.0)
        best_at = (0.0, 0.0, 0.0)
        pw = get3(particles, p)
        r = radii[p]
        while k < n and candidates[k, 0] == p:
            s = candidates[k, 1]
            spos, srot = _shape_pose(geo, s, x, q)
            local = rotate_back(srot, sub(pw, spos))
            n0, n1, n2, depth = distance(geo, s, local[0], local[1], local[2], r, local[0], local[1],
                                         local[2], True)
            tri = -1
            at = local
            kind = geo[0][s]
            if kind == MESH or kind == BOX or kind == HULL or kind == SPHERE:
                gap = abs(r - depth)  # the end's distance from the surface (inf: nothing near)
                surface = 0.0  # how far any point of the surface itself moved (a deforming mesh)
                if kind == MESH:
                    gap = min(gap, geo[7][geo[5][s]])  # exact only within the margin
                    surface = geo[21][geo[5][s]]
                pp = get3(particles_prev, p)
                if geo[4][s] < 0:  # a world shape's frame stays: the motion in the world is the relative one
                    moved = norm(sub(pw, pp))
                else:
                    spos0, srot0 = _shape_pose(geo, s, x_prev, q_prev)
                    moved = norm(sub(local, rotate_back(srot0, sub(pp, spos0))))
                if (moved > 0.0 or surface > 0.0) and moved + surface >= gap:
                    spos0, srot0 = _shape_pose(geo, s, x_prev, q_prev)
                    start = rotate_back(srot0, sub(pp, spos0))
                    hit, h0, h1, h2, h_depth, h_tri, a0, a1, a2 = particle_sweep(
                        geo, s, start[0], start[1], start[2], local[0], local[1], local[2], r)
                    if hit:
                        n0, n1, n2, depth, tri, at = h0, h1, h2, h_depth, h_tri, (a0, a1, a2)
            if depth > best_depth:
                best_depth = depth
                best_s = s
                bn = rotate(srot, (n0, n1, n2))
                best_rot = srot
                best_local = local
                best_tri = tri
                best_at = at
            k += 1
        if best_s >= 0:
            out_k[c] = p
            out_corr[c, 0], out_corr[c, 1], out_corr[c, 2] = mul(bn, best_depth)
            out_depth[c] = best_depth
            owner = geo[4][best_s]
            if owner < 0:
                out_surface[c, 0], out_surface[c, 1], out_surface[c, 2] = 0.0, 0.0, 0.0
            else:
                # Where the surface point now under the particle was one substep ago.
                local = rotate_back(get4(q, owner), sub(pw, get3(x, owner)))
                before = add(get3(x_prev, owner), rotate(get4(q_prev, owner), local))
                out_surface[c, 0], out_surface[c, 1], out_surface[c, 2] = sub(pw, before)
            if geo[0][best_s] == MESH and geo[21][geo[5][best_s]] != 0:
                # A deforming mesh's surface point moves with its triangle's vertices too.
                tri, at = best_tri, best_at
                if tri < 0:
                    tri, _, a0, a1, a2 = _distances.mesh_nearest(geo, geo[5][best_s], geo[13], best_local[0],
                                                                 best_local[1], best_local[2])
                    at = (a0, a1, a2)
                if tri >= 0:
                    moved = rotate(best_rot, _distances.surface_motion(geo, tri, at[0], at[1], at[2]))
                    out_surface[c, 0] += moved[0]
                    out_surface[c, 1] += moved[1]
                    out_surface[c, 2] += moved[2]
            out_shape[c] = best_s
            c += 1
    return c - c_first


@njit(parallel=True, **JIT)
def _particle_contacts_parallel(geo, x, q, x_prev, q_prev, particles, particles_prev, radii, candidates, out_k,
                                out_corr, out_depth, out_surface, out_shape):
    n = candidates.shape[0]
    chunks = min(CANDIDATE_CHUNKS, n)
    bounds = np.empty(chunks + 1, np.int64)
    for c in range(chunks + 1):
        b = (n * c) // chunks
        while 0 < b < n and candidates[b, 0] == candidates[b - 1, 0]:
            b += 1  # a particle's candidates stay in one chunk
        bounds[c] = b
    counts = np.zeros(chunks, np.int64)
    for c in prange(chunks):
        if bounds[c] < bounds[c + 1]:
            # A chunk writes from its first candidate's slot on: it finds at most one contact a
            # candidate, so it cannot reach the next chunk's slots.
            counts[c] = _particle_contacts_range(geo, x, q, x_prev, q_prev, particles, particles_prev, radii,
                                                 candidates, bounds[c], bounds[c + 1], bounds[c], out_k, out_corr,
                                                 out_depth, out_surface, out_shape)
    w = 0
    for c in range(chunks):  # joined in order, each moved down (never onto slots not yet moved)
        for m in range(bounds[c], bounds[c] + counts[c]):
            out_k[w] = out_k[m]
            for a in range(3):
                out_corr[w, a] = out_corr[m, a]
                out_surface[w, a] = out_surface[m, a]
            out_depth[w] = out_depth[m]
            out_shape[w] = out_shape[m]
            w += 1
    return w


@njit(**JIT)
def share_particle_contacts(x, x_prev, k, corr, depth, surface_disp, accel, mu, e, h, bounce_speed, w_particle,
                            radius, body, body_x, q, inv_mass, inv_inertia, share, S, dv, dL):
    """Particles against dynamic bodies, two ways (see the numpy reference): each contact's
    relative correction (as ``particles.respond_to_contacts`` makes it against an immovable
    surface) split between the particle and the body by their generalized inverse masses, the
    body's part added to S (its substep correction), dv and dL (its velocity-only changes)."""
    for c in range(k.shape[0]):
        p = k[c]
        b = body[c]
        n0 = corr[c, 0] / max(depth[c], 1e-15)
        n1 = corr[c, 1] / max(depth[c], 1e-15)
        n2 = corr[c, 2] / max(depth[c], 1e-15)
        n = (n0, n1, n2)
        x0, x1, x2 = x[p, 0], x[p, 1], x[p, 2]
        p0, p1, p2 = x_prev[p, 0], x_prev[p, 1], x_prev[p, 2]
        m0 = x0 - p0 - surface_disp[c, 0]
        m1 = x1 - p1 - surface_disp[c, 1]
        m2 = x2 - p2 - surface_disp[c, 2]
        moved_n = m0 * n0 + m1 * n1 + m2 * n2
        v_in = moved_n / h
        wp = w_particle[c]
        qb = get4(q, b)
        ib = get3(inv_inertia, b)
        im = inv_mass[b]
        lift = depth[c] - radius[c]
        r = (x0 + n0 * lift - body_x[c, 0], x1 + n1 * lift - body_x[c, 1], x2 + n2 * lift - body_x[c, 2])
        rn = cross(r, n)
        irn = inv_inertia_times(qb, ib, rn)
        denom_n = wp + share[c] * (im + dot(rn, irn))
        bounce = v_in < -bounce_speed and e[c] > 0.0
        push = depth[c]
        normal_push = depth[c]
        target_n = 0.0
        if bounce:
            a_n = accel[c, 0] * n0 + accel[c, 1] * n1 + accel[c, 2] * n2
            eb = e[c]
            z0 = max(-depth[c] - moved_n, 0.0)
            v0 = moved_n / h - 0.5 * a_n * h
            tau = min(max(2.0 * z0 / max(-v0 + math.sqrt(max(v0 * v0 - 2.0 * a_n * z0, 0.0)), 1e-15), 0.0), h)
            v_out = -eb * (v0 + a_n * tau)
            rest = h - tau
            z_end = max(v_out * rest + 0.5 * a_n * rest * rest, 0.0)
            push = depth[c] + z_end
            target_n = (v_out + a_n * rest - 0.5 * a_n * h) * h
            normal_push = (1.0 + eb) * abs(v0 + a_n * tau) * h
        lam_n = push / denom_n
        # Friction: the slip relative to the surface, taken back within the Coulomb cone of the
        # normal push, both as impulses (so a light body is not given more than mu times its push).
        l0 = m0 - n0 * moved_n
        l1 = m1 - n1 * moved_n
        l2 = m2 - n2 * moved_n
        slip_len = math.sqrt(l0 * l0 + l1 * l1 + l2 * l2)
        t = (l0 / max(slip_len, 1e-300), l1 / max(slip_len, 1e-300), l2 / max(slip_len, 1e-300))
        rt = cross(r, t)
        irt = inv_inertia_times(qb, ib, rt)
        full = slip_len / (wp + share[c] * (im + dot(rt, irt)))
        limit = mu[c] * (normal_push / denom_n)
        lam_t = full if full <= limit else limit
        # The relative normal travel once both have moved: no outward speed from the push (or the
        # bounce's), shared the same way, as a change of velocity only.
        rel_n = moved_n + push
        if not bounce:
            target_n = min(rel_n, 0.0)
        lam_v = (rel_n - target_n) / denom_n
        gn = wp * lam_n
        gt = wp * lam_t
        gv = wp * lam_v
        x[p, 0] = x0 + n0 * gn - t[0] * gt
        x[p, 1] = x1 + n1 * gn - t[1] * gt
        x[p, 2] = x2 + n2 * gn - t[2] * gt
        x_prev[p, 0] = p0 + n0 * gv
        x_prev[p, 1] = p1 + n1 * gv
        x_prev[p, 2] = p2 + n2 * gv
        bn = im * lam_n
        bt = im * lam_t
        bv = im * lam_v / h
        S[b, 0] = S[b, 0] - n0 * bn + t[0] * bt
        S[b, 1] = S[b, 1] - n1 * bn + t[1] * bt
        S[b, 2] = S[b, 2] - n2 * bn + t[2] * bt
        S[b, 3] = S[b, 3] - irn[0] * lam_n + irt[0] * lam_t
        S[b, 4] = S[b, 4] - irn[1] * lam_n + irt[1] * lam_t
        S[b, 5] = S[b, 5] - irn[2] * lam_n + irt[2] * lam_t
        dv[b, 0] += n0 * bv
        dv[b, 1] += n1 * bv
        dv[b, 2] += n2 * bv
        lv = lam_v / h
        dL[b, 0] += rn[0] * lv
        dL[b, 1] += rn[1] * lv
        dL[b, 2] += rn[2] * lv


@njit(**JIT)
def _overlapping(centre, radius, order, lo_sorted, pairs):
    """The sweep of ``sweep_and_prune``: writes the overlapping pairs (i < j) into ``pairs`` as
    far as it holds them and returns how many there are."""
    n = order.shape[0]
    count = 0
    for u in range(n):
        i = order[u]
        hi = centre[i, 0] + radius[i]
        for t in range(u + 1, n):
            if not lo_sorted[t] <= hi:  # (numpy's searchsorted, side "right")
                break
            j = order[t]
            d0 = centre[i, 0] - centre[j, 0]
            d1 = centre[i, 1] - centre[j, 1]
            d2 = centre[i, 2] - centre[j, 2]
            reach = radius[i] + radius[j]
            if d0 * d0 + d1 * d1 + d2 * d2 <= reach * reach:
                if count < pairs.shape[0]:
                    pairs[count, 0] = min(i, j)
                    pairs[count, 1] = max(i, j)
                count += 1
    return count


def sweep_and_prune(centre: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """The broad phase (the numpy reference's ``sweep_and_prune``: the same pairs in the same
    order), compiled: the reference's candidate lists cost 6 ms a frame for 1,000 boxes."""
    centre = np.ascontiguousarray(centre, dtype=np.float64)
    radius = np.ascontiguousarray(radius, dtype=np.float64)
    lo = centre[:, 0] - radius
    order = np.argsort(lo, kind="stable")
    lo_sorted = lo[order]
    pairs = np.empty((8 * len(order) + 16, 2), np.int64)
    count = _overlapping(centre, radius, order, lo_sorted, pairs)
    if count > len(pairs):
        pairs = np.empty((count, 2), np.int64)
        _overlapping(centre, radius, order, lo_sorted, pairs)
    pairs = pairs[:count]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
