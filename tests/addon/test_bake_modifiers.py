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
