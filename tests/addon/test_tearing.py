"""A torn cloth's bake, in real Blender: the rendered mesh comes apart where the cloth tore, looks
whole before, and Free Bake gives the user's own mesh back, with everything on it."""

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")


def sheet(helpers, *, factor: float, stretch: float, frames: int = 48):
    """A 1 x 0.6 m sheet (13 x 9 vertices) held by pins along its two short edges, its object
    scaled along X from 1 to ``stretch`` over the frames (so the pins move apart), tearing on
    at ``factor``; with a UV map, a material and a shape key of the user's own."""
    mesh = helpers.grid_mesh("Sheet", 13, 9, 1.0)
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:, 1] *= 0.6
    mesh.vertices.foreach_set("co", co.ravel())
    mesh.uv_layers.new(name="UVMap")
    mesh.materials.append(bpy.data.materials.new("Linen"))
    obj = helpers.link(bpy.data.objects.new("Sheet", mesh))
    obj.location.z = 1.0
    obj.shape_key_add(name="Basis")
    own = obj.shape_key_add(name="Creased")
    own.value = 0.0
    group = obj.vertex_groups.new(name="handles")
    group.add(np.flatnonzero(np.abs(co[:, 0]) > 0.499).tolist(), 1.0, 'REPLACE')
    obj.jakobsen.enabled = True
    obj.jakobsen.type = 'CLOTH'
    c = obj.jakobsen.cloth
    c.pin_group = "handles"
    c.use_rigid_stretch = c.use_rigid_shear = False
    c.stretch_stiffness = c.shear_stiffness = 50.0
    c.use_tearing, c.tear_factor = True, factor
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    for frame, sx in ((1, 1.0), (frames, stretch)):
        obj.scale = (sx, 1.0, 1.0)
        obj.keyframe_insert("scale", frame=frame)
    for fc in obj.animation_data.action.fcurves if hasattr(obj.animation_data.action, "fcurves") else ():
        for k in fc.keyframe_points:
            k.interpolation = 'LINEAR'
    scene.frame_set(1)
    bpy.context.view_layer.update()
    return obj


def faces_of(obj):
    return [tuple(p.vertices) for p in obj.data.polygons]


@pytest.mark.parametrize("factor, stretch", [(1.2, 1.6), (1.5, 2.2)])
def test_a_sheet_pulled_apart_renders_in_pieces_once_it_tears_and_whole_before(blender, helpers, factor, stretch):
    obj = sheet(helpers, factor=factor, stretch=stretch)
    own_mesh, own_count = obj.data, len(obj.data.vertices)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert obj.data != own_mesh and len(obj.data.vertices) > own_count  # the split copy
    scene = bpy.context.scene
    scene.frame_set(1)
    assert helpers.rendered_pieces(helpers.evaluated_world(obj), faces_of(obj)) == 1
    scene.frame_set(scene.frame_end)
    assert helpers.rendered_pieces(helpers.evaluated_world(obj), faces_of(obj)) >= 2
    # The copy keeps what the user's mesh had.
    assert obj.data.uv_layers.get("UVMap") is not None and obj.data.materials[0].name == "Linen"
    assert "Creased" in obj.data.shape_keys.key_blocks


def test_an_untorn_sheet_keeps_its_own_mesh(blender, helpers):
    obj = sheet(helpers, factor=3.0, stretch=1.3)  # strained 30 %, far below its factor
    own_mesh = obj.data
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert obj.data == own_mesh


def test_free_bake_of_a_torn_sheet_gives_its_own_mesh_back_and_a_rebake_reads_it(blender, helpers, tmp_path):
    obj = sheet(helpers, factor=1.2, stretch=1.6)
    own_count = len(obj.data.vertices)
    own_name = obj.data.name
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    torn_name = obj.data.name
    # Baking again reads the user's mesh, not the split copy, and replaces the torn bake.
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert obj.data.name == torn_name and len(bpy.data.meshes) == 2
    # Saved and opened again (the bake record keeps the user's mesh in the file), then freed.
    path = str(tmp_path / "torn.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Sheet"]
    assert obj.data.name == torn_name and own_name in bpy.data.meshes
    own_mesh = bpy.data.meshes[own_name]
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.jakobsen.free_bake()
    assert obj.data == own_mesh and obj.data.name == own_name and len(obj.data.vertices) == own_count
    assert not own_mesh.use_fake_user and own_mesh.users == 1
    assert torn_name not in bpy.data.meshes
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == ["Basis", "Creased"]
