"""Cloth and rigid bodies two ways: particles touching a dynamic body push it back (momentum is
exchanged), while static colliders and kinematic bodies stay colliders of infinite mass.

The energy guard is off where cloth feeds a body: it counts only what bodies, springs and motors
hold, so a sheet handing a box back the energy it stored (a bounce) reads as energy from nothing.
"""

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import backend
from jakobsen_engine.geometry.primitives import grid

from .rigid_scenes import box_mesh

G = 9.81


def sheet(builder, n, size=1.0, pins="edges", z=0.0, **cloth_kwargs):
    """A horizontal square sheet of n x n vertices at height z, pinned along its edges (or at
    its corners, or nowhere)."""
    v, f = grid(n, n, size)
    v[:, 2] = z
    edge_x, edge_y = np.abs(v[:, 0]) > size / 2 - 1e-9, np.abs(v[:, 1]) > size / 2 - 1e-9
    weights = {"edges": edge_x | edge_y, "corners": edge_x & edge_y, None: np.zeros(len(v), bool)}[pins]
    return builder.add_cloth(v, f, pin_weights=weights.astype(float), **cloth_kwargs), v


def momentum(solver, state, cloth, box):
    """Total linear momentum (3,) kg m/s of the cloth's particles and the box, and the cloth's."""
    m = solver.model
    mass = np.divide(1.0, m.inverse_masses, out=np.zeros(m.particle_count), where=m.inverse_masses > 0)
    p_cloth = (mass[cloth.slice, None] * solver.velocities(state)[cloth.slice]).sum(axis=0)
    p_box = m.bodies.mass[box.index] * state.bodies.velocity[box.index]
    return p_cloth + p_box, p_cloth


# -- 1. a box on a pinned sheet; momentum exchanged ------------------------------------------------

def resting_box(mass, n=16, frames=96, substeps=40):
    """A 0.2 m box set down on a 1 m sheet of 1 kg pinned at its edges, left to settle."""
    builder = engine.ModelBuilder()
    cloth, v = sheet(builder, n, density=1.0, thickness=0.01)
    box = builder.add_rigid_body(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 0.111)), mass=mass, shape="box")
    solver = engine.Solver(builder.finalize(),
                           engine.SolverSettings(substeps=substeps, damping=2.0))
    state = solver.make_state()
    heights = []
    for _ in range(frames):
        solver.step_frame(state)
        heights.append(state.bodies.position[box.index, 2])
    return solver, state, cloth, box, np.array(heights)


def depth_in_box(solver, state, cloth, box, centre, half):
    """How deep (m) each cloth particle is inside the box grown by the thickness (<= 0: outside)."""
    translation, rotation = solver.body_poses(state)
    x = state.positions[cloth.slice]
    r = np.repeat(rotation[box.index][None], len(x), axis=0)
    local = engine.quaternions.rotate(engine.quaternions.conjugate(r), x - translation[box.index]) - centre
    return (half + 0.01 - np.abs(local)).min(axis=1)


@pytest.mark.compiled_only
def test_a_box_on_a_pinned_sheet_sags_it_rests_on_it_and_heavier_sags_more():
    # 0.2, 1 and 5 kg on a 1 kg sheet: each ends at rest on top of the sheet (one way, the box
    # fell straight through it), the sheet sagging more under the heavier box.
    sags = []
    for mass in (0.2, 1.0, 5.0):
        solver, state, cloth, box, z = resting_box(mass)
        depth = depth_in_box(solver, state, cloth, box, np.array([0.0, 0.0, 0.111]), 0.1)
        assert depth.max() < 4e-3, (mass, depth.max())  # in the thickness, never through
        x = state.positions[cloth.slice]
        assert z[-1] < 0.111 - 0.002  # the sheet gave under it (rigid stretch: by what its mesh allows)
        # At rest (slower than 3 cm/s after 4 s) and not sinking (its height over the last half
        # second within 2 mm of the half second before).
        assert np.linalg.norm(state.bodies.velocity[box.index]) < 0.03, mass
        assert abs(z[-12:].mean() - z[-24:-12].mean()) < 2e-3, (mass, z[-24:])
        sags.append(-x[:, 2].min())
    assert sags[0] < sags[1] < sags[2], sags


@pytest.mark.compiled_only
@pytest.mark.parametrize("n", [9, 15])
@pytest.mark.parametrize("box_mass", [0.2, 1.0, 5.0])
def test_a_box_hitting_a_floating_cloth_keeps_the_total_momentum(box_mass, n):
    # Zero gravity: a box at 1 m/s into a free 0.5 kg cloth at rest. Whatever the masses and
    # the resolution, the momentum the box loses is what the cloth gains (within 5 %), and the
    # cloth gains at least half of what a perfectly inelastic hit would give it (one way, the
    # cloth would take momentum out of nothing and the box would lose none).
    builder = engine.ModelBuilder()
    cloth, _ = sheet(builder, n, pins=None, density=0.5, thickness=0.01, drag=0.0)  # (no air to take momentum)
    box = builder.add_rigid_body(*box_mesh((0.3, 0.3, 0.3), (0.02, -0.03, 0.2)), mass=box_mass, shape="box",
                                 velocity=(0.0, 0.0, -1.0))
    solver = engine.Solver(builder.finalize(),
                           engine.SolverSettings(substeps=20, gravity=(0.0, 0.0, 0.0)))
    state = solver.make_state()
    p0, _ = momentum(solver, state, cloth, box)
    for _ in range(12):
        solver.step_frame(state)
    p1, p_cloth = momentum(solver, state, cloth, box)
    # (The issue asks for 5 %; each contact's impulses are equal and opposite, so it is rounding.)
    assert np.linalg.norm(p1 - p0) < 1e-9 * np.linalg.norm(p0), (p0, p1)
    inelastic = 0.5 / (0.5 + box_mass) * p0[2]
    assert p_cloth[2] < 0.5 * inelastic, (p_cloth, inelastic)


# -- 2. a trampoline -------------------------------------------------------------------------------

@pytest.mark.compiled_only
@pytest.mark.parametrize("mass", [0.5, 2.0])
def test_a_box_dropped_on_a_trampoline_bounces_up(mass):
    builder = engine.ModelBuilder()
    cloth, _ = sheet(builder, 15, density=1.0, thickness=0.01, stretch_stiffness=3000.0, shear_stiffness=3000.0)
    box = builder.add_rigid_body(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 0.4)), mass=mass, shape="box",
                                 restitution=0.0)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(substeps=40))
    state = solver.make_state()
    z, vz = [], []
    for _ in range(30):
        solver.step_frame(state)
        z.append(state.bodies.position[box.index, 2])
        vz.append(state.bodies.velocity[box.index, 2])
    z, vz = np.array(z), np.array(vz)
    impact = np.sqrt(2 * G * (0.4 - 0.1 - 0.01))
    lowest = int(np.argmin(z))
    assert z[lowest] < 0.1 - 0.02  # it stretched the sheet down (no restitution: only the sheet
    assert lowest < len(z) - 1     # can throw it back up)
    assert z[lowest:].max() > z[lowest] + 0.05
    assert vz[lowest:].max() > 0.3 * impact, (vz[lowest:].max(), impact)


# -- 3. a heavy cloth pushes a light box ---------------------------------------------------------

@pytest.mark.compiled_only
@pytest.mark.parametrize("box_mass", [0.1, 0.3])
def test_a_heavy_cloth_thrown_at_a_light_box_pushes_it_along(box_mass):
    builder = engine.ModelBuilder()
    v, f = grid(9, 7, 0.4, 0.3)
    v = np.stack([np.full(len(v), -0.3), v[:, 0], 0.18 + v[:, 1]], axis=1)  # upright, facing +x
    builder.add_cloth(v, f, density=6.0, thickness=0.01)  # 0.72 kg
    cloth_velocity = np.zeros((len(v), 3))
    cloth_velocity[:, 0] = 3.0
    box = builder.add_rigid_body(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 0.1)), mass=box_mass, shape="box")
    builder.add_collider(engine.Plane())
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(substeps=20))
    state = solver.make_state()
    solver.set_velocities(state, cloth_velocity)
    for _ in range(12):
        solver.step_frame(state)
    travelled = state.bodies.position[box.index] - np.array([0.0, 0.0, 0.1])
    assert travelled[0] > 0.1, travelled  # pushed the way the cloth flew (one way: not at all)
    assert abs(travelled[1]) < 0.25 * travelled[0]


# -- 4. colliders and kinematic bodies stay immovable ----------------------------------------------

@pytest.mark.compiled_only
def test_a_kinematic_box_under_a_heavy_cloth_keeps_its_animation_and_holds_the_cloth():
    def motion(t):
        m = np.eye(4)
        m[2, 3] = 0.05 * t  # rising slowly
        return m

    builder = engine.ModelBuilder()
    cloth, _ = sheet(builder, 13, size=0.6, pins=None, z=0.25, density=5.0, thickness=0.01)
    box = builder.add_rigid_body(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 0.1)), mass=0.1, shape="box",
                                 mode="kinematic", motion=motion)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(substeps=20))
    state = solver.make_state()
    for _ in range(24):
        solver.step_frame(state)
        translation, rotation = solver.body_poses(state)
        np.testing.assert_allclose(translation[box.index], [0.0, 0.0, 0.05 * state.time], atol=1e-12)
        np.testing.assert_allclose(np.abs(rotation[box.index, 0]), 1.0, atol=1e-12)
    x = state.positions[cloth.slice]
    top = 0.2 + 0.05 * state.time
    on_top = (np.abs(x[:, 0]) < 0.09) & (np.abs(x[:, 1]) < 0.09)
    assert np.all(x[on_top, 2] > top + 0.01 - 1e-3)


@pytest.mark.compares_backends
def test_particle_body_response_kernels_agree():
    pytest.importorskip("numba")
    if backend.numba_problem():
        pytest.skip(backend.numba_problem())
    for seed in range(4):
        def args():
            r = np.random.default_rng(seed)
            n, c, bodies = 80, 50, 4
            x = r.normal(size=(n, 3))
            xp = x - r.normal(scale=0.01, size=(n, 3))
            k = r.choice(n, c, replace=False)
            normal = r.normal(size=(c, 3))
            normal /= np.linalg.norm(normal, axis=1, keepdims=True)
            depth = r.random(c) * 0.01
            body = r.integers(0, bodies, c)
            q = r.normal(size=(bodies + 1, 4))
            q /= np.linalg.norm(q, axis=1, keepdims=True)
            share = np.bincount(body, minlength=bodies + 1).astype(float)[body]
            return [x, xp, k, normal * depth[:, None], depth, r.normal(scale=1e-3, size=(c, 3)),
                    r.normal(size=(c, 3)) * 10, r.random(c), r.random(c), 1 / 240, 0.05, r.random(c) * 100 + 1,
                    r.random(c) * 0.01, body, r.normal(size=(c, 3)) * 0.3, q, np.append(r.random(bodies) + 0.1, 0.0),
                    np.vstack([r.random((bodies, 3)) * 10 + 1, np.zeros((1, 3))]), share,
                    r.normal(scale=1e-3, size=(bodies + 1, 6)), np.zeros((bodies + 1, 3)), np.zeros((bodies + 1, 3))]

        out = []
        for name in ("numba", "numpy"):
            a = args()
            backend.select(name).contacts.share_particle_contacts(*a)
            out.append(a)
        for u, w in zip(*out):
            if isinstance(u, np.ndarray):
                np.testing.assert_allclose(u, w, rtol=1e-12, atol=1e-15)
        assert np.abs(out[1][19] - args()[19]).max() > 0  # the bodies were pushed


@pytest.mark.compiled_only
@pytest.mark.parametrize("density", [0.2, 1.0])
def test_at_the_default_settings_a_sheet_holds_a_box_many_times_its_weight(density, kernel_backend):
    if kernel_backend == "numpy" and density != 0.2:
        pytest.skip("the numpy reference runs one density (it takes 24 s; the kernels agree)")
    # A 16 x 16 sheet, 1 m square, pinned at its edges, at 10 substeps. The sheet's sticks and
    # its contacts with the box are solved together a few rounds a substep
    # (solver.COUPLING_ROUNDS): one pass let a 1 kg box through a 0.2 kg/m^2 sheet.
    sags = []
    for mass in (0.2, 1.0, 5.0):
        builder = engine.ModelBuilder()
        sheet(builder, 16, density=density, thickness=0.01)
        box = builder.add_rigid_body(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 0.12)), mass=mass, shape="box")
        solver = engine.Solver(builder.finalize())
        state = solver.make_state()
        z = []
        for _ in range(72):
            solver.step_frame(state)
            z.append(state.bodies.position[box.index, 2] - 0.1)
        last = np.array(z[-24:])
        assert last.min() > -0.25, (mass, last.min())  # on the sheet, not through it
        assert np.ptp(last) < 0.03, (mass, np.ptp(last))  # resting on it (an undamped sheet still sways)
        sags.append(-last.mean())
    assert sags[0] < sags[1] < sags[2]  # the heavier, the deeper
