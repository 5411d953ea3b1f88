"""Connector Empties in the add-on: Ball and Socket, Hinge and Fixed become engine joints at the
Empty's origin, about its Z axis, between the rigid bodies in Object A and Object B (an empty slot
is the world); the other connector types, springs and motors are checked but not simulated yet.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from addon import scene_to_model  # noqa: E402
from addon.engine import JakobsenError  # noqa: E402
from addon.engine.joints import JointKind  # noqa: E402

pytestmark = pytest.mark.blender

ROD_LENGTH = 1.0


def _enable(obj, role, **settings):
    obj.jakobsen.enabled = True
    obj.jakobsen.type = role
    group = {'RIGID_BODY': obj.jakobsen.rigid_body, 'CONNECTOR': obj.jakobsen.connector,
             'CLOTH': obj.jakobsen.cloth, 'COLLIDER': obj.jakobsen.collider}[role]
    for key, value in settings.items():
        setattr(group, key, value)
    return obj


def _hinged_rod(*, tilt=0.6, frames=(1, 36)):
    """A 1 m x 0.1 m x 0.1 m rod hanging from a hinge Empty at its top end. The Empty's Z axis is
    horizontal (and not along a world axis); the rod starts tilted by ``tilt`` about it."""
    from mathutils import Matrix, Vector

    pivot = Vector((0.3, -0.2, 2.5))
    hinge = bpy.data.objects.new("Rod Hinge", None)
    bpy.context.scene.collection.objects.link(hinge)
    hinge.location = pivot
    hinge.rotation_euler = (math.pi / 2, 0.0, 0.4)  # Z -> horizontal, 0.4 rad off the world -Y axis
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
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames
    scene.frame_set(frames[0])
    bpy.context.view_layer.update()
    return rod, hinge, np.array(pivot), np.array(axis)


def _top_and_centre(rod) -> tuple[np.ndarray, np.ndarray]:
    m = np.array(rod.matrix_world)
    return m[:3, :3] @ (0.0, 0.0, 0.5) + m[:3, 3], m[:3, 3].copy()  # the cube's +Z face centre


def test_a_hinge_connector_becomes_an_engine_hinge_at_the_empty_about_its_z_axis(blender):
    rod, hinge, pivot, axis = _hinged_rod()
    sm = scene_to_model.build(bpy.context)
    joints = sm.model.joints
    assert joints.count == 1 and joints.names == ("Rod Hinge",)
    assert joints.kind[0] == JointKind.HINGE
    world = sm.model.bodies.count
    rod_index = next(b.index for b in sm.bodies if b.object_name == "Rod")
    assert (joints.a[0], joints.b[0]) == (world, rod_index)  # Object A empty: the world
    np.testing.assert_allclose(joints.local_a[0], pivot, atol=1e-6)  # the world's frame is world space
    np.testing.assert_allclose(joints.axis_a[0], axis, atol=1e-6)
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
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0.3, -0.2, 3.0))
    beam = _enable(bpy.context.object, 'RIGID_BODY', dynamic='OFF', collision_shape='STATIC_MESH')
    beam.name = "Beam"
    hinge.jakobsen.connector.object_a = beam
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=r"connector 'Rod Hinge': its Object A 'Beam' collides with its faces"):
        bpy.ops.jakobsen.bake()
    assert helpers.snapshot() == before


@pytest.mark.parametrize("kind, engine_kind", [('BALL_SOCKET', JointKind.BALL), ('FIXED', JointKind.FIXED)])
def test_ball_socket_and_fixed_connectors_between_two_bodies(blender, kind, engine_kind):
    rod, hinge, pivot, axis = _hinged_rod()
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=tuple(pivot + (0.0, 0.0, 0.2)))
    block = _enable(bpy.context.object, 'RIGID_BODY', dynamic='OFF', collision_shape='BOX')
    block.name = "Block"
    c = hinge.jakobsen.connector
    c.connector_type, c.object_a = kind, block
    sm = scene_to_model.build(bpy.context)
    index = {b.object_name: b.index for b in sm.bodies}
    joints = sm.model.joints
    assert joints.count == 1 and joints.kind[0] == engine_kind
    assert (joints.a[0], joints.b[0]) == (index["Block"], index["Rod"])
    assert not any("not simulated" in w for w in sm.warnings)


def test_other_connectors_springs_and_motors_warn_that_they_are_not_simulated(blender):
    rod, hinge, pivot, axis = _hinged_rod()
    hinge.jakobsen.connector.connector_type = 'SLIDER'
    spring = bpy.data.objects.new("Rod Spring", None)
    bpy.context.scene.collection.objects.link(spring)
    spring.jakobsen.enabled = True
    spring.jakobsen.type = 'SPRING'
    spring.jakobsen.spring.object_b = rod
    sm = scene_to_model.build(bpy.context)
    assert sm.model.joints.count == 0
    assert any("connector 'Rod Hinge' (Slider) is checked but not simulated yet" in w
               and "only Ball and Socket, Hinge and Fixed" in w for w in sm.warnings)
    assert any("spring 'Rod Spring' is checked but not simulated yet" in w for w in sm.warnings)


def test_hinge_settings_the_engine_lacks_are_named_in_warnings(blender):
    rod, hinge, pivot, axis = _hinged_rod()
    c = hinge.jakobsen.connector
    c.use_angular_limit, c.use_breaking, c.ignore_collisions = True, True, False
    sm = scene_to_model.build(bpy.context)
    assert sm.model.joints.count == 1
    text = "\n".join(sm.warnings)
    assert "connector 'Rod Hinge': the Hinge's Angular Limit is not simulated yet" in text
    assert "connector 'Rod Hinge': Breakable is not simulated yet" in text
    assert "connector 'Rod Hinge': Object A and Object B never collide" in text
