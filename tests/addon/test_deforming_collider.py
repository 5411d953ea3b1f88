"""A Collider with Shape Mesh whose mesh deforms (shape keys, an armature) is followed by the cloth
on it every frame, in real Blender."""

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")


def _height_on_grid(grid: np.ndarray, points: np.ndarray, n: int, size: float) -> np.ndarray:
    """The height of a deformed n x n grid mesh (``helpers.grid_mesh`` layout, its quads fanned
    from their first corner as the engine triangulates them) under each point."""
    cell = size / (n - 1)
    u, v = (points[:, 0] + size / 2) / cell, (points[:, 1] + size / 2) / cell
    i, j = np.clip(np.floor(u).astype(int), 0, n - 2), np.clip(np.floor(v).astype(int), 0, n - 2)
    u, v = u - i, v - j
    a = j * n + i
    za, zb, zc, zd = grid[a, 2], grid[a + 1, 2], grid[a + 1 + n, 2], grid[a + n, 2]
    return np.where(v <= u, za + u * (zb - za) + v * (zc - zb), za + u * (zc - zd) + v * (zd - za))


def _lift_keyed(obj, height: float, frames: tuple[int, int]):
    """A shape key that raises the mesh's middle by ``height`` (a bump growing), keyed from 0 to 1."""
    obj.shape_key_add(name="Basis")
    key = obj.shape_key_add(name="Lift")
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    key.data.foreach_get("co", co)
    co = co.reshape(-1, 3)
    r = np.linalg.norm(co[:, :2], axis=1)
    co[:, 2] += height * np.clip(1.0 - r / 1.2, 0.0, 1.0)
    key.data.foreach_set("co", co.ravel())
    for frame, value in zip(frames, (0.0, 1.0)):
        key.value = value
        key.keyframe_insert("value", frame=frame)
    return key


@pytest.mark.parametrize("height, cloth_vertices", [(0.3, 12), (0.6, 16)])
def test_a_cloth_rides_up_on_a_collider_whose_mesh_deforms_and_never_goes_through(blender, helpers, height,
                                                                                 cloth_vertices):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 48
    ground = helpers.link(bpy.data.objects.new("Bump", helpers.grid_mesh("Bump", 25, 25, 3.0)))
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    ground.jakobsen.collider.shape = 'MESH'
    _lift_keyed(ground, height, (8, 40))
    cloth = helpers.link(bpy.data.objects.new("Cloth", helpers.grid_mesh("Cloth", cloth_vertices, cloth_vertices,
                                                                          0.6)))
    cloth.location.z = 0.05
    cloth.jakobsen.enabled = True
    cloth.jakobsen.type = 'CLOTH'
    scene.frame_set(1)
    bpy.context.view_layer.update()
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    thickness = cloth.jakobsen.cloth.thickness
    for frame in range(1, 49):
        scene.frame_set(frame)
        x = helpers.evaluated_world(cloth)
        bump = helpers.evaluated_world(ground)
        under = _height_on_grid(bump, x, 25, 3.0)
        assert np.all(x[:, 2] > under + thickness - 2e-3), (frame, float((x[:, 2] - under).min()))
    # At the end it sits on the risen bump, carried up most of the way.
    assert x[:, 2].max() > 0.8 * height
    assert np.abs(x[:, 2] - (under + thickness)).min() < 0.02


def test_a_still_mesh_collider_with_a_modifier_stays_a_still_mesh(blender, helpers):
    from jakobsen_physics import scene_to_model

    ground = helpers.link(bpy.data.objects.new("Floor", helpers.grid_mesh("Floor", 4, 4, 2.0)))
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    ground.jakobsen.collider.shape = 'MESH'
    ground.modifiers.new("Weld", 'WELD')  # a modifier that changes nothing over time
    cloth = helpers.link(bpy.data.objects.new("Cloth", helpers.grid_mesh("Cloth", 4, 4, 0.5)))
    cloth.location.z = 0.2
    cloth.jakobsen.enabled = True
    cloth.jakobsen.type = 'CLOTH'
    sm = scene_to_model.build(bpy.context)
    (binding,) = [c for c in sm.colliders if c.object_name == "Floor"]
    assert not binding.animated
