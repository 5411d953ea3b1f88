"""A shape-key bake of a cloth whose modifiers move its vertices (they are in the bake) turns
those off while the bake plays, and Free Bake turns them back on; other modifiers stay on."""

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")


def test_deforming_modifiers_are_off_while_the_bake_plays_and_back_after_free(pinned_cloth, helpers):
    cloth = pinned_cloth()
    displace = cloth.modifiers.new("Lift", 'DISPLACE')
    displace.strength = 0.0  # moves nothing here; a deformer all the same
    normals = cloth.modifiers.new("Normals", 'WEIGHTED_NORMAL')  # shading only: stays
    normals.show_render = False  # as the user had it
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert not displace.show_viewport and not displace.show_render
    assert normals.show_viewport and not normals.show_render
    # The shown cloth is the baked one: on the last frame it is where the bake put it.
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    shown = helpers.evaluated_world(cloth)
    assert np.isfinite(shown).all()
    # A second bake reads the cloth with its modifiers on, as the first did.
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    scene.frame_set(scene.frame_end)
    np.testing.assert_allclose(helpers.evaluated_world(cloth), shown, atol=1e-6)
    bpy.ops.jakobsen.free_bake()
    assert displace.show_viewport and displace.show_render
    assert normals.show_viewport and not normals.show_render


def _node_group(name: str, node_type: str, **inputs):
    """A Geometry Nodes group: Group Input -> one node (``inputs`` set on it) -> Group Output."""
    group = bpy.data.node_groups.new(name, 'GeometryNodeTree')
    group.interface.new_socket("Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    group.interface.new_socket("Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    source, sink = group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")
    node = group.nodes.new(node_type)
    for key, value in inputs.items():
        node.inputs[key].default_value = value
    group.links.new(source.outputs[0], node.inputs[0])
    group.links.new(node.outputs[0], sink.inputs[0])
    return group


@pytest.mark.parametrize("lift", [0.5, -0.2, 0.0])
def test_a_geometry_nodes_modifier_that_moves_vertices_is_off_while_the_bake_plays(pinned_cloth, helpers, lift):
    """A Set Position node group lifts the flag by ``lift``: the bake reads the lifted cloth, so
    its pinned row plays where it was shown before the bake, not lifted again (it played 0.5 m
    too high, found by the add-on probe). A group that moves nothing (Set Shade Smooth, or a
    Set Position by nothing) stays on, and Free Bake puts everything back."""
    cloth = pinned_cloth()
    moving = cloth.modifiers.new("Lift", 'NODES')
    moving.node_group = _node_group("Lift", "GeometryNodeSetPosition", Offset=(0.0, 0.0, lift))
    smooth = cloth.modifiers.new("Smooth", 'NODES')
    smooth.node_group = _node_group("Smooth", "GeometryNodeSetShadeSmooth")
    bpy.context.view_layer.update()
    scene = bpy.context.scene
    scene.frame_set(scene.frame_start)
    before = helpers.evaluated_world(cloth)
    co = np.empty(3 * len(cloth.data.vertices), np.float32)
    cloth.data.vertices.foreach_get("co", co)
    pinned = co.reshape(-1, 3)[:, 1] > 0.49  # the pin group's edge (see the fixture)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert moving.show_viewport == (lift == 0.0) and smooth.show_viewport and smooth.show_render
    for frame in (scene.frame_start, scene.frame_end):
        scene.frame_set(frame)
        np.testing.assert_allclose(helpers.evaluated_world(cloth)[pinned], before[pinned], atol=1e-5)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert moving.show_viewport and moving.show_render and smooth.show_viewport
