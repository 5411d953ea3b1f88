"""Reading Blender scenes into the engine: positions, pins, collider shapes, animation."""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import scene_to_model  # noqa: E402
from jakobsen_physics.blender_io import reads  # noqa: E402
from jakobsen_engine import Box, Capsule, JakobsenError, Plane, Sphere  # noqa: E402

pytestmark = pytest.mark.blender


def _enable(obj, role):
    obj.jakobsen.enabled = True
    obj.jakobsen.type = role
    return obj


def _pose(collider, t=0.0) -> np.ndarray:
    return collider.pose(t)


def _rigid_of(obj) -> np.ndarray:
    """matrix_world without its scale: what a collider's pose must be (for a centred mesh)."""
    m = np.array(obj.matrix_world)
    m[:3, :3] /= np.linalg.norm(m[:3, :3], axis=0)
    return m


def test_cloth_is_read_in_world_space_with_modifiers_and_pin_weights(pinned_cloth):
    cloth = pinned_cloth()
    group = cloth.vertex_groups["pin"]
    group.add([0, 1], 0.5, 'REPLACE')  # partly pinned: pulled by a goal, not held
    displace = cloth.modifiers.new("Displace", 'DISPLACE')
    displace.strength = 0.3  # moves every vertex along its normal: the evaluated mesh differs
    bpy.context.view_layer.update()

    sm = scene_to_model.build(bpy.context)

    depsgraph = bpy.context.evaluated_depsgraph_get()
    ob_eval = cloth.evaluated_get(depsgraph)
    m = np.array(ob_eval.matrix_world)
    expected = np.array([tuple(m @ np.append(v.co, 1.0))[:3] for v in ob_eval.data.vertices])
    original = np.array([tuple(m @ np.append(v.co, 1.0))[:3] for v in cloth.data.vertices])
    binding = sm.deformables[0]
    rest = sm.model.rest_positions[binding.particles]
    assert np.abs(expected - original).max() > 0.1
    np.testing.assert_allclose(rest, expected, atol=1e-6)

    weights = np.array([group.weight(i) if any(g.group == group.index for g in v.groups) else 0.0
                        for i, v in enumerate(cloth.data.vertices)])
    inv_mass = sm.model.inverse_masses[binding.particles]
    assert np.array_equal(np.flatnonzero(inv_mass == 0), np.flatnonzero(weights == 1.0))
    assert len(np.flatnonzero(weights == 1.0)) == 6
    assert sorted(sm.model.goals.index.tolist()) == [0, 1]
    np.testing.assert_allclose(binding.pinned_local, np.array([tuple(v.co) for v in ob_eval.data.vertices])[
        np.flatnonzero(weights == 1.0)], atol=1e-6)


def test_vertex_group_weights_match_blenders_own_lookup(blender, helpers):
    obj = helpers.link(bpy.data.objects.new("W", helpers.grid_mesh("W", 7, 5, 1.0)))
    a = obj.vertex_groups.new(name="a")
    b = obj.vertex_groups.new(name="b")
    a.add([0, 3, 5, 34], 0.25, 'REPLACE')
    b.add(list(range(0, 35, 2)), 0.75, 'REPLACE')
    b.add([3], 0.1, 'REPLACE')
    for group in (a, b):
        got = reads.vertex_group_weights(obj.data, group.index)
        want = []
        for i in range(35):
            try:
                want.append(group.weight(i))
            except RuntimeError:
                want.append(0.0)
        np.testing.assert_allclose(got, want, atol=1e-7)


def test_collider_shapes_are_fitted_to_the_objects(pinned_cloth, helpers):
    pinned_cloth()
    ground = bpy.data.objects["Ground"]
    ground.location = (1.0, 2.0, -0.5)
    ground.rotation_euler = (math.radians(30), 0.0, 0.0)
    ground.scale = (2.0, 2.0, 2.0)

    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, -3.0))
    box = _enable(bpy.context.object, 'COLLIDER')
    box.name = "Crate"
    box.scale = (2.0, 1.0, 0.5)
    box.rotation_euler = (0.0, 0.0, 0.3)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(3.0, 0.0, 0.0))
    ball = _enable(bpy.context.object, 'COLLIDER')
    ball.name = "Ball"
    bpy.ops.mesh.primitive_cylinder_add(radius=0.25, depth=2.0, location=(-3.0, 0.0, 0.0))
    post = _enable(bpy.context.object, 'COLLIDER')
    post.name = "Post"
    post.jakobsen.collider.shape = 'CAPSULE'
    wall_mesh = bpy.data.meshes.new("Wall")  # flat along its local X, turned so that X faces world +Y
    wall_mesh.from_pydata([(0, -1, 0), (0, 1, 0), (0, 1, 2), (0, -1, 2)], [], [(0, 1, 2, 3)])
    wall = _enable(helpers.link(bpy.data.objects.new("Wall", wall_mesh)), 'COLLIDER')
    wall.location = (0.0, -5.0, 0.0)  # facing the cloth (a plane faces what moves: bodies.facing_what_moves)
    wall.rotation_euler = (0.0, 0.0, math.pi / 2)

    sm = scene_to_model.build(bpy.context)
    by_name = {c.object_name: (c, sm.model.colliders[c.index]) for c in sm.colliders}
    assert sorted(by_name) == ["Ball", "Crate", "Ground", "Post", "Wall"]

    binding, plane = by_name["Wall"]
    assert binding.shape == 'PLANE'
    np.testing.assert_allclose(_pose(plane)[:3, 2], [0.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(_pose(plane)[:3, 3], [0.0, -5.0, 1.0], atol=1e-6)

    binding, plane = by_name["Ground"]
    assert binding.shape == 'PLANE' and isinstance(plane, Plane) and not binding.animated
    pose = _pose(plane)
    np.testing.assert_allclose(pose[:3, 2], [0.0, -math.sin(math.radians(30)), math.cos(math.radians(30))],
                               atol=1e-6)
    np.testing.assert_allclose(pose[:3, 3], [1.0, 2.0, -0.5], atol=1e-6)

    binding, crate = by_name["Crate"]
    assert binding.shape == 'BOX' and isinstance(crate, Box)
    np.testing.assert_allclose(crate.half_extents, [1.0, 0.5, 0.25], atol=1e-6)
    np.testing.assert_allclose(_pose(crate), _rigid_of(box), atol=1e-6)

    binding, sphere = by_name["Ball"]
    assert binding.shape == 'SPHERE' and isinstance(sphere, Sphere)
    assert sphere.radius == pytest.approx(0.5, abs=1e-6)

    binding, capsule = by_name["Post"]
    assert isinstance(capsule, Capsule)
    assert (capsule.radius, capsule.half_height) == pytest.approx((0.25, 0.75), abs=1e-6)


def test_an_animated_collider_moves_with_its_animation_between_frames(pinned_cloth):
    pinned_cloth()
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.3)
    ball = _enable(bpy.context.object, 'COLLIDER')
    scene = bpy.context.scene
    for frame, x, angle in ((1, 0.0, 0.0), (8, 1.4, 1.2)):
        ball.location = (x, 0.0, 0.5)
        ball.rotation_euler = (0.0, 0.0, angle)
        ball.keyframe_insert("location", frame=frame)
        ball.keyframe_insert("rotation_euler", frame=frame)
    scene.frame_set(3)

    sm = scene_to_model.build(bpy.context)

    assert scene.frame_current == 3  # reading the animation did not move the scene
    binding = next(c for c in sm.colliders if c.object_name == ball.name)
    assert binding.animated
    sphere = sm.model.colliders[binding.index]
    expected = {}
    for frame in (1, 4, 5, 8):
        scene.frame_set(frame)
        expected[frame] = _rigid_of(ball)
    for frame in (1, 4, 8):
        np.testing.assert_allclose(sphere.pose(sm.time_of(frame)), expected[frame], atol=1e-6)
    half = sphere.pose((sm.time_of(4) + sm.time_of(5)) / 2)
    np.testing.assert_allclose(half[:3, :3].T @ half[:3, :3], np.eye(3), atol=1e-9)
    np.testing.assert_allclose(half[:3, 3], (expected[4][:3, 3] + expected[5][:3, 3]) / 2, atol=1e-6)


def test_solver_settings_come_from_the_scene(blender):
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 30, 1.001
    scene.gravity = (0.0, 1.0, -3.0)
    props = scene.jakobsen
    props.substeps, props.iterations, props.damping = 7, 2, 0.25
    props.wind = (4.0, -1.0, 0.5)
    s = scene_to_model.solver_settings(scene)
    assert (s.substeps, s.iterations, s.damping) == (7, 2, 0.25)
    assert s.air_velocity == pytest.approx((4.0, -1.0, 0.5))
    assert s.frame_rate == pytest.approx(30 / 1.001)
    assert s.gravity == pytest.approx((0.0, 1.0, -3.0))
    scene.use_gravity = False
    assert scene_to_model.solver_settings(scene).gravity == (0.0, 0.0, 0.0)
    props.use_scene_gravity = False
    props.gravity = (0.0, 0.0, -1.62)
    assert scene_to_model.solver_settings(scene).gravity == pytest.approx((0.0, 0.0, -1.62))
    props.use_auto_iterations = True  # the solver sweeps until converged; the count is set aside
    assert scene_to_model.solver_settings(scene).iterations == "auto"
    props.use_auto_iterations = False
    assert scene_to_model.solver_settings(scene).iterations == 2
    # Deactivation: on by default, as the engine's sleeping; its speed and time carried over.
    s = scene_to_model.solver_settings(scene)
    assert s.sleeping and s.sleep_speed == pytest.approx(0.01) and s.sleep_time == pytest.approx(0.5)
    props.use_deactivation, props.deactivate_speed, props.deactivate_time = False, 0.05, 2.5
    s = scene_to_model.solver_settings(scene)
    assert not s.sleeping and s.sleep_speed == pytest.approx(0.05) and s.sleep_time == pytest.approx(2.5)


def test_a_deactivated_box_keys_the_same_pose_to_the_end(blender):
    """A box dropped in a baked scene comes to rest and deactivates: the keys it gets from then
    on repeat its pose exactly; with Deactivation off it rests in the same place."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 72
    heights = {}
    for deactivate in (True, False):
        for obj in list(bpy.data.objects):
            bpy.data.objects.remove(obj)
        scene.jakobsen.use_deactivation = deactivate
        bpy.ops.mesh.primitive_plane_add(size=10)
        _enable(bpy.context.object, 'COLLIDER')
        bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 0.6))
        cube = bpy.context.object
        _enable(cube, 'RIGID_BODY')
        assert bpy.ops.jakobsen.bake() == {'FINISHED'}
        z = []
        for frame in range(1, 73):
            scene.frame_set(frame)
            z.append(cube.matrix_world.translation.z)
        heights[deactivate] = np.array(z)
    asleep, awake = heights[True], heights[False]
    assert np.all(asleep[-24:] == asleep[-1])  # frozen for the last second
    assert asleep[-1] == pytest.approx(0.25, abs=0.005)
    assert abs(asleep[-1] - awake[-1]) < 1e-4


def test_connectors_must_join_bodies_that_take_part(pinned_cloth):
    pinned_cloth()
    bpy.ops.mesh.primitive_cube_add(location=(0, 0, 3))
    cube = bpy.context.object
    cube.name = "Base"
    empty = bpy.data.objects.new("Wheel Hinge", None)
    bpy.context.scene.collection.objects.link(empty)
    _enable(empty, 'CONNECTOR')
    empty.jakobsen.connector.object_a = cube
    with pytest.raises(JakobsenError, match=r"connector 'Wheel Hinge': its Object A 'Base' is not a body"):
        scene_to_model.build(bpy.context)
    _enable(cube, 'RIGID_BODY')
    sm = scene_to_model.build(bpy.context)
    assert sm.model.joints.count == 1  # a Hinge (the default type) is simulated
    assert not any("not simulated yet" in w for w in sm.warnings)
    empty.jakobsen.connector.connector_type = 'CARDAN'
    sm = scene_to_model.build(bpy.context)
    assert sm.model.joints.count == 1  # every connector type is simulated
    assert not any("not simulated yet" in w for w in sm.warnings)
    assert not any("rigid body 'Base'" in w for w in sm.warnings)  # a rigid body is simulated now
    assert [(b.object_name, b.mode) for b in sm.bodies] == [("Base", "dynamic")]
    empty.jakobsen.connector.object_b = cube
    with pytest.raises(JakobsenError, match="joins 'Base' to itself"):
        scene_to_model.build(bpy.context)


def test_nothing_enabled_and_bad_frame_ranges_are_explained(blender):
    with pytest.raises(JakobsenError, match="no object has Jakobsen Physics enabled"):
        scene_to_model.build(bpy.context)
    with pytest.raises(JakobsenError, match=r"end frame \(3\) must come after the start frame \(5\)"):
        scene_to_model.build(bpy.context, frame_range=(5, 3))


def test_cloth_and_soft_body_settings_reach_the_engine(blender, helpers):
    sheet = _enable(helpers.link(bpy.data.objects.new("Sheet", helpers.grid_mesh("Sheet", 5, 4, 1.0))), 'CLOTH')
    sheet.scale = (2.0, 1.0, 1.0)  # 2 m x 1 m in the world
    s = sheet.jakobsen.cloth
    s.use_vertex_mass, s.vertex_mass = True, 0.02
    s.air_drag, s.thickness, s.friction = 0.6, 0.01, 0.3
    s.use_rigid_stretch, s.use_rigid_shear = True, False
    # (beside the sheet: one above the other, they would be named as passing through each other)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(4.0, 0.0, 3.0))
    blob = _enable(bpy.context.object, 'SOFT_BODY')
    blob.name = "Blob"
    blob.jakobsen.cloth.use_rigid_stretch = False
    blob.jakobsen.cloth.stretch_stiffness = 50.0

    sm = scene_to_model.build(bpy.context)

    roles = {d.object_name: d for d in sm.deformables}
    assert {name: d.role for name, d in roles.items()} == {"Blob": 'SOFT_BODY', "Sheet": 'CLOTH'}
    assert not any("'Blob'" in w for w in sm.warnings)  # a real soft body now: no warning
    part = roles["Sheet"].particles
    model = sm.model
    assert (1.0 / model.inverse_masses[part]).sum() == pytest.approx(0.02 * 20)
    assert model.drag[part].sum() == pytest.approx(0.6 * 2.0)  # air drag x area
    assert np.allclose(model.radii[part], 0.01) and np.allclose(model.friction[part], 0.3)
    sticks = model.sticks
    in_sheet = (sticks.i >= part.start) & (sticks.i < part.stop)
    edge = in_sheet & np.isclose(sticks.rest, 0.5)  # 2 m / 4 intervals along x
    assert np.any(edge) and np.all(sticks.compliance[edge] == 0.0)  # rigid stretch
    assert np.any(sticks.compliance[in_sheet] > 0.0)  # finite shear and bending
    in_blob = (sticks.i >= roles["Blob"].particles.start) & (sticks.i < roles["Blob"].particles.stop)
    blob_edges = in_blob & np.isclose(sticks.rest, 1.0)
    assert np.allclose(sticks.compliance[blob_edges], 1.0 / 50.0)  # rest / stiffness
