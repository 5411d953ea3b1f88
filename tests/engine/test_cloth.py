"""Cloth from a mesh: pins, stretch at rest, XPBD stiffness independent of substeps, topology."""

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine.particles.cloth import cloth_pairs, flatten_faces
from jakobsen_engine.geometry.primitives import grid


def curtain(nx=21, ny=21, size=1.0, **cloth_kwargs):
    """A vertical curtain in the x-z plane, top edge at z = 0, pinned along the top edge."""
    v, f = grid(nx, ny, size)
    v = np.stack([v[:, 0], np.zeros(len(v)), v[:, 1] - size / 2], axis=1)
    weights = (v[:, 2] > -1e-9).astype(float)
    return v, f, weights


def edge_strain(rest, positions, faces):
    edges = cloth_pairs(*flatten_faces(faces, len(rest), "test"))["stretch"]
    r = np.linalg.norm(rest[edges[:, 1]] - rest[edges[:, 0]], axis=1)
    now = np.linalg.norm(positions[edges[:, 1]] - positions[edges[:, 0]], axis=1)
    return (now - r) / r


def simulate(vertices, faces, weights, frames, settings=None, **cloth_kwargs):
    builder = engine.ModelBuilder()
    cloth = builder.add_cloth(vertices, faces, pin_weights=weights, **cloth_kwargs)
    solver = engine.Solver(builder.finalize(), settings or engine.SolverSettings())
    state = solver.make_state()
    for _ in range(frames):
        solver.step_frame(state)
    return state.positions[cloth.slice], solver, state


def test_pinned_vertices_never_move():
    v, f = grid(33, 33, 2.0)  # horizontal sheet pinned along one edge: it swings down hard
    weights = (v[:, 1] > 0.999).astype(float)
    builder = engine.ModelBuilder()
    cloth = builder.add_cloth(v, f, pin_weights=weights)
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    pinned = weights == 1.0
    for _ in range(48):
        solver.step_frame(state)
        assert np.array_equal(state.positions[cloth.slice][pinned], v[pinned])
    assert state.positions[cloth.slice][~pinned, 2].min() < -1.5  # and the rest really fell


# (where the loose piece is, relative to the pinned curtain's top: beside it, below it, overlapping
# it in front; air drag 0 and 0.6, the default)
@pytest.mark.parametrize("offset", [(1.2, 0.0, 0.0), (0.0, 0.0, -1.2), (0.3, 0.05, -0.3)])
@pytest.mark.parametrize("drag", [0.0, 0.6])
def test_a_piece_of_a_cloth_without_pins_falls_free_of_the_pinned_piece(offset, drag):
    """One cloth of two pieces (a mesh of separate parts, or one an import split along a seam):
    the piece with no pin falls as a free body would, whatever pin of the other piece is nearest.
    (Each vertex was tethered to the nearest pin of the whole mesh, which held the loose piece up.)"""
    v1, f1, w1 = curtain(11, 11)
    v2, f2, _ = curtain(9, 9, size=0.8)
    v2 = v2 + np.asarray(offset)
    v, f = np.concatenate([v1, v2]), [list(face) for face in f1] + [[k + len(v1) for k in face] for face in f2]
    w = np.concatenate([w1, np.zeros(len(v2))])
    frames, rate = 12, 24.0  # (the default frame rate)
    positions, _, _ = simulate(v, f, w, frames, drag=drag)
    alone, _, _ = simulate(v2, f2, None, frames, drag=drag)
    t = frames / rate
    fall, fall_alone = (v2[:, 2].mean() - p[-len(v2):, 2].mean() for p in (positions, alone))
    assert abs(fall - fall_alone) < 0.01 * fall_alone, (fall, fall_alone)
    if drag == 0.0:
        assert abs(fall - 0.5 * 9.81 * t * t) < 0.01 * fall, fall
    assert np.abs(positions[:len(v1), 2] - v1[:, 2]).max() < 0.05  # the pinned piece still hangs


def _modelled_curved(shape, depth, n=41):
    """A 2 m x 1 m sheet modelled curved along its length x (z across): "wave", y = depth
    sin(2 pi x / 0.5 m) over x in 0..2 m; "curl", rolled round the z axis into an arc of radius
    depth (m) and 2 m long. Returns vertices, faces and its length along the surface."""
    v, f = grid(n, 21, 1.0)
    u, z = (v[:, 0] + 0.5) * 2.0, v[:, 1]
    if shape == "wave":
        x, y = u, depth * np.sin(2 * np.pi * u / 0.5)
    else:
        x, y = depth * np.sin(u / depth), depth * (1 - np.cos(u / depth))
    verts = np.stack([x, y, z], axis=1)
    row = verts[np.argsort(u, kind="stable")][::21]
    return verts, f, float(np.linalg.norm(np.diff(row, axis=0), axis=1).sum())


@pytest.mark.parametrize("shape, depth", [("wave", 0.03), ("wave", 0.1), ("curl", 0.5), ("curl", 1.0)])
def test_a_cloth_modelled_curved_pulls_out_to_its_full_length(shape, depth):
    """A flag modelled with waves, or a sheet modelled rolled, pinned along one end and pulled
    along its length (gravity along +x) straightens out to its length along the surface: the
    long-range attachments do not hold it to the straight line from the pins, which is shorter
    (a 2 m flag with waves of 3 cm was held at 97% of its length, one of 10 cm at 76%, a sheet
    rolled to a radius of 0.5 m at half)."""
    verts, faces, length = _modelled_curved(shape, depth)
    pins = (np.abs(verts[:, 0]) < 1e-9) & (np.abs(verts[:, 1]) < 1e-9)
    builder = engine.ModelBuilder()
    cloth = builder.add_cloth(verts, faces, pin_weights=pins.astype(float))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(gravity=(9.81, 0.0, 0.0), damping=1.0))
    state = solver.make_state()
    for _ in range(24 * 6):
        solver.step_frame(state)
    far = state.positions[cloth.slice][:, 0].max()
    assert abs(far - length) < 0.01 * length, (far, length)


def test_rigid_cloth_hanging_at_rest_is_barely_stretched():
    # Stated bound: mean edge strain below 0.1% once a rigid-stretch curtain has settled.
    v, f, w = curtain()
    positions, _, _ = simulate(v, f, w, 24 * 4, engine.SolverSettings(damping=2.0))
    strain = np.abs(edge_strain(v, positions, f))
    assert strain.mean() < 1e-3
    assert strain.max() < 1e-2


@pytest.mark.compiled_only
@pytest.mark.parametrize("stiffness, iterations", [(0.5, 1), (2.0, 2)])
def test_soft_cloth_sags_the_same_at_any_substep_count(stiffness, iterations):
    # XPBD compliance makes a stiffness mean the same at any substep count, as long as each
    # substep's relaxation converges: one iteration does for very soft cloth (28% sag here);
    # stiffer cloth (8% sag) needs two at 5 substeps (with one, 5 substeps sag 4% more than 20).
    v, f, w = curtain(nx=11, ny=11)
    soft = dict(stretch_stiffness=stiffness, shear_stiffness=stiffness, bend_stiffness=0.01, density=0.5)
    sags = []
    for substeps in (5, 10, 20):
        settings = engine.SolverSettings(substeps=substeps, iterations=iterations, damping=4.0)
        positions, _, _ = simulate(v, f, w, 24 * 6, settings, **soft)
        sags.append(v[:, 2].min() - positions[:, 2].min())
    sags = np.array(sags)
    assert sags.min() > 0.05  # soft enough to sag visibly
    assert (sags.max() - sags.min()) / sags.mean() < 0.02


@pytest.mark.compiled_only
def test_stiffer_cloth_sags_less():
    v, f, w = curtain(nx=11, ny=11)
    sag = {}
    for k in (1.0, 4.0):
        positions, _, _ = simulate(v, f, w, 24 * 6, engine.SolverSettings(damping=4.0),
                                   stretch_stiffness=k, shear_stiffness=k, density=0.5)
        sag[k] = v[:, 2].min() - positions[:, 2].min()
    # a linear material: four times as stiff stretches about a quarter as much
    assert 3.0 < sag[1.0] / sag[4.0] < 5.0


def test_soft_pin_weight_pulls_towards_rest_position():
    v, f, w = curtain(nx=5, ny=5)
    w = np.where(w > 0, 0.5, 0.0)  # half-weight pins: goal springs, not hard pins
    positions, _, _ = simulate(v, f, w, 24 * 4, engine.SolverSettings(damping=4.0), pin_stiffness=200.0)
    top = w > 0
    drop = v[top, 2] - positions[top, 2]
    assert np.all(drop > 0)  # the springs give a little under the weight
    assert np.all(drop < 0.05)  # but hold the top edge near its place


def test_cloth_mass_follows_density_and_area():
    v, f = grid(11, 11, 2.0)
    builder = engine.ModelBuilder()
    builder.add_cloth(v, f, density=0.3)
    model = builder.finalize()
    assert np.isclose((1.0 / model.inverse_masses).sum(), 0.3 * 4.0)


def test_quad_grid_topology():
    v, f = grid(4, 3, 1.0)  # 3 x 2 quads
    pairs = cloth_pairs(*flatten_faces(f, len(v), "grid"))
    assert len(pairs["stretch"]) == 3 * 3 + 4 * 2  # horizontal + vertical edges
    assert len(pairs["shear"]) == 2 * 6  # both diagonals of every quad


def test_triangles_have_no_shear_sticks():
    pairs = cloth_pairs(*flatten_faces([[0, 1, 2], [1, 3, 2]], 4, "tris"))
    assert len(pairs["shear"]) == 0 and len(pairs["stretch"]) == 5


def test_cloth_drapes_over_sphere_without_passing_through():
    v, f = grid(21, 21, 1.5)
    v[:, 2] += 1.2
    centre, radius, thickness = np.array([0, 0, 0.6]), 0.4, 0.01
    m = np.eye(4)
    m[:3, 3] = centre
    builder = engine.ModelBuilder()
    cloth = builder.add_cloth(v, f, thickness=thickness)
    builder.add_collider(engine.Sphere(radius=radius, transform=m))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(damping=1.0))
    state = solver.make_state()
    for _ in range(48):
        solver.step_frame(state)
        d = np.linalg.norm(state.positions[cloth.slice] - centre, axis=1)
        assert d.min() >= radius + thickness - 1e-9
    # the middle of the cloth rests on top of the sphere
    middle = state.positions[cloth.slice][len(v) // 2]
    assert abs(np.linalg.norm(middle - centre) - (radius + thickness)) < 0.01


@pytest.mark.parametrize("sqrt_approximation", [False, True])
def test_sqrt_approximation_keeps_the_cloth_together(sqrt_approximation):
    v, f, w = curtain()
    positions, _, _ = simulate(v, f, w, 24 * 3, engine.SolverSettings(damping=2.0,
                                                                     sqrt_approximation=sqrt_approximation))
    assert np.abs(edge_strain(v, positions, f)).mean() < 2e-3


@pytest.mark.parametrize("weight, pin_stiffness", [(0.3, 100.0), (0.7, 100.0), (0.95, 1000.0), (0.5, 30.0)])
@pytest.mark.parametrize("move", [(1.0, 0.0, 0.0), (0.4, -0.3, 0.6)])
def test_partly_pinned_vertices_are_pulled_towards_where_their_pins_move(weight, pin_stiffness, move):
    """A curtain held only by partial pins (weight between 0 and 1) along its top, its pins moved
    by ``move`` over a second (``step_frame``'s pinned_positions, as an animated object moves
    them): once still again it hangs as it hangs unmoved, moved along (translation changes
    nothing). Before, the partial pins pulled towards their first positions whatever moved them
    (a curtain keyed 1 m along trailed its pins by 0.7-0.9 m)."""
    v, f, pins = curtain(11, 11)
    weights = pins * weight
    shift = np.asarray(move)
    finals = []
    for moved in (False, True):
        builder = engine.ModelBuilder()
        cloth = builder.add_cloth(v, f, pin_weights=weights, pin_stiffness=pin_stiffness)
        solver = engine.Solver(builder.finalize(), engine.SolverSettings(damping=4.0))
        state = solver.make_state()
        for frame in range(24 * 6):
            target = v + shift * min((frame + 1) / 24, 1.0) if moved else None
            solver.step_frame(state, pinned_positions=target)
        finals.append(state.positions[cloth.slice])
    still, moved = finals
    top = pins > 0
    assert np.abs(still[top] - v[top]).max() > 1e-4  # the pulls give: it sags from its pins
    # (Its pulled vertices and its centre: below them a rigid cloth may settle with another
    # ripple, millimetres out of its plane, equally at rest.)
    assert np.abs(moved[top] - (still[top] + shift)).max() < 1e-3
    assert np.abs(moved.mean(axis=0) - (still.mean(axis=0) + shift)).max() < 1e-3
