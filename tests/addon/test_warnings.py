"""Warnings a user needs, in the bake's warnings (``scene_to_model.build(..).warnings``, which the
bake reports): a Collider whose fitted shape leaves out most of its mesh (and Shape: Mesh, which
collides with the faces), children of simulated bodies, a motor turning a wheel about another
axis than its axle.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import scene_to_model  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402
from jakobsen_engine import JakobsenError  # noqa: E402

from .test_connectors import _cube, _empty, _enable, _frames  # noqa: E402

pytestmark = pytest.mark.blender


# -- colliders: the fitted shape and Shape: Mesh ---------------------------------------------------

K_X, K_Y = 1.3, 0.9  # the bumps' wave numbers (1/m)


def _terrain(amplitude: float, *, name="Terrain", shape='AUTOMATIC', size=12.0, cuts=64):
    """A size x size grid with bumps z = A sin(K_X x) cos(K_Y y), a Collider."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts, y_subdivisions=cuts, size=size)
    ob = bpy.context.object
    ob.name = ob.data.name = name
    co = np.empty(len(ob.data.vertices) * 3, np.float32)
    ob.data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:, 2] = amplitude * np.sin(K_X * co[:, 0]) * np.cos(K_Y * co[:, 1])
    ob.data.vertices.foreach_set("co", co.ravel())
    ob.data.update()
    return _enable(ob, 'COLLIDER', shape=shape)


def _ball(name="Ball", location=(0.0, 0.0, 0.0), radius=0.2):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, location=location, segments=24, ring_count=12)
    ob = bpy.context.object
    ob.name = ob.data.name = name
    return _enable(ob, 'RIGID_BODY', collision_shape='SPHERE', mass=1.0)


def _fit_warnings(warnings, name):
    return [w for w in warnings if f"collider '{name}'" in w and "leaves out" in w]


@pytest.mark.parametrize("amplitude", [0.3, 1.0])
def test_bumpy_ground_fitted_as_a_box_is_named_with_shape_mesh_offered(blender, amplitude):
    _terrain(amplitude)
    _ball(location=(0.0, 0.0, 3.0))
    _frames(1, 4)
    warnings = _fit_warnings(scene_to_model.build(bpy.context).warnings, "Terrain")
    print(warnings)
    assert len(warnings) == 1
    assert "its automatic shape (box) leaves out much of its mesh" in warnings[0]
    assert "set Shape: Mesh" in warnings[0]


@pytest.mark.parametrize("make, shape", [
    (lambda: bpy.ops.mesh.primitive_plane_add(size=10.0), 'AUTOMATIC'),  # flat: a plane
    (lambda: bpy.ops.mesh.primitive_cube_add(size=2.0), 'AUTOMATIC'),  # a box
    (lambda: bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0), 'AUTOMATIC'),  # round: a sphere
    (lambda: bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=3.0), 'CAPSULE'),  # a pole
    (lambda: bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=3.0), 'BOX'),  # a pillar: close enough
])
def test_shapes_that_fit_their_mesh_are_not_warned_about(blender, make, shape):
    make()
    ob = _enable(bpy.context.object, 'COLLIDER', shape=shape)
    ob.name = "Obstacle"
    ob.location.z = -2.0
    _ball(location=(5.0, 5.0, 3.0))
    _frames(1, 4)
    assert not _fit_warnings(scene_to_model.build(bpy.context).warnings, "Obstacle")


@pytest.mark.parametrize("make, shape", [
    (lambda: bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0), 'BOX'),
    (lambda: bpy.ops.mesh.primitive_cube_add(size=2.0), 'SPHERE'),
    (lambda: bpy.ops.mesh.primitive_torus_add(), 'AUTOMATIC'),  # a box over its hole
    (lambda: bpy.ops.mesh.primitive_monkey_add(), 'CAPSULE'),
])
def test_shapes_that_leave_out_their_mesh_are_warned_about(blender, make, shape):
    make()
    ob = _enable(bpy.context.object, 'COLLIDER', shape=shape)
    ob.name = "Obstacle"
    _ball(location=(5.0, 5.0, 3.0))
    _frames(1, 4)
    assert len(_fit_warnings(scene_to_model.build(bpy.context).warnings, "Obstacle")) == 1


@pytest.mark.parametrize("valley", [(-math.pi / 2 / K_X, 0.0), (math.pi / 2 / K_X, math.pi / K_Y)])
def test_a_ball_in_a_valley_of_a_mesh_collider_rests_on_the_mesh_and_on_a_box_on_its_top(blender, valley):
    """A ball dropped into a valley (a minimum of the bumps, z = -A) of Shape: Mesh rests there,
    its centre at -A + r (within the facets' sag); with the fitted box it rests on the box's top,
    A + r: what the warning is about. The mesh collider is the one a Dynamic Off rigid body with
    Static Mesh makes (the same bake to the bit)."""
    amplitude, radius = 0.5, 0.2
    # (On a coarser grid, 0.19 m cells, the ball rests about 2 cm deep in the valley's facets.)
    ground = _terrain(amplitude, shape='MESH', cuts=128)
    ball = _ball(location=(*valley, amplitude + radius + 0.2))
    ball.jakobsen.rigid_body.linear_damping = ball.jakobsen.rigid_body.angular_damping = 0.95  # it settles
    _frames(1, 48)
    results = {}
    for setup in ("mesh", "box", "static mesh body"):
        if setup == "box":
            ground.jakobsen.collider.shape = 'BOX'
        elif setup == "static mesh body":
            _enable(ground, 'RIGID_BODY', dynamic='OFF', collision_shape='STATIC_MESH')
        job = BakeJob(bpy.context.scene.name)
        job.run()
        results[setup] = job.body_results("Ball")[:, :3, 3]
    rest = {k: v[-1] for k, v in results.items()}
    print(f"valley {valley}: ball at rest on the mesh at z = {rest['mesh'][2]:.4f} (-A + r = "
          f"{-amplitude + radius:.4f}), on the box at {rest['box'][2]:.4f} (A + r = {amplitude + radius:.4f})")
    assert rest["mesh"][2] == pytest.approx(-amplitude + radius, abs=0.003)
    assert np.linalg.norm(rest["mesh"][:2] - valley) < 0.05  # it stays in the valley
    assert rest["box"][2] == pytest.approx(amplitude + radius, abs=0.01)
    assert np.array_equal(results["mesh"], results["static mesh body"])


def test_shape_mesh_needs_faces(blender, helpers):
    mesh = bpy.data.meshes.new("Dots")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0.5)], [], [])
    ob = _enable(helpers.link(bpy.data.objects.new("Dots", mesh)), 'COLLIDER', shape='MESH')
    assert ob.jakobsen.collider.shape == 'MESH'
    _ball(location=(0.0, 0.0, 3.0))
    _frames(1, 4)
    with pytest.raises(JakobsenError, match=r"collider 'Dots': the mesh has no faces to collide with \(Shape: Mesh\)"):
        scene_to_model.build(bpy.context)
