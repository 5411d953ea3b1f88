"""Connector Empties in the add-on: every Cinema 4D connector type becomes an engine joint at the
Empty's origin with the Empty's axes, between the rigid bodies in Object A and Object B (an empty
slot is the world), with the Connector panel's limits, breaking and wheel suspension; broken
connectors are named in the bake's report with the frame they broke on.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import scene_to_model  # noqa: E402
from jakobsen_physics.translate import settings  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402
from jakobsen_engine import JakobsenError  # noqa: E402
from jakobsen_engine.geometry import quaternions as quat  # noqa: E402
from jakobsen_engine.constraints.joints import KINDS  # noqa: E402

pytestmark = pytest.mark.blender

ROD_LENGTH = 1.0


def _enable(obj, role, **settings):
    obj.jakobsen.enabled = True
    obj.jakobsen.type = role
    group = {'RIGID_BODY': obj.jakobsen.rigid_body, 'CONNECTOR': obj.jakobsen.connector,
             'CLOTH': obj.jakobsen.cloth, 'COLLIDER': obj.jakobsen.collider, 'SPRING': obj.jakobsen.spring,
             'MOTOR': obj.jakobsen.motor}[role]
    for key, value in settings.items():
        setattr(group, key, value)
    return obj


def _empty(name, location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0)):
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location, empty.rotation_euler = location, rotation
    return empty


def _cube(name, size=1.0, location=(0.0, 0.0, 0.0), **settings):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.name = obj.data.name = name
    return _enable(obj, 'RIGID_BODY', **settings)


def _frames(first, last):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    scene.frame_set(first)
    bpy.context.view_layer.update()


def _hinged_rod(*, tilt=0.6, frames=(1, 36)):
    """A 1 m x 0.1 m x 0.1 m rod hanging from a hinge Empty at its top end. The Empty's Z axis is
    horizontal (and not along a world axis); the rod starts tilted by ``tilt`` about it."""
    from mathutils import Matrix, Vector

    pivot = Vector((0.3, -0.2, 2.5))
    hinge = _empty("Rod Hinge", pivot, (math.pi / 2, 0.0, 0.4))  # Z -> horizontal, 0.4 rad off world -Y
    bpy.context.view_layer.update()
    axis = (hinge.matrix_world.to_3x3() @ Vector((0, 0, 1))).normalized()

    bpy.ops.mesh.primitive_cube_add(size=1.0)
    rod = bpy.context.object
    rod.name = rod.data.name = "Rod"
    rod.matrix_world = (Matrix.Translation(pivot) @ Matrix.Rotation(tilt, 4, axis)
                        @ Matrix.Translation((0.0, 0.0, -ROD_LENGTH / 2))
                        @ Matrix.Diagonal((0.1, 0.1, ROD_LENGTH, 1.0)))
    _enable(rod, 'RIGID_BODY', collision_shape='BOX', mass=2.0)
    _enable(hinge, 'CONNECTOR', connector_type='HINGE', object_b=rod)  # Object A empty: the world
    _frames(*frames)
    return rod, hinge, np.array(pivot), np.array(axis)


def _top_and_centre(rod) -> tuple[np.ndarray, np.ndarray]:
    m = np.array(rod.matrix_world)
    return m[:3, :3] @ (0.0, 0.0, 0.5) + m[:3, 3], m[:3, 3].copy()  # the cube's +Z face centre


def _unit_rotation(obj) -> np.ndarray:
    m = np.array(obj.matrix_world)[:3, :3]
    return m / np.linalg.norm(m, axis=0)


def _angle_about(r_rest, r_now, axis) -> float:
    """Signed angle (rad) of the rotation from ``r_rest`` to ``r_now`` about ``axis``."""
    rel = r_now @ r_rest.T
    w = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]])
    return math.atan2(0.5 * float(np.dot(w, axis)), 0.5 * (np.trace(rel) - 1.0))


def test_a_hinge_connector_becomes_an_engine_hinge_at_the_empty_with_its_axes(blender):
    rod, hinge, pivot, axis = _hinged_rod()
    hinge.scale = (2.0, 0.5, 3.0)  # the connector's frame is the Empty's rotation; its scale is left out
    sm = scene_to_model.build(bpy.context)
    joints = sm.model.joints
    assert joints.count == 1 and joints.names == ("Rod Hinge",)
    assert joints.kind[0] == KINDS.index("hinge")
    world = sm.model.bodies.count
    rod_index = next(b.index for b in sm.bodies if b.object_name == "Rod")
    assert (joints.a[0], joints.b[0]) == (world, rod_index)  # Object A empty: the world
    np.testing.assert_allclose(joints.local_a[0], pivot, atol=1e-6)  # the world's frame is world space
    np.testing.assert_allclose(quat.to_matrix(joints.frame_a[0]), _unit_rotation(hinge), atol=1e-6)
    assert np.isinf(joints.break_force[0]) and np.isinf(joints.break_torque[0])  # not Breakable
    assert bool(joints.ignore_collisions[0])
    assert not any("not simulated" in w for w in sm.warnings)


def test_a_rod_on_a_hinge_swings_about_the_hinge_and_stays_on_it(blender):
    rod, hinge, pivot, axis = _hinged_rod()
    scene = bpy.context.scene
    top0, centre0 = _top_and_centre(rod)
    np.testing.assert_allclose(top0, pivot, atol=1e-6)  # the scene is built as intended

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}

    for frame in (12, 24, 36):
        scene.frame_set(frame)
        top, centre = _top_and_centre(rod)
        gap = np.linalg.norm(top - np.array(hinge.matrix_world.translation))
        assert gap < 2e-3, f"frame {frame}: the rod's top end is {gap * 1000:.2f} mm from the hinge"
        along = abs(float(np.dot(centre - centre0, axis)))
        assert along < 2e-3, f"frame {frame}: the rod moved {along * 1000:.2f} mm along the hinge axis"
    scene.frame_set(24)
    _, centre = _top_and_centre(rod)
    moved = np.linalg.norm(centre - centre0)
    assert moved > 0.1, f"the rod's centre moved only {moved * 1000:.1f} mm: it did not swing"


def test_a_hinge_with_an_angular_limit_stays_within_it(blender):
    limit = 0.25  # the rod starts 0.6 rad up its swing, so gravity drives it hard into the limit
    rod, hinge, pivot, axis = _hinged_rod(frames=(1, 30))
    c = hinge.jakobsen.connector
    c.use_angular_limit, c.angle_min, c.angle_max = True, -limit, limit
    rest = _unit_rotation(rod)

    job = BakeJob(bpy.context.scene.name)
    job.run()

    poses = job.body_results("Rod")[:, :3, :3]
    angles = np.array([_angle_about(rest, m / np.linalg.norm(m, axis=0), axis) for m in poses])
    worst = float(np.abs(angles).max())
    print(f"hinge limit: largest angle {math.degrees(worst):.3f} deg, limit {math.degrees(limit):.3f} deg")
    assert worst <= limit + math.radians(1.0), f"the hinge turned {math.degrees(worst):.2f} deg (limit 14.3)"
    assert worst >= limit - math.radians(2.0), f"the rod reached only {math.degrees(worst):.2f} deg"
    tops = poses @ np.array([0.0, 0.0, 0.5 * ROD_LENGTH]) + job.body_results("Rod")[:, :3, 3]
    assert np.linalg.norm(tops - pivot, axis=1).max() < 2e-3  # and it is still on the hinge


def test_a_slider_keeps_the_body_on_the_empty_z_line_within_its_limits(blender):
    # A block on a slider tilted 40 degrees from vertical: gravity slides it down the line until
    # the lower limit stops it.
    slider = _empty("Slide", (0.5, 0.0, 2.0), (0.0, math.radians(40.0), 0.3))
    block = _cube("Block", size=0.3, location=(0.5, 0.0, 2.0), collision_shape='BOX', mass=1.5)
    _enable(slider, 'CONNECTOR', connector_type='SLIDER', object_b=block, use_linear_limit=True,
            distance_min=-0.4, distance_max=0.2)
    _frames(1, 30)
    z = _unit_rotation(slider)[:, 2]
    origin = np.array(slider.matrix_world.translation)
    rest = _unit_rotation(block)

    job = BakeJob(bpy.context.scene.name)
    job.run()

    poses = job.body_results("Block")
    offset = poses[:, :3, 3] - origin
    along = offset @ z
    off_line = np.linalg.norm(offset - np.outer(along, z), axis=1).max()
    print(f"slider: off the line {off_line * 1000:.3f} mm, along Z {along.min():.4f}..{along.max():.4f} m "
          f"(limits -0.4..0.2), last {along[-1]:.4f} m")
    assert off_line < 2e-3, f"the block left the slider's line by {off_line * 1000:.2f} mm"
    assert along.min() >= -0.4 - 2e-3 and along.max() <= 0.2 + 2e-3, (along.min(), along.max())
    assert along[-1] == pytest.approx(-0.4, abs=5e-3)  # it slid down to the lower limit
    turned = max(np.linalg.norm(p[:3, :3] / np.linalg.norm(p[:3, :3], axis=0) - rest) for p in poses)
    assert turned < 1e-2  # a slider does not let it rotate


@pytest.mark.parametrize("kind", list(settings.JOINT_KINDS))
def test_every_connector_type_becomes_its_engine_joint(blender, kind):
    rod, hinge, pivot, axis = _hinged_rod()
    block = _cube("Block", size=0.4, location=tuple(pivot + (0.0, 0.0, 0.2)), dynamic='OFF', collision_shape='BOX')
    c = hinge.jakobsen.connector
    c.connector_type, c.object_a = kind, block
    c.use_breaking, c.breaking_force, c.breaking_torque = True, 300.0, 40.0
    c.ignore_collisions, c.limit_bounce = False, 0.25
    sm = scene_to_model.build(bpy.context)
    index = {b.object_name: b.index for b in sm.bodies}
    joints = sm.model.joints
    assert joints.count == 1 and KINDS[joints.kind[0]] == settings.JOINT_KINDS[kind]
    assert (joints.a[0], joints.b[0]) == (index["Block"], index["Rod"])
    assert (joints.break_force[0], joints.break_torque[0]) == (300.0, 40.0)
    assert not joints.ignore_collisions[0]
    # Limit Bounce reaches the kinds that have a limit to bounce off (the panel shows it only there).
    has_limit = kind not in ('FIXED', 'BALL_SOCKET', 'PLANAR')
    assert joints.bounce[0] == pytest.approx(0.25 if has_limit else 0.0)
    assert not any("not simulated" in w or "Ignore Collisions" in w for w in sm.warnings)


def test_limits_of_the_ragdoll_cardan_box_and_wheel_reach_the_engine(blender):
    rod, hinge, pivot, axis = _hinged_rod()
    c = hinge.jakobsen.connector

    def built():
        return scene_to_model.build(bpy.context).model.joints

    c.connector_type, c.cone_angle, c.twist_angle = 'RAGDOLL', 0.5, 0.2
    j = built()
    assert (j.cone[0], j.twist_lower[0], j.twist_upper[0]) == pytest.approx((0.5, -0.2, 0.2))
    c.connector_type, c.use_cone_limit = 'CARDAN', True
    assert built().cone[0] == pytest.approx(0.5)
    c.connector_type, c.box_lower, c.box_upper = 'BOX', (-0.1, -0.2, -0.3), (0.1, 0.2, 0.0)
    j = built()
    np.testing.assert_allclose([j.lin_lower[0], j.lin_upper[0]], [[-0.1, -0.2, -0.3], [0.1, 0.2, 0.0]], atol=1e-6)
    c.box_lower[2] = 0.5
    with pytest.raises(JakobsenError, match=r"connector 'Rod Hinge': the Box's Lower Z is above its Upper Z"):
        scene_to_model.build(bpy.context)
    c.connector_type = 'WHEEL_SUSPENSION'
    c.suspension_lower, c.suspension_upper, c.suspension_rest = -0.2, 0.05, -0.1
    c.suspension_stiffness, c.suspension_damping = 5000.0, 300.0
    sm = scene_to_model.build(bpy.context)
    j, springs = sm.model.joints, sm.model.springs
    assert (j.lin_lower[0][2], j.lin_upper[0][2]) == pytest.approx((-0.2, 0.05))
    assert springs.count == 1 and (springs.rest[0], springs.stiffness[0], springs.damping[0]) == \
        pytest.approx((-0.1, 5000.0, 300.0))


def test_a_connector_with_zero_scale_is_refused_by_name(blender):
    rod, hinge, pivot, axis = _hinged_rod()
    hinge.scale = (1.0, 0.0, 1.0)
    with pytest.raises(JakobsenError, match=r"connector 'Rod Hinge': its Y axis has zero length \(its scale is zero\)"):
        scene_to_model.build(bpy.context)


@pytest.mark.parametrize("other_role", [None, 'CLOTH', 'COLLIDER'], ids=["not-enabled", "cloth", "collider"])
def test_a_hinge_to_an_object_that_is_not_a_rigid_body_is_refused_by_name(blender, helpers, other_role):
    rod, hinge, pivot, axis = _hinged_rod()
    other = helpers.link(bpy.data.objects.new("Sheet", helpers.grid_mesh("Sheet", 3, 3, 1.0)))
    other.location = (0.0, 0.0, 3.0)
    if other_role is not None:
        _enable(other, other_role)
    hinge.jakobsen.connector.object_a = other
    bpy.context.view_layer.update()
    # Any bake reads every object's settings, and on bpy 4.2 the first read stores the (default)
    # property group on the object; that is not a change the refused bake makes.
    assert other.jakobsen.enabled == (other_role is not None)
    before = helpers.snapshot()
    with pytest.raises(JakobsenError, match=r"connector 'Rod Hinge': its Object A 'Sheet' is not"):
        scene_to_model.build(bpy.context)
    with pytest.raises(RuntimeError, match=r"connector 'Rod Hinge': its Object A 'Sheet' is not"):
        bpy.ops.jakobsen.bake()
    assert helpers.snapshot() == before


def test_a_static_mesh_passive_body_cannot_hold_a_connector(blender, helpers):
    rod, hinge, pivot, axis = _hinged_rod()
    beam = _cube("Beam", size=0.5, location=(0.3, -0.2, 3.0), dynamic='OFF', collision_shape='STATIC_MESH')
    hinge.jakobsen.connector.object_a = beam
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=r"connector 'Rod Hinge': its Object A 'Beam' collides with its faces"):
        bpy.ops.jakobsen.bake()
    assert helpers.snapshot() == before


def _hook(name, x, breakable, breaking_force):
    """A 10 kg block (weight 98 N) hanging from a Fixed connector to the world."""
    block = _cube(f"{name} Block", size=0.4, location=(x, 0.0, 2.0), collision_shape='BOX', mass=10.0)
    hook = _empty(name, (x, 0.0, 2.2))
    _enable(hook, 'CONNECTOR', connector_type='FIXED', object_b=block, use_breaking=breakable,
            breaking_force=breaking_force, breaking_torque=1e4)
    return block


def test_a_breakable_connector_under_a_heavy_body_breaks_and_the_report_names_the_frame(blender):
    _hook("Weak Hook", 0.0, True, 40.0)  # breaks under the block's 98 N
    _hook("Strong Hook", 2.0, True, 500.0)
    _hook("Plain Hook", 4.0, False, 1.0)  # not Breakable: the tiny breaking force does not apply
    _frames(1, 12)

    job = BakeJob(bpy.context.scene.name)
    summary = job.run()

    print(summary)
    assert "connector 'Weak Hook' broke at frame 2" in summary, summary
    assert summary.count("broke") == 1
    fell = job.body_results("Weak Hook Block")[:, 2, 3]
    assert fell[0] - fell[-1] > 0.3  # free fall for 11 frames: 0.5 * 9.81 * (11/24)^2 = 1.03 m
    for name in ("Strong Hook Block", "Plain Hook Block"):
        z = job.body_results(name)[:, 2, 3]
        assert abs(z[-1] - z[0]) < 2e-3, f"{name} moved {abs(z[-1] - z[0]) * 1000:.1f} mm"


def test_an_animated_steering_angle_turns_the_wheel(blender):
    """A wheel on a Wheel Suspension to the world, in zero gravity; the steering angle is keyed from
    0 on frame 1 to 30 degrees on frame 11. The wheel's axle (the Empty's X axis) follows it."""
    scene = bpy.context.scene
    scene.use_gravity = False
    mount = _empty("Front Wheel", (0.0, 0.0, 1.0))
    bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=0.15, location=(0.0, 0.0, 1.0),
                                        rotation=(0.0, math.pi / 2, 0.0))
    wheel = _enable(bpy.context.object, 'RIGID_BODY', collision_shape='CYLINDER', mass=5.0)
    wheel.name = "Wheel"
    _enable(mount, 'CONNECTOR', connector_type='WHEEL_SUSPENSION', object_b=wheel, suspension_rest=0.0,
            suspension_lower=-0.1, suspension_upper=0.1)
    c = mount.jakobsen.connector
    for frame, angle in ((1, 0.0), (11, math.radians(30.0))):
        c.steering_angle = angle
        mount.keyframe_insert("jakobsen.connector.steering_angle", frame=frame)
    _frames(1, 16)
    keyed = {}
    for frame in (4, 6, 8):
        scene.frame_set(frame)
        keyed[frame] = c.steering_angle
    scene.frame_set(1)

    sm = scene_to_model.build(bpy.context)
    assert callable(sm.model.joints.steering[0])
    job = BakeJob(scene.name)
    job.run()

    poses = job.body_results("Wheel")
    axle = poses[:, :3, 2] / np.linalg.norm(poses[:, :3, 2], axis=1, keepdims=True)  # the cylinder's axis
    steer = np.degrees(np.arctan2(axle[:, 1], axle[:, 0]))
    print("steering: " + ", ".join(f"frame {f}: wheel {steer[f - 1]:.2f} deg, keyed {math.degrees(a):.2f} deg"
                                   for f, a in keyed.items()) + f", last frame {steer[-1]:.2f} deg (keyed 30)")
    assert abs(steer[0]) < 0.1
    for frame, angle in keyed.items():
        assert steer[frame - 1] == pytest.approx(math.degrees(angle), abs=1.5), (frame, steer[frame - 1])
    assert steer[-1] == pytest.approx(30.0, abs=1.0)
    centre = poses[:, :3, 3]
    assert np.abs(centre - (0.0, 0.0, 1.0)).max() < 0.02  # still on its mount


def test_an_animated_connector_empty_is_named_in_a_warning(blender):
    rod, hinge, _, _ = _hinged_rod(frames=(1, 12))
    sm = scene_to_model.build(bpy.context)
    assert not any("transform is animated" in w for w in sm.warnings)
    hinge.keyframe_insert("location", frame=1)
    hinge.location.x += 1.0
    hinge.keyframe_insert("location", frame=12)
    sm = scene_to_model.build(bpy.context)
    assert any(w.startswith("connector 'Rod Hinge': its transform is animated") for w in sm.warnings), sm.warnings
