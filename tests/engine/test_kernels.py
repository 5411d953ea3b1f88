"""The two backends agree: every kernel, given the same random inputs, gives the same numbers on
numba and on numpy (bit for bit where the order of operations is the same, which is everywhere
here), and each gives the same numbers on every run."""

import os

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import backend
from jakobsen_engine.builder import colour_sticks
from jakobsen_engine.geometry.primitives import grid

pytestmark = [pytest.mark.compares_backends,
              pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")]


@pytest.fixture(params=range(4))
def rng(request):
    return np.random.default_rng(1000 + request.param)


def both(kernel: str, module: str, make_args):
    """Run ``kernel`` of both backends on copies of the same arguments; returns the two results
    (the arguments after the call, since kernels work in place), numba's first."""
    out = []
    for name in ("numba", "numpy"):
        args = make_args()
        getattr(getattr(backend.select(name), module), kernel)(*args)
        out.append(args)
    return out


def assert_same(a, b):
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("threads", ["serial", "particles on all cores"])
def test_verlet_integration_agrees(rng, threads, monkeypatch):
    from jakobsen_engine.backend.numba import particles as compiled

    monkeypatch.setattr(compiled, "PARALLEL_PARTICLES", 10**9 if threads == "serial" else 1)
    # (Only the parallel kernel is wrapped: the chunk kernel it calls must stay the compiled one.)
    parallel = compiled._verlet_parallel
    chosen = []
    monkeypatch.setattr(compiled, "_verlet_parallel", lambda *a: chosen.append(a[-1]) or parallel(*a))
    n = 500
    seed = int(rng.integers(1 << 30))

    def args(drag=True):
        r = np.random.default_rng(seed)
        x = r.normal(size=(n, 3))
        xp = x + r.normal(scale=0.01, size=(n, 3))
        movable = (r.random(n) > 0.1).astype(float)
        accel = r.normal(size=(n, 3)) * 10
        drag_w = r.random(n) * 2 if drag else np.zeros(0)
        air = r.normal(size=(n, 3))
        return [x, xp, movable, accel, 0.999, 1 / 240, drag_w, air]

    for drag in (True, False):
        a, b = both("verlet_integrate", "particles", lambda: args(drag))
        assert_same(a, b)
        assert np.abs(a[0] - args(drag)[0]).max() > 0  # it moved something
    import numba

    if threads == "serial" or numba.get_num_threads() < 2:  # (one thread: always the serial path)
        assert not chosen
    else:
        assert chosen and all(chunks == numba.get_num_threads() for chunks in chosen)


@pytest.mark.parametrize("threads", ["serial", "colours on all cores"])
def test_stick_sweeps_agree_on_a_random_net_with_every_kind_and_compliance(rng, threads, monkeypatch):
    from jakobsen_engine.backend.numba import particles as compiled

    if threads != "serial":  # every colour is big enough for the threads here
        monkeypatch.setattr(compiled, "PARALLEL_STICKS", 1)
    n, m = 300, 900
    seed = int(rng.integers(1 << 30))

    def args(sqrt=False):
        r = np.random.default_rng(seed)
        x = r.normal(size=(n, 3))
        inv = np.where(r.random(n) < 0.1, 0.0, r.random(n) + 0.5)
        i = r.integers(0, n, m)
        j = (i + 1 + r.integers(0, n - 1, m)) % n
        keep = (inv[i] > 0) | (inv[j] > 0)  # the builder drops sticks between two pinned particles
        i, j = i[keep], j[keep]
        count = len(i)
        colour = colour_sticks(i, j, inv > 0)
        order = np.argsort(colour, kind="stable")
        i, j, colour = i[order], j[order], colour[order]
        offsets = np.searchsorted(colour, np.arange(colour.max() + 2))
        rest = r.random(count) + 0.1
        alpha = np.where(r.random(count) < 0.5, 0.0, r.random(count) * 1e-3)
        kind = r.integers(0, 3, count).astype(np.int8)
        c = len(offsets) - 1
        passes = np.array([[0, c // 2, 1], [c // 2, c, 3]], dtype=np.int64)
        return [x, i, j, inv[i], inv[j], rest, alpha, kind, np.zeros(count), offsets, passes, sqrt]

    for sqrt in (False, True):
        a, b = both("project_sticks", "particles", lambda: args(sqrt))
        assert_same(a, b)
        assert np.abs(a[0] - args()[0]).max() > 1e-3
        again = both("project_sticks", "particles", lambda: args(sqrt))[0]
        assert_same(a, again)  # deterministic



def random_cloth_sticks(seed, sqrt=False, noise=0.02, start_noise=0.002):
    """project_sticks' arguments for a 9 x 7 cloth with pins (rows pinned at both ends among
    them), a rope beside it, and random positions (noise m off the rest), rests, compliances and
    kinds, its stretch, shear and bend solved as chains (with random chain flags); and the
    substep's start (start_noise m off those)."""
    from jakobsen_engine.geometry.primitives import grid

    r = np.random.default_rng(seed)
    v, f = grid(9, 7, 1.0)
    pins = (r.random(len(v)) < 0.15).astype(float)
    pins[[0, 8]] = 1.0  # the first row, pinned at both ends
    b = engine.ModelBuilder()
    b.add_cloth(v, f, pin_weights=pins, stretch_stiffness=50.0)
    rope = b.add_particles(np.stack([np.full(6, 2.0), np.zeros(6), -0.1 * np.arange(6)], axis=1),
                           masses=np.r_[0.0, np.full(5, 0.1)])
    b.add_sticks(rope[:-1], rope[1:])
    m = b.finalize()
    solver = engine.Solver(m)
    s = m.sticks
    assert s.chain_flags.max() >= 1 and np.any(s.chain_flags & 2)  # a rope (SHAKE) and a held row
    count, n = s.count, m.particle_count
    x = np.array(m.rest_positions) + r.normal(scale=noise, size=(n, 3))
    start = x + r.normal(scale=start_noise, size=(n, 3))
    rest = np.array(s.rest) * np.where(r.random(count) < 0.8, 1.0, 1.1)
    alpha = np.where(r.random(count) < 0.5, 0.0, r.random(count) * 1e-3)
    kind = np.where(r.random(count) < 0.7, 0, r.integers(1, 4, count)).astype(np.int8)
    flags = r.integers(0, 4, len(s.chain_flags)).astype(np.int8)
    inv = np.array(m.inverse_masses)
    chains = (s.chain_sticks, s.chain_flip, s.chain_offsets, flags, s.group_offsets)
    return [x, s.i, s.j, inv[s.i], inv[s.j], rest, alpha, kind, np.zeros(count), s.colour_offsets,
            solver._passes, sqrt, start, chains]


@pytest.mark.parametrize("threads", ["serial", "chains on all cores"])
def test_chain_solves_agree_on_a_random_cloth_with_every_kind_and_flag(rng, threads, monkeypatch):
    from jakobsen_engine.backend.numba import particles as compiled

    if threads != "serial":
        monkeypatch.setattr(compiled, "PARALLEL_STICKS", 1)
    seed = int(rng.integers(1 << 30))
    for sqrt in (False, True):
        for live in (False, True):  # along the directions at the substep's start, or now

            def args():
                a = random_cloth_sticks(seed, sqrt)
                if live:
                    a[12] = None
                return a

            a, b = both("project_sticks", "particles", args)
            assert_same(a, b)
            assert np.abs(a[0] - args()[0]).max() > 1e-3  # it moved something
            assert_same(a, both("project_sticks", "particles", args)[0])  # deterministic


@pytest.mark.parametrize("threads", ["serial", "chains on all cores"])
def test_taut_chains_are_filtered_alike_on_both_backends(rng, threads, monkeypatch):
    # The chains' transverse filter (a chain whose tension passes TRANSVERSE_SLACK, moved along
    # its starting directions): the random cloth and rope, started near their rests (so most
    # sticks move along their start directions: SHAKE), pulled to 1.5 times their lengths, so
    # their chains are taut. The same bits on both backends, and the filter did something.
    from jakobsen_engine.backend.numba import particles as compiled
    from jakobsen_engine.backend.numpy import particles as reference

    for name in ("TRANSVERSE_SLACK", "SHAKE_STRAIN", "CHAIN_PIVOT", "CHAIN_DAMPING", "TURN_SUMS", "TURN_REGULAR"):
        assert getattr(compiled, name) == getattr(reference, name), name
    if threads != "serial":
        monkeypatch.setattr(compiled, "PARALLEL_STICKS", 1)
    seed = int(rng.integers(1 << 30))

    for sqrt in (False, True):

        def args():
            a = random_cloth_sticks(seed, sqrt, noise=0.0005, start_noise=0.0002)
            a[0] = a[0] * 1.5
            return a

        a, b = both("project_sticks", "particles", args)
        assert_same(a, b)
        assert_same(a, both("project_sticks", "particles", args)[0])  # deterministic
        with monkeypatch.context() as m:
            m.setattr(reference, "TRANSVERSE_SLACK", np.inf)
            unfiltered = args()
            backend.select("numpy").particles.project_sticks(*unfiltered)
        assert np.abs(unfiltered[0] - b[0]).max() > 1e-3


def test_a_chain_of_one_stick_is_the_stick_projection_bit_for_bit(rng):
    # Every stick its own chain, a colour's chains one group: the same numbers as the colours.
    seed = int(rng.integers(1 << 30))
    for name in ("numba", "numpy"):
        a = random_cloth_sticks(seed)
        offsets, passes = a[9], a[10]
        chains = (np.arange(len(a[1])), np.zeros(len(a[1]), np.int8), np.arange(len(a[1]) + 1),
                  np.ones(len(a[1]), np.int8), np.asarray(offsets))
        as_chains = [p.copy() if isinstance(p, np.ndarray) else p for p in a[:10]] + \
            [np.concatenate([passes[:, :3], passes[:, :2]], axis=1), a[11], a[12], chains]
        plain = [p.copy() if isinstance(p, np.ndarray) else p for p in a[:10]] + [passes[:, :3], a[11], a[12]]
        kernels = backend.select(name).particles
        kernels.project_sticks(*as_chains)
        kernels.project_sticks(*plain)
        np.testing.assert_array_equal(as_chains[0], plain[0])
        np.testing.assert_array_equal(as_chains[8], plain[8])
        assert np.abs(plain[0] - a[0]).max() > 1e-3

@pytest.mark.parametrize("reference", ["through inverses", "along the chains"])
@pytest.mark.parametrize("threads", ["serial", "chains on all cores"])
def test_the_hinge_chain_solves_agree(rng, threads, reference, monkeypatch):
    """project_hinges on a cloth of quads and triangles with pins, bent at random, some hinges
    torn off, some held to a fold, on both backends: the same numbers to rounding, and the same
    bits every run."""
    if threads != "serial":
        monkeypatch.setattr(backend.select("numba").particles, "PARALLEL_STICKS", 1)
    if reference != "through inverses":  # (the reference's way for groups too big to invert)
        monkeypatch.setattr(backend.select("numpy").particles, "HINGE_DENSE", 0)
    seed = int(rng.integers(1 << 30))
    r0 = np.random.default_rng(seed)
    n = 9
    v, f = grid(n, n, 1.0)
    faces = [list(q) for q in f[: len(f) // 2]] + [t for q in f[len(f) // 2:] for t in ([q[0], q[1], q[2]],
                                                                                      [q[0], q[2], q[3]])]
    b = engine.ModelBuilder()
    pins = (r0.random(len(v)) < 0.1).astype(float)
    b.add_cloth(v, faces, pin_weights=pins, bend_stiffness=float(10.0 ** r0.uniform(-5, -1)))
    m = b.finalize()
    hg = m.hinges
    assert hg.count and hg.group_count > 1

    def args():
        r = np.random.default_rng(seed + 1)
        x = np.array(m.rest_positions) + r.normal(scale=0.03, size=m.rest_positions.shape)
        target = np.where(r.random((hg.count, 1)) < 0.3, r.normal(scale=0.01, size=(hg.count, 3)), 0.0)
        alpha = np.where(r.random(hg.count) < 0.2, 0.0, hg.compliance * 3600.0 * r.random(hg.count))
        on = (r.random(hg.count) > 0.1).astype(np.int8)
        lam = r.normal(scale=1e-6, size=(hg.count, 3))
        return [x, hg.index, hg.weight, np.array(m.inverse_masses[hg.index]), target, alpha, on, lam,
                hg.chain_hinges, hg.coupling, hg.chain_offsets, hg.group_offsets, 0, hg.group_count]

    def solved(name):
        a = args()
        kernels = backend.select(name).particles
        factors = kernels.prepare_hinges(a[5], a[6], a[9], a[8], a[10], a[11])
        kernels.project_hinges(*a, factors)
        return a

    # numpy solves each chain through its inverse, numba by substitution: the same to rounding.
    a, b_ = solved("numba"), solved("numpy")
    np.testing.assert_allclose(a[0], b_[0], rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(a[7], b_[7], rtol=0.0, atol=1e-12 * np.abs(a[7]).max())
    assert np.all(np.isfinite(a[0])) and np.abs(a[0] - args()[0]).max() > 1e-4  # it moved something
    for name in ("numba", "numpy"):
        assert_same(solved(name), solved(name))  # each the same every run


def test_goals_agree(rng):
    seed = int(rng.integers(1 << 30))

    def args():
        r = np.random.default_rng(seed)
        x = r.normal(size=(50, 3))
        index = r.choice(50, 20, replace=False)
        return [x, index, r.normal(size=(20, 3)), r.random(20), r.random(20) * 1e-2, r.normal(size=(20, 3)) * 1e-3]

    a, b = both("project_goals", "particles", args)
    assert_same(a, b)


@pytest.mark.parametrize("threads", ["serial", "blocks on all cores"])
def test_the_turn_take_back_kernels_agree(rng, threads, monkeypatch):
    # solver/turn.py: the fused Verlet step (the last substep's turn, the step, the sums at the
    # new start) and the finish (the sums of the moves, the pins' shares, the turn to take back)
    # over groups in blocks, some particles of no group and some pinned.
    from jakobsen_engine.backend.numba import particles as compiled

    monkeypatch.setattr(compiled, "PARALLEL_PARTICLES", 10**9 if threads == "serial" else 1)
    many = compiled._many
    chosen = []
    monkeypatch.setattr(compiled, "_many", lambda *a: chosen.append(many(*a)) or chosen[-1])
    seed = int(rng.integers(1 << 30))
    n, block = 700, 64
    groups = [(30, 300), (300, 310), (420, 700)]

    def blocks():
        lo, hi, of, at = [], [], [], 0
        for g, (a, b) in enumerate(groups + [(n, n)]):
            for s in range(at, a, block):
                lo.append(s), hi.append(min(s + block, a)), of.append(-1)
            for s in range(a, b, block):
                lo.append(s), hi.append(min(s + block, b)), of.append(g)
            at = b
        return np.array(lo), np.array(hi), np.array(of)

    lo, hi, of = blocks()

    def args():
        r = np.random.default_rng(seed)
        x = r.normal(size=(n, 3)) + 5.0
        xp = x + r.normal(scale=0.01, size=(n, 3))
        mass = np.where(r.random(n) > 0.1, r.random(n) + 0.1, 0.0)
        movable = (mass > 0).astype(float)
        accel = r.normal(size=(n, 3)) * 10
        theta = r.normal(scale=1e-3, size=(3, 3))
        theta[1] = 0.0  # a group with nothing to take back
        centre = r.normal(size=(3, 3)) + 5.0
        first = np.array([a + int(np.flatnonzero(mass[a:b] > 0)[0]) for a, b in groups])
        return [x, xp, movable, accel, 0.999, 1 / 240, r.random(n), r.normal(size=(n, 3)), mass, theta, centre,
                first, np.zeros((3, 3)), lo, hi, of, np.zeros((len(lo), 16))]

    a, b = both("verlet_turn", "particles", args)
    assert_same(a, b)
    assert not a[9].any() and a[12].any() and a[16].any()  # the turn made and cleared, the sums written

    def finish_args():
        r = np.random.default_rng(seed + 1)
        x, xp, mass, ref, before = a[0].copy(), a[1].copy(), a[8], a[12].copy(), a[16].copy()
        x += r.normal(scale=1e-3, size=x.shape)
        m = 400
        stick = r.choice(2000, m, replace=False)
        lam = np.zeros(2000)
        lam[stick[::2]] = r.normal(size=m // 2) * 1e-3
        pi, pj = r.integers(0, n, m), r.integers(0, n, m)
        pin_group = np.sort(r.integers(0, 3, m))
        chunk_lo = np.array([k for g in range(3) for k in range(np.searchsorted(pin_group, g),
                                                                np.searchsorted(pin_group, g + 1), 50)])
        chunk_group = pin_group[chunk_lo]
        chunk_hi = np.minimum(chunk_lo + 50, np.searchsorted(pin_group, chunk_group + 1))
        return [x, xp, mass, lam, stick, pi, pj, np.where(r.random(m) > 0.5, pi, pj), np.sign(r.normal(size=m)),
                chunk_lo, chunk_hi, chunk_group, ref, r.normal(size=(3, 6)) * 1e-4, lo, hi, of, before,
                np.zeros((len(lo), 16)), np.zeros((len(chunk_lo), 10)), np.zeros((3, 10)), np.zeros((3, 3)),
                np.zeros((3, 3))]

    c, d = both("turn_finish", "particles", finish_args)
    assert_same(c, d)
    assert c[21].any() and c[22].any()
    c, d = both("turn_back", "particles", lambda: [args()[0], args()[1], args()[8], args()[9], args()[10], lo, hi, of])
    assert_same(c, d)
    assert len(chosen) == 4 and all(chosen) == (threads != "serial") and any(chosen) == (threads != "serial")


def test_contact_response_agrees_for_bounces_slides_and_rests(rng):
    seed = int(rng.integers(1 << 30))
    n, c = 200, 120

    def args():
        r = np.random.default_rng(seed)
        x = r.normal(size=(n, 3))
        xp = x - r.normal(scale=0.05, size=(n, 3))
        k = r.choice(n, c, replace=False)
        normal = r.normal(size=(c, 3))
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        depth = r.random(c) * 0.01
        return [x, xp, k, normal * depth[:, None], depth, r.normal(scale=0.001, size=(c, 3)),
                r.normal(size=(c, 3)) * 10, r.random(c), r.random(c), 1 / 240, 0.05]

    a, b = both("respond_to_contacts", "particles", args)
    assert_same(a, b)


def shape_table():
    """One of every shape kind, in the world at odd poses."""
    import jakobsen_engine as engine
    from jakobsen_engine.geometry.primitives import grid
    from jakobsen_engine.geometry.shapes import ShapeTable

    table = ShapeTable()
    rng = np.random.default_rng(3)
    hull_points = rng.normal(size=(30, 3)) * [0.5, 0.3, 0.4]
    v, f = grid(9, 9, 3.0)
    v = np.asarray(v, float)
    v[:, 2] = 0.2 * np.sin(3 * v[:, 0]) * np.cos(2 * v[:, 1])
    colliders = [engine.Plane(), engine.Sphere(radius=0.4), engine.Capsule(radius=0.3, half_height=0.5),
                 engine.Box(half_extents=(0.4, 0.3, 0.2)), engine.Cylinder(radius=0.35, half_height=0.25),
                 engine.ConvexHull.from_points(hull_points), engine.TriangleMesh.from_mesh(v, f, margin=0.15),
                 engine.BoxInterior(half_extents=(1.0, 0.8, 0.6))]
    for k, c in enumerate(colliders):
        table.add_collider(c)
    return table.finalize()


@pytest.mark.parametrize("use_prefer", [False, True])
def test_every_shape_kinds_distance_agrees(rng, use_prefer):
    shapes = shape_table()
    geo = shapes.kernel_arrays()
    k = 4000
    s = rng.integers(0, shapes.count, k)
    q = rng.normal(size=(k, 3)) * 0.6
    # Points near the features where the tie-breaks decide: on faces, edges and corners of the box.
    box = s == 3
    q[box] = np.clip(q[box], -1, 1) * [0.4, 0.3, 0.2] * rng.choice([1.0, 1.001, 0.999], size=(int(box.sum()), 3))
    r = rng.random(k) * 0.05
    prefer = rng.normal(size=(k, 3))
    from jakobsen_engine.backend.numba import distance as nb
    from jakobsen_engine.backend.numpy import distance as npd

    n_np, d_np = npd.distance(geo, s, q, r, prefer, use_prefer)
    n_nb, d_nb = np.zeros((k, 3)), np.zeros(k)
    for i in range(k):
        *n, d = nb.distance(geo, s[i], q[i, 0], q[i, 1], q[i, 2], r[i], *prefer[i], use_prefer)
        n_nb[i], d_nb[i] = n, d
    np.testing.assert_array_equal(d_nb, d_np)
    hit = np.isfinite(d_np)
    np.testing.assert_array_equal(n_nb[hit], n_np[hit])
    # A physical check that cannot pass by agreement alone: the sphere's depth is radius + r - |q|.
    sph = s == 1
    np.testing.assert_allclose(d_np[sph], 0.4 + r[sph] - np.linalg.norm(q[sph], axis=1), rtol=0, atol=1e-15)
    assert np.all(np.abs(np.linalg.norm(n_np[hit], axis=1) - 1.0) < 1e-12)


def test_the_face_a_point_came_in_through_agrees_and_is_one_it_crossed(rng):
    """``entered`` (the face a body's point came into a box, hull or cylinder through) on both
    backends, for points now inside that started inside or outside, near faces, edges and
    corners; and what it finds is a face the point was beyond at the start and is behind now."""
    shapes = shape_table()
    geo = shapes.kernel_arrays()
    k = 4000
    s = rng.choice(8, k)  # plane, sphere, capsule, mesh, box interior: never found
    half = np.where((s == 3)[:, None], [0.4, 0.3, 0.2], 0.3)
    q = rng.uniform(-1, 1, (k, 3)) * half * rng.choice([1.0, 0.999, 0.98], size=(k, 3))
    start = q + rng.normal(size=(k, 3)) * rng.choice([0.0, 0.02, 0.2], size=(k, 1))
    # Some start exactly on a face's plane, as a domino's corner on the next one's side.
    on = rng.random(k) < 0.2
    start[on, 1] = np.where(start[on, 1] >= 0, 1.0, -1.0) * half[on, 1]
    r = rng.random(k) * 0.01
    prefer = rng.normal(size=(k, 3))
    from jakobsen_engine.backend.numba import distance as nb
    from jakobsen_engine.backend.numpy import distance as npd

    found_np, n_np, d_np = npd.entered(geo, s, q, start, r, prefer)
    found_nb, n_nb, d_nb = np.zeros(k, bool), np.zeros((k, 3)), np.zeros(k)
    for i in range(k):
        found_nb[i], *n, d_nb[i] = nb.entered(geo, s[i], *q[i], *start[i], r[i], *prefer[i])
        n_nb[i] = n
    np.testing.assert_array_equal(found_nb, found_np)
    np.testing.assert_array_equal(n_nb[found_np], n_np[found_np])
    np.testing.assert_array_equal(d_nb[found_np], d_np[found_np])
    assert 150 < found_np.sum() < k - 150
    assert not found_np[np.isin(s, [0, 1, 2, 6, 7])].any()
    # A box's face found: the start beyond its plane, the point behind it now, depth r + how far.
    box = np.flatnonzero(found_np & (s == 3))
    axis = np.argmax(np.abs(n_np[box]), axis=1)
    sign = n_np[box, axis]
    h = np.array([0.4, 0.3, 0.2])[axis]
    rows = np.arange(len(box))
    assert np.all(sign * start[box, axis][rows] - h > 0.0)
    assert np.all(sign * q[box, axis][rows] - h <= 0.0)
    np.testing.assert_allclose(d_np[box], r[box] - (sign * q[box, axis][rows] - h), rtol=0, atol=1e-15)


def test_the_sweep_of_fast_points_agrees(rng):
    """Conservative advancement of points on moving bodies against every shape kind (on the world
    or carried by another moving body): the same hit fractions and contact geometry, bit for bit."""
    from jakobsen_engine.backend.numba import sweep as nb
    from jakobsen_engine.backend.numpy import sweep as npd
    from jakobsen_engine.geometry import quaternions as quat
    from jakobsen_engine.geometry.kinds import MESH

    shapes = shape_table()
    geo = shapes.kernel_arrays()
    bodies, k = 12, 600
    x0 = np.vstack([rng.normal(size=(bodies, 3)) * 0.5, np.zeros((1, 3))])
    q0 = np.vstack([quat.normalize(rng.normal(size=(bodies, 4))), [[1.0, 0, 0, 0]]])
    dx = np.vstack([rng.normal(size=(bodies, 3)) * 0.4, np.zeros((1, 3))])
    phi = np.vstack([rng.normal(size=(bodies, 3)) * 0.5, np.zeros((1, 3))])
    owner = rng.integers(0, bodies, k)
    target = np.where(rng.random(k) < 0.5, bodies, rng.integers(0, bodies, k))
    target = np.where(target == owner, bodies, target)
    shape = rng.integers(0, shapes.count, k)
    local = rng.normal(size=(k, 3)) * 0.3
    radius = rng.random(k) * 0.02
    allow = rng.uniform(0.005, 0.05, k)
    speed = np.linalg.norm(dx[owner], axis=1) + np.linalg.norm(phi[owner], axis=1) * np.linalg.norm(local, axis=1) \
        + np.where(target < bodies, np.linalg.norm(dx[target], axis=1) + 3.0 * np.linalg.norm(phi[target], axis=1), 0.0)
    args = (geo, x0, q0, dx, phi, local, radius, owner, target, shape, allow, speed, bodies, 16, 12, 0.05, 4)
    a, b = nb.advance_queries(*args), npd.advance_queries(*args)
    hit = np.isfinite(b[0])
    assert 0.1 < hit.mean() < 0.95, "the queries should both hit and miss"
    np.testing.assert_array_equal(a[0], b[0])
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_array_equal(x[hit], y[hit])
    # Beyond agreement: at a hit the point touches the surface (within the touch tolerance), and a
    # query against a world shape that misses is outside the shape at the end of the motion too
    # (for those, speed is a true bound on how fast the clearance shrinks). Not for the triangle
    # mesh: it reports no distance beyond the band of grid cells around its triangles, so a point
    # that starts beyond the band is not advanced (a known limit of the sweep against meshes).
    assert np.all(b[5][hit] >= -0.05 * allow[hit] - 1e-12)
    assert np.all(b[6][hit] >= b[5][hit])  # the deepest after the hit: at least its depth there
    miss = np.flatnonzero(~hit & (target == bodies) & (geo[0][shape] != MESH))
    end = npd.advance_queries(geo, x0 + dx, quat.multiply(quat.exp_rotation(phi), q0), dx * 0.0, phi * 0.0,
                              local[miss], radius[miss], owner[miss], target[miss], shape[miss], allow[miss],
                              np.ones(len(miss)), bodies, 1, 0, 0.05, 4)
    assert not np.any(np.isfinite(end[0]))


def test_the_pair_colouring_agrees_and_no_movable_body_is_twice_in_a_colour(rng):
    from jakobsen_engine.backend.numba import rigid as nb
    from jakobsen_engine.backend.numpy import rigid as npd

    bodies = int(rng.integers(2, 300))
    # Many pairs on a few bodies too: a body in over 64 pairs needs colours beyond one word.
    pairs = np.concatenate([rng.integers(0, bodies, (int(rng.integers(0, 3000)), 2)),
                            np.stack([np.zeros(150, np.int64), rng.integers(1, bodies, 150)], axis=1)])
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    movable = rng.random(bodies) < 0.8
    order_nb, bounds_nb = nb.colour_pairs(pairs, movable)
    order_np, bounds_np = npd.colour_pairs(pairs, movable)
    np.testing.assert_array_equal(order_nb, order_np)
    np.testing.assert_array_equal(bounds_nb, bounds_np)
    for c in range(len(bounds_np) - 1):
        members = pairs[order_np[bounds_np[c]:bounds_np[c + 1]]].ravel()
        members = members[movable[members]]
        assert len(members) == len(np.unique(members))


def test_the_waves_agree_and_keep_the_order_of_pairs_that_share_a_body(rng):
    """Regrouping a sequence of pairs into waves must leave every two pairs that share a movable
    body in their order (then solving wave by wave is solving the sequence) with no movable body
    twice in a wave, and take no more waves than the longest such chain needs."""
    from jakobsen_engine.backend.numba import rigid as nb
    from jakobsen_engine.backend.numpy import rigid as npd

    bodies = int(rng.integers(2, 200))
    pairs = rng.integers(0, bodies, (int(rng.integers(1, 400)), 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    movable = rng.random(bodies) < 0.8
    order = rng.permutation(len(pairs))[:int(rng.integers(0, len(pairs) + 1))]
    out_nb, bounds_nb = nb.order_waves(order, pairs, movable)
    out_np, bounds_np = npd.order_waves(order, pairs, movable)
    np.testing.assert_array_equal(out_nb, out_np)
    np.testing.assert_array_equal(bounds_nb, bounds_np)
    assert sorted(out_np.tolist()) == sorted(order.tolist())
    wave = np.empty(len(pairs), np.int64)
    for w in range(len(bounds_np) - 1):
        members = pairs[out_np[bounds_np[w]:bounds_np[w + 1]]].ravel()
        members = members[movable[members]]
        assert len(members) == len(np.unique(members))
        wave[out_np[bounds_np[w]:bounds_np[w + 1]]] = w
    chain = np.zeros(bodies, np.int64)  # the longest chain of shared bodies ending at each body
    longest = 0
    for i, p in enumerate(order):
        for q in order[:i]:
            shared = set(pairs[p][movable[pairs[p]]]) & set(pairs[q][movable[pairs[q]]])
            if shared:
                assert wave[q] < wave[p]
        ends = [chain[b] for b in pairs[p] if movable[b]]
        length = max(ends, default=0) + 1
        for b in pairs[p]:
            if movable[b]:
                chain[b] = length
        longest = max(longest, length)
    assert len(bounds_np) - 1 == longest


def test_the_broad_phase_agrees_and_finds_every_overlapping_pair(rng):
    from jakobsen_engine.backend.numba import contacts as nb
    from jakobsen_engine.backend.numpy import contacts as npd

    n = int(rng.integers(1, 400))
    # A heap (many overlaps along x, as a pile of boxes has), some far off, some of one size
    # (ties in the sort), and a plane's infinite bound.
    centre = rng.normal(size=(n, 3)) * rng.choice([0.5, 3.0, 50.0], size=(n, 1))
    radius = np.where(rng.random(n) < 0.3, 0.25, rng.random(n) * 0.6)
    centre[rng.random(n) < 0.2, 0] = 1.0
    if n > 3:
        radius[int(rng.integers(n))] = np.inf
    compiled, reference = nb.sweep_and_prune(centre, radius), npd.sweep_and_prune(centre, radius)
    np.testing.assert_array_equal(compiled, reference)
    assert compiled.dtype == np.int64 and compiled.shape[1] == 2
    d = np.linalg.norm(centre[:, None] - centre[None], axis=2)
    with np.errstate(invalid="ignore"):
        every = np.argwhere(np.triu(d <= radius[:, None] + radius[None], 1))
    np.testing.assert_array_equal(compiled, every)


def test_the_global_stick_solve_agrees(rng):
    # solve_sticks (the conjugate gradients of the equal sticks, from warm multipliers) on a
    # random net near rest, some sticks not taking part (another kind, or not members), both
    # stopping rules (a few iterations; a reduction): the same bits, the same iteration count.
    n, m = 300, 900
    seed = int(rng.integers(1 << 30))

    def args(reduction, iterations):
        r = np.random.default_rng(seed)
        start = r.normal(size=(n, 3))
        inv = np.where(r.random(n) < 0.1, 0.0, r.random(n) + 0.5)
        i = r.integers(0, n, m)
        j = (i + 1 + r.integers(0, n - 1, m)) % n
        keep = (inv[i] > 0) | (inv[j] > 0)
        i, j = i[keep], j[keep]
        count = len(i)
        colour = colour_sticks(i, j, inv > 0)
        order = np.argsort(colour, kind="stable")
        i, j, colour = i[order], j[order], colour[order]
        offsets = np.searchsorted(colour, np.arange(colour.max() + 2))
        x = start + r.normal(scale=0.01, size=(n, 3)) * (inv > 0)[:, None]
        rest = np.linalg.norm(start[j] - start[i], axis=1) * np.where(r.random(count) < 0.8, 1.0, 1.05)
        alpha = np.where(r.random(count) < 0.3, 0.0, r.random(count))
        member = (r.random(count) < 0.9) & (r.integers(0, 4, count) == 0) | (r.random(count) < 0.5)
        lam = r.normal(scale=1e-3, size=count)
        return [x, start, i, j, inv[i], inv[j], rest, alpha, member, lam, offsets, reduction, 1e-12, iterations]

    for reduction, iterations in ((0.0, 5), (1e-3, 200)):
        out = []
        for name in ("numba", "numpy"):
            a = args(reduction, iterations)
            out.append((a, backend.select(name).particles.solve_sticks(*a)))
        (a, it_a), (b, it_b) = out
        assert it_a == it_b and it_a > 0
        assert_same(a, b)
        assert np.abs(a[0] - args(reduction, iterations)[0]).max() > 1e-4  # it moved them
        again = args(reduction, iterations)
        backend.select("numba").particles.solve_sticks(*again)
        assert_same(a, again)  # deterministic


def test_the_engine_cannot_be_imported_under_a_second_name():
    # numba's cache pickles each kernel with its module's name. tests/engine/test_reproducible.py
    # imported the engine as ``engine`` (the repository's folder, on sys.path under pytest); the
    # kernel it compiled went into the cache of these sources, and a bake from the checkout then
    # stopped loading it: "No module named 'engine'". Importing it by its folder's name is refused.
    import subprocess
    import sys

    import jakobsen_engine

    folder = os.path.dirname(os.path.abspath(jakobsen_engine.__file__))
    name = os.path.basename(folder)
    if name == "jakobsen_engine":
        pytest.skip("installed under its own name: there is no second name to import it by")
    code = "import sys; sys.path.insert(0, sys.argv[1]); import " + name
    run = subprocess.run([sys.executable, "-c", code, os.path.dirname(folder)], capture_output=True, text=True)
    assert run.returncode != 0
    assert f"the Jakobsen Physics engine is the package jakobsen_engine: import it by that name, not as '{name}'" \
        in run.stderr
    assert name not in sys.modules


def test_the_kernel_cache_is_kept_per_version_of_the_kernels_sources(tmp_path):
    # numba keys a cached kernel on its own file only, so a kernel calling one from another file
    # would be loaded with the old callee after an update that changed only the callee's file:
    # configure() puts each version of the sources' kernels in a folder of its own. (In a child
    # process: configuring moves this process's cache.)
    import subprocess
    import sys

    code = ("import os, sys; from jakobsen_engine import backend; backend.configure(cache_dir=sys.argv[1]); "
            "print(os.environ['NUMBA_CACHE_DIR']); print(backend.kernel_sources_digest())")
    runs = [subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
            .stdout.split() for _ in range(2)]
    folder, digest = runs[0]
    assert runs[1] == runs[0]  # the same sources, the same folder
    assert len(digest) == 16 and int(digest, 16) >= 0
    assert folder == os.path.join(str(tmp_path), digest) and os.path.isdir(folder)


def test_the_kernel_cache_version_changes_with_a_constant_the_kernels_compile_in(tmp_path):
    # A kernel compiles in the constants it imports (geometry.kinds' EDGE_SNAP and FACE_TIE, the
    # numpy reference's tolerances): an update that changed only such a file must not load the old
    # kernels, so the version covers every source file of the engine.
    import shutil
    import subprocess
    import sys

    import jakobsen_engine

    copy = tmp_path / "jakobsen_engine"
    shutil.copytree(os.path.dirname(jakobsen_engine.__file__), copy,
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    code = "import sys; sys.path.insert(0, sys.argv[1]); from jakobsen_engine import backend; " \
           "print(backend.__file__, backend.kernel_sources_digest())"

    def digest():
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                             check=True).stdout.split()
        assert out[0].startswith(str(copy))  # the copy's sources
        return out[1]

    from jakobsen_engine import backend

    assert digest() == backend.kernel_sources_digest()  # the same sources, the same version
    with open(copy / "geometry" / "kinds.py", "a") as kinds:
        kinds.write("\n# a constant changed\n")
    assert digest() != backend.kernel_sources_digest()


def test_configuring_the_kernel_cache_removes_other_versions_kernels_once_stale(tmp_path):
    # An update leaves the last version's kernels behind: configure() removes another version's
    # folder once nothing in it was used for a day, and leaves a recent one (another Blender may
    # still run that version) and anything that is not a folder of kernels alone.
    import subprocess
    import sys
    import time

    def folder(name, files, age_days):
        path = tmp_path / name
        path.mkdir()
        for file in files:
            (path / file).write_bytes(b"x")
        stamp = time.time() - age_days * 86400
        for item in list(path.iterdir()) + [path]:
            os.utime(item, (stamp, stamp))
        return path

    stale = folder("0123456789abcdef", ["rigid.f-1.py313.nbi", "rigid.f-1.py313.1.nbc"], 3)
    recent = folder("fedcba9876543210", ["rigid.f-1.py313.nbi"], 0.1)
    mixed = folder("00112233445566ff", ["rigid.f-1.py313.nbi", "notes.txt"], 30)
    other = folder("my-renders", ["frame.png"], 30)
    code = "import sys; from jakobsen_engine import backend; backend.configure(cache_dir=sys.argv[1])"
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    assert not stale.exists()
    assert recent.exists() and mixed.exists() and (other / "frame.png").exists()
