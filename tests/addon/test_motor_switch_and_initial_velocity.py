"""A motor's On switch and its torque are animatable (Cinema 4D's motor: key it off and the body
coasts), and a rigid body can start moving (Initial Velocity, linear and angular), as the bake
reads them from the panels.
"""

from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import scene_to_model  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402
from jakobsen_engine import Track  # noqa: E402

from .test_connectors import _cube, _empty, _enable, _frames  # noqa: E402

pytestmark = pytest.mark.blender

FPS = 24


def _turntable(torque: float):
    """A 0.3 m, 2 kg disc on a vertical hinge to the world (gravity does not turn it, nothing
    rubs), and a motor Empty at its centre applying ``torque`` about world Z."""
    bpy.ops.mesh.primitive_cylinder_add(vertices=64, radius=0.3, depth=0.1, location=(0.0, 0.0, 1.0))
    disc = _enable(bpy.context.object, 'RIGID_BODY', collision_shape='CYLINDER', mass=2.0)
    disc.name = "Disc"
    _enable(_empty("Axle", (0.0, 0.0, 1.0)), 'CONNECTOR', connector_type='HINGE', object_b=disc)
    motor = _enable(_empty("Drive", (0.0, 0.0, 1.0)), 'MOTOR', object_a=disc, mode='APPLY_FORCE',
                    max_torque=torque)
    return disc, motor


def _spin_rate(job) -> np.ndarray:
    """The disc's angular speed about world Z (rad/s) between consecutive frames."""
    x = job.body_results("Disc")[:, :3, 0]
    angle = np.unwrap(np.arctan2(x[:, 1], x[:, 0]))
    return np.diff(angle) * FPS


def _key(obj, path: str, frames_values) -> None:
    group = obj.jakobsen.motor
    for frame, value in frames_values:
        setattr(group, path, value)
        obj.keyframe_insert(f"jakobsen.motor.{path}", frame=frame)


@pytest.mark.parametrize("torque, off_frame", [(0.5, 9), (2.0, 17)])
def test_a_motor_keyed_off_mid_bake_stops_driving_and_the_body_coasts(blender, torque, off_frame):
    disc, motor = _turntable(torque)
    _key(motor, "use_motor", ((1, True), (off_frame, False)))
    _frames(1, 30)
    bpy.context.scene.render.fps = FPS
    sm = scene_to_model.build(bpy.context)
    inertia = float(sm.model.bodies.inertia[0].max())  # about the disc's axis
    job = BakeJob(bpy.context.scene.name)
    job.run()
    rate = _spin_rate(job)  # rate[k]: from frame k + 1 to frame k + 2
    acceleration = np.diff(rate[: off_frame - 3]) * FPS  # well inside the frames the motor is on
    coasting = rate[off_frame:]  # from one frame after it is switched off
    expected = torque / inertia
    print(f"torque {torque} N m, off on frame {off_frame}: spin-up {acceleration.mean():.4f} rad/s^2 "
          f"(tau / I = {expected:.4f}); coasting at {coasting.min():.4f}..{coasting.max():.4f} rad/s")
    assert inertia == pytest.approx(0.5 * 2.0 * 0.3 ** 2, rel=0.01)  # a disc's I = m r^2 / 2
    assert acceleration == pytest.approx(np.full_like(acceleration, expected), rel=0.02)
    # Off: no torque, so the spin it had is kept (nothing rubs), whatever the motor was doing.
    # The switch is keyed off on ``off_frame``: the drive stops between the frame before and that one.
    assert expected * (off_frame - 2) / FPS < coasting[0] <= expected * (off_frame - 1) / FPS * 1.001
    assert np.ptp(coasting) < 1e-6 * coasting[0]


def test_a_motor_switched_off_throughout_does_nothing(blender):
    disc, motor = _turntable(2.0)
    motor.jakobsen.motor.use_motor = False
    _frames(1, 12)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    assert np.abs(_spin_rate(job)).max() < 1e-6


@pytest.mark.parametrize("first, second", [(0.5, 2.0), (3.0, 1.0)])
def test_an_animated_motor_torque_changes_the_spin_up_when_keyed(blender, first, second):
    disc, motor = _turntable(first)
    _key(motor, "max_torque", ((1, first), (13, first), (14, second)))
    _frames(1, 26)
    bpy.context.scene.render.fps = FPS
    sm = scene_to_model.build(bpy.context)
    inertia = float(sm.model.bodies.inertia[0].max())
    job = BakeJob(bpy.context.scene.name)
    job.run()
    acceleration = np.diff(_spin_rate(job)) * FPS
    before, after = acceleration[:9], acceleration[14:]
    print(f"torque {first} -> {second} N m: {before.mean():.4f} -> {after.mean():.4f} rad/s^2 "
          f"(tau / I: {first / inertia:.4f} -> {second / inertia:.4f})")
    assert before == pytest.approx(np.full_like(before, first / inertia), rel=0.02)
    assert after == pytest.approx(np.full_like(after, second / inertia), rel=0.02)


def test_motor_on_and_torque_reach_the_engine_as_tracks_only_when_keyed(blender):
    """What the mapping hands add_motor: a number when the setting is not animated, a Track (a
    sample a frame, 0 or 1 for the switch) when it is keyed."""
    disc, motor = _turntable(1.0)
    _key(motor, "use_motor", ((1, True), (5, False)))
    _frames(1, 8)
    from jakobsen_engine import ModelBuilder

    calls = []
    original = ModelBuilder.add_motor

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return original(self, *args, **kwargs)

    ModelBuilder.add_motor = spy
    try:
        scene_to_model.build(bpy.context)
        motor.animation_data_clear()
        motor.jakobsen.motor.use_motor = True
        scene_to_model.build(bpy.context)
    finally:
        ModelBuilder.add_motor = original
    keyed, plain = calls
    assert isinstance(keyed["enabled"], Track)
    assert keyed["enabled"].values.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert keyed["torque"] == 1.0
    assert "enabled" not in plain and plain["torque"] == 1.0


def _thrown_cube(velocity, angular=(0.0, 0.0, 0.0), *, use=True):
    cube = _cube("Stone", size=0.2, location=(0.0, 0.0, 5.0), collision_shape='BOX', mass=1.0)
    rb = cube.jakobsen.rigid_body
    rb.use_initial_velocity = use
    rb.initial_velocity = velocity
    rb.initial_angular_velocity = angular
    return cube


@pytest.mark.parametrize("velocity, spin", [((1.0, 0.0, 0.0), 0.0), ((4.0, -2.0, 3.0), 3.0),
                                            ((-2.5, 1.5, 6.0), -7.0)])
def test_a_body_with_an_initial_velocity_flies_a_parabola(blender, velocity, spin):
    """x = x0 + v t, z = z0 + vz t - g t^2 / 2, and a cube spun about its own Z keeps turning at
    that rate (a principal axis: no precession). Horizontally the flight is exact; vertically the
    engine's step (symplectic Euler at the substep h) is behind the exact fall by g h t / 2."""
    _thrown_cube(velocity, (0.0, 0.0, spin))
    _frames(1, 25)
    bpy.context.scene.render.fps = FPS
    job = BakeJob(bpy.context.scene.name)
    job.run()
    poses = job.body_results("Stone")
    t = np.arange(len(poses)) / FPS
    g = -bpy.context.scene.gravity[2]
    v = np.array(velocity)
    expected = np.array([0.0, 0.0, 5.0]) + t[:, None] * v + np.outer(-0.5 * g * t ** 2, [0.0, 0.0, 1.0])
    off = poses[:, :3, 3] - expected
    h = 1.0 / (FPS * bpy.context.scene.jakobsen.substeps)
    angle = np.unwrap(np.arctan2(poses[:, 1, 0], poses[:, 0, 0]))
    print(f"v {velocity}, spin {spin}: largest distance from the parabola across {np.abs(off[:, :2]).max() * 1e3:.4f}"
          f" mm, vertically {np.abs(off[:, 2]).max() * 1e3:.3f} mm (g h t / 2 = {g * h * t[-1] / 2 * 1e3:.3f} mm) "
          f"over 1 s; turned {angle[-1]:.4f} rad (expected {spin * t[-1]:.4f})")
    assert np.abs(off[:, :2]).max() < 1e-4
    assert np.abs(off[:, 2] + g * h * t / 2).max() < 1e-4
    assert angle[-1] == pytest.approx(spin * t[-1], abs=1e-3)
    assert np.abs(poses[:, 2, :2]).max() < 1e-6  # its Z stays up


def test_initial_velocity_is_used_only_when_switched_on_and_not_for_passive_bodies(blender):
    cube = _thrown_cube((3.0, 0.0, 0.0), use=False)
    _frames(1, 4)
    sm = scene_to_model.build(bpy.context)
    assert np.all(sm.model.bodies.initial_velocity == 0.0)
    cube.jakobsen.rigid_body.use_initial_velocity = True
    sm = scene_to_model.build(bpy.context)
    assert sm.model.bodies.initial_velocity[0].tolist() == [3.0, 0.0, 0.0]
    # Dynamic Off: it follows its animation, the velocity is ignored and the warning says so.
    cube.jakobsen.rigid_body.dynamic = 'OFF'
    _cube("Pebble", size=0.1, location=(2.0, 0.0, 5.0))
    sm = scene_to_model.build(bpy.context)
    assert [w for w in sm.warnings if "rigid body 'Stone': its Initial Velocity is ignored" in w], sm.warnings
