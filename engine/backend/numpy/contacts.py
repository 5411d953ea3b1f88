"""Contact generation in numpy: the reference of ``backend/numba/contacts.py`` (the same contacts
in the same order; see there for what the features are)."""

from __future__ import annotations

import math

import numpy as np

from ...geometry.kinds import BOX, CYLINDER, HULL, MESH, PLANE, SPHERE
from . import crossings
from . import distance as D
from . import quat as Q
from .distance import _cell_key, cell_slots, cylinder, distance

NEAR_SLACK = 0.05
RIM_POINTS = 16
SUPPORT_SLOTS = 2 + 2 * RIM_POINTS
RIM_REFINE = 16
RIM_GAIN = 0.002
RIM_NEAR = 0.25
GOLDEN = 0.6180339887498949
FLAT_CAP = math.radians(3.0)


def _shape_pose(geo, s, x, q):
    """World positions (k, 3) and rotations (k, 4) of shapes s (k,)."""
    owner = geo[4][s]
    pos, rot = geo[15][s].copy(), geo[14][s].copy()
    moving = owner >= 0
    if np.any(moving):
        o = owner[moving]
        pos[moving] = x[o] + Q.rotate(q[o], pos[moving])
        rot[moving] = Q.multiply(q[o], rot[moving])
    return pos, rot


def _test(geo, s, spos, srot, prefer, pw, radius, margin, use_prefer=True):
    local = Q.rotate_back(srot, pw - spos)
    n, depth = distance(geo, s, local, radius + margin, prefer, use_prefer)
    return Q.rotate(srot, n), depth - margin, depth > 0.0


def find_chunks() -> int:
    """The chunks of pairs ``find_contacts`` can use on several cores: none here."""
    return 0


def find_contacts(geo, x, q, x_prev, q_prev, pairs, points, point_start, point_radius, point_material, body_shape,
                  body_friction, body_restitution, bound, margin, world, key_stride, out, pair_first, spare=None):
    # spare: the compiled backend's buffers for chunks found on other cores (unused here).
    Qn = len(pairs)
    # Every (pair, side): owner, target body, target shape, the key of the target.
    a, b, s = pairs[:, 0], pairs[:, 1], pairs[:, 2]
    second = (b < world) & (body_shape[a] >= 0)
    side_pair = np.concatenate([np.arange(Qn), np.flatnonzero(second)])
    side_index = np.concatenate([np.zeros(Qn, np.int64), np.ones(int(second.sum()), np.int64)])
    owner = np.where(side_index == 0, a[side_pair], b[side_pair])
    target = np.where(side_index == 0, b[side_pair], a[side_pair])
    shape = np.where(side_index == 0, s[side_pair], body_shape[np.minimum(a[side_pair], len(body_shape) - 1)])
    target_key = np.where(side_index == 0, np.where(b[side_pair] < world, b[side_pair], world + 1 + s[side_pair]),
                          a[side_pair])
    spos, srot = _shape_pose(geo, shape, x, q)
    prefer = Q.rotate_back(srot, x[owner] - spos)
    m = margin[owner] + np.where(target == world, 0.0, margin[np.minimum(target, len(margin) - 1)])
    friction = np.sqrt(body_friction[owner] * geo[16][shape])
    restitution = np.sqrt(body_restitution[owner] * geo[17][shape])
    always = (geo[0][shape] == HULL) | (target == world)
    order_side = side_pair * 2 + side_index  # the order the compiled kernel visits them in

    cand = []  # per candidate: (side row, ordinal within the side, world point, radius, key, material)
    # Fixed features.
    counts = point_start[owner + 1] - point_start[owner]
    rows = np.repeat(np.arange(len(owner)), counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    p = point_start[owner][rows] + within
    pw = x[owner[rows]] + Q.rotate(q[owner[rows]], points[p])
    r = point_radius[p]
    d = pw - x[np.minimum(target[rows], len(x) - 1)]
    reach = bound[np.minimum(target[rows], len(bound) - 1)] * (1.0 + NEAR_SLACK) + r + m[rows]
    near = always[rows] | ((d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) <= reach * reach)
    rows, within, p, pw, r = rows[near], within[near], p[near], pw[near], r[near]
    cand.append((rows, within, pw, r, p * key_stride + target_key[rows], point_material[p].astype(bool)))
    fixed = len(rows)
    # Where each fixed point was at the substep's start, in its target shape's frame then (``entered``).
    spos0, srot0 = _shape_pose(geo, shape, x_prev, q_prev)
    o0 = owner[rows]
    start = Q.rotate_back(srot0[rows], x_prev[o0] + Q.rotate(q_prev[o0], points[p]) - spos0[rows])
    # Cylinder supports.
    so = body_shape[owner]
    refined_from = None
    cyl = np.flatnonzero((so >= 0) & (geo[0][np.maximum(so, 0)] == CYLINDER))
    if len(cyl):
        cs = so[cyl]
        cpos, crot = _shape_pose(geo, cs, x, q)
        radius, half = geo[1][cs, 0], geo[1][cs, 1]
        centre_local = Q.rotate_back(srot[cyl], cpos - spos[cyl])
        n_s, _ = distance(geo, shape[cyl], centre_local, np.zeros(len(cyl)), prefer[cyl], True)
        into = Q.rotate_back(crot, Q.rotate(srot[cyl], -n_s))
        perp = np.sqrt(into[:, 0] * into[:, 0] + into[:, 1] * into[:, 1])
        total = np.sqrt(into[:, 0] * into[:, 0] + into[:, 1] * into[:, 1] + into[:, 2] * into[:, 2])
        ok = perp > 1e-9 * np.maximum(total, 1e-300)
        u0 = np.where(ok, into[:, 0] / np.where(ok, perp, 1.0), 1.0)
        u1 = np.where(ok, into[:, 1] / np.where(ok, perp, 1.0), 0.0)
        flat = (total > 0.0) & (perp < math.sin(FLAT_CAP) * total)
        flat_cap = np.where(flat, np.where(into[:, 2] > 0.0, 1.0, -1.0), 0.0)
        base_ordinal = counts[cyl]
        items = []  # (cylinder row, ordinal, local point, feature slot)
        ordinal = np.zeros(len(cyl), np.int64)
        angles = 2.0 * math.pi * np.arange(RIM_POINTS) / RIM_POINTS
        refined = []  # (cylinder row, ordinal, world point): see RIM_REFINE
        edged = np.flatnonzero((geo[0][shape[cyl]] == BOX) | (geo[0][shape[cyl]] == HULL))
        support_angle = np.array([math.atan2(b1, b0) for b0, b1 in zip(u0, u1)])
        step = 2.0 * math.pi / RIM_POINTS
        for side, cap_sign in enumerate((-1.0, 1.0)):
            local = np.stack([radius * u0, radius * u1, cap_sign * half], axis=1)
            items.append((np.arange(len(cyl)), base_ordinal + ordinal, local, np.full(len(cyl), side)))
            support = _rim_test(geo, shape, spos, srot, prefer, m, cyl, np.arange(len(cyl)), cpos, crot, local, True)
            ordinal = ordinal + 1
            on = np.flatnonzero((flat_cap == cap_sign) | (geo[0][shape[cyl]] != PLANE))
            if len(on):
                for k in range(RIM_POINTS):
                    local = np.stack([radius[on] * math.cos(angles[k]), radius[on] * math.sin(angles[k]),
                                      cap_sign * half[on]], axis=1)
                    items.append((on, base_ordinal[on] + ordinal[on] + k, local,
                                  np.full(len(on), 2 + side * RIM_POINTS + k)))
                ordinal = ordinal + np.where((flat_cap == cap_sign) | (geo[0][shape[cyl]] != PLANE), RIM_POINTS, 0)
            if len(edged):
                z = cap_sign * half[edged]
                rim = [_rim_test(geo, shape, spos, srot, prefer, m, cyl, edged, cpos, crot,
                                 _rim_local(radius[edged], z, np.full(len(edged), angles[k])))
                       for k in range(RIM_POINTS)]
                for k in range(RIM_POINTS):
                    here, before, after = rim[k], rim[k - 1], rim[(k + 1) % RIM_POINTS]
                    peak = np.flatnonzero((here > before) & (here >= after) & (here > -RIM_NEAR * radius[edged]))
                    if not len(peak):
                        continue
                    e = edged[peak]
                    angle, depth_e = _deepest_on_rim(geo, shape, spos, srot, prefer, m, cyl, e, cpos, crot, radius[e],
                                                     z[peak], np.full(len(e), angles[k]))
                    turn = np.array([(a - b) % (2.0 * math.pi) for a, b in zip(angle, support_angle[e])])
                    near = np.minimum(turn, 2.0 * math.pi - turn) < step
                    floor = np.where(near, np.maximum(here[peak], support[e]), here[peak])
                    gain = np.flatnonzero(depth_e > floor + RIM_GAIN * radius[e])
                    g = e[gain]
                    refined.append((g, base_ordinal[g] + ordinal[g] + k,
                                    cpos[g] + Q.rotate(crot[g], _rim_local(radius[g], z[peak][gain], angle[gain]))))
                ordinal[edged] += RIM_POINTS
        ci = np.concatenate([i for i, _, _, _ in items])
        co = np.concatenate([o for _, o, _, _ in items])
        cl = np.concatenate([local for _, _, local, _ in items])
        slot = np.concatenate([k for _, _, _, k in items])
        cw = cpos[ci] + Q.rotate(crot[ci], cl)
        rows_c = cyl[ci]
        keys = (len(points) + owner[rows_c] * SUPPORT_SLOTS + slot) * key_stride + target_key[rows_c]
        cand.append((rows_c, co, cw, np.zeros(len(ci)), keys.astype(np.int64), np.zeros(len(ci), bool)))
        # Rim points against a box or hull: out through the nearest face (see the compiled _cylinder_side).
        sharp = (geo[0][shape[cyl]] == BOX) | (geo[0][shape[cyl]] == HULL)
        rim_nearest = fixed + np.flatnonzero((slot >= 2) & sharp[ci])
        refined_from = sum(len(c[0]) for c in cand)
        for e, ordinal_e, world_e in refined:
            cand.append((cyl[e], ordinal_e, world_e, np.zeros(len(e)), np.full(len(e), -1, np.int64),
                         np.zeros(len(e), bool)))
        vertex_cand = _mesh_vertices_in_cylinders(geo, x, q, cyl, shape, spos, srot, cpos, crot, radius, half, m,
                                                  base_ordinal + ordinal)
    else:
        vertex_cand = None
    rows = np.concatenate([c[0] for c in cand])
    ordinal = np.concatenate([c[1] for c in cand])
    pw = np.concatenate([c[2] for c in cand])
    r = np.concatenate([c[3] for c in cand])
    key = np.concatenate([c[4] for c in cand])
    material = np.concatenate([c[5] for c in cand])
    n, depth, hit = _test(geo, shape[rows], spos[rows], srot[rows], prefer[rows], pw, r, m[rows])
    if refined_from is not None:  # a cylinder's rim points and refined ones: out through the nearest face
        nearest = np.concatenate([rim_nearest, np.arange(refined_from, len(rows))])
        rr = rows[nearest]
        n[nearest], depth[nearest], hit[nearest] = _test(geo, shape[rr], spos[rr], srot[rr], prefer[rr], pw[nearest],
                                                         r[nearest], m[rr], False)
    rf = rows[:fixed]
    now = Q.rotate_back(srot[rf], pw[:fixed] - spos[rf])
    came, n_in, depth_in = D.entered(geo, shape[rf], now, start, r[:fixed] + m[rf], prefer[rf])
    came = np.flatnonzero(came)
    n[came] = Q.rotate(srot[rf[came]], n_in[came])
    depth[came] = depth_in[came] - m[rf[came]]
    if vertex_cand is not None:
        rows_v, ordinal_v, pw_v, n_v, depth_v = vertex_cand
        rows, ordinal = np.concatenate([rows, rows_v]), np.concatenate([ordinal, ordinal_v])
        pw, r = np.concatenate([pw, pw_v]), np.concatenate([r, np.zeros(len(rows_v))])
        key = np.concatenate([key, np.full(len(rows_v), -1, np.int64)])
        material = np.concatenate([material, np.zeros(len(rows_v), bool)])
        n, depth = np.concatenate([n, n_v]), np.concatenate([depth, depth_v])
        hit = np.concatenate([hit, depth_v > -m[rows_v]])
    # Boxes and hulls crossing face on face (``crossings``), after each pair's first side's points.
    cross_rows = np.flatnonzero((side_index == 0) & (body_shape[owner] >= 0))
    if len(cross_rows):
        so = body_shape[owner[cross_rows]]
        has = (geo[22][so, 1] > 0) & (geo[22][shape[cross_rows], 1] > 0)
        cross_rows, so = cross_rows[has], so[has]
    if len(cross_rows):
        opos, orot = _shape_pose(geo, so, x, q)
        F = crossings.faces_of(geo)
        feature0 = len(points) + world * SUPPORT_SLOTS
        found = []
        for k, row in enumerate(cross_rows):
            a, b = int(owner[row]), int(target[row])
            if b != world:
                d = x[a] - x[b]
                reach = (bound[a] + bound[b]) * (1.0 + NEAR_SLACK) + margin[a] + margin[b]
                if d[0] * d[0] + d[1] * d[1] + d[2] * d[2] > reach * reach:
                    continue
            for on_o, normal, dep, kk in crossings.face_crossings(
                    F, int(so[k]), int(shape[row]), tuple(opos[k].tolist()), tuple(orot[k].tolist()),
                    tuple(spos[row].tolist()), tuple(srot[row].tolist()), float(m[row]), feature0, key_stride,
                    int(target_key[row])):
                found.append((row, on_o, normal, dep, kk))
        if found:
            rows_x = np.array([f[0] for f in found], np.int64)
            rows = np.concatenate([rows, rows_x])
            ordinal = np.concatenate([ordinal, np.iinfo(np.int64).max // 2 + np.arange(len(found))])
            pw = np.concatenate([pw, np.array([f[1] for f in found])])
            r = np.concatenate([r, np.zeros(len(found))])
            key = np.concatenate([key, np.array([f[4] for f in found], np.int64)])
            material = np.concatenate([material, np.zeros(len(found), bool)])
            n = np.concatenate([n, np.array([f[2] for f in found])])
            depth = np.concatenate([depth, np.array([f[3] for f in found])])
            hit = np.concatenate([hit, np.ones(len(found), bool)])
    order = np.lexsort((ordinal, order_side[rows]))
    order = order[hit[order]]
    count = len(order)
    cap = out[0].shape[0]
    if count <= cap:
        ro = rows[order]
        o, t = owner[ro], target[ro]
        nw, dep, rr, pp = n[order], depth[order], r[order], pw[order]
        surface = pp - nw * (rr - dep)[:, None]
        on_a = pp - nw * rr[:, None]
        la = Q.rotate_back(q[o], on_a - x[o])
        lb = surface.copy()
        body = t != world
        lb[body] = Q.rotate_back(q[t[body]], surface[body] - x[t[body]])
        ints, floats, local_a, local_b, normal = out[0], out[1], out[2], out[3], out[4]
        ints[:count, 0], ints[:count, 1], ints[:count, 2] = o, t, key[order]
        ints[:count, 3] = material[order]
        floats[:count, 0], floats[:count, 1], floats[:count, 2] = friction[ro], restitution[ro], dep
        local_a[:count], local_b[:count], normal[:count] = la, lb, nw
    per_pair = np.bincount(side_pair[rows[order]], minlength=Qn)
    pair_first[0] = 0
    pair_first[1:Qn + 1] = np.cumsum(per_pair)
    return count


def _rim_local(radius, z, angle):
    """Rim points (k, 3) in their cylinders' frames, by ``math``'s cos and sin (the compiled ones)."""
    cos = np.array([math.cos(a) for a in angle])
    sin = np.array([math.sin(a) for a in angle])
    return np.stack([radius * cos, radius * sin, np.broadcast_to(z, radius.shape)], axis=1)


def _rim_test(geo, shape, spos, srot, prefer, m, cyl, rows, cpos, crot, local, use_prefer=False):
    """The depth (k,) of points ``local`` of the cylinders ``rows`` (indices into ``cyl``) in
    their sides' shapes: the true depth (the compiled ``_rim_depth``), or with use_prefer
    ``_test``'s."""
    r = cyl[rows]
    pw = cpos[rows] + Q.rotate(crot[rows], local)
    if use_prefer:
        return _test(geo, shape[r], spos[r], srot[r], prefer[r], pw, np.zeros(len(rows)), m[r])[1]
    inside = Q.rotate_back(srot[r], pw - spos[r])
    return distance(geo, shape[r], inside, m[r], prefer[r], False)[1] - m[r]


def _deepest_on_rim(geo, shape, spos, srot, prefer, m, cyl, rows, cpos, crot, radius, z, around):
    """The compiled ``_deepest_on_rim`` for the cylinders ``rows`` at once."""
    def depth(angle):
        return _rim_test(geo, shape, spos, srot, prefer, m, cyl, rows, cpos, crot, _rim_local(radius, z, angle))

    step = 2.0 * math.pi / RIM_POINTS
    a, b = around - step, around + step
    c1, c2 = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    f1, f2 = depth(c1), depth(c2)
    for _ in range(RIM_REFINE):
        left = f1 >= f2
        b = np.where(left, c2, b)
        a = np.where(left, a, c1)
        c2_new = np.where(left, c1, a + GOLDEN * (b - a))
        c1_new = np.where(left, b - GOLDEN * (b - a), c2)
        f2_kept, f1_kept = np.where(left, f1, f2), np.where(left, f1, f2)
        c1, c2 = c1_new, c2_new
        fresh = depth(np.where(left, c1, c2))
        f1 = np.where(left, fresh, f1_kept)
        f2 = np.where(left, f2_kept, fresh)
    pick = f1 >= f2
    return np.where(pick, c1, c2), np.where(pick, f1, f2)


def mesh_vertices_near(geo, mesh: int, centre, reach: float) -> np.ndarray:
    """The vertices (sorted, unique) of the triangles registered in the cells of mesh ``mesh``
    that a box of half-size ``reach`` round ``centre`` (3,) (the mesh's frame) touches."""
    cell_size = geo[6][mesh]
    lo = np.floor((np.asarray(centre) - reach) / cell_size).astype(np.int64)
    hi = np.floor((np.asarray(centre) + reach) / cell_size).astype(np.int64)
    axes = [np.arange(a, b + 1) for a, b in zip(lo, hi)]
    cells = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    slots = cell_slots(geo, np.full(len(cells), mesh), _cell_key(cells))
    slots = slots[slots >= 0]
    ptr, tris, triangles = geo[10], geo[11], geo[12]
    found = [triangles[tris[ptr[k]:ptr[k + 1]]].ravel() for k in slots]
    return np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)


def _mesh_vertices_in_cylinders(geo, x, q, cyl, shape, spos, srot, cpos, crot, radius, half, m, first_ordinal):
    """For the cylinder sides ``cyl`` against triangle meshes: every mesh vertex near the cylinder
    as a candidate (row, ordinal, point on the cylinder, normal from the mesh, depth), tested
    against the cylinder's own shape (see the compiled kernel)."""
    rows, ordinals, points, normals, depths = [], [], [], [], []
    for i in np.flatnonzero(geo[0][shape[cyl]] == MESH):
        row = cyl[i]
        centre = Q.rotate_back(srot[row][None], (cpos[i] - spos[row])[None])[0]
        reach = math.sqrt(radius[i] * radius[i] + half[i] * half[i]) + m[row]
        verts = mesh_vertices_near(geo, geo[5][shape[row]], centre, reach)
        if not len(verts):
            continue
        vw = spos[row] + Q.rotate(np.repeat(srot[row][None], len(verts), axis=0), geo[13][verts])
        rot = np.repeat(crot[i][None], len(verts), axis=0)
        local = Q.rotate_back(rot, vw - cpos[i])
        n_c, depth = cylinder(np.full(len(verts), radius[i]), np.full(len(verts), half[i]), local,
                              np.zeros(len(verts)), np.zeros((len(verts), 3)), False)
        out_n = -Q.rotate(rot, n_c)
        rows.append(np.full(len(verts), row))
        ordinals.append(first_ordinal[i] + np.arange(len(verts)))
        points.append(vw - out_n * depth[:, None])
        normals.append(out_n)
        depths.append(depth)
    if not rows:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0)
    return (np.concatenate(rows), np.concatenate(ordinals), np.concatenate(points), np.concatenate(normals),
            np.concatenate(depths))


def particle_sweep(geo, s, start, end, r):
    """Per candidate (k,) of shape s (a mesh, box, hull or sphere): the compiled kernel's sweep
    (see there): (hit, normal, depth, triangle or -1, entry point), in the shape's frame."""
    k = len(s)
    kind = geo[0][s]
    hit, t = np.zeros(k, bool), np.zeros(k)
    n = np.zeros((k, 3))
    n[:, 2] = 1.0
    tri = np.full(k, -1, np.int64)
    start = start.copy()
    meshes = np.flatnonzero(kind == MESH)
    if len(meshes):
        m = geo[5][s[meshes]]
        near, signed, closest = D.mesh_nearest(geo, m, geo[18], start[meshes])
        go = ~((near >= 0) & ~(signed > 0.0))
        carry = go & (near >= 0) & (geo[21][m] != 0)
        if np.any(carry):
            rows = meshes[carry]
            start[rows] = start[rows] + D.start_motion(geo, near[carry], closest[carry])
        rows = meshes[go]
        if len(rows):
            h, tr, tri_r = D.sweep_mesh(geo, m[go], start[rows], end[rows] - start[rows])
            hit[rows], t[rows], tri[rows] = h, tr, tri_r
            n[rows[h]] = geo[20][tri_r[h]]
    others = np.flatnonzero(kind != MESH)
    if len(others):
        so = s[others]
        _, depth0 = distance(geo, so, start[others], np.zeros(len(others)), start[others], False)
        go = depth0 < 0.0
        p0, d = start[others], end[others] - start[others]
        params = geo[1][so]
        for value in (BOX, HULL, SPHERE):
            sel = np.flatnonzero(go & (kind[others] == value))
            if not len(sel):
                continue
            if value == BOX:
                h, tv, nv = D.sweep_box(params[sel, :3], p0[sel], d[sel])
            elif value == HULL:
                hs = geo[2][so[sel]]
                h, tv, nv = D.sweep_hull(geo[3], hs[:, 0], hs[:, 1], p0[sel], d[sel])
            else:
                h, tv, nv = D.sweep_sphere(params[sel, 0], p0[sel], d[sel])
            rows = others[sel]
            hit[rows], t[rows] = h, tv
            n[rows[h]] = nv[h]
    x = start + t[:, None] * (end - start)
    e = end - x
    depth = r - (e[:, 0] * n[:, 0] + e[:, 1] * n[:, 1] + e[:, 2] * n[:, 2])
    return hit, n, depth, tri, x


def particle_contacts(geo, x, q, x_prev, q_prev, particles, particles_prev, radii, candidates, shape_count, out_k,
                      out_corr, out_depth, out_surface, out_shape):
    if not len(candidates):
        return 0
    p, s = candidates[:, 0], candidates[:, 1]
    spos, srot = _shape_pose(geo, s, x, q)
    local = Q.rotate_back(srot, particles[p] - spos)
    r = radii[p]
    n, depth = distance(geo, s, local, r, local, True)
    # Continuous collision where the motion could have crossed the surface (see the compiled kernel).
    kind = geo[0][s]
    tri = np.full(len(p), -1, np.int64)
    at = local.copy()
    sweepable = np.flatnonzero((kind == MESH) | (kind == BOX) | (kind == HULL) | (kind == SPHERE))
    if len(sweepable):
        ss = s[sweepable]
        spos0, srot0 = _shape_pose(geo, ss, x_prev, q_prev)
        pp = particles_prev[p[sweepable]]
        start = Q.rotate_back(srot0, pp - spos0)
        world = geo[4][ss] < 0  # a world shape's frame stays: the motion in the world is the relative one
        dm = np.where(world[:, None], particles[p[sweepable]] - pp, local[sweepable] - start)
        moved = np.sqrt(dm[:, 0] * dm[:, 0] + dm[:, 1] * dm[:, 1] + dm[:, 2] * dm[:, 2])
        gap = np.abs(r[sweepable] - depth[sweepable])
        is_mesh = kind[sweepable] == MESH
        gap[is_mesh] = np.minimum(gap[is_mesh], geo[7][geo[5][ss[is_mesh]]])
        surface = np.zeros(len(ss))
        surface[is_mesh] = geo[21][geo[5][ss[is_mesh]]]
        need = ((moved > 0.0) | (surface > 0.0)) & (moved + surface >= gap)
        if np.any(need):
            rows = sweepable[need]
            hit, hn, hd, ht, hx = particle_sweep(geo, s[rows], start[need], local[rows], r[rows])
            rows, sel = rows[hit], np.flatnonzero(hit)
            n[rows], depth[rows], tri[rows], at[rows] = hn[sel], hd[sel], ht[sel], hx[sel]
    # The deepest of each particle's candidates (the first of equals), if it is a contact.
    first = np.ones(len(p), bool)
    first[1:] = p[1:] != p[:-1]
    group = np.cumsum(first) - 1
    # Vectorised: the largest depth per group, ties to the earliest candidate.
    order = np.lexsort((np.arange(len(p)), -depth, group))
    lead = np.ones(len(order), bool)
    lead[1:] = group[order][1:] != group[order][:-1]
    pick = order[lead]
    best_depth = depth[pick]
    keep = best_depth > 0.0
    pick = pick[keep]
    count = len(pick)
    out_k[:count] = p[pick]
    nw = Q.rotate(srot[pick], n[pick])
    out_corr[:count] = nw * depth[pick][:, None]
    out_depth[:count] = depth[pick]
    owner = geo[4][s[pick]]
    surface = np.zeros((count, 3))
    moving = owner >= 0
    if np.any(moving):
        o = owner[moving]
        pw = particles[p[pick][moving]]
        lo = Q.rotate_back(q[o], pw - x[o])
        surface[moving] = pw - (x_prev[o] + Q.rotate(q_prev[o], lo))
    sp = s[pick]
    deforming = np.flatnonzero(geo[0][sp] == MESH)
    deforming = deforming[geo[21][geo[5][sp[deforming]]] != 0]
    if len(deforming):
        rows = pick[deforming]
        t_d, a_d = tri[rows], at[rows]
        fresh = t_d < 0
        if np.any(fresh):
            near, _, closest = D.mesh_nearest(geo, geo[5][s[rows[fresh]]], geo[13], local[rows[fresh]])
            t_d[fresh], a_d[fresh] = near, closest
        ok = t_d >= 0
        if np.any(ok):
            motion = Q.rotate(srot[rows[ok]], D.surface_motion(geo, t_d[ok], a_d[ok]))
            surface[deforming[ok]] = surface[deforming[ok]] + motion
    out_surface[:count] = surface
    out_shape[:count] = s[pick]
    return count


def _dot3(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def share_particle_contacts(x, x_prev, k, corr, depth, surface_disp, accel, mu, e, h, bounce_speed, w_particle,
                            radius, body, body_x, q, inv_mass, inv_inertia, share, S, dv, dL):
    """Particles k (c,) against dynamic bodies body (c,), two ways, in place.

    The relative correction each contact needs is the one ``particles.respond_to_contacts``
    makes against an immovable surface (the push out, a bounce, friction's take-back of the slip
    relative to the surface, no outward speed from the push); here it is shared between the
    particle and the body by their generalized inverse masses (XPBD, Mueller et al. 2020):
    w_particle (c,) and, along a direction d at the lever arm r from the body's centre to the
    surface point, w_body = 1/M + (r x d) . I^-1 (r x d) (I^-1 in the world frame, at q), so each
    contact's impulses are equal and opposite and momentum is kept. The particle moves w_p lambda;
    the body's opposite correction (translation and rotation) is added to S (B + 1, 6) and its
    velocity-only part (what the particle's velocity loses of the push's outward speed) to dv
    (B + 1, 3) m/s and dL (B + 1, 3) angular momentum / mass units (kg m^2/s per kg of lambda).

    share (c,): how many contacts its body has in this call. Every contact is found against the
    same pose of the body (Jacobi), and each counts the body share times as heavy in its split
    (mass splitting, Tonge et al. 2012): n equal contacts under a face then move the body as one
    contact would, where n independent full shares would throw it n times too far (a light box
    under a heavy cloth); the order of the contacts cannot bias it (a box on a grid stays level),
    and each contact still closes its gap between the two exactly. corr, depth, surface_disp,
    accel (relative to the body's), mu, e, h, bounce_speed: as for ``respond_to_contacts``;
    radius (c,) m the particles'; body_x (c, 3) the body's centre in the pose the contacts were
    found at. The bodies' rows are added to contact by contact (normal then friction), in order.
    """
    c = len(k)
    if not c:
        return
    n = corr / np.maximum(depth, 1e-15)[:, None]
    xk, pk = x[k], x_prev[k]
    m = xk - pk - surface_disp
    moved_n = _dot3(m, n)
    v_in = moved_n / h
    wp = w_particle
    qb, ib, im = q[body], inv_inertia[body], inv_mass[body]
    lift = depth - radius
    r = xk + n * lift[:, None] - body_x
    rn = Q.cross(r, n)
    irn = Q.inv_inertia_times(qb, ib, rn)
    denom_n = wp + share * (im + _dot3(rn, irn))
    bounce = (v_in < -bounce_speed) & (e > 0.0)
    push = depth.copy()
    normal_push = depth.copy()
    target_n = np.zeros(c)
    if np.any(bounce):
        a_n = _dot3(accel[bounce], n[bounce])
        dn, eb, dep = moved_n[bounce], e[bounce], depth[bounce]
        z0 = np.maximum(-dep - dn, 0.0)
        v0 = dn / h - 0.5 * a_n * h
        tau = np.minimum(np.maximum(2.0 * z0 / np.maximum(-v0 + np.sqrt(np.maximum(v0 * v0 - 2.0 * a_n * z0, 0.0)),
                                                          1e-15), 0.0), h)
        v_out = -eb * (v0 + a_n * tau)
        rest = h - tau
        z_end = np.maximum(v_out * rest + 0.5 * a_n * rest * rest, 0.0)
        push[bounce] = dep + z_end
        target_n[bounce] = (v_out + a_n * rest - 0.5 * a_n * h) * h
        normal_push[bounce] = (1.0 + eb) * np.abs(v0 + a_n * tau) * h
    lam_n = push / denom_n
    slip = m - n * moved_n[:, None]
    slip_len = np.sqrt(_dot3(slip, slip))
    t = slip / np.maximum(slip_len, 1e-300)[:, None]
    rt = Q.cross(r, t)
    irt = Q.inv_inertia_times(qb, ib, rt)
    full = slip_len / (wp + share * (im + _dot3(rt, irt)))
    limit = mu * (normal_push / denom_n)
    lam_t = np.where(full <= limit, full, limit)
    rel_n = moved_n + push
    target_n = np.where(bounce, target_n, np.minimum(rel_n, 0.0))
    lam_v = (rel_n - target_n) / denom_n
    gn, gt, gv = wp * lam_n, wp * lam_t, wp * lam_v
    x[k] = xk + n * gn[:, None] - t * gt[:, None]
    x_prev[k] = pk + n * gv[:, None]
    bn, bt, bv = im * lam_n, im * lam_t, im * lam_v / h
    # Per contact: the normal row, then the friction row (the compiled kernel's order of sums).
    rows = np.stack([np.concatenate([-n * bn[:, None], -irn * lam_n[:, None]], axis=1),
                     np.concatenate([t * bt[:, None], irt * lam_t[:, None]], axis=1)], axis=1).reshape(-1, 6)
    np.add.at(S, np.repeat(body, 2), rows)
    np.add.at(dv, body, n * bv[:, None])
    np.add.at(dL, body, rn * (lam_v / h)[:, None])


# -- the broad phase --------------------------------------------------------------------------

# Which bodies may touch, from bounding spheres, once per frame: sweep and prune along x keeps it
# near linear in the number of bodies.
def sweep_and_prune(centre: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Pairs (p, 2), i < j, of spheres (centre (B, 3), radius (B,)) that overlap."""
    lo = centre[:, 0] - radius
    order = np.argsort(lo, kind="stable")
    lo_sorted = lo[order]
    hi_sorted = (centre[:, 0] + radius)[order]
    end = np.searchsorted(lo_sorted, hi_sorted, side="right")
    start = np.arange(len(order)) + 1
    counts = np.maximum(end - start, 0)
    if counts.sum() == 0:
        return np.zeros((0, 2), np.int64)
    first = np.repeat(np.arange(len(order)), counts)
    second = np.repeat(start - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    i, j = order[first], order[second]
    d = centre[i] - centre[j]
    close = np.einsum("ij,ij->i", d, d) <= (radius[i] + radius[j]) ** 2
    pairs = np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1)[close]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
