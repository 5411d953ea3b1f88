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


@pytest.mark.parametrize("amplitude, size", [(0.3, 12.0), (1.0, 12.0), (0.05, 40.0), (0.1, 40.0)])
def test_bumpy_ground_fitted_as_a_box_is_named_with_shape_mesh_offered(blender, amplitude, size):
    # (A 40 m terrain with bumps of 5-10 cm went unwarned: the tolerance's floor was 0.2% of its
    # size, 8 cm, while a car rode the flat top of the box fitted to it.)
    _terrain(amplitude, size=size)
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


# -- children of simulated bodies -------------------------------------------------------------------

def _parented(child, parent):
    child.parent = parent
    child.matrix_parent_inverse = parent.matrix_world.inverted()
    return child


def _children_warnings(warnings, child, parent):
    return [w for w in warnings if f"'{child}': its parent '{parent}' is a simulated rigid body" in w]


@pytest.mark.parametrize("role, settings, warned", [
    ('RIGID_BODY', {}, False),  # keyed relative to its parent's baked motion (a lid on a crate)
    ('RIGID_BODY', {"dynamic": 'GHOST'}, False),
    ('RIGID_BODY', {"dynamic": 'OFF'}, True),  # simulated standing still, carried away on playback
    ('COLLIDER', {}, True),
])
def test_a_simulated_child_of_a_simulated_body_is_named_with_its_parent_unless_keyed(blender, role, settings,
                                                                                   warned):
    body = _cube("Body", size=1.0, location=(0.0, 0.0, 2.0), collision_shape='BOX')
    child = _cube("Part", size=0.3, location=(2.0, 0.0, 2.0), collision_shape='BOX')
    _enable(child, role, **settings)
    _parented(child, body)
    _frames(1, 4)
    warnings = _children_warnings(scene_to_model.build(bpy.context).warnings, "Part", "Body")
    print(warnings)
    assert len(warnings) == (1 if warned else 0)
    if warned:
        assert "carries it away" in warnings[0] and "Clear and Keep Transformation" in warnings[0]


def test_a_cloth_child_and_a_grandchild_through_an_empty_are_named(blender, helpers):
    body = _cube("Body", size=1.0, location=(0.0, 0.0, 2.0), collision_shape='BOX')
    group = _parented(_empty("Group", (1.0, 0.0, 2.0)), body)
    flag = helpers.link(bpy.data.objects.new("Flag", helpers.grid_mesh("Flag", 3, 3, 1.0)))
    _enable(flag, 'CLOTH')
    flag.location = (3.0, 0.0, 2.0)
    _parented(flag, group)
    _frames(1, 4)
    warnings = _children_warnings(scene_to_model.build(bpy.context).warnings, "Flag", "Body")
    assert len(warnings) == 1 and "baked shapes" in warnings[0]


def test_children_that_do_not_take_part_or_of_passive_parents_are_not_warned_about(blender):
    body = _cube("Body", size=1.0, location=(0.0, 0.0, 2.0), collision_shape='BOX')
    decoration = _parented(_cube("Decoration", size=0.2, location=(0.0, 0.0, 2.7)), body)
    decoration.jakobsen.enabled = False  # rides along with the body: what a C4D user parents a car's shell for
    stand = _cube("Stand", size=1.0, location=(3.0, 0.0, 0.5), dynamic='OFF', collision_shape='BOX')
    _parented(_cube("Lamp", size=0.2, location=(3.0, 0.0, 1.2), collision_shape='BOX'), stand)
    _frames(1, 4)
    assert not [w for w in scene_to_model.build(bpy.context).warnings if "is a simulated rigid body" in w]


def _plane_collider():
    bpy.ops.mesh.primitive_plane_add(size=40.0)
    return _enable(bpy.context.object, 'COLLIDER')


def _bake_and_compare_playback(obj):
    """Bake frames 1-36 over a ground collider; on playback ``obj`` is where the solver put it
    (and above the ground) on frames 1, 12, 24 and 36. Returns the job."""
    _plane_collider()
    _frames(1, 36)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    for frame in (1, 12, 24, 36):
        bpy.context.scene.frame_set(frame)
        np.testing.assert_allclose(np.array(obj.matrix_world), job.body_results(obj.name)[frame - 1], atol=1e-5)
        assert obj.matrix_world.translation.z > 0.0  # above the ground, not under it
    return job


@pytest.mark.parametrize("parent_scale, spin", [(1.0, 0.0), (0.5, 0.4)])
def test_a_dynamic_child_of_a_falling_body_plays_back_where_it_was_simulated(blender, parent_scale, spin):
    """An imported hierarchy (a lid on a crate, both rigid bodies): the child is keyed relative
    to its parent's baked motion, so on playback it is where it was simulated. (It was keyed in
    the parent's space as on the first frame, and the parent's keys moved it again: a child of a
    body that fell 0.7 m showed 0.7 m too low, under the ground.)"""
    body = _cube("Body", size=1.0, location=(0.0, 0.0, 2.0), collision_shape='BOX')
    body.rotation_euler = (spin, 0.5 * spin, 0.0)
    body.scale = (parent_scale,) * 3
    bpy.context.view_layer.update()
    child = _parented(_cube("Part", size=0.3, location=(2.0, 0.0, 2.5), collision_shape='BOX'), body)
    job = _bake_and_compare_playback(child)
    assert not _children_warnings(job.warnings, "Part", "Body")
    assert 2.0 - job.body_results("Body")[-1][2, 3] > 1.0  # the parent fell
    assert child.parent == body  # the hierarchy is kept


def test_a_dynamic_child_of_an_animated_empty_plays_back_where_it_was_simulated(blender):
    """A crate parented to an animated, scaled and turning Empty (a truck carrying it): keyed
    relative to where the Empty is on each frame, it plays back where it was simulated, and it
    is not called animated itself. (Keyed as if the Empty stood still, it was carried away on
    playback, with a warning.)"""
    truck = _empty("Truck", (0.0, 0.0, 0.5))
    truck.rotation_euler = (0.0, 0.0, 0.3)
    truck.scale = (2.0, 2.0, 2.0)
    truck.keyframe_insert("location", frame=1)
    truck.keyframe_insert("rotation_euler", frame=1)
    truck.location, truck.rotation_euler = (3.0, 1.0, 0.5), (0.0, 0.0, 1.2)
    truck.keyframe_insert("location", frame=36)
    truck.keyframe_insert("rotation_euler", frame=36)
    bpy.context.scene.frame_set(1)
    bpy.context.view_layer.update()
    crate = _parented(_cube("Crate", size=0.5, location=(0.5, 0.3, 3.0), collision_shape='BOX'), truck)
    job = _bake_and_compare_playback(crate)
    assert not [w for w in job.warnings if "Crate" in w], job.warnings
    assert job.body_results("Crate")[-1][2, 3] == pytest.approx(0.25, abs=0.01)  # it fell and rests


# -- a motor turning a wheel about another axis than its axle -----------------------------------

def _wheel_and_motor(motor_degrees: float):
    """A 0.3 m wheel whose axle is world X, held to the world by a Wheel Suspension (X along the
    axle, Z up), and a motor Empty at the hub whose Z is ``motor_degrees`` from the axle (in the
    horizontal plane)."""
    bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=0.2, location=(0.0, 0.0, 1.0),
                                        rotation=(0.0, math.pi / 2, 0.0))
    wheel = _enable(bpy.context.object, 'RIGID_BODY', collision_shape='CYLINDER', mass=10.0)
    wheel.name = "Wheel"
    _enable(_empty("Suspension", (0.0, 0.0, 1.0)), 'CONNECTOR', connector_type='WHEEL_SUSPENSION', object_b=wheel)
    # The Empty's Z onto world X (Y rotation 90 degrees), then turned about world Z.
    from mathutils import Euler, Matrix

    motor = _empty("Drive", (0.0, 0.0, 1.0))
    motor.rotation_euler = (Matrix.Rotation(math.radians(motor_degrees), 3, 'Z')
                            @ Euler((0.0, math.pi / 2, 0.0)).to_matrix()).to_euler()
    _enable(motor, 'MOTOR', object_a=wheel, mode='REGULATE_SPEED', target_angular_speed=10.0, max_torque=50.0)
    return wheel, motor


def _motor_warnings(warnings):
    return [w for w in warnings if w.startswith("motor 'Drive': its axis")]


@pytest.mark.parametrize("degrees", [0.0, 6.0, 25.0, 90.0, 160.0])
def test_a_motor_off_its_wheels_axle_is_named_with_the_angle(blender, degrees):
    _wheel_and_motor(degrees)
    _frames(1, 4)
    warnings = _motor_warnings(scene_to_model.build(bpy.context).warnings)
    off = min(degrees, 180.0 - degrees)  # either sign of the axle is the axle
    print(warnings)
    assert len(warnings) == (off > 10.0)
    if warnings:
        assert f"is {off:.0f} degrees from the axis 'Wheel' turns about" in warnings[0]
        assert "the X axis of the Wheel Suspension 'Suspension'" in warnings[0]


@pytest.mark.parametrize("degrees, drives", [(0.0, True), (90.0, False)])
def test_a_motor_along_the_axle_spins_the_wheel_and_one_across_it_does_not(blender, degrees, drives):
    """Why the warning matters: across the axle the connector holds the wheel against the motor."""
    wheel, motor = _wheel_and_motor(degrees)
    _frames(1, 13)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    r = job.body_results("Wheel")[:, :3, :3]
    # The wheel's spin about world X: its local Y (a radius) turning in the world YZ plane.
    radius = r[:, :, 1]
    spin = np.unwrap(np.arctan2(radius[:, 2], radius[:, 1]))
    rate = (spin[-1] - spin[-4]) / 3 * bpy.context.scene.render.fps
    print(f"motor {degrees} degrees off the axle: the wheel spins at {rate:.3f} rad/s about it (target 10)")
    if drives:
        assert rate == pytest.approx(10.0, rel=0.02)
    else:
        assert abs(rate) < 0.1


def _slab_on_connector(kind: str):
    """A 0.6 x 0.05 x 1 m slab of 15 kg held to the world by a ``kind`` connector at its edge,
    whose Empty is tilted off the world's axes; no gravity (the motor alone moves it). Returns
    (slab, connector, the axis the connector leaves free in the world)."""
    bpy.context.scene.gravity = (0.0, 0.0, 0.0)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.3, 0.0, 1.0), scale=(0.6, 0.05, 1.0))
    slab = bpy.context.object
    slab.name = "Slab"
    bpy.ops.object.transform_apply(scale=True)
    _enable(slab, 'RIGID_BODY', collision_shape='BOX', mass=15.0)
    connector = _enable(_empty("Joint", (0.0, 0.0, 1.0), rotation=(0.3, 0.2, 0.4)), 'CONNECTOR',
                        connector_type=kind, object_b=slab)
    bpy.context.view_layer.update()
    return slab, connector, np.array(connector.matrix_world.to_3x3().col[2])


@pytest.mark.parametrize("kind, motor_type", [('HINGE', 'ANGULAR'), ('TWIST_SLIDER', 'ANGULAR'),
                                              ('SLIDER', 'LINEAR'), ('TWIST_SLIDER', 'LINEAR')])
def test_add_motor_lines_the_motor_up_with_what_its_connector_leaves_free_and_it_drives_the_body(blender, kind,
                                                                                                 motor_type):
    """Add Motor with a hinged door or a drawer on a slider active: its Empty's Z lies along the
    hinge's (or slider's) Z, and the body turns (or slides) at the motor's target speed. Before,
    only a Wheel Suspension was looked at: a door's motor was put across the slab and a drawer's
    pushed up, and neither moved, silently (found by the add-on probe)."""
    slab, connector, free = _slab_on_connector(kind)
    bpy.ops.object.select_all(action='DESELECT')
    slab.select_set(True)
    bpy.context.view_layer.objects.active = slab
    assert bpy.ops.jakobsen.add_motor(motor_type=motor_type) == {'FINISHED'}
    motor = bpy.context.view_layer.objects.active
    bpy.context.view_layer.update()
    axis = np.array(motor.matrix_world.to_3x3().col[2])
    assert abs(float(axis @ free)) > 0.9999, (axis, free)
    m = motor.jakobsen.motor
    m.mode, m.target_angular_speed, m.target_linear_speed = 'REGULATE_SPEED', 2.0, 0.5
    _frames(1, 25)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    assert not _motor_warnings_of(job.warnings, motor.name), job.warnings
    poses = job.body_results("Slab")
    fps = bpy.context.scene.render.fps
    if motor_type == 'ANGULAR':  # the turn about the free axis over the last 4 frames
        a, b = poses[-5][:3, :3], poses[-1][:3, :3]
        turn = _rotation_vector(b @ a.T)
        assert float(abs(turn @ free)) * fps / 4 == pytest.approx(2.0, rel=0.03)
    else:
        slide = (poses[-1][:3, 3] - poses[-5][:3, 3]) @ free
        assert float(abs(slide)) * fps / 4 == pytest.approx(0.5, rel=0.03)


def _rotation_vector(r: np.ndarray) -> np.ndarray:
    """The rotation vector (axis times angle) of a 3 x 3 rotation matrix."""
    angle = math.acos(max(-1.0, min(1.0, (float(np.trace(r)) - 1.0) / 2.0)))
    if angle < 1e-12:
        return np.zeros(3)
    w = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    return w / (2.0 * math.sin(angle)) * angle


def _motor_warnings_of(warnings, name):
    return [w for w in warnings if w.startswith(f"motor '{name}': its axis")]


@pytest.mark.parametrize("degrees", [0.0, 25.0, 90.0])
@pytest.mark.parametrize("kind, motor_type", [('HINGE', 'ANGULAR'), ('SLIDER', 'LINEAR')])
def test_a_motor_off_the_axis_its_hinge_or_slider_leaves_free_is_named_with_the_angle(blender, kind, motor_type,
                                                                                      degrees):
    slab, connector, free = _slab_on_connector(kind)
    from mathutils import Matrix

    motor = _empty("Drive", (0.0, 0.0, 1.0))
    frame = connector.matrix_world.to_3x3() @ Matrix.Rotation(math.radians(degrees), 3, 'X')
    motor.matrix_world = frame.to_4x4()
    motor.location = (0.0, 0.0, 1.0)
    _enable(motor, 'MOTOR', object_a=slab, motor_type=motor_type)
    _frames(1, 4)
    bpy.context.view_layer.update()
    warnings = _motor_warnings_of(scene_to_model.build(bpy.context).warnings, "Drive")
    assert len(warnings) == (degrees > 10.0), warnings
    if warnings:
        moves = 'turns about' if motor_type == 'ANGULAR' else 'slides along'
        assert f"is {degrees:.0f} degrees from the axis 'Slab' {moves}" in warnings[0]
        assert f"the Z axis of the {kind.title()} 'Joint'" in warnings[0]


# -- a body set spinning faster than a substep resolves -------------------------------------------

def test_a_body_set_spinning_faster_than_the_substeps_resolve_is_named_in_the_bakes_warnings(blender):
    """Initial Velocity's Angular at 400 rad/s is 1.67 rad a substep at 24 fps and 10 substeps
    (a top spun that fast gains spin on the ground and flies off): the bake names the body and
    the substeps that resolve it; 100 rad/s is not warned about."""
    bpy.context.scene.render.fps = 24
    for name, spin, x in (("Spinner", 400.0, 0.0), ("Calm", 100.0, 2.0)):
        _cube(name, size=0.5, location=(x, 0.0, 2.0), collision_shape='BOX', use_initial_velocity=True,
              initial_angular_velocity=(0.0, 0.0, spin))
    _frames(1, 3)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    spin = [w for w in job.warnings if "rad a substep" in w]
    assert len(spin) == 1 and "'Spinner'" in spin[0]
    assert f"use at least {math.ceil(400.0 / 24)} substeps" in spin[0]  # a radian a substep at most


# -- cloth split along seams ---------------------------------------------------------------------

@pytest.mark.parametrize("seam_axis", [0, 1])
def test_a_cloth_split_along_a_seam_is_named_and_its_loose_piece_falls(blender, seam_axis):
    """A curtain pinned along its top and split across (seam_axis 1: its lower half is a loose
    piece) or down its middle (0: both halves pinned), as a glTF import splits a mesh along a UV
    seam: the bake names the split, and a piece with no pin falls; one with pins hangs."""
    import bmesh
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=12, y_subdivisions=12, size=1.0, location=(0.0, 0.0, 1.5),
                                    rotation=(math.pi / 2, 0.0, 0.0))
    ob = bpy.context.object
    ob.name = "Curtain"
    bm = bmesh.new()
    bm.from_mesh(ob.data)
    seam = [e for e in bm.edges if all(abs(v.co[seam_axis]) < 1e-6 for v in e.verts)]
    bmesh.ops.split_edges(bm, edges=seam)
    bm.to_mesh(ob.data)
    bm.free()
    co = np.empty(len(ob.data.vertices) * 3)
    ob.data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    ob.vertex_groups.new(name="Top").add(np.flatnonzero(co[:, 1] > 0.49).tolist(), 1.0, 'REPLACE')
    _enable(ob, 'CLOTH', pin_group="Top")
    _frames(1, 12)
    job = BakeJob(bpy.context.scene.name)
    job.start(bpy.context)
    assert any("'Curtain'" in w and "lie exactly on others" in w and "Merge by Distance" in w
               for w in job.warnings), job.warnings
    while job.step():
        pass
    job.finish()
    bpy.context.scene.frame_set(12)
    z = np.array([(ob.matrix_world @ v.co).z for v in ob.data.shape_keys.key_blocks[-1].data])
    lower = co[:, 1] < -0.01
    drop = (1.5 + co[lower, 1]) - z[lower]  # how far the lower half fell
    if seam_axis == 1:
        assert drop.min() > 0.2, drop.min()  # a loose piece: falling (0.5 m in free fall by frame 12)
    else:
        assert np.abs(drop).max() < 0.02, np.abs(drop).max()  # pinned halves side by side hang still


# -- objects Blender does not evaluate -------------------------------------------------------------

def _disable_in_viewports(obj, how):
    """Disable ``obj`` in viewports (the screen icon) on itself ("object") or on a collection it is
    moved into ("collection")."""
    if how == "object":
        obj.hide_viewport = True
        return
    scene = bpy.context.scene
    props = bpy.data.collections.new("Props")
    scene.collection.children.link(props)
    scene.collection.objects.unlink(obj)
    props.objects.link(obj)
    props.hide_viewport = True


@pytest.mark.parametrize("how", ["object", "collection", "eye"])
def test_an_animated_collider_disabled_in_viewports_is_named(blender, how):
    """A keyed pusher disabled in viewports (on itself or its collection) is not played by Blender
    while the bake reads it, so it stood still and pushed nothing, silently: the bake names it.
    Hidden with the eye it is played, pushes the box, and nothing is said."""
    scene = bpy.context.scene
    _frames(1, 36)
    pusher = _cube("Pusher", location=(-2.0, 0.0, 0.25), size=0.5)
    pusher.keyframe_insert("location", frame=1)
    pusher.location.x = 2.0
    pusher.keyframe_insert("location", frame=36)
    _enable(pusher, 'RIGID_BODY', dynamic='OFF')
    _enable(_cube("Box", location=(0.0, 0.0, 0.25), size=0.5), 'RIGID_BODY')
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    _enable(bpy.context.object, 'COLLIDER')
    if how in ("object", "collection"):
        _disable_in_viewports(pusher, how)
    else:
        pusher.hide_set(True)
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Pusher'" in w and "disabled in viewports" in w]
    assert bool(named) == (how != "eye"), named
    if how == "eye":
        assert bpy.ops.jakobsen.bake() == {'FINISHED'}
        scene.frame_set(36)
        assert bpy.data.objects["Box"].matrix_world.translation.x > 1.0  # pushed along


@pytest.mark.parametrize("path, index, muted", [("location", 0, False), ("rotation_euler", 2, False),
                                                ("location", 0, True), ("scale", 1, False)])
def test_a_driver_on_a_baked_bodys_location_or_rotation_is_named(blender, path, index, muted):
    """A driver on the Location or Rotation of a body the bake keys replaces the keys on playback
    (a crate sliding down a slope, its Location X driven, played back held at the driver's value,
    silently): named, unless it is muted; one on its Scale (not keyed) is not."""
    crate = _cube("Crate", location=(0.0, 0.0, 2.0), size=0.5)
    fcurve = crate.driver_add(path, index)
    fcurve.driver.expression = "1.0" if path == "scale" else "0.0"
    fcurve.mute = muted
    _frames(1, 4)
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Crate'" in w and "drivers" in w]
    assert bool(named) == (not muted and path != "scale"), named
    if named:
        assert f"{path}[{index}]" in named[0]


@pytest.mark.parametrize("locked", [True, False])
def test_a_cloth_with_its_shape_key_lock_on_is_named(blender, locked):
    """Shape Key Lock (the pin) shows only the active shape key: the baked cloth played back still,
    silently. The bake names it; unpinned, nothing is said."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=5, y_subdivisions=5, size=1.0, location=(0.0, 0.0, 1.0))
    sheet = bpy.context.object
    sheet.name = "Sheet"
    _enable(sheet, 'CLOTH')
    sheet.show_only_shape_key = locked
    _frames(1, 4)
    job = BakeJob(bpy.context.scene.name)
    job.run(bpy.context)
    named = [w for w in job.warnings if "'Sheet'" in w and "Shape Key Lock" in w]
    assert bool(named) == locked, job.warnings


@pytest.mark.parametrize("shape", ['PLANE', 'BOX', 'MESH'])
@pytest.mark.parametrize("thickness, gap, warned", [(0.1, 0.01, True), (0.3, 0.1, True), (0.005, 0.0, False),
                                                    (0.02, 0.012, False), (0.005, -0.03, True)])
def test_a_cloth_starting_within_its_thickness_of_a_collider_or_inside_it_is_named(blender, shape, thickness,
                                                                                   gap, warned):
    """The first substep moves such a cloth out at once: it jumps on the first frame (a cloth of
    10 cm Thickness modelled 1 cm over a table leapt 9 cm, silently). A cloth modelled touching the
    table with a few millimetres of Thickness is not named."""
    if shape == 'PLANE':  # (a plane through the object's centre: a flat top)
        bpy.ops.mesh.primitive_plane_add(size=3.0, location=(0.0, 0.0, 1.0))
    else:
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.5), scale=(3.0, 3.0, 1.0))
    table = bpy.context.object
    table.name = "Table"
    _enable(table, 'COLLIDER', shape=shape)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=1.0, location=(0.0, 0.0, 1.0 + gap))
    sheet = bpy.context.object
    sheet.name = "Sheet"
    _enable(sheet, 'CLOTH', thickness=thickness)
    _frames(1, 3)
    job = BakeJob(bpy.context.scene.name)
    job.run(bpy.context)
    if shape == 'PLANE' and gap < 0.0:
        # A flat collider faces what starts nearest it (see the test below): the cloth under the
        # plane is in front of it, so the table is named as turned round, and the cloth is not.
        assert any("'Table': its faces point away" in w for w in job.warnings), job.warnings
        warned = False
    named = [w for w in job.warnings if "cloth 'Sheet'" in w and "'Table'" in w]
    assert bool(named) == warned, job.warnings
    if warned:
        assert ("inside 'Table'" in named[0]) == (gap < 0.0), named


# -- colliders turned over or mirrored -------------------------------------------------------------

@pytest.mark.parametrize("role, shape", [('COLLIDER', 'MESH'), ('COLLIDER', 'BOX'), ('RIGID_BODY', 'STATIC_MESH')])
def test_a_box_lands_on_a_mirrored_table_top(blender, role, shape):
    """A table top mirrored by a negative scale (as imports and the Mirror tool leave it): a
    mirroring matrix reverses the turn of the faces' corners in the world, and read as they were,
    a Mesh collider was inside out (a box rested inside the slab, 5 cm low; a cloth fell into
    it). A box dropped on it lands on the top, mirrored or not."""
    _frames(1, 30)
    tops = []
    for k, mirror in enumerate((1.0, -1.0)):
        top = _cube(f"Top {k}", size=1.0, location=(4.0 * k, 0.0, 0.725))
        top.scale = (1.2 * mirror, 0.8, 0.05)  # its upper face at 0.75 m
        if role == 'COLLIDER':
            _enable(top, 'COLLIDER', shape=shape)
        else:
            _enable(top, 'RIGID_BODY', dynamic='OFF', collision_shape=shape)
        _cube(f"Box {k}", size=0.2, location=(4.0 * k + 0.1, 0.05, 1.0))
        tops.append(top)
    bpy.context.view_layer.update()
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(30)
    for k in range(2):
        z = bpy.data.objects[f"Box {k}"].matrix_world.translation.z
        assert abs(z - 0.85) < 0.005, (k, z)  # resting on the top, 0.75 + 0.1


@pytest.mark.parametrize("shape", ['PLANE', 'AUTOMATIC', 'MESH', 'RIGID_STATIC'])
@pytest.mark.parametrize("how", ["plain", "scale z -1", "turned over"])
def test_a_ground_whose_faces_point_down_still_holds_what_falls_on_it(blender, shape, how):
    """A ground plane whose faces point down (turned over, or mirrored on Z: the world vertices
    the same as a plain one's) collides on the side where what moves starts, and the bake says
    so, naming it. Before, a plane collided on its front only: the box fell through it, silently
    (Blender's Cloth and Rigid Body hold on either side)."""
    _frames(1, 30)
    bpy.ops.mesh.primitive_plane_add(size=6.0)
    ground = bpy.context.object
    ground.name = "Ground"
    if how == "scale z -1":
        ground.scale.z = -1.0
    elif how == "turned over":
        ground.rotation_euler.x = math.pi
    if shape == 'RIGID_STATIC':
        _enable(ground, 'RIGID_BODY', dynamic='OFF')
    else:
        _enable(ground, 'COLLIDER', shape=shape)
    _cube("Box", size=0.5, location=(0.3, -0.2, 1.0))
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Ground'" in w and "point away" in w]
    assert bool(named) == (how != "plain"), named
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(30)
    z = bpy.data.objects["Box"].matrix_world.translation.z
    assert abs(z - 0.25) < 0.005, z  # resting on the ground


@pytest.mark.parametrize("ground", ["bowl", "bumps"])
@pytest.mark.parametrize("flipped", [False, True])
def test_an_open_curved_mesh_whose_faces_point_away_still_holds_what_falls_on_it(blender, ground, flipped):
    """An open curved Mesh collider (a bowl cut from a UV sphere, whose faces point out of it; a
    bumpy terrain with its normals flipped by an import) collides on the side where what moves
    starts, and the bake says so, naming it. Before, only a flat one was turned round: a ball
    fell through the bowl to z = -12 m, silently."""
    _frames(1, 36)
    if ground == "bowl":
        bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, segments=32, ring_count=16, location=(0.0, 0.0, 1.0))
        obj = bpy.context.object
        # Keep the lower half: a bowl open at the top, its faces pointing out (down and away).
        co = np.array([tuple(v.co) for v in obj.data.vertices])
        bpy.ops.object.mode_set(mode='EDIT')
        bpy.ops.mesh.select_all(action='DESELECT')
        bpy.ops.object.mode_set(mode='OBJECT')
        obj.data.vertices.foreach_set("select", (co[:, 2] > 1e-6).tolist())
        bpy.ops.object.mode_set(mode='EDIT')
        bpy.ops.mesh.delete(type='VERT')
        bpy.ops.object.mode_set(mode='OBJECT')
        drop, rest = (0.0, 0.0, 1.2), 0.2  # the ball's centre ends a radius above the bottom (z 0)
    else:
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=24, y_subdivisions=24, size=6.0)
        obj = bpy.context.object
        co = np.array([tuple(v.co) for v in obj.data.vertices])
        co[:, 2] = 0.05 * np.sin(3.0 * co[:, 0]) * np.cos(2.0 * co[:, 1])
        obj.data.vertices.foreach_set("co", co.ravel())
        drop, rest = (0.3, -0.2, 1.0), None
    obj.name = "Ground"
    if flipped:
        obj.data.flip_normals()
    _enable(obj, 'COLLIDER', shape='MESH')
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=drop)
    _enable(bpy.context.object, 'RIGID_BODY', collision_shape='SPHERE', mass=1.0)
    bpy.context.object.name = "Ball"
    bpy.context.view_layer.update()
    # The bowl's faces point out of it (away from the ball) unless flipped; the terrain's up unless flipped.
    away = flipped if ground == "bumps" else not flipped
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Ground'" in w and "point away" in w]
    assert bool(named) == away, named
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(36)
    z = bpy.data.objects["Ball"].matrix_world.translation.z
    if rest is not None:
        assert abs(z - rest) < 0.02, z  # in the bottom of the bowl
    else:
        assert 0.1 < z < 0.3, z  # on the bumps (0.2 above a ground within 5 cm of z = 0)


@pytest.mark.parametrize("what, flipped", [("ball falls on it", False), ("ball falls on it", True),
                                           ("cloth falls on it", False), ("cloth falls on it", True),
                                           ("ball inside it", False)])
@pytest.mark.parametrize("deforming", [False, True])
def test_a_closed_mesh_collider_with_its_faces_inwards_holds_what_starts_outside_and_inside(blender, what,
                                                                                            flipped, deforming):
    """A closed Mesh collider is solid behind its faces. With its normals flipped (as imports
    leave them) a cloth dropped on such a ball sank into it, silently; and a deforming one (a
    Wave, an armature) was never turned round at all: a cloth fell through a flipped ground to
    z = -2 m (both found by the add-on probe). Turned round, named, when what moves starts
    outside it; left as it is when what moves starts inside (a container whose faces point in).
    A closed mesh whose faces point out is never turned: a cape starts around a character's body
    (its centre inside it), which must stay solid."""
    _frames(1, 36)
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, 1.0))
    block = bpy.context.object
    block.name = "Block"
    inside = what == "ball inside it"
    # The block's faces point out unless flipped; a container's point in unless flipped.
    if flipped != inside:
        block.data.flip_normals()
    if deforming:  # a slow swell: its vertices move every frame (a shape key keyed to grow 1%)
        block.shape_key_add(name="Basis")
        swell = block.shape_key_add(name="Swell")
        co = np.array([tuple(v.co) for v in swell.data]) * 1.01
        swell.data.foreach_set("co", co.ravel())
        swell.value = 0.0
        swell.keyframe_insert("value", frame=1)
        swell.value = 1.0
        swell.keyframe_insert("value", frame=36)
    _enable(block, 'COLLIDER', shape='MESH')
    if what == "cloth falls on it":
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=8, y_subdivisions=8, size=1.0, location=(0.0, 0.0, 2.3))
        mover = bpy.context.object
        mover.name = "Sheet"
        _enable(mover, 'CLOTH')
    else:
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0.0, 0.0, 1.0 if inside else 2.5))
        mover = bpy.context.object
        mover.name = "Ball"
        _enable(mover, 'RIGID_BODY', collision_shape='SPHERE', mass=1.0)
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Block'" in w and "point away" in w]
    assert bool(named) == flipped, named
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(36)
    if inside:  # on the container's floor (z 0 to 0.01 as it swells), a radius above it
        z = mover.matrix_world.translation.z
        assert abs(z - 0.2) < 0.03, z
    elif what == "ball falls on it":  # on the top (z 2 to 2.02)
        z = mover.matrix_world.translation.z
        assert abs(z - 2.2) < 0.03, z
    else:  # the cloth on the top, none of it inside
        ev = mover.evaluated_get(bpy.context.evaluated_depsgraph_get())
        co = np.array([tuple(ev.matrix_world @ v.co) for v in ev.data.vertices])
        within = np.all(np.abs(co[:, :2]) < 0.99, axis=1) & (co[:, 2] < 1.99) & (co[:, 2] > 0.01)
        assert not np.any(within), co[within][:3]
        assert co[:, 2].max() > 2.0


# -- partial pins on a moving cloth ----------------------------------------------------------------

@pytest.mark.parametrize("weights, output", [((0.8, 0.4), 'SHAPE_KEYS'), ((1.0, 0.5), 'SHAPE_KEYS'),
                                             ((0.6, 0.6), 'PC2')])
def test_a_moving_cloth_s_partly_pinned_vertices_follow_it(blender, tmp_path, weights, output):
    """A curtain keyed to move 1 m along X and 0.3 m up, its pin group painted with a gradient
    (``weights`` on its top two rows): its partly pinned vertices are pulled towards where the
    object takes them, as Blender's Cloth pulls its pin goals, so once it stops it hangs as a
    twin that never moved, moved along. (Before, they were pulled towards where they were on the
    first frame: rows weighted 0.75-0.25 trailed the object by 0.74-0.89 m, and the bake warned.)"""
    from .conftest import evaluated_world
    from . import fault_scenes as fs

    fs.frames(1, 72)
    curtains = []
    for k, moving in enumerate((False, True)):
        c = fs.sheet(f"Curtain {k}", n=9, size=1.0, location=(3.0 * k, 0.0, 1.5))
        c.rotation_euler.x = math.pi / 2  # hanging in XZ; the mesh's +Y is up
        co = np.array([tuple(v.co) for v in c.data.vertices])
        row = np.round((co[:, 1] + 0.5) * 8).astype(int)  # 8: the top row
        group = c.vertex_groups.new(name="Pins")
        for r, w in zip((8, 7), weights):
            group.add(np.flatnonzero(row == r).tolist(), w, 'REPLACE')
        c.jakobsen.cloth.pin_group = "Pins"
        if moving:
            c.keyframe_insert("location", frame=1)
            c.location = (4.0, 0.0, 1.8)
            c.keyframe_insert("location", frame=25)
        curtains.append((c, row))
    fs.frames(1, 72)
    warned = [w for w in scene_to_model.build(bpy.context).warnings if "first frame" in w]
    assert not warned, warned
    bpy.context.scene.jakobsen.output = output
    bpy.context.scene.jakobsen.cache_directory = str(tmp_path / "cache")
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(72)
    (still, row), (moved, _) = [(evaluated_world(c), r) for c, r in curtains]
    pulled = row >= 7
    assert np.abs(moved[pulled] - (still[pulled] + [4.0, 0.0, 0.3])).max() < 2e-3
    assert np.abs(moved.mean(axis=0) - (still.mean(axis=0) + [4.0, 0.0, 0.3])).max() < 5e-3


@pytest.mark.parametrize("levels, render, shown", [(1, 2, (True, True)), (1, 1, (True, True)), (2, 2, (True, False)),
                                                   (1, 2, (False, False))])
def test_a_pc2_bake_names_a_modifier_that_renders_another_mesh(blender, tmp_path, levels, render, shown):
    """A point cache holds the vertices the bake read, the viewport's; a Subdivision Surface that
    renders at another level (or a modifier on in the viewport only) gives the render another
    vertex count, Blender's Mesh Cache then plays nothing and the render showed the cloth
    unmoved, silently. The bake names the modifier when the render's mesh differs."""
    from . import fault_scenes as fs

    fs.frames(1, 3)
    cloth = fs.sheet("Cloth", n=5, size=1.0, location=(0.0, 0.0, 1.0))
    mod = cloth.modifiers.new("Smooth It", 'SUBSURF')
    mod.levels, mod.render_levels = levels, render
    mod.show_viewport, mod.show_render = shown
    scene = bpy.context.scene
    scene.jakobsen.output = 'PC2'
    scene.jakobsen.cache_directory = str(tmp_path / "cache")
    job = BakeJob(scene.name)
    job.start()
    named = [w for w in job.warnings if "'Smooth It'" in w and "'Cloth'" in w]
    differs = shown[0] != shown[1] or (shown[0] and levels != render)
    assert bool(named) == differs, (job.warnings, named)


@pytest.mark.parametrize("lower_on, upper_on", [(False, False), (True, False), (True, True)])
def test_a_cloth_dropped_on_another_lands_on_it_with_self_collision_on_both(blender, lower_on, upper_on):
    """Two cloth objects, one dropped on the other lying on the ground: with Self Collision on both
    the upper one lands on the lower one, its self distance above it; otherwise they pass through
    each other, and the bake says so, naming both (before, they ended in one plane, silently,
    with Self Collision on both too)."""
    from .conftest import evaluated_world
    from . import fault_scenes as fs

    fs.frames(1, 36)
    fs.ground("Ground", size=4.0)
    lower = fs.sheet("Lower", n=13, size=1.0, location=(0.0, 0.0, 0.1))
    upper = fs.sheet("Upper", n=9, size=0.6, location=(0.05, 0.05, 0.4))
    for obj, on in ((lower, lower_on), (upper, upper_on)):
        obj.jakobsen.cloth.use_self_collision = on
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Lower'" in w and "'Upper'" in w]
    both = lower_on and upper_on
    assert bool(named) == (not both), named
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(36)
    gap = evaluated_world(upper)[:, 2].min() - evaluated_world(lower)[:, 2].max()
    if both:
        distance = upper.jakobsen.cloth.self_distance
        assert gap > 0.9 * distance, gap
    else:
        assert gap < 1e-3, gap  # through: in the lower one's plane


def test_an_object_with_blenders_collision_modifier_but_not_a_collider_is_named(blender):
    """Blender's Collision modifier makes an object a collider for Blender's Cloth; here it does
    nothing (a cloth fell through such a table, silently): the bake names the object, and says
    to make it a Collider. One that is a Collider too is not named."""
    from . import fault_scenes as fs

    fs.frames(1, 3)
    fs.sheet("Cloth", n=4, size=1.0, location=(0.0, 0.0, 1.0))
    table = fs.mesh_object("Table", *fs.grid_data(2, 2.0))
    table.modifiers.new("Collision", 'COLLISION')
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Table'" in w and "Collision modifier" in w]
    assert len(named) == 1, named
    fs.enable(table, 'COLLIDER')
    assert not [w for w in scene_to_model.build(bpy.context).warnings if "'Table'" in w and "Collision modifier" in w]


@pytest.mark.parametrize("how", ["object", "collection", "eye", "shown"])
def test_a_collider_disabled_in_viewports_is_left_out(blender, how):
    """A Collider turned off with the screen icon (on itself or its collection) is left out, as
    Blender's physics leaves it out, and the bake says so (it went on colliding); hidden with the
    eye it still collides, as in Blender."""
    scene = bpy.context.scene
    _frames(1, 24)
    bpy.ops.mesh.primitive_plane_add(size=6.0)
    ground = _enable(bpy.context.object, 'COLLIDER')
    ground.name = "Ground"
    _cube("Box", size=0.5, location=(0.0, 0.0, 1.0))
    if how in ("object", "collection"):
        _disable_in_viewports(ground, how)
    elif how == "eye":
        ground.hide_set(True)
    left_out = how in ("object", "collection")
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Ground'" in w and "left out" in w]
    assert bool(named) == left_out, named
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    scene.frame_set(24)
    z = bpy.data.objects["Box"].matrix_world.translation.z
    assert (z < -0.5) if left_out else abs(z - 0.25) < 0.005, z


@pytest.mark.parametrize("lift", [(0.2, 0.0, 0.3), (0.0, -0.4, 0.1)])
def test_a_users_keyed_shape_key_plays_once_under_a_shape_key_bake(blender, helpers, lift):
    """A cloth whose own keyed shape key lifts its pinned row: the bake follows the key (its pins
    ride on it), and while baked the key is muted, since the baked shapes already hold what it did
    (played on top, it lifted the row twice: one extra Lift at its full value). Free Bake unmutes
    it and puts the scene back exactly as it was."""
    from .conftest import evaluated_world
    from . import fault_scenes as fs

    fs.frames(1, 20)
    cloth = fs.sheet("Cloth", n=7, size=1.0, location=(0.0, 0.0, 1.5))
    co = np.array([tuple(v.co) for v in cloth.data.vertices])
    top = co[:, 1] > 0.49
    group = cloth.vertex_groups.new(name="Pins")
    group.add(np.flatnonzero(top).tolist(), 1.0, 'REPLACE')
    cloth.jakobsen.cloth.pin_group = "Pins"
    cloth.shape_key_add(name="Basis", from_mix=False)
    key = cloth.shape_key_add(name="Lift", from_mix=False)
    moved = co + np.where(top[:, None], np.asarray(lift), 0.0)
    key.data.foreach_set("co", moved.astype(np.float32).ravel())
    key.value = 0.0
    key.keyframe_insert("value", frame=1)
    key.value = 1.0
    key.keyframe_insert("value", frame=20)
    bpy.context.scene.frame_set(1)
    before = helpers.snapshot()
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert cloth.data.shape_keys.key_blocks["Lift"].mute
    for frame in (10, 20):
        bpy.context.scene.frame_set(frame)
        value = cloth.data.shape_keys.key_blocks["Lift"].value
        shown = evaluated_world(cloth)[top]
        expected = (co[top] + value * np.asarray(lift)) + (0.0, 0.0, 1.5)
        assert np.abs(shown - expected).max() < 1e-3, (frame, np.abs(shown - expected).max())
    bpy.context.scene.frame_set(1)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert not cloth.data.shape_keys.key_blocks["Lift"].mute
    assert not fs.differences(before, helpers.snapshot())


@pytest.mark.parametrize("limits", [(-180.0, 180.0), (-90.0, 180.0), (-180.0, 0.0)])
def test_hinge_limits_of_180_degrees_typed_in_the_panel_bake(blender, limits):
    """180 degrees typed into the panel is stored in single precision, a hair above pi: the bake
    refused it as beyond 180 (limits of 179.9 passed). Now within that rounding it is 180."""
    _frames(1, 3)
    door = _cube("Door", size=0.5, location=(0.5, 0.0, 1.0))
    hinge = _empty("Hinge", location=(0.0, 0.0, 1.0))
    _enable(hinge, 'CONNECTOR', connector_type='HINGE', object_b=door, use_angular_limit=True,
            angle_min=math.radians(limits[0]), angle_max=math.radians(limits[1]))
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}


@pytest.mark.parametrize("role, a_off, b_off, idle", [
    ('CONNECTOR', True, True, True), ('CONNECTOR', True, False, False), ('CONNECTOR', True, None, True),
    ('SPRING', True, True, True), ('SPRING', False, None, False), ('MOTOR', True, None, True),
    ('MOTOR', False, True, False), ('MOTOR', True, False, False)])
def test_a_connector_spring_or_motor_that_cannot_act_is_named(blender, role, a_off, b_off, idle):
    """Between two bodies that follow their animation (Dynamic Off, or the world: None) nothing
    can act: it baked without a word; now the bake names it. A motor whose driven body has
    Dynamic Off drives its Object B by the reaction (it was named as doing nothing while it spun
    a wheel at its target speed: found by the add-on probe)."""
    _frames(1, 3)
    _cube("Falling", size=0.5, location=(5.0, 0.0, 1.0))  # something to simulate
    a = _cube("A", size=0.5, location=(0.0, 0.0, 1.0), dynamic='OFF' if a_off else 'ON')
    b = None if b_off is None else _cube("B", size=0.5, location=(1.0, 0.0, 1.0), dynamic='OFF' if b_off else 'ON')
    settings = dict(object_a=a, object_b=b)
    if role == 'CONNECTOR':
        settings["connector_type"] = 'HINGE'
    _enable(_empty("Link", location=(0.5, 0.0, 1.0)), role, **settings)
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Link'" in w and "does nothing" in w]
    assert bool(named) == idle, named


def test_a_connector_to_a_body_in_an_excluded_collection_says_so(blender):
    """A connector's Object B enabled as a rigid body but in a collection excluded from the view
    layer: the refusal said to enable Jakobsen Physics on it, which it had; it names the cause."""
    scene = bpy.context.scene
    _frames(1, 3)
    _cube("Frame", size=0.5, location=(0.0, 0.0, 1.0))
    door = _cube("Door", size=0.5, location=(1.0, 0.0, 1.0))
    props = bpy.data.collections.new("Doors")
    scene.collection.children.link(props)
    scene.collection.objects.unlink(door)
    props.objects.link(door)
    bpy.context.view_layer.layer_collection.children["Doors"].exclude = True
    _enable(_empty("Hinge", location=(0.5, 0.0, 1.0)), 'CONNECTOR', connector_type='HINGE',
            object_a=bpy.data.objects["Frame"], object_b=door)
    with pytest.raises(JakobsenError, match="'Door' is a rigid body but not in the view layer"):
        scene_to_model.build(bpy.context)


@pytest.mark.parametrize("scale, inverse, warned", [((1.0, 0.6, 0.5), False, True), ((1.0, 0.6, 0.5), True, False),
                                                    ((2.0, 2.0, 2.0), False, False)])
def test_a_rigid_child_of_an_unevenly_scaled_rigid_parent_is_named(blender, scale, inverse, warned):
    """A lid parented to a crate whose scale is uneven and not applied (an import): keyed in the
    crate's frame, the lid is drawn sheared and off its hinge wherever it turns against the crate
    (9 degrees off square, 4 cm off its hinge), silently. Named; not when the parent inverse takes
    the scale out, nor for an even scale."""
    _frames(1, 3)
    crate = _cube("Crate", size=1.0, location=(0.0, 0.0, 1.0))
    crate.scale = scale
    bpy.context.view_layer.update()
    lid = _cube("Lid", size=0.3, location=(0.0, 0.0, 2.0))
    lid.parent = crate
    if inverse:
        lid.matrix_parent_inverse = crate.matrix_world.inverted()
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Lid'" in w and "scaled unevenly" in w]
    assert bool(named) == warned, named



@pytest.mark.parametrize("scale, warned", [((2.0, 0.5, 1.0), True), ((0.5, 0.5, 0.5), False)])
def test_a_rigid_body_under_a_still_unevenly_scaled_empty_is_named(blender, scale, warned):
    """An imported model's empty of scale (2, 0.5, 1), not simulated, over a box made a rigid
    body: the box is keyed in the empty's frame, so as it turns Blender draws it sheared (it came
    to rest a parallelogram 0.37 m off the simulation), and nothing said so. Named; not for an
    even scale."""
    _frames(1, 3)
    root = _empty("Root", location=(0.0, 0.0, 0.0))
    root.scale = scale
    bpy.context.view_layer.update()
    box = _cube("Box", size=0.4, location=(0.0, 0.0, 1.0))
    box.parent = root  # as an importer parents (no parent inverse): the empty's scale is the box's too
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Box'" in w and "scaled unevenly" in w]
    assert bool(named) == warned, named


@pytest.mark.parametrize("shape, modelled_along, warned", [('CAPSULE', 'X', True), ('CYLINDER', 'Y', True),
                                                           ('CAPSULE', 'Z', False), ('CYLINDER', 'Z', False),
                                                           ('SPHERE', 'Z', True)])
def test_a_round_rigid_shape_that_leaves_out_much_of_its_mesh_is_named(blender, shape, modelled_along, warned):
    """A log (0.15 m across, 2 m long) whose mesh runs along local X made a Capsule was a sphere 2 m
    across (a capsule runs along local Z, as Blender's) that held it 0.85 m above the ground,
    silently. Named, with the axis the mesh is round about; not for a log along local Z."""
    from mathutils import Matrix

    _frames(1, 3)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.15, depth=2.0, location=(0.0, 0.0, 1.0))
    log = bpy.context.object
    log.name = "Log"
    turn = {'X': Matrix.Rotation(math.pi / 2, 4, 'Y'), 'Y': Matrix.Rotation(math.pi / 2, 4, 'X'),
            'Z': Matrix.Identity(4)}[modelled_along]
    log.data.transform(turn)
    _enable(log, 'RIGID_BODY', collision_shape=shape, mass=20.0)
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Log'" in w and "leaves out much" in w]
    assert bool(named) == warned, named
    if warned and shape != 'SPHERE':
        assert f"round about its local {modelled_along}" in named[0]


@pytest.mark.parametrize("rigid_shear, warned", [(True, True), (False, False)])
def test_a_cloth_with_a_soft_stretch_and_a_rigid_shear_is_named(blender, rigid_shear, warned):
    """Rigid Shear (on by default) under a soft Stretch: the diagonals hold what the edges would
    stretch, as far as their solve converges, so the sag follows the substep count (a curtain at
    100 N hung 0.54, 0.41 and 0.33 mm at 5, 10 and 20 substeps). Named; not with both soft."""
    from . import fault_scenes as fs

    fs.frames(1, 3)
    cloth = fs.sheet("Curtain", n=5)
    c = cloth.jakobsen.cloth
    c.use_rigid_stretch = False
    c.stretch_stiffness = 100.0
    c.use_rigid_shear = rigid_shear
    c.shear_stiffness = 100.0
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings if "'Curtain'" in w and "Shear is rigid" in w]
    assert bool(named) == warned, named


@pytest.mark.parametrize("hidden, moved", [("joint", True), ("body", True), ("joint", False), ("none", True)])
def test_an_object_moved_while_disabled_in_viewports_is_named(blender, hidden, moved):
    """Blender does not update an object disabled in viewports (the screen icon): a hinge's Empty,
    or a body, moved since (in the N panel, the Outliner, a script) was read where it had been
    drawn, silently (the hinge held its door still). Named; not when it was not moved, nor when
    nothing is disabled."""
    _frames(1, 3)
    left = _cube("Left", size=0.5, location=(-1.0, 0.0, 2.0))
    left.jakobsen.rigid_body.dynamic = 'OFF'
    right = _cube("Right", size=0.5, location=(1.0, 0.0, 2.0))
    joint = _enable(_empty("Joint", (0.0, 0.0, 1.0)), 'CONNECTOR', connector_type='HINGE', object_a=left,
                    object_b=right)
    bpy.context.view_layer.update()
    target = {"joint": joint, "body": right, "none": None}[hidden]
    if target is not None:
        target.hide_viewport = True
    if moved:
        (target or joint).location.z += 1.0
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings if "moved since Blender last drew it" in w]
    assert len(named) == (1 if moved and target is not None else 0), named
    if named:
        assert f"'{target.name}'" in named[0]


@pytest.mark.parametrize("alone", [True, False])
def test_a_body_shown_only_through_a_collection_instance_is_named(blender, alone):
    """An instance's copies are drawn, not simulated: the bake said "enable Jakobsen Physics" of
    a crate that had it on (found by the add-on probe). It names the crate and its instance, in
    the refusal when nothing else moves, in the warnings when something does."""
    props = bpy.data.collections.new("Props")
    crate = _cube("Crate", location=(0.0, 0.0, 3.0))
    for c in list(crate.users_collection):
        c.objects.unlink(crate)
    props.objects.link(crate)
    instance = bpy.data.objects.new("PropsInstance", None)
    instance.instance_type, instance.instance_collection = 'COLLECTION', props
    bpy.context.scene.collection.objects.link(instance)
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    _enable(bpy.context.object, 'COLLIDER')
    if not alone:
        _cube("Box", location=(2.0, 0.0, 1.0))
    _frames(1, 4)
    bpy.context.view_layer.update()
    said = "object 'Crate' has Jakobsen Physics on but is shown only through the collection instance 'PropsInstance'"
    if alone:
        with pytest.raises(JakobsenError, match="nothing to simulate") as info:
            scene_to_model.build(bpy.context)
        assert said in str(info.value)
    else:
        assert any(said in w for w in scene_to_model.build(bpy.context).warnings)


@pytest.mark.parametrize("parent_scale, sheared", [((3.0, 1.0, 1.0), True), ((2.0, 2.0, 2.0), False),
                                                   ((1.0, 1.0, 1.01), False), ((1.0, 0.5, 1.0), False)])
def test_a_connector_empty_sheared_by_its_parent_s_uneven_scale_is_named(blender, parent_scale, sheared):
    """A hinge Empty turned 45 degrees about Y under a rig scaled (3, 1, 1): Blender draws its
    axes sheared, and the solver turned the door about the rotation nearest to them, 26.6 degrees
    from the axis drawn, silently (found by the add-on probe). An even scale, a slight one, or an
    uneven scale along the Empty's own Y (which shears nothing) is not named."""
    _frames(1, 3)
    rig = _empty("Rig")
    rig.scale = parent_scale
    door = _cube("Door", size=0.5, location=(0.5, 0.0, 1.0))
    hinge = _enable(_empty("Hinge", rotation=(0.0, math.pi / 4, 0.0)), 'CONNECTOR', connector_type='HINGE',
                    object_b=door)
    hinge.parent = rig
    bpy.context.view_layer.update()
    hinge.matrix_world.translation = (0.0, 0.0, 1.0)
    bpy.context.view_layer.update()
    named = [w for w in scene_to_model.build(bpy.context).warnings
             if w.startswith("connector 'Hinge': its axes are sheared")]
    assert bool(named) == sheared, named
    if named:
        assert "of its parent 'Rig'" in named[0]


def test_a_motor_on_a_chassis_is_not_taken_for_one_on_its_wheels(blender):
    """A chassis is Object A of its wheels' Wheel Suspensions; a motor turning the chassis itself
    (a turret's about Z, against the world) is not measured against the wheels' axles: only the
    connectors joining the motor's own two objects (or holding its body as Object B) count."""
    _frames(1, 3)
    chassis = _cube("Chassis", size=1.0, location=(0.0, 0.0, 1.0))
    bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=0.2, location=(0.7, 0.0, 0.5),
                                        rotation=(0.0, math.pi / 2, 0.0))
    wheel = _enable(bpy.context.object, 'RIGID_BODY', collision_shape='CYLINDER', mass=10.0)
    wheel.name = "Wheel"
    _enable(_empty("Suspension", (0.7, 0.0, 0.5)), 'CONNECTOR', connector_type='WHEEL_SUSPENSION',
            object_a=chassis, object_b=wheel)
    _enable(_empty("Turret", (0.0, 0.0, 1.0)), 'MOTOR', object_a=chassis)
    bpy.context.view_layer.update()
    assert not _motor_warnings_of(scene_to_model.build(bpy.context).warnings, "Turret")
