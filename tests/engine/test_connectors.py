"""Every Cinema 4D connector type as physics: under random pushes for 5 s the locked degrees of
freedom stay within 1 mm and 0.5 degrees, the free ones move, and limits hold within 1 degree
(or 1 mm). Measured independently of the engine's own joint code, from the bodies' poses."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError

from .connector_rigs import FRAME, relative, rotation_degrees, shove, swing_twist_degrees, two_boxes
from .rigid_scenes import box_mesh

DEG = math.radians(1.0)
SECONDS = 5
LOCKED_MM, LOCKED_DEG, LIMIT_DEG, LIMIT_MM = 1.0, 0.5, 1.0, 1.0


def shaken(kind, frames=24 * SECONDS, world_a=False, measure=None, **joint):
    """Run a two-box rig with random pushes every 4 frames; returns the per-frame offsets (f, 3)
    mm and relative rotations (f, 3, 3) of B's joint frame in A's."""
    solver, state = two_boxes(kind, world_a=world_a, **joint)
    rng = np.random.default_rng(7)
    offsets, rels, times = [], [], []
    for f in range(frames):
        if f % 4 == 0:
            shove(state, rng)
        solver.step_frame(state)
        offset, rel = relative(solver, state, world_a)
        offsets.append(offset * 1000.0)
        rels.append(rel)
        times.append(state.time)
    return np.array(offsets), np.array(rels), np.array(times)


def swings_and_twists(rels):
    st = np.array([swing_twist_degrees(r) for r in rels])
    return st[:, 0], st[:, 1]


def spread(values):
    return float(np.max(values) - np.min(values))


@pytest.mark.compiled_only
def test_fixed_holds_everything():
    offsets, rels, _ = shaken("fixed")
    assert np.abs(offsets).max() < LOCKED_MM
    assert max(rotation_degrees(r) for r in rels) < LOCKED_DEG


@pytest.mark.compiled_only
@pytest.mark.parametrize("limits", [None, (-30.0, 45.0)])
def test_hinge_turns_about_z_only_and_within_its_limits(limits):
    joint = {} if limits is None else dict(angle_limits=tuple(math.radians(v) for v in limits))
    offsets, rels, _ = shaken("hinge", **joint)
    swing, twist = swings_and_twists(rels)
    assert np.abs(offsets).max() < LOCKED_MM
    assert swing.max() < LOCKED_DEG
    assert spread(twist) > 40.0  # it turns
    if limits is not None:
        assert limits[0] - LIMIT_DEG < twist.min() and twist.max() < limits[1] + LIMIT_DEG
        assert twist.min() < limits[0] + 5 and twist.max() > limits[1] - 5  # the pushes reach both stops


@pytest.mark.compiled_only
def test_ball_and_socket_keeps_its_pivot_and_turns_any_way():
    offsets, rels, _ = shaken("ball_socket")
    swing, twist = swings_and_twists(rels)
    assert np.abs(offsets).max() < LOCKED_MM
    assert swing.max() > 60.0 and spread(twist) > 60.0


@pytest.mark.compiled_only
def test_cardan_keeps_a_x_square_to_b_y_and_swings_both_ways():
    offsets, rels, _ = shaken("cardan")
    # A universal joint: B's Y axis stays at 90 degrees to A's X axis.
    cross_angle = np.degrees(np.arccos(np.clip(rels[:, 0, 1], -1.0, 1.0)))
    assert np.abs(offsets).max() < LOCKED_MM
    assert np.abs(cross_angle - 90.0).max() < LOCKED_DEG
    tilt_about_x = np.degrees(np.arctan2(rels[:, 1, 2], rels[:, 2, 2]))  # B's Z leaning in A's YZ plane
    tilt_about_y = np.degrees(np.arctan2(rels[:, 0, 2], rels[:, 2, 2]))
    assert spread(tilt_about_x) > 30.0 and spread(tilt_about_y) > 30.0


@pytest.mark.compiled_only
def test_ragdoll_stays_within_its_cone_and_twist():
    cone, twist_limit = 30.0, 20.0
    offsets, rels, _ = shaken("ragdoll", cone_angle=math.radians(cone),
                              twist_limits=(-math.radians(twist_limit), math.radians(twist_limit)))
    swing, twist = swings_and_twists(rels)
    assert np.abs(offsets).max() < LOCKED_MM
    assert swing.max() < cone + LIMIT_DEG and swing.max() > cone - 5.0
    assert np.abs(twist).max() < twist_limit + LIMIT_DEG and spread(twist) > twist_limit


@pytest.mark.compiled_only
@pytest.mark.parametrize("limits", [None, (-0.3, 0.2)])
def test_slider_moves_along_z_only_and_within_its_limits(limits):
    joint = {} if limits is None else dict(distance_limits=limits)
    offsets, rels, _ = shaken("slider", **joint)
    assert np.abs(offsets[:, :2]).max() < LOCKED_MM
    assert max(rotation_degrees(r) for r in rels) < LOCKED_DEG
    assert spread(offsets[:, 2]) > 200.0
    if limits is not None:
        assert limits[0] * 1000 - LIMIT_MM < offsets[:, 2].min() and offsets[:, 2].max() < limits[1] * 1000 + LIMIT_MM


@pytest.mark.compiled_only
def test_twist_slider_slides_and_turns_about_z_only():
    offsets, rels, _ = shaken("twist_slider", angle_limits=(-math.radians(40), math.radians(40)))
    swing, twist = swings_and_twists(rels)
    assert np.abs(offsets[:, :2]).max() < LOCKED_MM
    assert swing.max() < LOCKED_DEG
    assert spread(offsets[:, 2]) > 200.0
    assert np.abs(twist).max() < 40.0 + LIMIT_DEG and spread(twist) > 60.0


@pytest.mark.compiled_only
def test_planar_moves_in_its_plane_and_turns_about_its_normal():
    offsets, rels, _ = shaken("planar")
    swing, twist = swings_and_twists(rels)
    assert np.abs(offsets[:, 2]).max() < LOCKED_MM
    assert swing.max() < LOCKED_DEG
    assert spread(offsets[:, 0]) > 200.0 and spread(offsets[:, 1]) > 200.0 and spread(twist) > 40.0


@pytest.mark.compiled_only
def test_box_keeps_the_pivot_inside_its_limits_without_turning():
    lower, upper = np.array([-0.2, -0.1, -0.3]), np.array([0.2, 0.1, 0.3])
    offsets, rels, _ = shaken("box", box_limits=(lower, upper))
    assert max(rotation_degrees(r) for r in rels) < LOCKED_DEG
    assert np.all(offsets.min(axis=0) > lower * 1000 - LIMIT_MM)
    assert np.all(offsets.max(axis=0) < upper * 1000 + LIMIT_MM)
    assert np.all(offsets.max(axis=0) - offsets.min(axis=0) > 0.8 * (upper - lower) * 1000)  # reaches the walls


@pytest.mark.compiled_only
def test_wheel_suspension_keeps_its_steered_axle_and_travels_within_its_limits():
    def steering(t):
        return 0.4 * np.sin(2.0 * t)

    offsets, rels, times = shaken("wheel_suspension", suspension_limits=(-0.2, 0.1), steering=steering,
                                  suspension_stiffness=2000.0, suspension_damping=50.0)
    axle_now = np.stack([np.cos(steering(times)), np.sin(steering(times)), np.zeros_like(times)], axis=1)
    axle_error = np.degrees(np.arccos(np.clip(np.einsum("fi,fi->f", rels[:, :, 0], axle_now), -1, 1)))
    assert np.abs(offsets[:, :2]).max() < LOCKED_MM
    assert axle_error.max() < LOCKED_DEG
    assert offsets[:, 2].min() > -200.0 - LIMIT_MM and offsets[:, 2].max() < 100.0 + LIMIT_MM
    # The wheel spins about its axle: B's Z turns about A's (steered) X.
    spin = np.degrees(np.arctan2(rels[:, 1, 2], rels[:, 2, 2]))
    assert spread(spin) > 60.0


@pytest.mark.compiled_only
@pytest.mark.parametrize("kind", ["hinge", "twist_slider", "wheel_suspension"])
def test_a_free_spin_keeps_its_speed(kind):
    """An unlimited hinge (and the other joints' free spins) spun at 2 rev/s loses < 1% per second."""
    omega = 2 * 2 * math.pi
    axis = FRAME[:, 0] if kind == "wheel_suspension" else FRAME[:, 2]
    # A wheel on its axle: the body's centre is on the axis (whirls off the centre: test_fidelity_rigid).
    solver, state = two_boxes(kind, world_a=True, b_centre=np.zeros(3))
    state.bodies.angular_velocity[0] = omega * axis
    for _ in range(24):
        solver.step_frame(state)
    w = state.bodies.angular_velocity[0]
    assert abs(w @ axis - omega) / omega < 0.01
    assert np.linalg.norm(w - (w @ axis) * axis) < 1e-3 * omega


# -- breaking ---------------------------------------------------------------------------------

def hanging(breaking_force=math.inf, breaking_torque=math.inf, mass=10.0):
    """A 10 kg box hanging under gravity from a fixed connector to the world at its top face."""
    builder = engine.ModelBuilder()
    verts, faces = box_mesh_at((0.2, 0.2, 0.2), (0, 0, -0.1))
    body = builder.add_rigid_body(verts, faces, name="weight", mass=mass, shape="box")
    builder.add_joint("fixed", None, body, (0, 0, 0), name="bolt", breaking_force=breaking_force,
                      breaking_torque=breaking_torque)
    solver = engine.Solver(builder.finalize())
    return solver, solver.make_state()


def box_mesh_at(size, centre):
    from .rigid_scenes import box_mesh
    return box_mesh(size, centre=centre)


@pytest.mark.compiled_only
@pytest.mark.parametrize("load_ratio, breaks", [(0.95, False), (1.10, True)])
def test_a_connector_breaks_above_its_breaking_force_only(load_ratio, breaks):
    weight = 10.0 * 9.81
    solver, state = hanging(breaking_force=weight / load_ratio)
    for _ in range(24):
        solver.step_frame(state)
    broken = solver.broken_connectors(state)
    if breaks:
        assert [name for name, _ in broken] == ["bolt"]
        assert broken[0][1] < 0.1  # as soon as it carries the load
        assert state.bodies.position[0, 2] < -0.5  # and then the box falls
    else:
        assert broken == []
        assert abs(state.bodies.position[0, 2] + 0.1) < 1e-3


@pytest.mark.compiled_only
@pytest.mark.parametrize("load_ratio, breaks", [(0.95, False), (1.10, True)])
def test_a_connector_breaks_above_its_breaking_torque_only(load_ratio, breaks):
    # A 10 kg arm welded at one end: the weld carries the torque m g L/2 (and the force m g).
    builder = engine.ModelBuilder()
    body = builder.add_rigid_body(*box_mesh_at((0.6, 0.1, 0.1), (0.3, 0, 0)), name="arm", mass=10.0, shape="box")
    torque = 10.0 * 9.81 * 0.3
    builder.add_joint("fixed", None, body, (0, 0, 0), name="weld", breaking_torque=torque / load_ratio)
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    for _ in range(24):
        solver.step_frame(state)
    broken = [name for name, _ in solver.broken_connectors(state)]
    assert broken == (["weld"] if breaks else [])
    assert (state.bodies.position[0, 2] < -0.5) == breaks


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("settings, message", [
    (dict(kind="slider", distance_limits=(0.5, -0.5)), "lower limit 0.5 is above the upper -0.5"),
    (dict(kind="box"), "needs box_limits"),
    (dict(kind="hinge", breaking_force=-1.0), "breaking force must be a non-negative number"),
    (dict(kind="hinge", limit_bounce=2.0), "limit bounce must be within 0 and 1"),
    (dict(kind="hinge", steering=0.3), "a hinge connector has no steering"),
    (dict(kind="slider", angle_limits=(-0.1, 0.1)), "a slider connector has no angle_limits"),
    (dict(kind="fixed", limit_bounce=0.5), "a fixed connector has no limit_bounce"),
    (dict(kind="ball_socket", cone_angle=0.3), "a ball socket connector has no cone_angle"),
    (dict(kind="gear"), "type must be one of"),
    (dict(kind="hinge", frame=np.diag([1.0, 1.0, -1.0])), "mirrored"),
    (dict(kind="hinge", suspension_stiffness=10.0), "a hinge connector has no suspension_stiffness"),
])
def test_bad_connector_settings_are_rejected_by_name(settings, message):
    builder = engine.ModelBuilder()
    body = builder.add_rigid_body(*box_mesh_at((0.2,) * 3, (0, 0, 0)), name="crate")
    settings = dict(settings)  # the parameter is shared by the runs on both backends
    kind = settings.pop("kind")
    with pytest.raises(JakobsenError, match=f"connector 'Joint'.*{message}"):
        builder.add_joint(kind, None, body, (0, 0, 0), name="Joint", **settings)


def test_a_connector_to_a_missing_body_is_rejected():
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh_at((0.2,) * 3, (0, 0, 0)), name="crate")
    with pytest.raises(JakobsenError, match="connector 'Joint': Object B is not a rigid body of this model"):
        builder.add_joint("hinge", None, 5, (0, 0, 0), name="Joint")


@pytest.mark.parametrize("bounce", [0.0, 0.5, 1.0])
def test_a_hinge_limit_bounces_back_with_its_limit_bounce(bounce):
    # A wheel (centred on its axle, no gravity) turning at 2 rad/s into a 30 degree stop.
    solver, state = two_boxes("hinge", world_a=True, b_centre=np.zeros(3),
                              angle_limits=(-math.radians(30), math.radians(30)), limit_bounce=bounce)
    axis = FRAME[:, 2]
    state.bodies.angular_velocity[0] = 2.0 * axis
    for _ in range(12):  # 0.5 s: it reaches the stop at 0.26 s
        solver.step_frame(state)
    assert abs(state.bodies.angular_velocity[0] @ axis - (-bounce * 2.0)) < 0.05 * 2.0


def test_a_slider_limit_bounces_back_with_its_limit_bounce():
    solver, state = two_boxes("slider", world_a=True, distance_limits=(-0.1, 0.1), limit_bounce=0.5)
    axis = FRAME[:, 2]
    state.bodies.velocity[0] = 1.0 * axis
    for _ in range(6):  # 0.25 s: it reaches the stop at 0.1 s
        solver.step_frame(state)
    assert abs(state.bodies.velocity[0] @ axis - (-0.5)) < 0.05


@pytest.mark.parametrize("kind, limits, outside", [
    ("slider", dict(distance_limits=(0.2, 0.5)), True), ("slider", dict(distance_limits=(-0.5, -0.2)), True),
    ("slider", dict(distance_limits=(-0.1, 0.5)), False), ("hinge", dict(angle_limits=(0.17, 0.7)), True),
    ("hinge", dict(angle_limits=(-0.7, 0.0)), False), ("twist_slider", dict(angle_limits=(-0.7, -0.1)), True),
    ("box", dict(box_limits=((-0.1, 0.1, -0.1), (0.1, 0.3, 0.1))), True),
    ("box", dict(box_limits=((-0.1, -0.1, -0.1), (0.1, 0.3, 0.1))), False)])
def test_a_connector_whose_bodies_start_outside_its_limits_is_named(kind, limits, outside):
    """A connector's bodies start at distance 0 and angle 0 (its frame is where they are): limits
    that leave that out snap them onto the limits at the first step, which flung a slider's body
    to its far limit at 12 m/s, silently. The builder names the connector."""
    builder = engine.ModelBuilder()
    box = builder.add_rigid_body(*box_mesh((0.2, 0.2, 0.2), centre=(0.0, 0.0, 1.0)), name="box", mass=1.0,
                                 shape="box")
    builder.add_joint(kind, None, box, (0.0, 0.0, 1.0), axis=(1, 0, 0), name="guide", **limits)
    named = [w for w in builder.warnings if "connector 'guide'" in w and "start outside" in w]
    assert bool(named) == outside, builder.warnings
