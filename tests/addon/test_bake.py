"""Baking in real Blender: what lands in the .blend matches the engine, cancel and free leave no
trace, re-bake replaces, the result survives save and reload, bad scenes are refused."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import actions, baking, previews, scene_to_model  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402
from jakobsen_engine import Solver  # noqa: E402

pytestmark = pytest.mark.blender


def engine_reference() -> tuple[scene_to_model.SceneModel, dict[int, np.ndarray]]:
    """The engine run on the same scene: world positions (n, 3) of every particle on every frame."""
    sm = scene_to_model.build(bpy.context)
    solver = Solver(sm.model, sm.settings)
    state = solver.make_state()
    out = {sm.frame_start: state.positions.copy()}
    for frame in sm.frames[1:]:
        solver.step_frame(state, pinned_positions=sm.pinned_positions(frame))
        out[frame] = state.positions.copy()
    return sm, out


def shape_key_co(kb) -> np.ndarray:
    co = np.empty(len(kb.data) * 3, np.float32)
    kb.data.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def to_local(obj, world: np.ndarray) -> np.ndarray:
    m = np.linalg.inv(np.array(obj.matrix_world))
    return world @ m[:3, :3].T + m[:3, 3]


def keyframes(fcurve) -> list[tuple[float, float]]:
    co = np.empty(len(fcurve.keyframe_points) * 2, np.float32)
    fcurve.keyframe_points.foreach_get("co", co)
    return [tuple(p) for p in co.reshape(-1, 2).tolist()]


def test_bake_writes_the_engines_positions_as_shape_keys_in_the_shown_action(pinned_cloth, helpers):
    cloth = pinned_cloth()
    sm, reference = engine_reference()
    part = sm.deformables[0].particles
    assert sm.deformables[0].object_name == "Flag"
    moved = np.linalg.norm(reference[8][part] - reference[1][part], axis=1)
    assert moved.max() > 0.05, "the cloth should fall noticeably in 8 frames"

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}

    key = cloth.data.shape_keys
    baked = [kb for kb in key.key_blocks if kb.name.startswith(baking.SHAPE_KEY_PREFIX)]
    assert [kb.name for kb in baked] == [f"JK_Bake_{f:04d}" for f in range(1, 9)]
    assert key.key_blocks[0].name == "Basis"
    for frame in (1, 4, 8):
        kb = key.key_blocks[f"JK_Bake_{frame:04d}"]
        np.testing.assert_allclose(shape_key_co(kb), to_local(cloth, reference[frame][part]), atol=1e-5)

    # The keys are in the action Blender evaluates for the shape-key datablock (its slot on 4.4+).
    action = key.animation_data.action
    assert action is not None and action.name == "JK_Bake Flag"
    if actions.SLOTTED:
        slot = key.animation_data.action_slot
        assert slot is not None
        bags = [strip.channelbag(slot) for layer in action.layers for strip in layer.strips]
        curves = next(bag for bag in bags if bag).fcurves
    else:
        curves = action.fcurves
    by_path = {fc.data_path: fc for fc in curves}
    assert len(by_path) == 8
    assert keyframes(by_path['key_blocks["JK_Bake_0004"].value']) == [(3.0, 0.0), (4.0, 1.0), (5.0, 0.0)]
    assert keyframes(by_path['key_blocks["JK_Bake_0001"].value']) == [(1.0, 1.0), (2.0, 0.0)]
    assert all(k.interpolation == 'LINEAR' for fc in curves for k in fc.keyframe_points)

    # What Blender shows on frame N is the engine's frame N.
    for frame in (1, 5, 8):
        bpy.context.scene.frame_set(frame)
        assert [kb.value for kb in baked] == [1.0 if f == frame else 0.0 for f in range(1, 9)]
        np.testing.assert_allclose(helpers.evaluated_world(cloth), reference[frame][part], atol=1e-5)


def test_cancel_half_way_leaves_the_scene_exactly_as_it_was(pinned_cloth, helpers):
    cloth = pinned_cloth()
    # Something of the user's to keep: a shape key, an action on it, and the object's own animation.
    cloth.shape_key_add(name="Basis")
    cloth.shape_key_add(name="Wave").value = 0.0
    cloth.data.shape_keys.key_blocks["Wave"].keyframe_insert("value", frame=1)
    cloth.keyframe_insert("location", frame=1)
    scene = bpy.context.scene
    scene.frame_set(3)
    before = helpers.snapshot()

    job = BakeJob(scene.name, preview=True, follow_frames=True)
    job.start(bpy.context)
    for _ in range(4):
        assert job.step()
    # Mid-bake the viewport draws the computed frame in place of the cloth, which is hidden; no
    # object or mesh is added for it (nothing in the Outliner).
    assert scene.frame_current == 5
    drawn = previews.geometry()
    assert list(drawn) == ["Flag"] and cloth.hide_get()
    positions, tris = drawn["Flag"]
    np.testing.assert_allclose(positions, job.state.positions[job.scene_model.deformables[0].particles])
    assert tris.shape == (2 * 25, 3) and tris.max() == 35
    assert (len(bpy.data.objects), len(bpy.data.meshes)) == before["counts"][:2]
    job.cancel()
    assert previews.geometry() == {}

    assert helpers.snapshot() == before
    assert baking.record_of(cloth) is None


def user_action_curves(action):
    """An action's F-curves by data path, on Blender 4.2 and on slotted actions alike."""
    if actions.SLOTTED:
        return {fc.data_path: fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                for fc in bag.fcurves}
    return {fc.data_path: fc for fc in action.fcurves}


def test_rebake_replaces_and_free_restores_the_users_shape_keys_and_animation(pinned_cloth, helpers):
    cloth = pinned_cloth()
    cloth.shape_key_add(name="Basis")
    cloth.shape_key_add(name="Wave")
    cloth.data.shape_keys.key_blocks["Wave"].keyframe_insert("value", frame=1)
    user_action = cloth.data.shape_keys.animation_data.action
    cloth.active_shape_key_index = 1
    before = helpers.snapshot()

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    first = shape_key_co(cloth.data.shape_keys.key_blocks["JK_Bake_0008"])
    bpy.context.scene.jakobsen.substeps = 20  # a different result, to see that it is replaced
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}

    key = cloth.data.shape_keys
    names = [kb.name for kb in key.key_blocks]
    assert names == ["Basis", "Wave"] + [f"JK_Bake_{f:04d}" for f in range(1, 9)]
    jk_actions = [a for a in bpy.data.actions if a.name.startswith("JK_Bake")]
    assert [a.name for a in jk_actions] == ["JK_Bake Flag"]
    curves = {fc.data_path: fc for fc in actions.assigned_fcurves(key)}
    baked = [curves.pop(f'key_blocks["JK_Bake_{f:04d}"].value') for f in range(1, 9)]
    assert sorted(len(fc.keyframe_points) for fc in baked) == [2, 2] + [3] * 6
    # The user's own key on "Wave" keeps playing while the bake is shown (copied, not moved).
    assert list(curves) == ['key_blocks["Wave"].value']
    assert [tuple(k.co) for k in curves['key_blocks["Wave"].value'].keyframe_points] == \
        [tuple(k.co) for k in user_action_curves(user_action)['key_blocks["Wave"].value'].keyframe_points]
    assert not np.allclose(shape_key_co(key.key_blocks["JK_Bake_0008"]), first, atol=1e-6)

    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert helpers.snapshot() == before
    assert cloth.data.shape_keys.animation_data.action == user_action
    assert bpy.ops.jakobsen.free_bake() == {'CANCELLED'}  # nothing left to free


def test_free_bake_of_a_mesh_that_had_no_shape_keys_removes_them_all(pinned_cloth, helpers):
    cloth = pinned_cloth()
    before = helpers.snapshot()
    bpy.ops.jakobsen.bake()
    assert cloth.data.shape_keys is not None
    bpy.ops.jakobsen.free_bake()
    assert cloth.data.shape_keys is None
    assert helpers.snapshot() == before


def test_the_bake_survives_save_and_reload(pinned_cloth, helpers, tmp_path):
    pinned_cloth()
    bpy.ops.jakobsen.bake()
    bpy.context.scene.frame_set(6)
    expected = helpers.evaluated_world(bpy.data.objects["Flag"])
    path = str(tmp_path / "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert "Flag" not in bpy.data.objects
    bpy.ops.wm.open_mainfile(filepath=path)

    cloth = bpy.data.objects["Flag"]
    bpy.context.scene.frame_set(6)
    np.testing.assert_allclose(helpers.evaluated_world(cloth), expected, atol=1e-6)
    assert cloth.data.shape_keys.animation_data.action.name == "JK_Bake Flag"
    assert baking.record_of(cloth)["frame_end"] == 8
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert cloth.data.shape_keys is None


def test_pc2_output_writes_a_point_cache_and_a_mesh_cache_modifier(pinned_cloth, helpers, tmp_path):
    cloth = pinned_cloth()
    # A modifier that adds vertices: shape keys could not hold this, a point cache can.
    cloth.modifiers.new("Subdivision", 'SUBSURF').levels = 1
    props = bpy.context.scene.jakobsen
    props.output = 'PC2'
    props.cache_directory = str(tmp_path / "cache")
    sm, reference = engine_reference()
    part = sm.deformables[0].particles
    assert sm.deformables[0].vertex_count == 121  # 6 x 6 subdivided once: 11 x 11
    before = helpers.snapshot()

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}  # again: replaces, no second modifier

    path = tmp_path / "cache" / os.path.basename(baking.pc2_path(cloth, props.cache_directory))
    assert path.name.startswith("Flag_") and path.suffix == ".pc2"
    start, data = baking.read_pc2_file(str(path))
    assert start == 1 and data.shape == (8, 121, 3)
    np.testing.assert_allclose(data[4], to_local(cloth, reference[5][part]), atol=1e-5)
    assert [m.type for m in cloth.modifiers] == ['SUBSURF', 'MESH_CACHE']
    bpy.context.scene.frame_set(5)
    np.testing.assert_allclose(helpers.evaluated_world(cloth), reference[5][part], atol=1e-5)

    bpy.ops.jakobsen.free_bake()
    assert not path.exists()
    bpy.context.scene.frame_set(1)
    assert helpers.snapshot() == before


def test_cloths_whose_names_clean_to_one_file_name_each_get_their_own_pc2(pinned_cloth, helpers, tmp_path):
    """'Flag.001' and 'Flag_001' are both 'Flag_001' as a file name: they wrote one file (the bake
    failed halfway, one cloth playing the other's frames)."""
    first = pinned_cloth("Flag.001")
    second = pinned_cloth("Flag_001")
    second.location = (3.3, -0.2, 2.0)  # elsewhere and higher: another simulation
    bpy.context.view_layer.update()
    props = bpy.context.scene.jakobsen
    props.output = 'PC2'
    props.cache_directory = str(tmp_path / "cache")
    sm, reference = engine_reference()
    before = helpers.snapshot()
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    paths = {baking.pc2_path(obj, props.cache_directory) for obj in (first, second)}
    assert len(paths) == 2 and all(os.path.isfile(p) for p in paths)
    bpy.context.scene.frame_set(5)
    for d in sm.deformables:
        np.testing.assert_allclose(helpers.evaluated_world(bpy.data.objects[d.object_name]),
                                   reference[5][d.particles], atol=1e-5)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert not any(os.path.exists(p) for p in paths)
    bpy.context.scene.frame_set(1)
    assert helpers.snapshot() == before


def test_two_blend_files_baking_a_cloth_of_one_name_into_one_folder_keep_their_own_caches(pinned_cloth, helpers,
                                                                                           tmp_path):
    """Two shots in one folder, each with a 'Flag' baked to the default //jakobsen_cache/: the
    second overwrote the first's file, and freeing the first deleted the second's cache. Each
    now plays its own, and a copy saved from a baked file does not delete the original's file."""
    cloth = pinned_cloth()
    props = bpy.context.scene.jakobsen
    props.output = 'PC2'
    shots = [str(tmp_path / "shot_010.blend"), str(tmp_path / "shot_020.blend")]
    bpy.ops.wm.save_as_mainfile(filepath=shots[0])
    props.cache_directory = "//jakobsen_cache/"
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(6)
    played = [helpers.evaluated_world(cloth)]
    bpy.ops.wm.save_mainfile()
    # The second shot starts as a copy of the first (its bake's record included), higher up.
    bpy.context.scene.frame_set(1)
    cloth.location.z += 1.0
    bpy.ops.wm.save_as_mainfile(filepath=shots[1])
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(6)
    played.append(helpers.evaluated_world(cloth))
    assert np.abs(played[1] - played[0]).max() > 0.5
    bpy.ops.wm.save_mainfile()
    files = sorted(os.listdir(tmp_path / "jakobsen_cache"))
    assert len(files) == 2, files

    bpy.ops.wm.open_mainfile(filepath=shots[0])
    bpy.context.scene.frame_set(6)
    np.testing.assert_allclose(helpers.evaluated_world(bpy.data.objects["Flag"]), played[0], atol=1e-6)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert len(os.listdir(tmp_path / "jakobsen_cache")) == 1

    bpy.ops.wm.open_mainfile(filepath=shots[1])
    bpy.context.scene.frame_set(6)
    np.testing.assert_allclose(helpers.evaluated_world(bpy.data.objects["Flag"]), played[1], atol=1e-6)


def test_pc2_into_a_directory_that_cannot_exist_is_refused_before_baking(pinned_cloth, helpers, tmp_path):
    pinned_cloth()
    bpy.ops.jakobsen.bake()  # a previous bake (shape keys), which must survive
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    props = bpy.context.scene.jakobsen
    props.output = 'PC2'
    props.cache_directory = str(blocker / "cache")
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=r"'Flag': the cache directory '.*a_file/cache' cannot be written to"):
        bpy.ops.jakobsen.bake()
    assert helpers.snapshot() == before


def test_shape_keys_refuse_modifiers_that_change_the_vertex_count(pinned_cloth, helpers):
    cloth = pinned_cloth()
    cloth.modifiers.new("Subdivision", 'SUBSURF').levels = 1
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=r"'Flag': its modifiers change the vertex count \(36 -> 121\)"):
        bpy.ops.jakobsen.bake()
    assert helpers.snapshot() == before


def _bad_scene_connector():
    empty = bpy.data.objects.new("Hinge", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.jakobsen.enabled = True
    assert empty.jakobsen.type == 'CONNECTOR'


def _bad_scene_edges_only(role):
    def make():
        mesh = bpy.data.meshes.new("Stick")
        mesh.from_pydata([(0, 0, 0), (0, 0, 1), (0, 1, 1)], [(0, 1), (1, 2)], [])
        obj = bpy.data.objects.new("Stick", mesh)
        bpy.context.scene.collection.objects.link(obj)
        obj.jakobsen.enabled = True
        obj.jakobsen.type = role
    return make


def _bad_scene_nan():
    cloth = bpy.data.objects["Flag"]
    cloth.data.vertices[3].co = (float("nan"), 0.0, 0.0)
    # The previous bake gave the mesh shape keys, and then the basis key is what Blender evaluates.
    cloth.data.shape_keys.key_blocks["Basis"].data[3].co = (float("nan"), 0.0, 0.0)


def _bad_scene_time_stretching():
    # Old 100, New 200: playback retimes the keys that the bake wrote at times it sampled retimed.
    bpy.context.scene.render.frame_map_old, bpy.context.scene.render.frame_map_new = 100, 200


@pytest.mark.parametrize("make, message", [
    (_bad_scene_connector, r"connector 'Hinge' has neither Object A nor Object B"),
    (_bad_scene_time_stretching, r"Time Stretching .*Old 100, New 200"),
    (_bad_scene_edges_only('RIGID_BODY'), r"rigid body 'Stick': the mesh has no faces"),
    (_bad_scene_edges_only('CLOTH'), r"cloth 'Stick': the mesh has no faces"),
    (_bad_scene_nan, r"cloth 'Flag': vertex 3 has a coordinate that is not a number"),
], ids=["connector-without-objects", "time-stretching", "rigid-body-without-faces", "cloth-without-faces",
        "nan-coordinates"])
def test_bad_scenes_are_refused_with_a_message_naming_the_object(pinned_cloth, helpers, make, message):
    pinned_cloth()
    bpy.ops.jakobsen.bake()  # a previous bake, which a refused bake must leave alone
    make()
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.jakobsen.bake()
    assert helpers.snapshot() == before


def bake_four_frames_of_cloth(helpers, name, verts, faces):
    """A mesh object ``name`` made a cloth and baked for frames 1-4: (its bake's warnings as one
    text, its last frame's shape key coordinates), after checking it has the four shape keys."""
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    obj = helpers.link(bpy.data.objects.new(name, mesh))
    obj.jakobsen.enabled = True
    obj.jakobsen.type = 'CLOTH'
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 4
    job = BakeJob(scene.name)
    job.run(bpy.context)
    key = obj.data.shape_keys
    assert len([kb for kb in key.key_blocks if kb.name.startswith("JK_Bake_")]) == 4
    return "\n".join(job.warnings), shape_key_co(key.key_blocks["JK_Bake_0004"])


def test_awkward_but_legal_meshes_bake_with_warnings(blender, helpers):
    # Two quads and a triangle on one edge (non-manifold), a face with zero area, a loose vertex.
    verts = [(0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1), (2, 0, 1), (2, 1, 1), (1, 0.5, 2),
             (3, 0, 1), (3, 0, 1.0000000001), (3.0000000001, 0, 1), (5, 5, 5)]
    faces = [(0, 1, 2, 3), (1, 4, 5, 2), (1, 2, 6), (7, 8, 9)]
    text, co = bake_four_frames_of_cloth(helpers, "Rag", verts, faces)
    assert "cloth 'Rag': 1 edges are shared by more than two faces" in text
    assert "cloth 'Rag': 1 faces have zero area" in text
    assert "cloth 'Rag': 1 loose vertices" in text
    assert np.all(np.isfinite(co))
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}  # and through the operator, which reports them


def test_a_cloth_with_a_few_tiny_edges_bakes_and_names_them(blender, helpers):
    # A scan's or an imported garment's slivers: three vertices a twentieth of a millimetre from
    # a neighbour, below what the substep resolves. It was refused for its shortest edge; now it
    # bakes, and the report says which object has them and what removes them.
    n = 20
    g = np.linspace(0.0, 1.0, n)
    verts = [(x, y, 1.0) for y in g for x in g]
    for k in (n * 5 + 5, n * 10 + 12, n * 14 + 7):
        verts[k] = (verts[k + 1][0] - 5e-5, verts[k][1], 1.0)
    faces = [(r * n + c, r * n + c + 1, (r + 1) * n + c + 1, (r + 1) * n + c) for r in range(n - 1)
             for c in range(n - 1)]
    text, co = bake_four_frames_of_cloth(helpers, "Scan", verts, faces)
    assert "cloth 'Scan': 3 of its" in text and "Merge by Distance" in text
    assert np.all(np.isfinite(co)) and co[:, 2].min() < 1.0 - 0.01  # it fell


def test_invoke_without_a_window_runs_to_the_end(pinned_cloth):
    cloth = pinned_cloth()
    assert bpy.ops.jakobsen.bake('INVOKE_DEFAULT') == {'FINISHED'}
    assert len(cloth.data.shape_keys.key_blocks) == 9


def test_animated_cloth_keeps_its_pins_on_the_moving_object(pinned_cloth, helpers):
    cloth = pinned_cloth()
    cloth.keyframe_insert("location", frame=1)
    cloth.location.x += 0.8
    cloth.keyframe_insert("location", frame=8)
    bpy.context.scene.frame_set(1)
    bpy.ops.jakobsen.bake()
    pins = np.flatnonzero(np.array([v.co.y > 0.49 for v in cloth.data.vertices]))
    rest = np.array([tuple(v.co) for v in cloth.data.vertices])
    for frame in (3, 8):
        bpy.context.scene.frame_set(frame)
        world = helpers.evaluated_world(cloth)
        m = np.array(cloth.matrix_world)
        np.testing.assert_allclose(world[pins], rest[pins] @ m[:3, :3].T + m[:3, 3], atol=1e-5)
    assert bpy.context.scene.frame_current == 8
    # The free vertices trail behind: the cloth did not just ride along with the object.
    local = shape_key_co(cloth.data.shape_keys.key_blocks["JK_Bake_0008"])
    free = ~np.isin(np.arange(len(rest)), pins)
    assert np.abs(local[free] - rest[free]).max() > 0.05


def test_the_summary_tells_solver_time_from_wall_time(pinned_cloth):
    pinned_cloth()
    job = BakeJob(bpy.context.scene.name)
    summary = job.run(bpy.context)
    found = re.search(r"frames 1-8, in ([0-9.]+) s of solver time, ([0-9.]+) s wall \(8 frames, ([0-9.]+) ms/frame",
                      summary)
    assert found, summary
    solver, wall, ms = map(float, found.groups())
    assert solver == pytest.approx(job.step_seconds, abs=0.006)
    assert wall >= solver  # the wall time holds the solver's and the reading and writing around it
    assert ms == pytest.approx(1e3 * job.step_seconds / 7, abs=0.06)


def test_a_second_bake_while_one_runs_is_refused_with_a_message(pinned_cloth, helpers):
    from jakobsen_physics.operators import bake as bake_op

    pinned_cloth()
    before = helpers.snapshot()
    # What the modal bake sets while it runs (headless Blender has no timer events to run one).
    bake_op._running["scene"] = bpy.context.scene.name
    try:
        for op in (bpy.ops.jakobsen.bake, bpy.ops.jakobsen.free_bake):
            assert not op.poll()  # (the panels' buttons, this object's and all, are greyed out by it)
            with pytest.raises(RuntimeError, match="A Jakobsen bake is running"):
                op()
            with pytest.raises(RuntimeError, match="A Jakobsen bake is running"):
                op(object_name="Flag")  # the Bake and Free Bake of one object too
    finally:
        bake_op._running.clear()
    assert helpers.snapshot() == before
    assert bpy.ops.jakobsen.bake.poll()


def test_a_file_saved_during_a_preview_bake_holds_nothing_of_the_bake(pinned_cloth, helpers, tmp_path):
    cloth = pinned_cloth()
    cloth.keyframe_insert("location", frame=1)
    before = helpers.snapshot()
    job = BakeJob(bpy.context.scene.name, preview=True)
    job.start(bpy.context)
    assert job.step() and job.step()
    assert cloth.hide_get()
    path = str(tmp_path / "mid_bake.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    assert cloth.hide_get(), "after the save the preview goes on"
    assert job.step()
    job.cancel()
    assert helpers.snapshot() == before

    bpy.ops.wm.open_mainfile(filepath=path)
    saved = helpers.snapshot()
    for name, values in before["objects"].items():
        assert saved["objects"][name] == values, {k: (v, saved["objects"][name][k]) for k, v in values.items()
                                                  if saved["objects"][name][k] != v}
    assert saved == before
    assert previews.geometry() == {}


# -- the Bake of one object ---------------------------------------------------------------------

def _box(name="Box", location=(0.35, -0.15, 1.45)):
    """A rigid body above the cloth of ``pinned_cloth``: it falls onto it within the bake's 8 frames."""
    bpy.ops.mesh.primitive_cube_add(size=0.3, location=location)
    box = bpy.context.object
    box.name = box.data.name = name
    box.jakobsen.enabled, box.jakobsen.type = True, 'RIGID_BODY'
    return box


def _shape_keys(obj) -> dict[str, bytes]:
    return {kb.name: shape_key_co(kb).astype(np.float32).tobytes() for kb in obj.data.shape_keys.key_blocks}


def _actions_of(obj) -> set[str]:
    """The actions ``obj`` and its shape keys play."""
    holders = [obj, obj.data.shape_keys if obj.type == 'MESH' and obj.data.shape_keys else None]
    return {h.animation_data.action.name for h in holders
            if h is not None and h.animation_data is not None and h.animation_data.action is not None}


def _all_but(snap: dict, obj, actions_of_obj: set[str]) -> dict:
    """A snapshot without what belongs to ``obj`` (the object, its mesh, its actions)."""
    return {"frame": snap["frame"],
            "objects": {k: v for k, v in snap["objects"].items() if k != obj.name},
            "meshes": {k: v for k, v in snap["meshes"].items() if k != obj.data.name},
            "actions": {k: v for k, v in snap["actions"].items() if k not in actions_of_obj}}


def test_the_bake_of_one_object_writes_what_the_full_bake_does_and_leaves_the_others_as_they_were(
        pinned_cloth, helpers):
    scene = bpy.context.scene
    cloth = pinned_cloth()
    cloth.shape_key_add(name="Basis")
    cloth.shape_key_add(name="Wave")  # the user's own shape key, keyed
    cloth.data.shape_keys.key_blocks["Wave"].keyframe_insert("value", frame=1)
    box = _box()
    box.keyframe_insert("rotation_euler", frame=1)  # the user's own animation (replaced by a bake, kept by Free)
    start = helpers.snapshot()

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    full_cloth, full_box = _shape_keys(cloth), helpers.location_keys(box)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'} and helpers.snapshot() == start
    # They act on each other (so the Bake of one simulates all): without the cloth the box falls otherwise.
    cloth.jakobsen.enabled = False
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert helpers.location_keys(box) != full_box
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    cloth.jakobsen.enabled = True

    # Each object on its own, the other not baked: its keys are the full bake's, the other untouched.
    for obj, other in ((cloth, box), (box, cloth)):
        before = helpers.snapshot()
        theirs = _actions_of(other)
        assert bpy.ops.jakobsen.bake(object_name=obj.name) == {'FINISHED'}
        assert baking.record_of(obj) is not None and baking.record_of(other) is None
        assert helpers.snapshot()["objects"][other.name] == before["objects"][other.name]
        assert _all_but(helpers.snapshot(), obj, _actions_of(obj)) == _all_but(before, obj, _actions_of(obj))
        assert _actions_of(other) == theirs
        assert bpy.ops.jakobsen.free_bake(object_name=obj.name) == {'FINISHED'}
    assert helpers.snapshot() == start
    assert bpy.ops.jakobsen.bake(object_name="Flag") == {'FINISHED'}
    assert _shape_keys(cloth) == full_cloth  # byte for byte
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}

    # The other with a bake of its own (of other settings): left byte for byte as it was.
    scene.jakobsen.substeps = 4
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    scene.jakobsen.substeps = 10
    old_box = helpers.location_keys(box)
    assert old_box != full_box  # (so that a box written again would be seen)
    before = helpers.snapshot()
    assert bpy.ops.jakobsen.bake(object_name="Flag") == {'FINISHED'}
    assert _shape_keys(cloth) == full_cloth
    mine = _actions_of(cloth)
    assert _all_but(helpers.snapshot(), cloth, mine) == _all_but(before, cloth, mine)
    assert helpers.location_keys(box) == old_box
    assert bpy.ops.jakobsen.bake(object_name="Box") == {'FINISHED'}
    assert helpers.location_keys(box) == full_box and _shape_keys(cloth) == full_cloth
    # Nothing the user had is lost: freeing puts back the scene as it was before any bake.
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert helpers.snapshot() == start


@pytest.mark.parametrize("name, message", [
    ("Nothing", r"No object 'Nothing' to bake"),
    ("Ground", r"'Ground' has nothing to bake: only cloths, soft bodies and rigid bodies with Dynamic On"),
    ("Box", r"'Box' has nothing to bake"),  # Dynamic Off: it follows its animation
])
def test_the_bake_of_an_object_the_bake_does_not_write_is_refused_by_name(pinned_cloth, helpers, name, message):
    pinned_cloth()
    _box().jakobsen.rigid_body.dynamic = 'OFF'
    bpy.ops.jakobsen.bake()  # a previous bake, which a refused bake must leave alone
    before = helpers.snapshot()
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.jakobsen.bake(object_name=name)
    assert helpers.snapshot() == before


def test_bake_all_after_the_bake_of_one_object_bakes_all(pinned_cloth):
    """The object's name is not remembered for the next Bake (nor Free Bake) called without one."""
    cloth = pinned_cloth()
    box = _box()
    assert bpy.ops.jakobsen.bake(object_name="Flag") == {'FINISHED'}
    assert baking.record_of(box) is None
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert baking.record_of(box) is not None and baking.record_of(cloth) is not None
    assert bpy.ops.jakobsen.free_bake(object_name="Box") == {'FINISHED'}
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert baking.record_of(cloth) is None


def test_the_cache_directory_takes_a_path_relative_to_the_blend_file_without_a_warning(blender):
    """Its default is "//jakobsen_cache/"; Blender 5.x warned ("does not support blend relative")
    when a script set such a path, the property not saying it takes one (found by the add-on probe)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bpy.context.scene.jakobsen.cache_directory = "//cache/"
    assert bpy.context.scene.jakobsen.cache_directory == "//cache/"


def test_the_ms_per_frame_leaves_out_a_first_frame_spent_compiling(pinned_cloth):
    """The first bake of a kind of scene compiles the kernels it uses in its first frame (one to
    three minutes): the report's ms/frame leaves that frame out and says what it took, so the
    figure is the solver's speed, not the compiler's. A first frame like the others counts."""
    pinned_cloth(frames=(1, 8))
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}  # (compiles what this scene uses, if not yet)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    job = BakeJob(bpy.context.scene.name)
    job.run(bpy.context)
    steps = job.frames_done - 1
    assert job.first_frame_seconds is not None and job.first_frame_seconds <= job.step_seconds
    others = job.step_seconds - job.first_frame_seconds
    # As measured (compiled already in this process): the mean of all the frames.
    assert job.compile_seconds == 0.0
    assert job.ms_per_frame == pytest.approx(1e3 * job.step_seconds / steps)
    # As a first bake measures it: 90 s in the first frame.
    job.first_frame_seconds, job.step_seconds = 90.0, others + 90.0
    assert job.compile_seconds == 90.0
    assert job.ms_per_frame == pytest.approx(1e3 * others / (steps - 1))
    assert "the first frame took 90 s compiling" in job.finish()
