"""Bad input gets the engine's one exception with a message naming what and where; steps never
write non-finite state; the same inputs give bit-identical results."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError
from jakobsen_engine.geometry.primitives import grid


def two_particles():
    builder = engine.ModelBuilder()
    builder.add_particles([(0, 0, 0), (1, 0, 0), (0, 1, 0)], name="dots")
    return builder


@pytest.mark.parametrize("bad, words", [
    ([(0, 0, math.nan)], ["dots", "position 0", "not finite"]),
    ([(0, 0, 0), (math.inf, 0, 0)], ["dots", "position 1", "not finite"]),
])
def test_non_finite_coordinates(bad, words):
    with pytest.raises(JakobsenError) as error:
        engine.ModelBuilder().add_particles(bad, name="dots")
    for word in words:
        assert word in str(error.value)


def test_negative_mass():
    with pytest.raises(JakobsenError, match=r"particles 'dots'.*mass must be >= 0.*-1.0 \(item 1\)"):
        engine.ModelBuilder().add_particles([(0, 0, 0), (1, 0, 0)], masses=[1.0, -1.0], name="dots")


@pytest.mark.parametrize("settings, words", [
    (dict(shape_stiffness="soft"), ["cloth 'sheet'", "shape stiffness", "a number", "'soft'"]),
    (dict(stretch_stiffness="stiff"), ["'sheet stretch'", "stiffness", "'stiff'"]),
    (dict(density=[0.1, 0.2]), ["cloth 'sheet'", "density", "a number"]),
    (dict(pin_weights=[1.0, 0.0]), ["cloth 'sheet'", "pin weight", "one number per item (9)"]),
])
def test_settings_that_are_not_numbers_are_named(settings, words):
    # (numpy's own errors, "could not convert string to float", named neither)
    v, f = grid(3, 3, 1.0)
    with pytest.raises(JakobsenError) as error:
        engine.ModelBuilder().add_cloth(v, f, name="sheet", **settings)
    for word in words:
        assert word in str(error.value)


def test_zero_length_stick():
    builder = engine.ModelBuilder()
    builder.add_particles([(0, 0, 0), (0, 0, 0)], name="dots")
    with pytest.raises(JakobsenError, match=r"sticks 'rope'.*stick 0 between particles 0 and 1 has zero length"):
        builder.add_sticks([0], [1], name="rope")


def test_duplicate_stick():
    builder = two_particles()
    builder.add_sticks([0], [1], name="a")
    builder.add_sticks([1], [0], name="b")
    with pytest.raises(JakobsenError,
                       match=r"duplicate stick between particles 0 and 1 \(in sticks 'a' and sticks 'b'\)"):
        builder.finalize()


def test_stick_index_out_of_range():
    with pytest.raises(JakobsenError, match=r"stick 1 refers to particle 7 \(j\), but there are 3 particles"):
        two_particles().add_sticks([0, 1], [2, 7], name="rope")


def test_stick_to_itself():
    with pytest.raises(JakobsenError, match="joins particle 2 to itself"):
        two_particles().add_sticks([2], [2])


@pytest.mark.parametrize("kind, settings", [("cloth", {}), ("soft body", dict(shape_stiffness=100.0))])
def test_face_with_repeated_vertex(kind, settings):
    v, f = grid(3, 3, 1.0)
    faces = f.tolist()
    faces[2] = [faces[2][0], faces[2][1], faces[2][0], faces[2][3]]
    with pytest.raises(JakobsenError, match=rf"{kind} 'flag': face 2 repeats vertex {faces[2][0]}"):
        engine.ModelBuilder().add_cloth(v, faces, name="flag", **settings)


def test_face_index_out_of_range():
    v, f = grid(3, 3, 1.0)
    faces = f.tolist()
    faces[3][1] = 99
    with pytest.raises(JakobsenError, match=r"cloth 'flag': face 3 uses vertex index 99, but the mesh has 9 vertices"):
        engine.ModelBuilder().add_cloth(v, faces, name="flag")


def test_face_with_two_vertices():
    with pytest.raises(JakobsenError, match="face 1 has 2 vertices"):
        engine.ModelBuilder().add_cloth(np.eye(3), [[0, 1, 2], [0, 1]], name="flag")


@pytest.mark.parametrize("field, value", [("substeps", 0), ("substeps", -3), ("iterations", 0), ("substeps", 2.5)])
def test_non_positive_substeps(field, value):
    builder = two_particles()
    model = builder.finalize()
    with pytest.raises(JakobsenError, match=rf"{field} must be a whole number >= 1"):
        engine.Solver(model, engine.SolverSettings(**{field: value}))


@pytest.mark.parametrize("settings, words", [
    (dict(damping=-1.0), "damping must be >= 0"),
    (dict(gravity=(0, math.nan, 0)), "gravity must be 3 finite numbers"),
    (dict(frame_rate=0.0), "frame_rate must be a positive"),
    (dict(substeps=10 ** 9), "is absurd"),
])
def test_absurd_settings(settings, words):
    with pytest.raises(JakobsenError, match=words):
        engine.Solver(two_particles().finalize(), engine.SolverSettings(**settings))


def test_collider_with_scale_is_rejected():
    m = np.eye(4) * 2.0
    m[3, 3] = 1.0
    with pytest.raises(JakobsenError, match="no scale or shear"):
        engine.ModelBuilder().add_collider(engine.Sphere(radius=1.0, transform=m))


def test_empty_model():
    with pytest.raises(JakobsenError, match="no particles"):
        engine.ModelBuilder().finalize()


# 1e308 overflows to inf within the frame; 1e45 stays finite in float64 but moves the vertex
# beyond single precision's range (Blender's), about 1e40 m in a frame.
@pytest.mark.parametrize("push", [1e308, 1e45, -1e45])
def test_a_step_that_would_blow_up_raises_and_leaves_the_state_as_it_was(push):
    builder = engine.ModelBuilder()
    builder.add_cloth(*grid(5, 5, 1.0), name="flag")
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    solver.step_frame(state)
    before = (state.positions.copy(), state.previous_positions.copy(), state.time)
    state.external_accelerations[7] = (push, push, 0)
    with pytest.raises(JakobsenError, match=r"would make cloth 'flag' vertex \d+ non-finite"):
        solver.step_frame(state)
    assert np.array_equal(state.positions, before[0])
    assert np.array_equal(state.previous_positions, before[1])
    assert state.time == before[2]


# A body's state set by a script to a speed that carries it beyond single precision within the
# frame (finite in float64), or to inf: named, and every array of the state left as it was.
@pytest.mark.parametrize("speed", [1e41, -1e41, math.inf])
def test_a_step_that_would_throw_a_body_out_of_range_raises_and_leaves_the_state_as_it_was(speed):
    from .rigid_scenes import box_mesh

    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh(centre=(0.0, 0.0, 2.0)), name="crate", shape="box")
    builder.add_rigid_body(*box_mesh(centre=(3.0, 0.0, 2.0)), name="other", shape="box")
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    solver.step_frame(state)
    state.bodies.velocity[0] = (speed, 0.0, 0.0)
    before = [a.copy() for a in state.bodies.arrays()] + [state.positions.copy()]
    with pytest.raises(JakobsenError, match=r"would make rigid body 'crate' non-finite"):
        solver.step_frame(state)
    for now, then in zip(list(state.bodies.arrays()) + [state.positions], before):
        assert np.array_equal(now, then)


def test_same_inputs_give_bit_identical_results():
    def run():
        v, f = grid(17, 17, 1.0)
        v[:, 2] += 1.0
        builder = engine.ModelBuilder()
        builder.add_cloth(v, f, pin_weights=(v[:, 1] > 0.49).astype(float), friction=0.4, restitution=0.2)
        builder.add_collider(engine.Sphere(radius=0.3, friction=0.5))
        builder.add_collider(engine.Plane.from_point_normal((0, 0, -0.5), (0.1, 0, 1), restitution=0.5))
        solver = engine.Solver(builder.finalize(), engine.SolverSettings(damping=0.3))
        state = solver.make_state()
        for _ in range(24):
            solver.step_frame(state)
        return state.positions

    assert np.array_equal(run(), run())


def test_awkward_but_legal_cloth_builds_with_warnings_and_steps():
    v, f = grid(4, 4, 1.0)
    v = np.vstack([v, [[5.0, 5.0, 5.0]], v[:1]])  # a loose vertex, and a copy of vertex 0
    faces = f.tolist() + [[0, 1, 17]]  # a zero-area face through the coincident copy
    builder = engine.ModelBuilder()
    cloth = builder.add_cloth(v, faces, name="rag")
    assert any("no face of non-zero area" in w for w in builder.warnings)
    assert any("coincident" in w for w in builder.warnings)
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    for _ in range(12):
        solver.step_frame(state)
    assert np.all(np.isfinite(state.positions[cloth.slice]))
