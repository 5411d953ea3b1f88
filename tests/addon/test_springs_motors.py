"""Spring and Motor Empties in the add-on: a spring joins the origins of Object A and Object B (an
empty slot: the Empty's location) with the Spring panel's stiffness, rest length, plastic and
breaking settings; a motor drives Object A about or along the Empty's Z axis relative to Object B
(or the world), with targets read on every frame.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import scene_to_model  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402
from jakobsen_engine import JakobsenError  # noqa: E402

from .test_connectors import _cube, _empty, _enable, _frames  # noqa: E402

pytestmark = pytest.mark.blender


def _hanging_pair(stiffness=100.0, damping=20.0):
    """A 1 kg block 1 m below a passive block, held by a spring Empty between them."""
    _cube("Ceiling", size=0.3, location=(0.0, 0.0, 3.0), dynamic='OFF', collision_shape='BOX')
    _cube("Weight", size=0.3, location=(0.0, 0.0, 2.0), collision_shape='BOX', mass=1.0)
    spring = _empty("Coil", (0.0, 0.0, 2.5))
    _enable(spring, 'SPRING', object_a=bpy.data.objects["Ceiling"], object_b=bpy.data.objects["Weight"],
            stiffness=stiffness, damping=damping)
    return spring


def test_a_spring_between_two_bodies_hangs_the_lower_one_at_m_g_over_k(blender):
    k = 100.0
    # Damping ratio 0.3: settles within the 2.5 s. (Heavier damping settles sooner, but the engine's
    # damping shifts a spring's equilibrium by about damping x substep / mass: +8% when critical.)
    spring = _hanging_pair(stiffness=k, damping=0.6 * math.sqrt(k * 1.0))
    _frames(1, 60)
    sm = scene_to_model.build(bpy.context)
    springs = sm.model.springs
    assert springs.count == 1 and springs.names == ("Coil",)
    assert springs.rest[0] == pytest.approx(1.0)  # Use Current Length: the distance between the origins
    assert np.isinf(springs.break_stretch[0]) and np.isinf(springs.elastic_stretch[0])

    job = BakeJob(bpy.context.scene.name)
    job.run()

    z = job.body_results("Weight")[:, :3, 3]
    stretch = 2.0 - z[-1, 2]
    expected = 1.0 * 9.81 / k
    print(f"spring: stretch {stretch * 1000:.2f} mm, m g / k = {expected * 1000:.2f} mm")
    assert stretch == pytest.approx(expected, rel=0.05)
    assert np.abs(z[:, :2]).max() < 1e-3  # it hangs straight down
    assert spring.jakobsen.spring.use_current_length


def test_spring_panel_settings_reach_the_engine(blender):
    spring = _hanging_pair()
    s = spring.jakobsen.spring
    s.use_current_length, s.rest_length = False, 0.8
    s.use_plastic, s.elastic_compression, s.elastic_stretch = True, 0.05, 0.1
    s.use_breaking, s.break_stretch, s.break_compression = True, 0.3, 0.2
    s.spring_type = 'BOTH'
    springs = scene_to_model.build(bpy.context).model.springs
    assert springs.rest[0] == pytest.approx(0.8)
    assert (springs.elastic_compression[0], springs.elastic_stretch[0]) == pytest.approx((0.05, 0.1))
    assert (springs.break_stretch[0], springs.break_compression[0]) == pytest.approx((0.3, 0.2))
    assert springs.linear[0] and springs.angular[0]


def test_a_breakable_spring_that_is_pulled_too_far_breaks_and_is_reported(blender):
    spring = _hanging_pair(stiffness=20.0, damping=0.0)  # would stretch 0.49 m at rest, more on the way
    s = spring.jakobsen.spring
    s.use_breaking, s.break_stretch = True, 0.2
    _frames(1, 24)
    job = BakeJob(bpy.context.scene.name)
    summary = job.run()
    assert "spring 'Coil' broke at frame" in summary, summary
    # Falling from rest 0.2 m under 20 N/m springs takes about 0.21 s: frame 6 at 24 fps.
    frame = int(summary.split("spring 'Coil' broke at frame ")[1].split()[0].rstrip(";"))
    print(f"spring broke at frame {frame}")
    assert 5 <= frame <= 8


def test_a_spring_to_a_cloth_is_refused_by_name(blender, helpers):
    spring = _hanging_pair()
    sheet = _enable(helpers.link(bpy.data.objects.new("Sheet", helpers.grid_mesh("Sheet", 3, 3, 1.0))), 'CLOTH')
    spring.jakobsen.spring.object_b = sheet
    with pytest.raises(JakobsenError, match=r"spring 'Coil': its Object B 'Sheet' is not a rigid body \(it is a "
                                            r"cloth\); a spring joins rigid bodies"):
        scene_to_model.build(bpy.context)


def _wheel_on_an_axle(**settings):
    """A 0.3 m wheel on a vertical hinge to the world (so gravity does not turn it), and a motor
    Empty at its centre driving it (Object A) relative to the world."""
    bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=0.1, location=(0.0, 0.0, 1.0))
    wheel = _enable(bpy.context.object, 'RIGID_BODY', collision_shape='CYLINDER', mass=2.0)
    wheel.name = "Wheel"
    _enable(_empty("Axle", (0.0, 0.0, 1.0)), 'CONNECTOR', connector_type='HINGE', object_b=wheel)
    motor = _empty("Drive", (0.0, 0.0, 1.0))
    _enable(motor, 'MOTOR', object_a=wheel, **settings)
    return wheel, motor


def _spin(job, name="Wheel") -> np.ndarray:
    """The wheel's angle about world Z (rad, unwrapped) on each frame."""
    x = job.body_results(name)[:, :3, 0]
    return np.unwrap(np.arctan2(x[:, 1], x[:, 0]))


def test_an_angular_motor_regulating_speed_spins_a_wheel_to_its_target_speed(blender):
    target = 2.0 * math.pi  # one turn a second
    wheel, motor = _wheel_on_an_axle(mode='REGULATE_SPEED', target_angular_speed=target, max_torque=5.0)
    _frames(1, 36)
    sm = scene_to_model.build(bpy.context)
    motors = sm.model.motors
    assert motors.count == 1 and motors.names == ("Drive",)
    index = {b.object_name: b.index for b in sm.bodies}
    assert (motors.a[0], motors.b[0]) == (index["Wheel"], sm.model.bodies.count)  # driven: A; reference: world
    assert motors.targets[0] == pytest.approx(target)

    job = BakeJob(bpy.context.scene.name)
    job.run()

    fps = bpy.context.scene.render.fps
    angle = _spin(job)
    speed = (angle[-1] - angle[-7]) / 6 * fps
    print(f"motor: wheel speed {speed:.4f} rad/s, target {target:.4f} rad/s")
    assert speed == pytest.approx(target, rel=0.02)


@pytest.mark.parametrize("torque, warned", [(5.0, False), (1e7, True)])
def test_a_motor_beyond_what_a_substep_resolves_is_named_in_the_bake_report(blender, torque, warned):
    """A torque that would spin the 2 kg wheel by more than a substep's contacts and connectors
    take back acts held to a limit, and the bake's warnings say so, naming the motor."""
    _wheel_on_an_axle(mode='APPLY_FORCE', max_torque=torque)
    _frames(1, 6)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    named = [w for w in job.warnings if "motor 'Drive'" in w and "at most" in w]
    assert bool(named) == warned, job.warnings
    assert np.all(np.isfinite(job.body_results("Wheel")))


def test_an_animated_servo_target_is_followed(blender):
    wheel, motor = _wheel_on_an_axle(mode='SERVO', max_torque=20.0)
    m = motor.jakobsen.motor
    for frame, angle in ((1, 0.0), (6, 0.0), (16, 1.0)):
        m.target_angle = angle
        motor.keyframe_insert("jakobsen.motor.target_angle", frame=frame)
    _frames(1, 30)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    angle = _spin(job)
    print(f"servo: angle on frame 6 {angle[5]:.4f} rad, on frame 30 {angle[-1]:.4f} rad (target 1)")
    assert abs(angle[5]) < 0.02  # the target is still 0 up to frame 6
    assert angle[-1] == pytest.approx(1.0, abs=0.02)


def test_a_motor_needs_object_a_the_body_it_drives(blender):
    wheel, motor = _wheel_on_an_axle()
    m = motor.jakobsen.motor
    m.object_a, m.object_b = None, wheel
    with pytest.raises(JakobsenError, match=r"motor 'Drive' has no Object A: Object A is the body the motor drives"):
        scene_to_model.build(bpy.context)
