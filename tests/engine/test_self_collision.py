"""Self-collision: a cloth folding onto itself neither passes through itself nor ends closer to
itself than its self distance; a flat sheet is left alone; both backends agree.

Edge-edge: two strips of cloth dropped crosswise onto each other meet only edge against edge (no
vertex comes near a triangle of the other strip); sampled every substep, no pair of edges passes
through each other (their four ends' orientation flips while the two edges touch), where without
edge-edge contacts the upper strip falls through. The folding sheet thrown shut fast and shaken
ends with no crossing either, where vertex-triangle contacts alone let some edges through.

The folding scene: a sheet whose first part lies flat and pinned, and whose other two parts are
pages hinged at sharp creases, opened upwards (an N seen from the side). Both pages fall shut,
the second onto the first: three layers. Sampled every substep (240 Hz, one substep a frame,
the same substep as 24 fps with the default 10), for every vertex and every triangle it may
collide with: no vertex goes from one side of a triangle to the other through it.
"""

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import backend
from jakobsen_engine.collision import self_contact
from jakobsen_engine.collision.self_contact import SelfContacts, unique_edges
from jakobsen_engine.geometry.primitives import grid

RATE = 240  # samples (and substeps) per second


def n_fold(m, n_across, width=0.6, depth=0.4, rise=(0.2, 0.2)):
    """The folding sheet: vertices, quads, and which vertices lie in the pinned bottom layer.

    m: edges along each page; the bottom layer reaches 0.3 width beyond the upper crease so
    that nothing is left hanging over an edge when the pages close."""
    corners = [(-0.3 * width, 0.0), (width, 0.0), (0.0, rise[0]), (width, rise[0] + rise[1])]
    pts = []
    for k in range(3):
        a, b = np.array(corners[k]), np.array(corners[k + 1])
        mk = m if k else int(round(m * 1.3 * width / np.hypot(width, rise[0])))
        for i in range(mk + (k == 2)):
            pts.append(a + (b - a) * i / mk)
    pts = np.array(pts)
    n_path = len(pts)
    ys = np.linspace(-depth / 2, depth / 2, n_across)
    v = np.stack([np.tile(pts[:, 0], n_across), np.repeat(ys, n_path), np.tile(pts[:, 1], n_across)], axis=1)
    i, j = np.meshgrid(np.arange(n_path - 1), np.arange(n_across - 1))
    a = (j * n_path + i).ravel()
    faces = np.stack([a, a + 1, a + 1 + n_path, a + n_path], axis=1)
    return v, faces, np.tile(pts[:, 1] == 0.0, n_across)


def collidable(triangles, rest, distance):
    """(n, t) bool: vertex and triangle that self-collision keeps apart: the vertex is neither a
    corner of the triangle nor an edge neighbour of one, and at rest it was at least the distance
    from it."""
    n = len(rest)
    near = np.eye(n, dtype=bool)
    for a, b in ((0, 1), (1, 2), (2, 0)):
        near[triangles[:, a], triangles[:, b]] = near[triangles[:, b], triangles[:, a]] = True
    ok = np.ones((n, len(triangles)), bool)
    for c in range(3):
        ok &= ~near[:, triangles[:, c]]
    iv, it = np.nonzero(ok)
    ok[iv, it] = closest_distances(rest, triangles, iv, it) >= distance
    return ok


def sides(x, triangles):
    """(n, t) each vertex's signed distance from each triangle's plane, and whether its projection
    onto the plane falls inside the triangle."""
    a, b, c = (x[triangles[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    nn = np.einsum("ij,ij->i", n, n)
    unit = n / np.sqrt(nn)[:, None]
    h = x @ unit.T - np.einsum("ij,ij->i", a, unit)
    kb = np.cross(c - a, n) / nn[:, None]  # the barycentric weight of b: (q - a) . kb
    kc = np.cross(n, b - a) / nn[:, None]
    wb = x @ kb.T - np.einsum("ij,ij->i", a, kb)
    wc = x @ kc.T - np.einsum("ij,ij->i", a, kc)
    return h, (wb >= 0) & (wc >= 0) & (wb + wc <= 1)


def closest_distances(x, triangles, pairs_v, pairs_t):
    """The distance of each vertex pairs_v from its triangle pairs_t (nearest point, edges
    included)."""
    p = x[pairs_v]
    a, b, c = (x[triangles[pairs_t, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    unit = n / np.linalg.norm(n, axis=1)[:, None]
    h, inside = sides(x, triangles)
    h, inside = h[pairs_v, pairs_t], inside[pairs_v, pairs_t]
    best = np.where(inside, np.abs(h), np.inf)
    for s, e in ((a, b), (b, c), (c, a)):
        d = e - s
        f = np.clip(np.einsum("ij,ij->i", p - s, d) / np.einsum("ij,ij->i", d, d), 0.0, 1.0)
        best = np.minimum(best, np.linalg.norm(p - (s + f[:, None] * d), axis=1))
    assert np.all(np.isfinite(unit))
    return best


def fold(m, n_across, distance, self_collision=True, seconds=1.5):
    """Run the folding sheet; returns (crossings, final positions, rest, triangles, pinned, ok)."""
    v, faces, pinned = n_fold(m, n_across)
    builder = engine.ModelBuilder()
    builder.add_cloth(v, faces, pin_weights=pinned.astype(float), self_collision=self_collision,
                      self_distance=distance, friction=0.5)
    model = builder.finalize()
    solver = engine.Solver(model, engine.SolverSettings(frame_rate=RATE, substeps=1, damping=1.0))
    state = solver.make_state()
    triangles = model.surfaces.triangles
    ok = collidable(triangles, v, distance)
    h0, in0 = sides(state.positions, triangles)
    crossings = 0
    for _ in range(int(seconds * RATE)):
        solver.step_frame(state)
        h, inside = sides(state.positions, triangles)
        # A sign change near the plane (within two substeps' fall) with the vertex over the
        # triangle before or after: it went through.
        flipped = (np.sign(h) != np.sign(h0)) & (in0 | inside) & (np.abs(h0) < 0.05) & (np.abs(h) < 0.05)
        crossings += int(np.count_nonzero(flipped & ok))
        h0, in0 = h, inside
    return crossings, state.positions.copy(), v, triangles, pinned, ok


@pytest.mark.compiled_only
@pytest.mark.parametrize("m, n_across", [(8, 6), (12, 9)])
@pytest.mark.parametrize("distance", [0.006, 0.02])
def test_a_sheet_folding_onto_itself_never_passes_through_and_ends_apart(m, n_across, distance):
    crossings, x, rest, triangles, pinned, ok = fold(m, n_across, distance)
    assert crossings == 0
    # Pinned vertices never move (only the free ones are pushed, however hard they land).
    np.testing.assert_array_equal(x[pinned], rest[pinned])
    # It really folded: the pages lie on the bottom layer and on each other, three quarters of
    # their vertices within two and a half distances of it (they started up to 0.4 m above).
    assert np.percentile(x[~pinned, 2], 75) < 2.5 * distance
    assert x[:, 2].max() < 0.06
    # No vertex ended closer than 90% of the distance to a triangle it collides with.
    iv, it = np.nonzero(ok)
    gap = closest_distances(x, triangles, iv, it)
    assert gap.min() > 0.9 * distance


@pytest.mark.compiled_only
@pytest.mark.parametrize("m, n_across", [(8, 6), (12, 9)])
def test_without_self_collision_the_same_sheet_passes_through_itself(m, n_across):
    crossings, x, rest, triangles, pinned, ok = fold(m, n_across, 0.01, self_collision=False, seconds=0.5)
    assert crossings > 10
    assert x[:, 2].min() < -0.1  # the pages swing down through the bottom layer


@pytest.mark.compiled_only
@pytest.mark.parametrize("distance", [0.01, 0.12])  # shorter and longer than the edges (0.05 m)
@pytest.mark.parametrize("scene", ["on the ground", "hanging"])
def test_a_sheet_at_rest_is_not_disturbed_by_its_own_self_collision(distance, scene):
    v, faces = grid(21, 21, 1.0)
    if scene == "hanging":  # a curtain pinned along its top edge
        v = np.stack([v[:, 0], np.zeros(len(v)), v[:, 1]], axis=1)
    weights = (v[:, 2] > 0.4999).astype(float) if scene == "hanging" else None
    runs = []
    for self_collision in (False, True):
        builder = engine.ModelBuilder()
        builder.add_cloth(v + (0, 0, 0.005), faces, pin_weights=weights, self_collision=self_collision,
                          self_distance=distance)
        if scene == "on the ground":
            builder.add_collider(engine.Plane())
        solver = engine.Solver(builder.finalize())
        state = solver.make_state()
        for _ in range(12):
            solver.step_frame(state)
        runs.append(state.positions.copy())
    np.testing.assert_array_equal(runs[0], runs[1])


def crumpled_cloth(rng, nx=15, ny=15):
    """A sheet folded three times over itself with random dents, and its motion in one substep."""
    v, faces = grid(nx, ny, 1.0)
    u = (v[:, 0] + 0.5) * 3.0  # three layers along x, 1/3 m each, 2 cm apart
    layer = np.minimum(u.astype(int), 2)
    f = u - layer
    x = np.stack([np.where(layer % 2 == 0, f, 1 - f) / 3.0, v[:, 1], layer * 0.02], axis=1)
    x += rng.normal(scale=0.008, size=x.shape)
    x_prev = x + rng.normal(scale=0.01, size=x.shape)
    return v, faces, x, x_prev


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
@pytest.mark.parametrize("seed", range(3))
def test_the_kernels_agree_on_a_crumpled_cloth(seed, kernel_backend):
    if kernel_backend != "numba":
        pytest.skip("compares both backends itself")
    rng = np.random.default_rng(70 + seed)
    rest, faces, x, x_prev = crumpled_cloth(rng)
    builder = engine.ModelBuilder()
    masses = np.where(rng.random(len(rest)) < 0.1, 0.0, 1.0)  # some pinned
    builder.add_cloth(rest, faces, pin_weights=1.0 - masses, self_collision=True, self_distance=0.015)
    model = builder.finalize()
    out = []
    for name in ("numba", "numpy", "numba"):
        contacts = SelfContacts(model, backend.select(name))
        pv, pt = contacts.find_pairs(x, x_prev)
        moved = x.copy()
        contacts.solve(moved, x_prev, model.inverse_masses)
        out.append((pv, pt, moved))
    (pv, pt, a), (qv, qt, b), (rv, rt, c) = out
    assert len(pv) > 200  # a pile: many candidates
    np.testing.assert_array_equal(pv, qv)
    np.testing.assert_array_equal(pt, qt)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(a, c)  # and the same bits on every run
    assert np.abs(a - x).max() > 1e-3  # it pushed something
    pinned = model.inverse_masses == 0
    np.testing.assert_array_equal(a[pinned], x[pinned])


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
def test_the_grid_finds_every_pair_when_one_vertex_flies_off(kernel_backend):
    # One vertex 100 m away makes the cells coarse (none covers more than 9 a side); the grid
    # must still find exactly the pairs the brute force finds.
    if kernel_backend != "numba":
        pytest.skip("compares both backends itself")
    rng = np.random.default_rng(5)
    rest, faces, x, x_prev = crumpled_cloth(rng)
    x[7] += (100.0, 0.0, 0.0)
    builder = engine.ModelBuilder()
    builder.add_cloth(rest, faces, self_collision=True, self_distance=0.015)
    model = builder.finalize()
    found = [SelfContacts(model, backend.select(name)).find_pairs(x, x_prev) for name in ("numba", "numpy")]
    assert len(found[0][0]) > 200
    for a, b in zip(*found):
        np.testing.assert_array_equal(a, b)


# -- edge-edge ----------------------------------------------------------------------------------


def segment_distance(p0, p1, q0, q1):
    """(k,) the distance of the nearest points of segments p0-p1 and q0-q1 (k, 3) each."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0

    def dot(u, v):
        return np.einsum("ij,ij->i", u, v)

    a, e, f, c, b = dot(d1, d1), dot(d2, d2), dot(d2, r), dot(d1, r), dot(d1, d2)
    den = a * e - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.clip(np.where(den > 1e-30, (b * f - c * e) / den, 0.0), 0.0, 1.0)
        t = (b * s + f) / e
        s = np.where(t < 0, np.clip(-c / a, 0, 1), np.where(t > 1, np.clip((b - c) / a, 0, 1), s))
        t = np.clip(t, 0.0, 1.0)
    return np.linalg.norm(r + s[:, None] * d1 - t[:, None] * d2, axis=1)


def never_held(edges, tris, rest, distance):
    """(e, e) bool, by brute force: the pairs of edges (sharing no end) that self-collision never
    holds apart, the triangles being ``tris``: closer than the distance at rest, or two inner edges
    (each of two triangles or more) across a triangle from each other (an end of one is the third
    corner of a triangle of the other) closer than RING_APART distances at rest."""
    index = {tuple(e): k for k, e in enumerate(edges.tolist())}
    ne = len(edges)
    uses = np.zeros(ne, int)
    across = np.zeros((ne, ne), bool)
    for t in tris.tolist():
        for c in range(3):
            corner, a, b = t[c], t[(c + 1) % 3], t[(c + 2) % 3]
            opposite = index[(min(a, b), max(a, b))]
            uses[opposite] += 1
            for k in np.flatnonzero(np.any(edges == corner, axis=1)):
                across[k, opposite] = across[opposite, k] = True
    i, j = np.triu_indices(ne, 1)
    gap = segment_distance(rest[edges[i, 0]], rest[edges[i, 1]], rest[edges[j, 0]], rest[edges[j, 1]])
    inner = (uses[i] >= 2) & (uses[j] >= 2)
    apart = ~np.any(edges[i][:, :, None] == edges[j][:, None, :], axis=(1, 2))
    out = np.zeros((ne, ne), bool)
    never = apart & ((gap < distance) | (inner & across[i, j] & (gap < self_contact.RING_APART * distance)))
    out[i[never], j[never]] = out[j[never], i[never]] = True
    return out


def edge_pairs_apart(edges, rest, distance):
    """Every pair of edges (p, 2) that self-collision keeps apart: sharing no end, and at least the
    distance apart at rest (a sharp crease folds closer ones onto each other, and no distance
    could be held between them without stretching the cloth)."""
    i, j = np.triu_indices(len(edges), 1)
    e = edges
    apart = (e[i, 0] != e[j, 0]) & (e[i, 0] != e[j, 1]) & (e[i, 1] != e[j, 0]) & (e[i, 1] != e[j, 1])
    i, j = i[apart], j[apart]
    keep = segment_distance(rest[e[i, 0]], rest[e[i, 1]], rest[e[j, 0]], rest[e[j, 1]]) >= distance
    return np.stack([i[keep], j[keep]], axis=1)


def edge_crossings(x0, x1, edges, pairs, touch=1e-3):
    """How many edge pairs passed through each other between positions x0 and x1 (each end moving
    in a straight line): the orientation of their four ends flips, and where it is zero (taken as
    linear over the step) the two edges are within ``touch`` of each other (not round an end)."""
    # Only pairs whose edges' boxes over the step (both ends at x0 and x1, grown by touch) overlap
    # can come within touch of each other (an edge stays inside its box as its ends move in
    # straight lines): an exact filter, axis by axis, before the orientation test of the rest.
    ends = np.stack([x0[edges[:, 0]], x0[edges[:, 1]], x1[edges[:, 0]], x1[edges[:, 1]]])
    lo, hi = ends.min(axis=0) - touch, ends.max(axis=0)
    for axis in range(3):
        i, j = pairs[:, 0], pairs[:, 1]
        pairs = pairs[(lo[i, axis] <= hi[j, axis]) & (lo[j, axis] <= hi[i, axis])]
    a0, a1, b0, b1 = (edges[pairs[:, k // 2], k % 2] for k in range(4))

    def orientation(x):
        return np.einsum("ij,ij->i", x[b0] - x[a0], np.cross(x[a1] - x[a0], x[b1] - x[b0]))

    v0, v1 = orientation(x0), orientation(x1)
    k = np.flatnonzero(((v0 > 0) & (v1 < 0)) | ((v0 < 0) & (v1 > 0)))
    f = (v0[k] / (v0[k] - v1[k]))[:, None]

    def at(p):
        return x0[p[k]] + f * (x1[p[k]] - x0[p[k]])

    return int(np.count_nonzero(segment_distance(at(a0), at(a1), at(b0), at(b1)) < touch))


def crossed_strips(width=0.02, n=6, step=0.1, height=0.1):
    """Two strips of cloth, one quad wide, crossing at right angles: the lower along x at z 0, the
    upper along y at ``height``. No vertex lies within 0.04 m of the other strip's triangles (the
    crossing is in the middle of both middle quads), so only edges meet edges. Returns vertices,
    quads, and the index of the upper strip's first vertex."""
    s = (np.arange(n) - (n - 1) / 2) * step
    lower = [[x, y, 0.0] for y in (-width / 2, width / 2) for x in s]
    upper = [[x, y, height] for x in (-width / 2, width / 2) for y in s]
    quads = [[i, i + 1, n + i + 1, n + i] for i in range(n - 1)]
    faces = np.array(quads + [[2 * n + q for q in f] for f in quads])
    return np.array(lower + upper), faces, 2 * n


def upper_above_lower(x, n):
    """Where a long edge of the upper strip crosses one of the lower's, seen from above: how far
    above the lower's edge the upper's is (m)."""
    out = []
    for j in range(2):
        for i in range(n - 1):
            a0, a1 = j * n + i, j * n + i + 1
            for k in range(2):
                for m in range(n - 1):
                    b0, b1 = 2 * n + k * n + m, 2 * n + k * n + m + 1
                    p, r = x[a0, :2], x[a1, :2] - x[a0, :2]
                    q, s = x[b0, :2], x[b1, :2] - x[b0, :2]
                    den = r[0] * s[1] - r[1] * s[0]
                    if den == 0.0:
                        continue
                    t = ((q - p)[0] * s[1] - (q - p)[1] * s[0]) / den
                    u = ((q - p)[0] * r[1] - (q - p)[1] * r[0]) / den
                    if 0 <= t <= 1 and 0 <= u <= 1:
                        out.append(x[b0, 2] + u * (x[b1, 2] - x[b0, 2]) - (x[a0, 2] + t * (x[a1, 2] - x[a0, 2])))
    return np.array(out)


def drop_strips(speed, distance, seconds=0.6):
    """The upper strip thrown down at ``speed`` onto the lower, whose ends are pinned; sampled every
    substep. Returns (edge crossings, final positions, strip size n)."""
    v, faces, first = crossed_strips()
    n = first // 2
    pin = np.zeros(len(v))
    pin[[0, n - 1, n, 2 * n - 1]] = 1.0
    builder = engine.ModelBuilder()
    builder.add_cloth(v, faces, pin_weights=pin, self_collision=True, self_distance=distance, friction=0.5)
    model = builder.finalize()
    solver = engine.Solver(model, engine.SolverSettings(frame_rate=RATE, substeps=1, damping=1.0))
    state = solver.make_state()
    state.previous_positions[first:, 2] += speed / RATE
    edges, _ = unique_edges(model.surfaces.triangles)
    pairs = edge_pairs_apart(edges, v, distance)
    crossings = 0
    for _ in range(int(seconds * RATE)):
        x0 = state.positions.copy()
        solver.step_frame(state)
        crossings += edge_crossings(x0, state.positions, edges, pairs)
    return crossings, state.positions.copy(), n


@pytest.mark.parametrize("speed", [0.5, 2.0, 5.0, 10.0])  # m/s: up to 4 cm a substep, twice the distance
@pytest.mark.parametrize("distance", [0.005, 0.02])
def test_crossed_strips_meet_edge_to_edge_and_never_pass_through(speed, distance):
    crossings, x, n = drop_strips(speed, distance)
    assert crossings == 0
    # The upper strip lies across the lower one: above it wherever they cross, the distance apart
    # (within 10%), and it drapes (its ends hang below the lower strip).
    gap = upper_above_lower(x, n)
    assert len(gap) >= 4
    assert gap.min() > 0.9 * distance
    assert np.all(gap < 1.5 * distance)
    assert x[2 * n:, 2].min() < x[:2 * n, 2].min() - 0.03


@pytest.mark.parametrize("speed", [0.5, 5.0])
def test_without_edge_edge_the_upper_strip_falls_through(speed, monkeypatch):
    monkeypatch.setattr(self_contact, "EDGE_EDGE", False)
    crossings, x, n = drop_strips(speed, 0.01)
    assert crossings > 4
    assert upper_above_lower(x, n).max(initial=-1.0) < 0.0  # it ended under the lower strip


def shaken_fold(distance, speed, seed, seconds=1.0):
    """The folding sheet thrown shut: every free vertex starts at ``speed`` downwards plus a random
    velocity of 0.3 ``speed`` (a shaken sheet, crumpling as it closes); sampled every substep.
    Returns (edge crossings, final positions)."""
    v, faces, pinned = n_fold(12, 9)
    builder = engine.ModelBuilder()
    builder.add_cloth(v, faces, pin_weights=pinned.astype(float), self_collision=True, self_distance=distance,
                      friction=0.5)
    model = builder.finalize()
    solver = engine.Solver(model, engine.SolverSettings(frame_rate=RATE, substeps=1, damping=1.0))
    state = solver.make_state()
    rng = np.random.default_rng(seed)
    velocity = np.array([0.0, 0.0, -speed]) + rng.normal(scale=0.3 * speed, size=v.shape)
    state.previous_positions[~pinned] -= velocity[~pinned] / RATE
    edges, _ = unique_edges(model.surfaces.triangles)
    pairs = edge_pairs_apart(edges, v, distance)
    crossings = 0
    for _ in range(int(seconds * RATE)):
        x0 = state.positions.copy()
        solver.step_frame(state)
        crossings += edge_crossings(x0, state.positions, edges, pairs)
    return crossings, state.positions.copy()


@pytest.mark.compiled_only
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("speed, distance", [(2.0, 0.006), (3.0, 0.006), (3.0, 0.02)])
def test_a_shaken_sheet_thrown_shut_has_no_crossing_edges(speed, distance, seed):
    crossings, x = shaken_fold(distance, speed, seed)
    assert crossings == 0
    assert np.all(np.isfinite(x))


@pytest.mark.compiled_only
def test_without_edge_edge_the_shaken_sheet_lets_edges_through(monkeypatch):
    monkeypatch.setattr(self_contact, "EDGE_EDGE", False)
    crossings, _ = shaken_fold(0.006, 3.0, 0)
    assert crossings > 4


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("flier", [False, True])
def test_the_edge_kernels_agree_on_a_crumpled_cloth(seed, flier, kernel_backend):
    if kernel_backend != "numba":
        pytest.skip("compares both backends itself")
    rng = np.random.default_rng(170 + seed)
    rest, faces, x, x_prev = crumpled_cloth(rng)
    if flier:  # one vertex 100 m away: coarse cells, the same pairs
        x[7] += (100.0, 0.0, 0.0)
    builder = engine.ModelBuilder()
    masses = np.where(rng.random(len(rest)) < 0.1, 0.0, 1.0)  # some pinned
    builder.add_cloth(rest, faces, pin_weights=1.0 - masses, self_collision=True, self_distance=0.015, friction=0.4)
    model = builder.finalize()
    out = []
    for name in ("numba", "numpy", "numba"):
        contacts = SelfContacts(model, backend.select(name))
        pa, pb = contacts.find_edge_pairs(x, x_prev)
        moved = x.copy()
        # The edge pairs alone (no vertex-triangle pairs), two passes.
        none = np.zeros(0, np.int64)
        contacts.kernels.project(moved, x_prev, model.inverse_masses, contacts.friction, contacts.triangles,
                                 contacts.vertices, none, none, np.zeros(0), contacts.edges, pa, pb,
                                 np.full(len(pa), 0.015), 2)
        out.append((pa, pb, moved, contacts.near_edges))
    (pa, pb, a, na), (qa, qb, b, nb), (ra, rb, c, nc) = out
    assert len(pa) > 200  # a pile: many candidates
    assert np.all(pa < pb)
    np.testing.assert_array_equal(na, nb)
    np.testing.assert_array_equal(pa, qa)
    np.testing.assert_array_equal(pb, qb)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(a, c)  # and the same bits on every run
    assert np.abs(a - x).max() > 1e-3  # it pushed something
    pinned = model.inverse_masses == 0
    np.testing.assert_array_equal(a[pinned], x[pinned])
    # The candidates are all the edge pairs within the reach at the end of the substep (and more).
    edges = contacts.edges
    i, j = np.triu_indices(len(edges), 1)
    apart = ~np.any(edges[i][:, :, None] == edges[j][:, None, :], axis=(1, 2))
    i, j = i[apart], j[apart]
    close = segment_distance(x[edges[i, 0]], x[edges[i, 1]], x[edges[j, 0]], x[edges[j, 1]]) < 0.9 * contacts.reach[0]
    never = never_held(edges, contacts.triangles, rest, 0.015)[i, j]
    want = set(zip(i[close & ~never].tolist(), j[close & ~never].tolist()))
    assert want <= set(zip(pa.tolist(), pb.tolist()))


def sliding_layers(n, layers, gap, motion):
    """``layers`` flat n x n sheets (1 m square) stacked ``gap`` apart in z, as one cloth, each
    moved ``motion`` (m) in its own plane over one substep, the upper ones the other way round."""
    v, faces = grid(n, n, 1.0)
    rest = np.concatenate([v + (0.0, 0.0, k * gap) for k in range(layers)])
    faces = np.concatenate([faces + k * len(v) for k in range(layers)])
    turn = 2.0 * np.pi * np.arange(layers) / max(layers, 1) + 0.3
    step = motion * np.stack([np.cos(turn), np.sin(turn), np.zeros(layers)], axis=1)
    x_prev = rest.copy()
    x = rest + np.repeat(step, len(v), axis=0)
    return rest, faces, x, x_prev


@pytest.mark.parametrize("n", [9, 17])  # edges 12.5 and 6.25 cm
@pytest.mark.parametrize("distance", [0.01, 0.04])
@pytest.mark.parametrize("motion", [0.05, 0.3])  # m in one substep: a few reaches, or many edges
@pytest.mark.parametrize("layers", [1, 2])
def test_flat_sheets_sliding_in_their_planes_have_no_edge_candidates_beyond_the_reach(n, distance, motion,
                                                                                      layers):
    # An edge moving in the plane of another never crosses its line (their common normal has no
    # length along it), nor does an edge parallel to another: neither can pass through, so the
    # only candidate pairs are those within the reach at the start or the end of the substep.
    # Taking coplanar or parallel pairs as "maybe crossed" made every pair within the motion of
    # each other a candidate: a flat sheet sliding fast held thousands, for nothing.
    gap = 1.5 * distance  # the second layer beyond the reach (1.25 distances) of the first
    rest, faces, x, x_prev = sliding_layers(n, layers, gap, motion)
    builder = engine.ModelBuilder()
    builder.add_cloth(rest, faces, self_collision=True, self_distance=distance)
    contacts = SelfContacts(builder.finalize(), backend.select("auto"))
    pa, pb = contacts.find_edge_pairs(x, x_prev)
    found = set(zip(pa.tolist(), pb.tolist()))
    edges = contacts.edges
    i, j = np.triu_indices(len(edges), 1)
    apart = ~np.any(edges[i][:, :, None] == edges[j][:, None, :], axis=(1, 2))
    i, j = i[apart], j[apart]
    never = never_held(edges, contacts.triangles, rest, distance)[i, j]
    i, j = i[~never], j[~never]
    gap0, gap1 = (segment_distance(p[edges[i, 0]], p[edges[i, 1]], p[edges[j, 0]], p[edges[j, 1]])
                  for p in (x_prev, x))
    reach = contacts.reach[0]
    near = np.minimum(gap0, gap1)
    # Every pair within the reach is a candidate, and none beyond it (a hair's margin either way
    # for the rounding of the two distance routines).
    assert set(zip(i[near < 0.999 * reach].tolist(), j[near < 0.999 * reach].tolist())) <= found
    assert found <= set(zip(i[near < 1.001 * reach].tolist(), j[near < 1.001 * reach].tolist()))


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
@pytest.mark.parametrize("flier", [False, True])
def test_both_kinds_of_pairs_from_one_grid_are_those_found_apart(flier, kernel_backend):
    # find_all_pairs builds one grid of the triangles' boxes for both queries (its cells sized
    # for the larger); the pairs do not depend on the cells, so they are the same lists, on both
    # backends, as find_pairs and find_edge_pairs give one by one.
    if kernel_backend != "numba":
        pytest.skip("compares both backends itself")
    rng = np.random.default_rng(270)
    rest, faces, x, x_prev = crumpled_cloth(rng)
    if flier:  # one vertex 100 m away: coarse cells
        x[7] += (100.0, 0.0, 0.0)
    builder = engine.ModelBuilder()
    builder.add_cloth(rest, faces, self_collision=True, self_distance=0.015)
    model = builder.finalize()
    lists = []
    for name in ("numba", "numpy"):
        c = SelfContacts(model, backend.select(name))
        lists.append(c.find_pairs(x, x_prev) + c.find_edge_pairs(x, x_prev))
        lists.append(c.kernels.find_all_pairs(x, x_prev, c.triangles, c.tri_surface, c.vertices, c.vert_surface,
                                              c.tri_edges, c.edges, c.edge_surface, c.reach, c.near_start,
                                              c.near_tris, c.near_edge_start, c.near_edges))
    assert len(lists[0][0]) > 200 and len(lists[0][2]) > 200
    for other in lists[1:]:
        for a, b in zip(lists[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
@pytest.mark.parametrize("apart", [0.5, 3.0, 800.0])
def test_two_cloths_near_or_far_apart_give_the_same_pairs_from_a_dense_or_a_hashed_grid(apart, kernel_backend):
    # The compiled grid has a slot for every cell of its boxes' bounds when they are compact (two
    # crumpled cloths side by side) and hashes the cells when they are spread (the same cloths
    # 800 m apart: nearly all of that box empty). The pairs do not depend on the grid: the same
    # lists as the reference's, both cloths' pairs.
    if kernel_backend != "numba":
        pytest.skip("compares both backends itself")
    from jakobsen_engine.backend.numba import self_contact as compiled
    rng = np.random.default_rng(470)
    builder = engine.ModelBuilder()
    xs, x_prevs = [], []
    for shift in (0.0, 1.0 + apart):
        rest, faces, x, x_prev = crumpled_cloth(rng, 21, 21)
        builder.add_cloth(rest + (shift, 0.0, 0.0), faces, self_collision=True, self_distance=0.015)
        xs.append(x + (shift, 0.0, 0.0))
        x_prevs.append(x_prev + (shift, 0.0, 0.0))
    x, x_prev = np.concatenate(xs), np.concatenate(x_prevs)
    model = builder.finalize()
    lists = []
    for name in ("numba", "numpy"):
        c = SelfContacts(model, backend.select(name))
        lists.append(c.kernels.find_all_pairs(x, x_prev, c.triangles, c.tri_surface, c.vertices, c.vert_surface,
                                              c.tri_edges, c.edges, c.edge_surface, c.reach, c.near_start,
                                              c.near_tris, c.near_edge_start, c.near_edges))
    vlo, vhi, vext = compiled._vertex_boxes(x, x_prev, c.vertices, c.vert_surface, c.reach)
    layout = compiled._grid(x, x_prev, c.triangles, compiled._largest(c.reach), vext)[4]
    assert (layout[0] > 0) == (apart < 100.0)  # dense near, hashed far
    half = len(x) // 2
    pair_v = lists[0][0]
    assert np.sum(c.vertices[pair_v] < half) > 200 and np.sum(c.vertices[pair_v] >= half) > 200  # both cloths
    for a, b in zip(*lists):
        np.testing.assert_array_equal(a, b)


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
@pytest.mark.parametrize("kind", ["vertex", "edge"])
def test_a_large_cloth_searches_its_pairs_on_all_cores_with_the_same_result(kind, kernel_backend):
    # From PARALLEL_SEARCH vertices (or edges) the compiled search runs in SEARCH_CHUNKS chunks on
    # all cores and joins them in order; a chunk that finds more pairs than its first row holds
    # searches again. The lists must be the reference's, in its order, every run.
    if kernel_backend != "numba":
        pytest.skip("compares both backends itself")
    from jakobsen_engine.backend.numba import self_contact as compiled
    rng = np.random.default_rng(370)
    n = 90 if kind == "vertex" else 60
    rest, faces, x, x_prev = crumpled_cloth(rng, n, n)
    builder = engine.ModelBuilder()
    builder.add_cloth(rest, faces, self_collision=True, self_distance=0.015)
    model = builder.finalize()
    runs = []
    for name in ("numba", "numpy", "numba"):
        c = SelfContacts(model, backend.select(name))
        runs.append(c.find_pairs(x, x_prev) if kind == "vertex" else c.find_edge_pairs(x, x_prev))
    searched = len(rest) if kind == "vertex" else len(unique_edges(faces)[0])
    assert searched >= compiled.PARALLEL_SEARCH
    # More pairs than all the chunks' first rows hold: some chunk searched again.
    assert len(runs[0][0]) > compiled.SEARCH_CHUNKS * (64 + 2 * (searched // compiled.SEARCH_CHUNKS))
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


def upright_drop(n, distance, height, seconds=2.0, thickness=0.005, lowest=None):
    """A 1 m sheet of n x n vertices held upright (leaning 3 degrees), its lower edge ``height``
    above the ground, let fall: it piles up on the ground. Returns the final positions, the rest
    positions and the triangles; appends each frame's lowest height to ``lowest`` if given."""
    from jakobsen_engine.geometry.primitives import grid

    v, f = grid(n, n, 1.0)
    v = np.stack([v[:, 0], v[:, 1] * 0.05, v[:, 1] + 0.5 + height], axis=1)
    builder = engine.ModelBuilder()
    builder.add_cloth(v, f, thickness=thickness, self_collision=True, self_distance=distance)
    builder.add_collider(engine.Plane())
    model = builder.finalize()
    solver = engine.Solver(model, engine.SolverSettings(substeps=10))
    state = solver.make_state()
    for _ in range(int(seconds * 24)):
        solver.step_frame(state)
        if lowest is not None:
            lowest.append(float(state.positions[:, 2].min()))
    return state.positions.copy(), v, model.surfaces.triangles


@pytest.mark.compiled_only
@pytest.mark.parametrize("n, distance, height", [(20, 0.01, 0.1), (30, 0.005, 0.3)])
def test_a_sheet_piling_on_the_ground_ends_its_self_distance_apart(n, distance, height):
    """The ground's contacts come after the self-collision pass in a substep; without a second
    pass after them they squeezed the pile's layers closer (0.87 and 0.76 of the distance)."""
    x, rest, triangles = upright_drop(n, distance, height)
    assert np.ptp(x[:, 2]) < 0.15  # it fell and piled (it started 1 m tall)
    ok = collidable(triangles, rest, distance)
    iv, it = np.nonzero(ok)
    assert closest_distances(x, triangles, iv, it).min() > 0.9 * distance


@pytest.mark.compiled_only
@pytest.mark.parametrize("n, thickness, distance", [(20, 0.005, 0.01), (20, 0.002, 0.01), (30, 0.002, 0.005),
                                                    (25, 0.003, 0.008)])
def test_a_sheet_piling_on_the_ground_stays_on_it_with_self_collision(n, thickness, distance):
    """The self-collision pass after the ground's contacts pushed the bottom layer of the pile
    back into the ground (a 20 x 20 sheet of 5 mm thickness ended frames 3.1 mm inside it; 30 x
    30 at 2 mm, 1.8 mm under the ground): there the particles the ground holds are held (the
    solver's SUPPORTED_WEIGHT), and every frame ends with the pile on its thickness."""
    lowest = []
    x, _, _ = upright_drop(n, distance, 0.1, thickness=thickness, lowest=lowest)
    assert np.ptp(x[:, 2]) < 0.15  # it fell and piled
    assert min(lowest) > 0.8 * thickness, (min(lowest), thickness)


# -- which pairs, and the skin ------------------------------------------------------------------


@pytest.mark.parametrize("mesh", ["grid", "strip", "crumpled"])
@pytest.mark.parametrize("distance", [0.01, 0.03])
def test_the_edge_pairs_never_held_apart_are_those_close_at_rest_or_inner_neighbours_across_a_triangle(
        mesh, distance, kernel_backend):
    rng = np.random.default_rng(11)
    if mesh == "grid":  # edges 2.5 cm, diagonals 3.5: neighbours across a triangle within 2.1 distances
        rest, faces = grid(21, 21, 0.5)
    elif mesh == "strip":  # one quad wide: its long sides are border edges, held however close
        rest, faces = grid(2, 12, 0.3)
        rest[:, 0] *= 0.1
    else:
        rest, faces, _, _ = crumpled_cloth(rng, 9, 9)
    builder = engine.ModelBuilder()
    builder.add_cloth(rest, faces, self_collision=True, self_distance=distance)
    contacts = SelfContacts(builder.finalize(), backend.select(kernel_backend))
    ne = len(contacts.edges)
    got = np.zeros((ne, ne), bool)
    owner = np.repeat(np.arange(ne), np.diff(contacts.near_edge_start))
    got[owner, contacts.near_edges] = True
    want = never_held(contacts.edges, contacts.triangles, rest, distance)
    np.testing.assert_array_equal(got, want)
    if mesh == "grid" and distance == 0.03:
        assert want.sum() > ne  # the rule excluded pairs here (not an empty comparison)


@pytest.mark.parametrize("n, distance, skin", [(11, 0.01, 0.75),  # edges 10 distances long
                                               (41, 0.008, 0.75),  # 3.1
                                               (101, 0.005, 0.5),  # 2
                                               (41, 0.02, 0.25),  # 1.25
                                               (21, 0.05, 0.25)])  # 1
def test_the_skin_is_the_thickest_that_keeps_few_pairs_at_rest(n, distance, skin):
    # A 1 m sheet of n x n vertices: edges 1 / (n - 1) m. The thicker the skin the fewer the
    # searches, but a reach beyond the next neighbours' distance keeps them all as candidates.
    rest, faces = grid(n, n, 1.0)
    builder = engine.ModelBuilder()
    builder.add_cloth(rest, faces, self_collision=True, self_distance=distance)
    contacts = SelfContacts(builder.finalize(), backend.select("auto"))
    assert contacts.skin[0] == pytest.approx(skin * distance)

    def kept_at_rest(reach):
        pv, _, pa, _ = contacts.kernels.find_all_pairs(
            rest, rest, contacts.triangles, contacts.tri_surface, contacts.vertices, contacts.vert_surface,
            contacts.tri_edges, contacts.edges, contacts.edge_surface, np.array([reach]), contacts.near_start,
            contacts.near_tris, contacts.near_edge_start, contacts.near_edges)
        return len(pv) + len(pa)

    limit = self_contact.REST_CANDIDATES * n * n
    if skin != self_contact.SKINS[-1]:  # the thinnest is taken when none keeps few
        assert kept_at_rest(self_contact.SQUEEZE * (distance + contacts.skin[0])) <= limit
    thicker = [s for s in self_contact.SKINS if s > skin]
    if thicker:
        assert kept_at_rest(self_contact.SQUEEZE * (1.0 + min(thicker)) * distance) > limit


@pytest.mark.compiled_only
@pytest.mark.parametrize("skin", [0.25, 0.75, 1.5])
@pytest.mark.parametrize("distance", [0.006, 0.02])
def test_the_fold_never_passes_through_whatever_the_skin(skin, distance, monkeypatch):
    # The pairs are searched again once a vertex has moved half the skin: however thick, nothing
    # comes within the distance between two searches unseen.
    monkeypatch.setattr(self_contact, "SKINS", (skin,))
    crossings, x, rest, triangles, pinned, ok = fold(8, 6, distance)
    assert crossings == 0
    iv, it = np.nonzero(ok)
    assert closest_distances(x, triangles, iv, it).min() > 0.9 * distance


@pytest.mark.compiled_only
@pytest.mark.parametrize("n_lower, n_upper, distance, height", [(15, 11, 0.01, 0.3), (21, 15, 0.005, 0.5),
                                                                (11, 11, 0.02, 0.2)])
def test_two_cloths_with_self_collision_collide_with_each_other(n_lower, n_upper, distance, height):
    """A sheet dropped onto another lying on the ground, both with self-collision: the upper one
    lands on the lower one and rests its self distance above it; no vertex of one passes through
    a triangle of the other. (Each held apart from itself only, the upper sheet ended in the
    lower one's plane.) Without self-collision they still pass through each other."""
    from jakobsen_engine.geometry.primitives import grid

    for on in (True, False):
        builder = engine.ModelBuilder()
        builder.add_collider(engine.Plane())
        thickness = 0.004
        v, f = grid(n_lower, n_lower, 1.0)
        lower = builder.add_cloth(v + (0.0, 0.0, thickness), f, thickness=thickness,
                                  self_collision=on, self_distance=distance if on else None)
        v2, f2 = grid(n_upper, n_upper, 0.6)
        upper = builder.add_cloth(v2 + (0.05, 0.05, height), f2, thickness=thickness,
                                  self_collision=on, self_distance=distance if on else None)
        solver = engine.Solver(builder.finalize())
        state = solver.make_state()
        for _ in range(48):
            solver.step_frame(state)
            if on:
                assert state.positions[upper.slice, 2].min() > thickness  # never through the lower sheet
        gap = state.positions[upper.slice, 2] - state.positions[lower.slice, 2].max()
        if on:
            assert gap.min() > 0.9 * distance and gap.max() < 1.5 * distance + 1e-3
        else:
            assert state.positions[upper.slice, 2].max() < thickness + 1e-3  # through, in the lower's plane
