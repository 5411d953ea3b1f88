"""Simulate on playback (``playback``): the frames computed as the timeline steps forward are the
bake's, an edit marks the cache outdated from the current frame on, Bake from Cache writes what a
bake writes, and nothing of the cache reaches the file."""

from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import baking, playback, previews  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402

pytestmark = pytest.mark.blender
# These run on every Blender of ./run test; on 5.2 and 5.3 they are also the check that showing a
# frame does not crash Blender (see playback._frame_change_pre).


def shape_keys(obj) -> dict[str, bytes]:
    """The bake's shape keys of ``obj``, byte for byte."""
    out = {}
    for kb in obj.data.shape_keys.key_blocks:
        co = np.empty(len(kb.data) * 3, np.float32)
        kb.data.foreach_get("co", co)
        out[kb.name] = co.tobytes()
    return out


def play(scene, frames) -> None:
    for frame in frames:
        scene.frame_set(frame)


@pytest.fixture
def flag(pinned_cloth):
    """The 6 x 6 pinned cloth over frames 1-24, simulate on playback on."""
    cloth = pinned_cloth(frames=(1, 24))
    bpy.context.scene.jakobsen.use_simulate_on_playback = True
    return cloth


def test_frames_simulated_by_stepping_match_a_bake_of_the_same_frames(flag):
    scene = bpy.context.scene
    reference = BakeJob(scene.name)
    reference.start(bpy.context)
    while reference.step():
        pass
    part = reference.scene_model.deformables[0].particles
    scene.frame_set(1)
    play(scene, range(1, 25))
    cache = playback.cache_of(scene)
    assert cache.frames_cached == 24 and cache.last_frame == 24 and not cache.outdated
    # The job's own results are the object-space positions a bake writes.
    np.testing.assert_allclose(cache.job.results("Flag"), reference.results("Flag"), atol=1e-6)
    moved = np.abs(reference.results("Flag")[-1] - reference.results("Flag")[0]).max()
    assert moved > 0.1, "the cloth should swing noticeably in 24 frames"
    # What the viewport draws on a frame is that frame's (world) positions, also after a jump back.
    for frame in (24, 7, 1, 13):
        scene.frame_set(frame)
        drawn = previews.geometry()
        assert list(drawn) == ["Flag"] and bpy.data.objects["Flag"].hide_get()
        expected = cache.states[frame].positions[part]
        np.testing.assert_allclose(drawn["Flag"][0], expected, atol=0)
    reference.cancel()


def test_jumping_forward_past_the_cache_does_not_simulate_the_gap(flag):
    scene = bpy.context.scene
    play(scene, range(1, 6))
    cache = playback.cache_of(scene)
    scene.frame_set(12)
    assert cache.last_frame == 5 and not cache.has(12)
    assert "frame 12 is not cached" in cache.message and "play on from frame 5" in cache.message
    assert previews.geometry() == {} and not bpy.data.objects["Flag"].hide_get()  # the object as it is
    play(scene, range(5, 9))  # back to the last cached frame and on: frame by frame again
    assert cache.last_frame == 8 and cache.frames_cached == 8


@pytest.mark.parametrize("edit", ["stiffness", "scene_substeps", "scene_gravity"])
def test_an_edit_marks_the_cache_outdated_and_later_frames_are_recomputed(flag, edit):
    scene = bpy.context.scene
    play(scene, range(1, 13))
    cache = playback.cache_of(scene)
    old = cache.job.results("Flag").copy()
    scene.frame_set(6)
    assert not cache.outdated
    cloth = bpy.data.objects["Flag"]
    if edit == "stiffness":
        cloth.jakobsen.cloth.bend_stiffness = 50.0  # from 0.05: a cloth that bends a thousand times harder
    elif edit == "scene_substeps":
        scene.jakobsen.substeps = 3
    else:
        scene.jakobsen.use_scene_gravity = False
        scene.jakobsen.gravity = (0.0, 0.0, -30.0)
    # (In the UI an edit tags the depsgraph and the cache knows at once; a script's edit is found
    # on the next frame change.)
    scene.frame_set(7)
    assert cache.outdated and cache.outdated_at == 6
    assert cache.frames_cached == 7 and cache.last_frame == 7  # 7 is recomputed, 8-12 are gone
    play(scene, range(7, 13))
    assert cache.last_frame == 12
    new = cache.job.results("Flag")
    np.testing.assert_array_equal(new[:6], old[:6])  # kept as they were
    assert not np.allclose(new[11], old[11], atol=1e-4), "frames after the edit come from the new settings"
    # Back on the first frame an outdated cache starts again; then it is up to date.
    scene.frame_set(1)
    cache = playback.cache_of(scene)
    assert not cache.outdated and cache.frames_cached == 1


@pytest.mark.parametrize("edit", ["move", "mesh", "enable", "fps"])
def test_edits_to_what_takes_part_mark_the_cache_outdated_and_others_do_not(flag, edit):
    scene = bpy.context.scene
    play(scene, range(1, 5))
    cache = playback.cache_of(scene)
    # Not taking part: an object without Jakobsen Physics, selection, the hide flag.
    other = bpy.data.objects.new("Bystander", None)
    scene.collection.objects.link(other)
    other.location.x = 3.0
    bpy.data.objects["Ground"].select_set(True)
    scene.frame_set(4)
    assert not cache.outdated
    if edit == "move":
        bpy.data.objects["Ground"].location.z += 0.1
    elif edit == "mesh":
        bpy.data.objects["Flag"].data.vertices[0].co.z += 0.01
    elif edit == "enable":
        other.jakobsen.enabled = True
    else:
        scene.render.fps = 30
    scene.frame_set(5)
    assert cache.outdated and cache.outdated_at == 4


def test_bake_from_cache_writes_the_same_keys_as_a_bake(flag, helpers):
    scene = bpy.context.scene
    cloth = flag
    scene.jakobsen.use_simulate_on_playback = False
    before = helpers.snapshot()
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    baked = shape_keys(cloth)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert helpers.snapshot() == before

    scene.jakobsen.use_simulate_on_playback = True
    play(scene, range(1, 25))
    assert bpy.ops.jakobsen.bake_from_cache() == {'FINISHED'}
    assert shape_keys(cloth) == baked
    assert playback.cache_of(scene) is None and previews.geometry() == {}
    assert not cloth.hide_get()


def test_bake_from_an_incomplete_or_outdated_cache_is_refused_by_name(flag, helpers):
    scene = bpy.context.scene
    play(scene, range(1, 10))
    with pytest.raises(RuntimeError, match=r"The cache holds frames 1-9 of 1-24: play to frame 24 first"):
        bpy.ops.jakobsen.bake_from_cache()
    bpy.data.objects["Flag"].jakobsen.cloth.vertex_mass = 0.02  # (found by the operator itself)
    with pytest.raises(RuntimeError, match=r"The cache is outdated \(edited on frame 9\)"):
        bpy.ops.jakobsen.bake_from_cache()
    assert baking.record_of(bpy.data.objects["Flag"]) is None


def test_free_cache_and_switching_off_free_everything(flag, helpers):
    scene = bpy.context.scene
    scene.jakobsen.use_simulate_on_playback = False
    scene.frame_set(1)
    before = helpers.snapshot()
    scene.jakobsen.use_simulate_on_playback = True  # on the first frame: the cache starts
    assert playback.cache_of(scene).frames_cached == 1
    play(scene, range(1, 6))
    assert bpy.ops.jakobsen.free_cache() == {'FINISHED'}
    assert playback.cache_of(scene) is None and previews.geometry() == {}
    scene.frame_set(1)
    play(scene, range(1, 4))
    assert playback.cache_of(scene).frames_cached == 3
    scene.jakobsen.use_simulate_on_playback = False
    assert playback.cache_of(scene) is None
    scene.frame_set(1)
    assert helpers.snapshot() | {"frame": None} == before | {"frame": None}


def test_a_file_saved_with_a_cache_holds_nothing_of_it(flag, helpers, tmp_path):
    scene = bpy.context.scene
    scene.jakobsen.use_simulate_on_playback = False
    scene.frame_set(1)
    before = helpers.snapshot()
    scene.jakobsen.use_simulate_on_playback = True  # on the first frame: the cache starts
    assert playback.cache_of(scene).frames_cached == 1
    play(scene, range(1, 8))
    assert bpy.data.objects["Flag"].hide_get()
    path = str(tmp_path / "cached.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    assert bpy.data.objects["Flag"].hide_get()  # still drawn after the save
    bpy.ops.wm.open_mainfile(filepath=path)
    assert playback.cache_of(bpy.context.scene) is None
    saved = helpers.snapshot()
    assert saved["objects"]["Flag"] == before["objects"]["Flag"]
    assert saved["meshes"] == before["meshes"] and saved["counts"] == before["counts"]


def test_memory_is_counted_and_bounded(pinned_cloth):
    pinned_cloth(nx=40, ny=40, frames=(1, 24))
    scene = bpy.context.scene
    scene.jakobsen.use_simulate_on_playback = True
    play(scene, range(1, 4))
    cache = playback.cache_of(scene)
    per_frame = cache.memory_bytes() / 3
    assert per_frame >= 1600 * 3 * (8 + 8 + 4)  # at least each frame's positions, previous ones, and result
    scene.jakobsen.cache_memory_limit = 1  # MB: about 1 MB / per_frame frames fit
    fits = int(np.ceil(2**20 / per_frame))
    play(scene, range(4, 25))
    assert cache.memory_full and "Memory Limit" in cache.message
    assert cache.frames_cached < 24 and abs(cache.frames_cached - fits) <= 2


def test_the_cache_panel_says_what_is_cached_and_when_it_is_outdated(flag):
    from jakobsen_physics.ui.scene import cache_info

    scene = bpy.context.scene
    play(scene, range(1, 11))
    lines = cache_info(scene)
    assert lines[0] == "10 frames in memory (1-10)"
    assert lines[1].startswith("Memory: ") and lines[1].endswith(" of 1024 MB")
    scene.frame_set(4)
    bpy.data.objects["Flag"].jakobsen.cloth.bend_stiffness = 1.0
    scene.frame_set(5)
    assert "Cache is outdated (edited on frame 4)" in cache_info(scene)
    scene.frame_set(20)
    assert cache_info(scene)[-1] == ("Frame 20 is not cached: the cache holds frames 1-5; play on from frame 5 "
                                     "to simulate")


def test_a_bake_replaces_the_cache_and_playback_does_not_simulate_over_a_bake(flag):
    scene = bpy.context.scene
    play(scene, range(1, 6))
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert playback.cache_of(scene) is None and previews.geometry() == {}
    scene.frame_set(1)
    cache = playback.cache_of(scene)
    assert cache.job is None and cache.message == "the scene has a bake: Free Bake to simulate on playback"
    scene.frame_set(2)
    assert previews.geometry() == {} and not bpy.data.objects["Flag"].hide_get()


@pytest.mark.parametrize("edit", ["parent moved", "unkeyed channel moved", "parent's constraint"])
def test_moving_what_places_a_body_outdates_the_cache(flag, edit):
    """A body under a layout Empty moved 2 m, or an object keyed to turn moved by hand (its
    location not keyed): the cache did not see it, and Bake from Cache wrote the old simulation
    (a crate resting 2 m in mid-air; found by the add-on probe)."""
    scene = bpy.context.scene
    flag_obj = bpy.data.objects["Flag"]
    rig = bpy.data.objects.new("Rig", None)
    scene.collection.objects.link(rig)
    if edit == "parent moved":
        world = flag_obj.matrix_world.copy()
        flag_obj.parent = rig
        flag_obj.matrix_world = world
    elif edit == "unkeyed channel moved":
        flag_obj.keyframe_insert("rotation_euler", frame=1)
    else:
        flag_obj.parent = rig
        rig.constraints.new('COPY_LOCATION').target = bpy.data.objects["Ground"]
        rig.constraints[0].mute = True
    bpy.context.view_layer.update()
    scene.frame_set(1)
    play(scene, range(1, 5))
    cache = playback.cache_of(scene)
    assert not cache.outdated
    if edit == "parent moved":
        rig.location.z += 2.0
    elif edit == "unkeyed channel moved":
        flag_obj.location.x += 0.5
    else:
        rig.constraints[0].mute = False
    scene.frame_set(5)
    assert cache.outdated and cache.outdated_at == 4


@pytest.mark.parametrize("how", ["nla strip", "driver", "keyed motor speed", "keyed field strength", "renamed"])
def test_what_animates_itself_or_a_rename_leaves_the_cache_up_to_date_and_bakeable(blender, how):
    """A pusher animated by an NLA strip or a driver (no action), a motor's keyed Target Speed,
    a field's keyed Strength (which Blender also shows as its Linear Drag): their values change
    every frame, and the cache was outdated at every frame, so Bake from Cache was always refused;
    so was it after renaming a body a connector holds (found by the add-on probe)."""
    from .test_connectors import _cube, _empty, _enable

    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    _enable(bpy.context.object, 'COLLIDER')
    crate = _cube("Crate", size=0.5, location=(0.0, 0.0, 1.0))
    if how in ("nla strip", "driver"):
        pusher = _cube("Pusher", size=0.5, location=(-2.0, 0.0, 0.25), dynamic='OFF')
        if how == "nla strip":
            pusher.keyframe_insert("location", frame=1)
            pusher.location.x = 0.0
            pusher.keyframe_insert("location", frame=12)
            action = pusher.animation_data.action
            pusher.animation_data.action = None
            pusher.animation_data.nla_tracks.new().strips.new("Push", 1, action)
        else:
            driver = pusher.driver_add("location", 0).driver
            driver.expression = "-2 + frame / 6"
    elif how == "keyed motor speed":
        hinge = _enable(_empty("Axle", (0.0, 0.0, 1.0)), 'CONNECTOR', connector_type='HINGE', object_b=crate)
        motor = _enable(_empty("Drive", (0.0, 0.0, 1.0)), 'MOTOR', object_a=crate)
        assert hinge and motor
        for frame, speed in ((1, 0.0), (12, 6.0)):
            motor.jakobsen.motor.target_angular_speed = speed
            motor.keyframe_insert("jakobsen.motor.target_angular_speed", frame=frame)
    elif how == "keyed field strength":
        bpy.ops.object.effector_add(type='FORCE', location=(0.0, 0.0, 0.0))
        field = bpy.context.object
        for frame, strength in ((1, 0.0), (12, 20.0)):
            field.field.strength = strength
            field.field.keyframe_insert("strength", frame=frame)
    else:
        _enable(_empty("Hinge", (0.0, 0.0, 1.0)), 'CONNECTOR', connector_type='HINGE', object_b=crate)
    scene.jakobsen.use_simulate_on_playback = True
    scene.frame_set(1)
    play(scene, range(1, 7))
    if how == "renamed":
        crate.name = "Door"
    play(scene, range(7, 13))
    cache = playback.cache_of(scene)
    assert not cache.outdated and cache.last_frame == 12
    assert bpy.ops.jakobsen.bake_from_cache() == {'FINISHED'}
    assert baking.record_of(crate) is not None


def test_the_fingerprint_sees_force_fields_and_ignores_what_does_not_take_part(flag):
    scene, view_layer = bpy.context.scene, bpy.context.view_layer
    wind = bpy.data.objects.new("Wind", None)
    scene.collection.objects.link(wind)
    view_layer.update()
    plain = playback.fingerprint(scene, view_layer)
    bpy.ops.object.select_all(action='DESELECT')
    wind.location.x = 2.0  # an Empty without a field takes no part
    assert playback.fingerprint(scene, view_layer) == plain
    view_layer.objects.active = wind
    bpy.ops.object.forcefield_toggle()
    wind.field.type = 'WIND'
    with_field = playback.fingerprint(scene, view_layer)
    assert with_field != plain
    wind.field.strength = 3.0
    assert playback.fingerprint(scene, view_layer) != with_field


def test_a_rigid_body_on_playback_is_drawn_at_the_bakes_poses_and_bakes_the_same_keys(blender, helpers):
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0.0, 0.0, 1.5), rotation=(0.3, 0.2, 0.0))
    box = bpy.context.object
    box.name = "Box"
    box.jakobsen.enabled, box.jakobsen.type = True, 'RIGID_BODY'
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    ground = bpy.context.object
    ground.jakobsen.enabled, ground.jakobsen.type = True, 'COLLIDER'
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 20
    scene.frame_set(1)
    reference = BakeJob(scene.name)
    reference.start(bpy.context)
    while reference.step():
        pass
    poses = reference.body_results("Box")
    reference.cancel()
    assert poses[-1][2, 3] < 0.5, "the box should have fallen to the ground"

    scene.jakobsen.use_simulate_on_playback = True
    play(scene, range(1, 21))
    cache = playback.cache_of(scene)
    np.testing.assert_allclose(cache.job.body_results("Box"), poses, atol=1e-6)
    co = np.empty(len(box.data.vertices) * 3, np.float32)
    box.data.vertices.foreach_get("co", co)
    for frame in (20, 3):
        scene.frame_set(frame)
        m = poses[frame - 1]
        np.testing.assert_allclose(previews.geometry()["Box"][0], co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3],
                                   atol=1e-5)
    assert bpy.ops.jakobsen.bake_from_cache() == {'FINISHED'}
    from_cache = helpers.location_keys(box)
    assert len(from_cache) >= 6 and all(len(c) == 20 * 2 * 4 for _, _, c in from_cache)  # 20 keys each
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    scene.jakobsen.use_simulate_on_playback = False
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert helpers.location_keys(box) == from_cache


def _box_over_the_cloth():
    """A rigid box "Box" that falls onto ``pinned_cloth``'s flag within a few frames."""
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(1.6, 1.4, 1.0), rotation=(0.4, 0.1, 0.0))
    box = bpy.context.object
    box.name = "Box"
    box.jakobsen.enabled, box.jakobsen.type = True, 'RIGID_BODY'
    return box


def test_each_object_bakes_from_the_cache_and_frees_on_its_own_the_others_staying_cached(pinned_cloth, helpers):
    # Blender's Cloth cache per object: here the objects are simulated together (one cache), and
    # baking or freeing one of them leaves the others cached and drawn.
    cloth = pinned_cloth(frames=(1, 24))
    box = _box_over_the_cloth()
    scene = bpy.context.scene
    scene.frame_set(1)
    before = helpers.snapshot()
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    baked_cloth, baked_box = shape_keys(cloth), helpers.location_keys(box)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'} and helpers.snapshot() == before

    scene.jakobsen.use_simulate_on_playback = True
    play(scene, range(1, 25))
    cache = playback.cache_of(scene)
    assert sorted(cache.objects()) == ["Box", "Flag"]
    cloth.name = "Curtain"  # (renamed since the cache started: found by its uid)
    with pytest.raises(RuntimeError, match=r"'Ground' is not in the cache"):
        bpy.ops.jakobsen.bake_from_cache(object_name="Ground")
    assert bpy.ops.jakobsen.bake_from_cache(object_name="Curtain") == {'FINISHED'}
    assert shape_keys(cloth) == baked_cloth and baking.record_of(box) is None
    cache = playback.cache_of(scene)
    assert cache is not None and not cache.outdated and cache.written == {"Flag"}
    assert list(previews.geometry()) == ["Box"] and box.hide_get() and not cloth.hide_get()

    assert bpy.ops.jakobsen.free_bake(object_name="Curtain") == {'FINISHED'}
    assert baking.record_of(cloth) is None and not cache.outdated and cache.written == set()
    assert sorted(previews.geometry()) == ["Box", "Flag"] and cloth.hide_get()
    with pytest.raises(RuntimeError, match=r"No object 'Nothing' to free"):
        bpy.ops.jakobsen.free_bake(object_name="Nothing")

    assert bpy.ops.jakobsen.bake_from_cache(object_name="Box") == {'FINISHED'}
    assert helpers.location_keys(box) == baked_box and baking.record_of(cloth) is None
    assert bpy.ops.jakobsen.bake_from_cache(object_name="Curtain") == {'FINISHED'}
    assert shape_keys(cloth) == baked_cloth
    # Every object baked: the cache has nothing left to stand for and is freed.
    assert playback.cache_of(scene) is None and previews.geometry() == {}
    assert not box.hide_get() and not cloth.hide_get()


def test_the_object_cache_panel_draws_for_each_role(pinned_cloth):
    from jakobsen_physics.ui.physics import PHYSICS_PT_jakobsen_cache

    cloth = pinned_cloth(frames=(1, 6))
    bpy.context.view_layer.objects.active = cloth
    assert PHYSICS_PT_jakobsen_cache.poll(bpy.context)
    bpy.context.view_layer.objects.active = bpy.data.objects["Ground"]
    assert not PHYSICS_PT_jakobsen_cache.poll(bpy.context)  # (a collider has nothing to cache)


def test_the_bake_of_one_object_leaves_the_others_cached_and_drawn(pinned_cloth, helpers):
    """The Cache panel's Bake of one object: it simulates the scene afresh (as Bake does), writes
    that object only, and the cache, which holds the same frames, goes on drawing the others."""
    cloth = pinned_cloth(frames=(1, 12))
    box = _box_over_the_cloth()
    scene = bpy.context.scene
    scene.jakobsen.use_simulate_on_playback = True
    play(scene, range(1, 13))
    scene.frame_set(6)
    assert sorted(previews.geometry()) == ["Box", "Flag"]

    assert bpy.ops.jakobsen.bake(object_name="Flag") == {'FINISHED'}
    cache = playback.cache_of(scene)
    assert cache is not None and not cache.outdated and cache.written == {"Flag"}
    assert scene.frame_current == 6 and cache.frames_cached == 12
    assert list(previews.geometry()) == ["Box"] and box.hide_get() and not cloth.hide_get()
    assert baking.record_of(box) is None
    scene.frame_set(7)  # (the bake's own writes are not an edit)
    assert not playback.cache_of(scene).outdated
    baked = shape_keys(cloth)

    # The same keys as the cache's frames: Bake from Cache of the object writes them again.
    assert bpy.ops.jakobsen.free_bake(object_name="Flag") == {'FINISHED'}
    assert cache.written == set() and sorted(previews.geometry()) == ["Box", "Flag"]
    assert bpy.ops.jakobsen.bake_from_cache(object_name="Flag") == {'FINISHED'}
    assert shape_keys(cloth) == baked


@pytest.mark.parametrize("rest, stiffness", [(0.5, 100.0), (1.4, 60.0)])
def test_a_spring_s_rest_length_edited_during_playback_is_followed(blender, rest, stiffness):
    """A weight on a spring from a still ceiling, played to frame 12; then the Rest Length is
    edited and playback goes on: the weight settles at the new rest plus m g / k below the
    ceiling, as a bake of the edited scene has it (the old rest length was kept in the solver's
    state and the weight hung on at 1 m: found by the add-on probe)."""
    from .test_connectors import _cube, _empty, _enable

    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 96
    ceiling = _cube("Ceiling", size=0.3, location=(0.0, 0.0, 3.0), dynamic='OFF', collision_shape='BOX')
    weight = _cube("Weight", size=0.3, location=(0.0, 0.0, 2.0), collision_shape='BOX', mass=1.0)
    coil = _enable(_empty("Coil", (0.0, 0.0, 2.5)), 'SPRING', object_a=ceiling, object_b=weight,
                   stiffness=stiffness, damping=20.0)
    scene.jakobsen.use_simulate_on_playback = True
    scene.frame_set(1)
    play(scene, range(1, 13))
    coil.jakobsen.spring.use_current_length = False
    coil.jakobsen.spring.rest_length = rest
    play(scene, range(12, 97))
    cache = playback.cache_of(scene)
    assert cache.last_frame == 96
    hanging = 3.0 - rest - 9.81 / stiffness
    assert cache.job.body_results("Weight")[-1, 2, 3] == pytest.approx(hanging, abs=0.01)
