"""Rigid bodies in the add-on: how RIGID_BODY objects reach the engine (mode, mass, shape,
friction, bounce, damping, animation) and how the solver's poses come back as keyframes.

These test the add-on's mapping against the engine run directly on the same scene; the
physics itself is the engine's tests' business.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import baking, scene_to_model  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402
from jakobsen_engine import ModelBuilder, Plane, Solver, SolverSettings, TriangleMesh  # noqa: E402
from jakobsen_engine.bodies.rigid import BodyMode, ShapeKind  # noqa: E402

pytestmark = pytest.mark.blender


def _enable(obj, role='RIGID_BODY', **settings):
    obj.jakobsen.enabled = True
    obj.jakobsen.type = role
    group = obj.jakobsen.rigid_body if role == 'RIGID_BODY' else obj.jakobsen.collider
    for key, value in settings.items():
        setattr(group, key, value)
    return obj


def _cube(name, *, location, size=1.0, **kwargs):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location, **kwargs)
    obj = bpy.context.object
    obj.name = obj.data.name = name
    return obj


def _ground(name="Ground", **settings):
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    ground = bpy.context.object
    ground.name = name
    return _enable(ground, 'COLLIDER', **settings)


def _world_vertices(obj) -> tuple[np.ndarray, list]:
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    m = np.array(obj.matrix_world)
    world = co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    return world, [list(p.vertices) for p in obj.data.polygons]


def _rotation(q) -> np.ndarray:
    from mathutils import Quaternion

    return np.array(Quaternion(q).to_matrix())


def _pose(t, q) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = _rotation(q), t
    return m


def _rigid_part(m) -> np.ndarray:
    m = np.array(m, dtype=np.float64)
    m[:3, :3] /= np.linalg.norm(m[:3, :3], axis=0)
    return m


def test_a_box_dropped_on_a_plane_bakes_to_the_engines_own_result_and_lands(blender):
    box = _enable(_cube("Box", location=(0.3, -0.2, 1.6), rotation=(0.35, 0.2, 0.1)),
                  collision_shape='BOX', mass=2.0, friction=0.6, bounce=0.2)
    box.scale = (1.0, 0.8, 0.6)
    _ground(friction=0.5, bounce=0.5)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 60
    bpy.context.view_layer.update()

    # The engine on its own, fed the same scene by hand.
    world, faces = _world_vertices(box)
    builder = ModelBuilder()
    builder.add_rigid_body(world, faces, name="Box", mass=2.0, shape="box", shape_frame=np.array(box.matrix_world),
                           friction=0.6, restitution=0.2)
    builder.add_collider(Plane(friction=0.5, restitution=0.5, name="Ground"))
    solver = Solver(builder.finalize(), SolverSettings(frame_rate=24.0, substeps=10, iterations=1,
                                                       gravity=tuple(scene.gravity)))
    state = solver.make_state()
    for _ in range(59):
        solver.step_frame(state)
    translation, rotation = solver.body_poses(state)
    rest = np.array(box.matrix_world)
    expected = _pose(translation[0], rotation[0]) @ rest

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}

    scene.frame_set(60)
    m = np.array(box.matrix_world)
    np.testing.assert_allclose(m[:3, 3], expected[:3, 3], atol=1e-5)
    np.testing.assert_allclose(m[:3, :3], expected[:3, :3], atol=1e-5)  # rotation, with the scale kept
    np.testing.assert_allclose(np.linalg.norm(m[:3, :3], axis=0), [1.0, 0.8, 0.6], atol=1e-6)
    # It landed: resting on a face (one of its axes is vertical), its centre as high above the
    # plane as its half extent along that axis (the box is 1 x 0.8 x 0.6 m).
    axes = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
    up = int(np.argmax(np.abs(axes[2])))
    assert abs(axes[2, up]) > 0.999, "the box does not rest on a face"
    half = (0.5, 0.4, 0.3)[up]
    assert abs(m[2, 3] - half) < 3e-3, f"the box rests at z = {m[2, 3]:.4f}, not {half} m on the plane"
    # The keys are location and rotation F-curves in the object's rotation mode (XYZ Euler).
    from jakobsen_physics import actions

    paths = sorted({(fc.data_path, fc.array_index) for fc in actions.assigned_fcurves(box)})
    assert paths == [("location", i) for i in range(3)] + [("rotation_euler", i) for i in range(3)]
    assert baking.record_of(box)["output"] == 'TRANSFORM'


def test_keys_keep_rotation_mode_scale_and_parent(blender):
    from mathutils import Matrix

    holder = bpy.data.objects.new("Holder", None)
    bpy.context.scene.collection.objects.link(holder)
    holder.location = (1.0, 2.0, 0.5)
    holder.rotation_euler = (0.0, 0.0, 0.7)
    box = _enable(_cube("Crate", location=(0.0, 0.0, 2.0)), collision_shape='BOX')
    box.rotation_mode = 'QUATERNION'
    box.rotation_quaternion = (0.9, 0.1, 0.3, 0.2)
    box.scale = (0.5, 1.5, 0.7)
    bpy.context.view_layer.update()
    box.parent = holder
    box.matrix_parent_inverse = Matrix.Translation((0.2, 0.0, 0.0))
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    bpy.context.view_layer.update()
    scale_before = tuple(box.scale)

    job = BakeJob(scene.name)
    job.run(bpy.context)
    assert not [w for w in job.warnings if "Crate" in w]

    worlds = job.body_results("Crate")
    assert len(worlds) == 12
    for frame in (1, 7, 12):
        scene.frame_set(frame)
        np.testing.assert_allclose(np.array(box.matrix_world), worlds[frame - 1], atol=1e-5)
    assert tuple(box.scale) == scale_before
    from jakobsen_physics import actions

    assert {fc.data_path for fc in actions.assigned_fcurves(box)} == {"location", "rotation_quaternion"}


def test_settings_modes_and_shapes_reach_the_engine(blender):
    specs = {
        "Heavy": dict(collision_shape='BOX', mass=7.5, friction=0.9, bounce=0.4, linear_damping=0.5),
        "Dense": dict(collision_shape='SPHERE', use_density=True, density=500.0, angular_damping=0.25),
        "Pill": dict(collision_shape='CAPSULE'),
        "Can": dict(collision_shape='CYLINDER'),
        "Hull": dict(collision_shape='CONVEX_HULL'),
        "Auto": dict(collision_shape='AUTOMATIC'),
        "Ghosty": dict(dynamic='GHOST'),
        "Post": dict(dynamic='OFF', collision_shape='BOX'),
    }
    for k, (name, settings) in enumerate(specs.items()):
        _enable(_cube(name, location=(3.0 * k, 0.0, 2.0), size=2.0), **settings)
    sm = scene_to_model.build(bpy.context)

    bodies = sm.model.bodies
    by_name = {b.object_name: b for b in sm.bodies}
    assert sorted(by_name) == sorted(specs)
    assert [bodies.names[b.index] for b in sm.bodies] == [b.object_name for b in sm.bodies]

    def field(name, array):
        return array[by_name[name].index]

    assert field("Heavy", bodies.mass) == pytest.approx(7.5)
    assert field("Dense", bodies.mass) == pytest.approx(500.0 * 8.0)  # a 2 m cube
    assert (field("Heavy", bodies.friction), field("Heavy", bodies.restitution)) == pytest.approx((0.9, 0.4))
    assert field("Heavy", bodies.linear_damping) == pytest.approx(-math.log(0.5))  # half lost per second
    assert field("Dense", bodies.angular_damping) == pytest.approx(-math.log(0.75))
    kinds = {name: ShapeKind(field(name, bodies.shape)) for name in specs}
    assert kinds == {"Heavy": ShapeKind.BOX, "Dense": ShapeKind.SPHERE, "Pill": ShapeKind.CAPSULE,
                     "Can": ShapeKind.CYLINDER, "Hull": ShapeKind.CONVEX_HULL, "Auto": ShapeKind.CONVEX_HULL,
                     "Ghosty": ShapeKind.CONVEX_HULL, "Post": ShapeKind.BOX}
    modes = {name: BodyMode(field(name, bodies.mode)) for name in specs}
    assert modes["Ghosty"] == BodyMode.GHOST and modes["Post"] == BodyMode.KINEMATIC
    assert all(modes[n] == BodyMode.DYNAMIC for n in ("Heavy", "Dense", "Pill", "Can", "Hull", "Auto"))
    assert {b.object_name for b in sm.bodies if b.keyed} == set(specs) - {"Post"}
    np.testing.assert_allclose(field("Heavy", bodies.shape_params)[:3], [1.0, 1.0, 1.0], atol=1e-6)
    assert not any("not in the engine yet" in w or "not simulated yet" in w for w in sm.warnings)


def test_a_primitive_shape_fits_the_objects_own_axes(blender):
    box = _enable(_cube("Slab", location=(0.0, 0.0, 3.0), rotation=(0.0, 0.0, 0.6)), collision_shape='BOX')
    box.scale = (2.0, 0.5, 0.25)
    sm = scene_to_model.build(bpy.context)
    bodies = sm.model.bodies
    np.testing.assert_allclose(sorted(bodies.shape_params[0][:3]), [0.125, 0.25, 1.0], atol=1e-6)
    # The box's axes are the object's axes, and its half extents the object's along them.
    from jakobsen_engine.geometry import quaternions as quat

    shape_axes = quat.to_matrix(bodies.rest_orientation[:1])[0] @ bodies.shape_rotation[0]
    object_axes = _rigid_part(box.matrix_world)[:3, :3]
    match = np.abs(shape_axes.T @ object_axes)  # a permutation matrix if the axes agree
    np.testing.assert_allclose(np.sort(match, axis=0)[-1], 1.0, atol=1e-6)
    np.testing.assert_allclose(np.sort(match, axis=0)[:2], 0.0, atol=1e-6)
    half = bodies.shape_params[0][np.argmax(match, axis=0)]
    np.testing.assert_allclose(half, [1.0, 0.25, 0.125], atol=1e-6)


def test_static_mesh_passive_bodies_collide_with_their_faces(blender):
    bpy.ops.mesh.primitive_monkey_add(location=(0.0, 0.0, 0.0))
    monkey = _enable(bpy.context.object, dynamic='OFF', collision_shape='STATIC_MESH')
    monkey.name = "Suzanne"
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(0.0, 0.0, -2.0))
    floor = _enable(bpy.context.object, dynamic='OFF')  # flat and Automatic: its faces
    floor.name = "Floor"
    rock = _enable(_cube("Rock", location=(0.0, 0.0, 3.0)), collision_shape='STATIC_MESH')
    sm = scene_to_model.build(bpy.context)

    colliders = {c.object_name: c for c in sm.colliders}
    assert set(colliders) == {"Suzanne", "Floor"}
    for name in ("Suzanne", "Floor"):
        assert colliders[name].role == 'RIGID_BODY' and colliders[name].shape == 'STATIC_MESH'
        assert isinstance(sm.model.colliders[colliders[name].index], TriangleMesh)
    mesh = sm.model.colliders[colliders["Suzanne"].index]
    assert len(mesh.vertices) == len(monkey.data.vertices)
    assert [b.object_name for b in sm.bodies] == ["Rock"]
    assert ShapeKind(sm.model.bodies.shape[0]) == ShapeKind.CONVEX_HULL
    assert any("rigid body 'Rock': a moving body cannot collide with its faces" in w for w in sm.warnings)
    assert rock.name == "Rock"


def test_an_animated_passive_body_follows_its_animation_and_keeps_it(blender, helpers):
    pusher = _enable(_cube("Pusher", location=(-2.0, 0.0, 0.5)), dynamic='OFF', collision_shape='BOX')
    pusher.scale = (1.0, 1.0, 0.5)
    for frame, x, angle in ((1, -2.0, 0.0), (12, 0.5, 0.8)):
        pusher.location.x = x
        pusher.rotation_euler.z = angle
        pusher.keyframe_insert("location", frame=frame)
        pusher.keyframe_insert("rotation_euler", frame=frame)
    user_action = pusher.animation_data.action
    _enable(_cube("Crate", location=(0.0, 0.0, 0.5), size=0.5), collision_shape='BOX')
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    scene.frame_set(1)

    sm = scene_to_model.build(bpy.context)
    binding = next(b for b in sm.bodies if b.object_name == "Pusher")
    assert binding.mode == "kinematic" and not binding.keyed
    expected = {}
    for frame in (1, 6, 12):
        scene.frame_set(frame)
        expected[frame] = _rigid_part(pusher.matrix_world)
    scene.frame_set(1)
    rest = expected[1]

    solver = Solver(sm.model, sm.settings)
    state = solver.make_state()
    for frame in sm.frames[1:]:
        solver.step_frame(state)
        if frame in expected:
            t, q = solver.body_poses(state)
            moved = _pose(t[binding.index], q[binding.index]) @ rest
            np.testing.assert_allclose(moved, expected[frame], atol=1e-6)

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    # The pusher keeps its own animation; only the crate was keyed.
    assert pusher.animation_data.action == user_action and baking.record_of(pusher) is None
    assert baking.record_of(bpy.data.objects["Crate"])["output"] == 'TRANSFORM'
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert pusher.animation_data.action == user_action


def test_cancel_with_a_rigid_body_leaves_the_scene_as_it_was(blender, helpers):
    box = _enable(_cube("Box", location=(0.0, 0.0, 2.0)))
    box.keyframe_insert("location", frame=1)  # the user's animation, which the bake would replace
    box.location.x = 1.0
    box.keyframe_insert("location", frame=10)
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    scene.frame_set(1)
    before = helpers.snapshot()

    job = BakeJob(scene.name, preview=True, follow_frames=True)
    job.start(bpy.context)
    assert any("rigid body 'Box': it is animated, but the solver moves it" in w for w in job.warnings)
    for _ in range(5):
        assert job.step()
    drawn = job.preview_geometry()  # drawn in the viewport: no objects added to the file
    assert list(drawn) == ["Box"] and box.hide_get()
    assert (len(bpy.data.objects), len(bpy.data.meshes)) == before["counts"][:2]
    pose = job.body_results("Box")[-1]
    np.testing.assert_allclose(drawn["Box"][0].mean(axis=0), pose[:3, 3], atol=1e-5)
    assert pose[2, 3] < 2.0 - 0.1  # it is falling
    job.cancel()

    assert helpers.snapshot() == before


def test_rebake_and_free_of_a_rigid_body(blender, helpers):
    box = _enable(_cube("Box", location=(0.0, 0.0, 2.0)))
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 6
    before = helpers.snapshot()
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert [a.name for a in bpy.data.actions] == ["JK_Bake Box"]
    from jakobsen_physics import actions

    assert all(len(fc.keyframe_points) == 6 for fc in actions.assigned_fcurves(box))
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    scene.frame_set(1)
    assert helpers.snapshot() == before


def _fcurve_values(obj, path, index, frames):
    from jakobsen_physics import actions

    fcurves = actions.assigned_fcurves(obj)
    fc = fcurves.find(path, index=index) if fcurves is not None else None
    return None if fc is None else [round(fc.evaluate(f), 5) for f in frames]


@pytest.mark.parametrize("then", ["free", "rebake", "rebake then free"])
@pytest.mark.parametrize("had_action", [False, True])
def test_keys_set_while_a_bake_is_shown_are_kept_by_free_bake_and_a_new_bake(blender, then, had_action):
    """While baked, the bake's action is the object's: keys the user sets then (a scale, a custom
    property, I over a setting) go into it. Free Bake and a new bake deleted them with it, without
    a word (found by the add-on probe). They are carried into the user's own action (one is made
    if they had none); a curve of theirs the user keyed anew is theirs as keyed."""
    box = _enable(_cube("Box", location=(0.0, 0.0, 2.0)))
    _ground()
    box["glow"] = 0.0
    if had_action:  # their own animation of the property, before any bake
        box.keyframe_insert('["glow"]', frame=1)
        box["glow"] = 1.0
        box.keyframe_insert('["glow"]', frame=6)
        users = box.animation_data.action
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 8
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    # Now, with the bake shown, they key the scale and the property anew.
    box.scale = (1.0, 1.0, 1.0)
    box.keyframe_insert("scale", frame=2)
    box.scale = (1.5, 1.5, 1.5)
    box.keyframe_insert("scale", frame=7)
    box["glow"] = 0.0
    box.keyframe_insert('["glow"]', frame=2)
    box["glow"] = 5.0
    box.keyframe_insert('["glow"]', frame=7)
    frames = (1, 2, 5, 7, 8)
    keyed = {("scale", i): _fcurve_values(box, "scale", i, frames) for i in range(3)}
    keyed[('["glow"]', 0)] = _fcurve_values(box, '["glow"]', 0, frames)
    for step in then.split(" then "):
        scene.frame_set(1)
        assert (bpy.ops.jakobsen.free_bake() if step == "free" else bpy.ops.jakobsen.bake()) == {'FINISHED'}
    for (path, index), values in keyed.items():
        assert _fcurve_values(box, path, index, frames) == values, (then, path, index)
    scene.frame_set(7)
    assert tuple(round(s, 4) for s in box.scale) == (1.5, 1.5, 1.5) and box["glow"] == pytest.approx(5.0)
    if had_action:
        assert then.endswith("rebake") or box.animation_data.action == users
    if then.endswith("rebake"):  # the new bake plays the keys too, and Free Bake keeps them after it
        assert box.animation_data.action.name == "JK_Bake Box"
        assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
        for (path, index), values in keyed.items():
            assert _fcurve_values(box, path, index, frames) == values, (then, path, index)


@pytest.mark.parametrize("switch", ["Dynamic Off", "Collider", "unticked"])
def test_a_baked_body_no_longer_simulated_loses_its_old_bake_at_the_next_bake(blender, switch):
    """A box falls onto a crate that itself fell. Switched to Dynamic Off (or made a Collider),
    the crate is read where it stood before its bake, so the box lands on it there; its old
    bake, still playing, left the box hanging 2.5 m in the air (found by the add-on probe). The
    new bake frees it and says so; unticked, it is left out of the bake and freed too."""
    crate = _enable(_cube("Crate", location=(0.0, 0.0, 3.0)))
    box = _enable(_cube("Box", location=(0.0, 0.0, 4.5), size=0.5))
    aside = _enable(_cube("Aside", location=(5.0, 0.0, 2.0)))
    collection = bpy.data.collections.new("Aside")
    bpy.context.scene.collection.children.link(collection)
    for c in list(aside.users_collection):
        c.objects.unlink(aside)
    collection.objects.link(aside)
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 40
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert baking.record_of(aside) is not None
    scene.frame_set(40)
    assert crate.matrix_world.translation.z == pytest.approx(0.5, abs=0.02)  # it fell
    if switch == "Dynamic Off":
        crate.jakobsen.rigid_body.dynamic = 'OFF'
    elif switch == "Collider":
        crate.jakobsen.type = 'COLLIDER'
    else:
        crate.jakobsen.enabled = False
    # A baked body in a collection excluded from the view layer keeps its bake: it is not read
    # (one excludes a collection to bake the rest faster).
    aside_collection = bpy.data.collections["Aside"]
    bpy.context.view_layer.layer_collection.children["Aside"].exclude = True
    assert aside_collection.objects["Aside"].name == "Aside"
    scene.frame_set(1)
    summary = BakeJob(scene.name).run(bpy.context)
    assert "freed the previous bake of Crate:" in summary, summary
    assert baking.record_of(aside) is not None  # (excluded: left alone)
    assert baking.record_of(crate) is None and crate.animation_data is None
    for frame in (1, 20, 40):
        scene.frame_set(frame)
        assert tuple(crate.matrix_world.translation) == pytest.approx((0.0, 0.0, 3.0), abs=1e-6)
    scene.frame_set(40)
    z = box.matrix_world.translation.z
    if switch == "unticked":  # left out: the box falls through where it stands, to the ground
        assert z == pytest.approx(0.25, abs=0.02)
    else:  # on the crate's top, where the bake had it
        assert z == pytest.approx(3.75, abs=0.02)


@pytest.mark.parametrize("what", ["bake", "free all", "free one"])
def test_a_baked_body_whose_nla_is_in_tweak_mode_is_named_and_nothing_changes(blender, helpers, what):
    """In the NLA's tweak mode Blender refuses another action: the bake stopped half written with
    an internal error, another body's bake rewritten and this one's record lost (found by the
    add-on probe). Now it is refused before anything changes, naming the body and tweak mode."""
    a = _enable(_cube("A", location=(0.0, 0.0, 3.0)))
    z = _enable(_cube("Z", location=(3.0, 0.0, 3.0)))
    _ground()
    z.keyframe_insert("location", frame=1)
    strip_action = z.animation_data.action
    z.animation_data.action = None
    track = z.animation_data.nla_tracks.new()
    track.strips.new("Strip", 1, strip_action)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    a.jakobsen.rigid_body.mass = 5.0
    z.animation_data.use_tweak_mode = True
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=r"rigid body 'Z'.*tweak mode"):
        if what == "bake":
            bpy.ops.jakobsen.bake()
        elif what == "free all":
            bpy.ops.jakobsen.free_bake()
        else:
            bpy.ops.jakobsen.free_bake(object_name="Z")
    assert helpers.snapshot() == before
    z.animation_data.use_tweak_mode = False
    assert baking.record_of(z) is not None and baking.record_of(a) is not None
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert z.animation_data.action is None and len(z.animation_data.nla_tracks) == 1


def test_a_shape_key_value_keyed_while_a_cloth_bake_is_shown_is_kept_by_free_bake(blender):
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=(0.0, 0.0, 1.0))
    sheet = bpy.context.object
    sheet.name = "Sheet"
    sheet.shape_key_add(name="Basis")
    bump = sheet.shape_key_add(name="Bump")
    sheet.jakobsen.enabled, sheet.jakobsen.type = True, 'CLOTH'
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 4
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    key = sheet.data.shape_keys
    bump.value = 0.0
    bump.keyframe_insert("value", frame=1)
    bump.value = 0.8
    bump.keyframe_insert("value", frame=4)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert key.animation_data is not None and key.animation_data.action is not None
    scene.frame_set(4)
    assert key.key_blocks["Bump"].value == pytest.approx(0.8)
    scene.frame_set(1)
    assert key.key_blocks["Bump"].value == pytest.approx(0.0)


def test_a_dynamic_body_on_a_line_is_refused_by_name(blender, helpers):
    """A mesh whose vertices lie on one line has no area to make a plate of (a flat one is a
    plate: ``test_a_plane_made_a_rigid_body_falls_as_a_plate_and_is_named``): refused by name,
    the scene unchanged."""
    mesh = bpy.data.meshes.new("Rod")
    mesh.from_pydata([(0.0, 0.0, 1.0), (1.0, 0.0, 1.0), (2.0, 0.0, 1.0), (3.0, 0.0, 1.0)], [], [(0, 1, 2, 3)])
    rod = bpy.data.objects.new("Rod", mesh)
    bpy.context.scene.collection.objects.link(rod)
    _enable(rod)
    bpy.context.view_layer.update()  # (linked just now: in the view layer from here on, as a bake sees it)
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=r"rigid body 'Rod'"):
        bpy.ops.jakobsen.bake()
    assert helpers.snapshot() == before


def test_only_passive_bodies_is_nothing_to_simulate(blender):
    _enable(_cube("Wall", location=(0.0, 0.0, 0.0)), dynamic='OFF')
    with pytest.raises(Exception, match="nothing to simulate"):
        scene_to_model.build(bpy.context)


def test_free_and_rebake_on_a_late_frame_start_from_where_the_body_rested(blender, helpers):
    box = _enable(_cube("Box", location=(0.5, -0.25, 2.0), rotation=(0.2, 0.1, 0.4)))
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    scene.frame_set(1)
    before = helpers.snapshot()
    rest = np.array(box.matrix_world)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}

    scene.frame_set(12)  # the keys have moved the box's own location and rotation properties
    fallen = np.array(box.matrix_world)
    assert fallen[2, 3] < rest[2, 3] - 0.5
    # A new bake from here reads the box where it rested, not where the old keys left it.
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert scene.frame_current == 12
    from jakobsen_physics import actions

    first_keys = {(fc.data_path, fc.array_index): fc.keyframe_points[0].co[1] for fc in actions.assigned_fcurves(box)}
    np.testing.assert_allclose([first_keys[("location", i)] for i in range(3)], [0.5, -0.25, 2.0], atol=1e-6)
    np.testing.assert_allclose([first_keys[("rotation_euler", i)] for i in range(3)], [0.2, 0.1, 0.4], atol=1e-6)

    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}  # on frame 12: the box goes back
    np.testing.assert_allclose(np.array(box.matrix_world), rest, atol=1e-7)
    scene.frame_set(1)
    assert helpers.snapshot() == before


@pytest.mark.parametrize("shape, sunk, tilt", [('BOX', 0.3, 0.05), ('CONVEX_HULL', 0.45, 0.15),
                                               ('CYLINDER', 0.35, 0.1)])
def test_a_body_placed_into_the_ground_bakes_resting_on_it_and_is_named_in_a_warning(blender, shape, sunk, tilt):
    # Placed by eye a third of its height into the ground (Blender's default cube, 2 m): the bake
    # lifts it out without throwing it, warns of it by name, and it rests on the ground. (The
    # energy guard took the lift for energy from nothing and stopped the bake.)
    box = _enable(_cube("Rock", location=(0.0, 0.0, 1.0 - 2.0 * sunk), size=2.0, rotation=(tilt, 0.0, 0.0)),
                  collision_shape=shape)
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    job = BakeJob(scene.name)
    job.start(bpy.context)
    job.cancel()
    assert any("rigid body 'Rock' starts" in w and "inside 'Ground'" in w for w in job.warnings), job.warnings
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    heights = []
    for frame in range(2, 25):
        scene.frame_set(frame)
        heights.append(box.matrix_world[2][3])
    # Lifted out within the first frame, not thrown: it rises no further after it (a throw of
    # 0.3 m/s would lift it 12 mm in the next frame), and ends resting on a face (2 m: at 1 m).
    assert max(np.diff(heights)) < 0.005, heights
    assert heights[-1] == pytest.approx(1.0, abs=0.02) and abs(heights[-1] - heights[-2]) < 1e-4


@pytest.mark.parametrize("size, tilt", [(0.3, 0.4), (1.5, 1.2)])
def test_a_plane_made_a_rigid_body_falls_as_a_plate_and_is_named(blender, size, tilt):
    """Add > Plane, made a rigid body (a playing card, a sheet of plywood), as Blender's Rigid Body
    takes it: it bakes, falls and lies on the ground, and the bake says it is a plate of a
    hundredth of its size. (It was refused: "the vertices lie in one plane".)"""
    bpy.ops.mesh.primitive_plane_add(size=size, location=(0.0, 0.0, 1.0), rotation=(tilt, 0.3, 0.0))
    card = _enable(bpy.context.object)
    card.name = "Card"
    start = _world_vertices(card)[0]
    _ground()
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 72
    job = BakeJob(bpy.context.scene.name)
    job.run(bpy.context)
    assert any("'Card'" in w and "plate" in w for w in job.warnings), job.warnings
    bpy.context.scene.frame_set(72)
    corners = np.array([card.matrix_world @ v.co for v in card.data.vertices])
    # lying flat on the ground, face down or up: its face on the ground or a plate's thickness up
    # (behind its faces, a hundredth of its size as it starts: its largest extent along an axis)
    thickness = max(0.01 * float(np.ptp(start, axis=0).max()), 1e-3)
    assert np.ptp(corners[:, 2]) < 1e-3, corners[:, 2]
    assert min(abs(corners[:, 2].mean()), abs(corners[:, 2].mean() - thickness)) < 0.1 * thickness + 2e-4, \
        corners[:, 2]


def test_a_plane_floor_made_a_static_box_holds_a_crate_at_its_drawn_height(blender):
    """A floor drawn as a Plane, made a rigid body with Dynamic Off and Shape Box: its plate lies
    behind its face, so a crate rests on the face as drawn (centred, it was 10 cm above it)."""
    _cube("Crate", location=(0.0, 0.0, 1.5))
    _enable(bpy.context.object)
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    _enable(bpy.context.object, dynamic='OFF', collision_shape='BOX')
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 48
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(48)
    assert bpy.data.objects["Crate"].matrix_world.translation.z == pytest.approx(0.5, abs=2e-3)


@pytest.mark.parametrize("keyed", ["location", "scale"])
def test_an_animated_dynamic_body_s_warning_says_which_keys_the_bake_replaces(blender, keyed):
    """The bake replaces a dynamic body's location and rotation keys; keyed scale still plays over
    them, on a body the solver kept at its first frame's size (a box keyed to grow half again sank
    0.1 m into the ground on playback, while the warning said its animation was replaced)."""
    from jakobsen_physics import scene_to_model

    box = _enable(_cube("Box", location=(0.0, 0.0, 2.0)))
    box.keyframe_insert(keyed, frame=1)
    setattr(box, keyed, (1.0, 0.0, 2.0) if keyed == "location" else (1.5, 1.5, 1.5))
    box.keyframe_insert(keyed, frame=10)
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    scene.frame_set(1)
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Box': it is animated" in w]
    assert len(named) == 1, named
    assert "replaces its location and rotation keys" in named[0]
    assert ("scale keys still play" in named[0]) == (keyed == "scale")


@pytest.mark.parametrize("moved", [False, True])
def test_a_baked_body_moved_by_hand_without_a_key_is_named_when_baked_again(blender, moved):
    """After a bake, a box moved on the first frame without a key shows where it was moved (until
    the frame changes), but the next bake starts it where it stood before its first bake, as Free
    Bake puts it back: the bake says so, naming it."""
    from jakobsen_physics import scene_to_model

    box = _enable(_cube("Box", location=(0.0, 0.0, 1.0)))
    _ground()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 6
    scene.frame_set(1)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    scene.frame_set(1)
    if moved:
        box.location = (2.0, 0.0, 1.5)
    named = [w for w in scene_to_model.build(bpy.context).warnings if "rigid body 'Box' was moved since its bake" in w]
    assert bool(named) == moved, named
