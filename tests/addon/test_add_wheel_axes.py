"""Add Connector (Wheel Suspension) and Add Motor on a wheel find its hub and axle from its
geometry: the connector at the hub with X along the axle and Z up, the motor at the hub with Z
along the axle, signed so that a positive speed rolls forward, drawn as an arrow along its Z.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics.bake_job import BakeJob  # noqa: E402

from .test_connectors import _empty, _enable, _frames  # noqa: E402
from .test_setup import _select  # noqa: E402

pytestmark = pytest.mark.blender


def _wheel(name="Wheel", hub=(1.0, -1.2, 0.35), axle_yaw=0.0, radius=0.35, origin_offset=(0.0, 0.0, 0.0)):
    """A tyre-like cylinder (radius, 0.25 m wide) whose axle is world X turned by ``axle_yaw``
    about world Z, its hub at ``hub``; its origin ``origin_offset`` away from the hub and its
    local axes unrelated to the axle (as an imported wheel's are)."""
    from mathutils import Matrix, Vector

    bpy.ops.mesh.primitive_cylinder_add(vertices=24, radius=radius, depth=0.25)
    wheel = bpy.context.object
    wheel.name = wheel.data.name = name
    turn = Matrix.Rotation(axle_yaw, 4, 'Z') @ Matrix.Rotation(math.pi / 2, 4, 'Y')  # cylinder Z -> the axle
    wheel.data.transform(turn)  # the geometry turned, the object's axes left as they are
    wheel.data.transform(Matrix.Translation(-Vector(origin_offset)))
    wheel.location = Vector(hub) + Vector(origin_offset)
    wheel.rotation_euler = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    return wheel


def _chassis(forward_axis=None, location=(0.0, 0.0, 0.8)):
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=location)
    chassis = bpy.context.object
    chassis.name = chassis.data.name = "Chassis"
    chassis.scale = (1.6, 3.6, 0.5)
    if forward_axis is not None:
        chassis.jakobsen.vehicle.enabled = True
        chassis.jakobsen.vehicle.forward_axis = forward_axis
    bpy.context.view_layer.update()
    return chassis


def _axes(obj):
    m = np.array(obj.matrix_world)
    return m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3]


@pytest.mark.parametrize("yaw, offset", [(0.0, (0.0, 0.0, 0.0)), (0.5, (0.2, -0.1, 0.3)),
                                         (math.pi / 2, (0.0, 0.4, 0.0))])
def test_a_wheel_suspension_goes_to_the_hub_with_x_along_the_axle_and_z_up(blender, yaw, offset):
    chassis = _chassis()
    hub = np.array([1.0, -1.2, 0.35])
    wheel = _wheel(hub=tuple(hub), axle_yaw=yaw, origin_offset=offset)
    _select(chassis, wheel, active=wheel)
    assert bpy.ops.jakobsen.add_connector(connector_type='WHEEL_SUSPENSION') == {'FINISHED'}
    connector = bpy.context.view_layer.objects.active
    x, y, z, at = _axes(connector)
    axle = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    assert abs(x @ axle) == pytest.approx(1.0, abs=1e-4)  # either sign
    assert z == pytest.approx([0.0, 0.0, 1.0], abs=1e-4)
    assert at == pytest.approx(hub, abs=1e-4)
    assert (connector.jakobsen.connector.object_a, connector.jakobsen.connector.object_b) == (chassis, wheel)
    assert np.linalg.det(np.array(connector.matrix_world)[:3, :3]) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("forward_axis, forward", [(None, (0.0, -1.0, 0.0)), ('NEG_Y', (0.0, -1.0, 0.0)),
                                                   ('POS_Y', (0.0, 1.0, 0.0))])
def test_an_angular_motor_on_a_wheel_points_along_the_axle_the_way_that_drives_forward(blender, forward_axis,
                                                                                         forward):
    """Positive spin about the motor's Z rolls the wheel towards the chassis' Forward axis:
    Z = up x forward (the car's left)."""
    chassis = _chassis(forward_axis)
    wheel = _wheel(hub=(1.0, -1.2, 0.35), origin_offset=(0.1, 0.2, 0.0))
    _select(chassis, wheel, active=wheel)
    assert bpy.ops.jakobsen.add_motor(motor_type='ANGULAR') == {'FINISHED'}
    motor = bpy.context.view_layer.objects.active
    x, y, z, at = _axes(motor)
    assert z == pytest.approx(np.cross([0.0, 0.0, 1.0], forward), abs=1e-4)
    assert at == pytest.approx([1.0, -1.2, 0.35], abs=1e-4)
    assert motor.empty_display_type == 'SINGLE_ARROW'  # drawn along its Z
    assert motor.empty_display_size > 0.35  # out of the tyre
    assert motor.jakobsen.pair() == (wheel, chassis)


def test_a_motor_on_a_wheel_held_by_a_wheel_suspension_takes_the_connectors_axle(blender):
    chassis = _chassis()
    wheel = _wheel(hub=(1.0, -1.2, 0.35))
    connector = _empty("Suspension", (1.0, -1.2, 0.35), (0.0, 0.0, 0.2))  # X turned 0.2 rad off world X
    _enable(connector, 'CONNECTOR', connector_type='WHEEL_SUSPENSION', object_a=chassis, object_b=wheel)
    bpy.context.view_layer.update()
    _select(chassis, wheel, active=wheel)
    assert bpy.ops.jakobsen.add_motor(motor_type='ANGULAR') == {'FINISHED'}
    _, _, z, _ = _axes(bpy.context.view_layer.objects.active)
    assert abs(z @ np.array(connector.matrix_world)[:3, 0]) == pytest.approx(1.0, abs=1e-6)


def test_a_motor_on_a_flat_body_keeps_the_empty_unturned_and_says_so(blender, helpers):
    plate = helpers.link(bpy.data.objects.new("Plate", helpers.grid_mesh("Plate", 2, 2, 1.0)))
    bpy.context.view_layer.update()
    _select(plate, active=plate)
    assert bpy.ops.jakobsen.add_motor(motor_type='ANGULAR') == {'FINISHED'}
    motor = bpy.context.view_layer.objects.active
    assert np.array(motor.matrix_world)[:3, :3] == pytest.approx(np.eye(3))


@pytest.mark.parametrize("yaw", [0.0, 0.7])
def test_a_motor_added_to_a_wheel_on_the_ground_rolls_it_forward(blender, yaw):
    """A wheel kept upright (a Planar connector across its axle), on the ground, with a motor from
    Add Motor (relative to the world, whose front is -Y) at a positive speed: it rolls forward,
    the way the motor's arrow says (right-handed about the arrow)."""
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    _enable(bpy.context.object, 'COLLIDER')
    wheel = _wheel(hub=(0.0, 0.0, 0.35), axle_yaw=yaw)
    _enable(wheel, 'RIGID_BODY', collision_shape='CONVEX_HULL', mass=10.0, friction=1.0)
    _select(wheel, active=wheel)
    assert bpy.ops.jakobsen.add_motor(motor_type='ANGULAR') == {'FINISHED'}
    motor = bpy.context.view_layer.objects.active
    m = motor.jakobsen.motor
    m.target_angular_speed, m.max_torque = 4.0, 40.0
    upright = _empty("Upright", (0.0, 0.0, 0.35))
    upright.matrix_world = motor.matrix_world.copy()  # its Z (the plane's normal) along the axle too
    _enable(upright, 'CONNECTOR', connector_type='PLANAR', object_b=wheel)
    _frames(1, 24)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    moved = job.body_results("Wheel")[-1][:3, 3] - [0.0, 0.0, 0.35]
    axle = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    ahead = np.cross([0.0, 0.0, 1.0], axle) * -1.0  # the rolling direction with the front towards -Y
    ahead = ahead if ahead @ [0.0, -1.0, 0.0] > 0 else -ahead
    print(f"axle yaw {yaw}: the wheel moved {moved.round(3)}; forward is {ahead.round(3)}")
    assert moved @ ahead > 0.5  # about 1.4 m/s for most of the second
    assert abs(moved @ axle) < 0.01
