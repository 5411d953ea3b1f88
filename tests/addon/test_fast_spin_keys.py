"""Rotation keys of a body turning more than half a turn a frame (a car's wheel at speed) follow the
simulated spin between frames: evaluated at sub-frames (motion blur, retiming), the F-curves turn
the way the body turns and by about the angle it turns, not the short way round backwards.

On whole frames the short way and the real way give the same pose; only in between do they differ.
Each case bakes a free cylinder (no gravity, no damping: its spin stays what it was given) spun
about its axle through the add-on's Bake, evaluates the keys a quarter frame apart, and measures
each quarter's turn about the axle in world axes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from mathutils import Euler, Matrix, Quaternion  # noqa: E402

from jakobsen_physics import actions  # noqa: E402
from jakobsen_engine.geometry import quaternions as quat  # noqa: E402

from .test_connectors import _empty, _enable, _frames  # noqa: E402

pytestmark = pytest.mark.blender

FPS = 24
FIRST, LAST = 1, 9
QUARTERS = 4


def _wheel(axle: str, mode: str, rotation, per_frame: float, parent=None):
    """A 0.3 m wheel (a cylinder) with its axle along its local ``axle``, in rotation ``mode``,
    posed by ``rotation`` (an XYZ Euler), spun about its axle at ``per_frame`` rad a frame."""
    bpy.ops.mesh.primitive_cylinder_add(vertices=32, radius=0.3, depth=0.15, location=(0.2, -0.4, 1.5))
    wheel = _enable(bpy.context.object, 'RIGID_BODY', collision_shape='CYLINDER', mass=10.0)
    wheel.name = "Wheel"
    # The cylinder's axis is its local Z: turned onto the axle in the mesh.
    wheel.data.transform({'X': Matrix.Rotation(math.pi / 2, 4, 'Y'), 'Y': Matrix.Rotation(-math.pi / 2, 4, 'X'),
                          'Z': Matrix.Identity(4)}[axle])
    wheel.rotation_mode = 'XYZ'
    wheel.rotation_euler = rotation
    wheel.rotation_mode = mode
    if parent is not None:
        wheel.parent = parent
        wheel.matrix_parent_inverse = parent.matrix_world.inverted()
    bpy.context.view_layer.update()
    axle_world = np.array(wheel.matrix_world.to_3x3().col["XYZ".index(axle)])
    axle_world /= np.linalg.norm(axle_world)
    rb = wheel.jakobsen.rigid_body
    rb.use_initial_velocity = True
    rb.initial_angular_velocity = tuple(axle_world * per_frame * FPS)
    return wheel, axle_world


def _fcurves(obj):
    action = obj.animation_data.action
    if actions.SLOTTED:
        return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                for fc in bag.fcurves]
    return list(action.fcurves)


def _linear_at(obj, frame: float) -> np.ndarray:
    """(3, 3) the linear part of ``obj``'s matrix_world with the bake's keys evaluated at ``frame``:
    its matrix_basis from the F-curves, as Blender interpolates them (and its scale), below its
    parent's frame (the parent's own keys evaluated alike)."""
    mode = obj.rotation_mode
    path = {'QUATERNION': "rotation_quaternion", 'AXIS_ANGLE': "rotation_axis_angle"}.get(mode, "rotation_euler")
    curves = sorted((fc for fc in _fcurves(obj) if fc.data_path == path), key=lambda fc: fc.array_index)
    v = [fc.evaluate(frame) for fc in curves]
    if mode == 'QUATERNION':
        basis = Quaternion(v).normalized().to_matrix()
    elif mode == 'AXIS_ANGLE':
        basis = Quaternion(v[1:], v[0]).to_matrix()
    else:
        basis = Euler(v, mode).to_matrix()
    m = np.array(basis) @ np.diag(obj.scale)
    parent = obj.parent
    if parent is not None:
        above = _linear_at(parent, frame) if parent.animation_data else np.array(parent.matrix_world.to_3x3())
        m = above @ np.array(obj.matrix_parent_inverse.to_3x3()) @ m
    return m


def _rotation_at(obj, frame: float) -> np.ndarray:
    """The rotation of ``obj``'s matrix_world (3, 3) with the keys evaluated at ``frame``."""
    u, _, vt = np.linalg.svd(_linear_at(obj, frame))  # (scale out; a mirror cancels in the turn between two)
    return u @ vt


def _quarter_turns(obj, axle_world, last: int) -> np.ndarray:
    """(frames - 1, QUARTERS): the keys' turn about ``axle_world`` over each quarter of each frame
    step, rad, signed (each well under half a turn, so unambiguous)."""
    out = []
    for frame in range(FIRST, last):
        r = [_rotation_at(obj, frame + q / QUARTERS) for q in range(QUARTERS + 1)]
        steps = quat.log_rotation(quat.from_matrix(np.stack([b @ a.T for a, b in zip(r, r[1:])])))
        out.append(steps @ axle_world)
    return np.array(out)


CASES = {
    # axle, rotation mode, pose, rad a frame
    "xyz-local-x": ('X', 'XYZ', (0.3, -0.2, 0.5), 3.8),  # a car's wheel at 30 m/s: Euler X channel
    "xyz-more-than-a-turn": ('X', 'XYZ', (0.3, -0.2, 0.5), 8.0),  # whole turns a frame
    "xyz-parent-z": ('Z', 'XYZ', (0.0, 0.0, 0.7), -4.5),  # the Z channel, the other way round
    "zxy-local-z": ('Z', 'ZXY', (0.4, 0.2, -0.3), 5.0),  # another order: its first channel
    "quaternion": ('Y', 'QUATERNION', (0.3, -0.2, 0.5), -3.8),  # up to a full turn a frame only
    "axis-angle": ('X', 'AXIS_ANGLE', (0.4, 0.0, 0.0), 5.5),
}


@pytest.mark.parametrize("case", list(CASES))
def test_keys_of_a_fast_spinning_body_turn_the_simulated_way_between_frames(blender, case):
    axle, mode, rotation, per_frame = CASES[case]
    wheel, axle_world = _wheel(axle, mode, rotation, per_frame)
    _bake_and_check(wheel, axle_world, per_frame)


@pytest.mark.parametrize("mirrored", [False, True])
def test_keys_of_a_fast_spinning_child_turn_the_simulated_way_below_a_turned_parent(blender, mirrored):
    """The keys are in the parent's frame: the spin is taken there (a mirrored parent turns it the
    other way round about the mirrored axis)."""
    parent = _empty("Car", (0.5, 0.2, 0.3), (0.2, -0.5, 1.0))
    parent.scale = (-1.0, 1.0, 1.0) if mirrored else (1.0, 1.0, 1.0)
    bpy.context.view_layer.update()
    wheel, axle_world = _wheel('X', 'XYZ', (0.3, -0.2, 0.5), 3.8, parent=parent)
    _bake_and_check(wheel, axle_world, 3.8)


def test_keys_of_a_car_wheel_at_30_m_s_turn_forwards_between_frames(blender):
    """The issue's car: 0.33 m wheels at 30 m/s, 3.8 rad a frame at 24 fps, each wheel a child of
    the simulated chassis (keyed relative to the chassis' baked motion)."""
    from .test_vehicle_drive import build_car

    scene = bpy.context.scene
    scene.render.fps = FPS
    last = FIRST + 4
    chassis = build_car(heading_deg=30.0, initial_speed=30.0, target_speed=30.0, frames=(FIRST, last))
    wheels = [obj for obj in scene.objects if obj.name.startswith("Wheel.") and obj.type == 'MESH']
    for wheel in wheels:
        wheel.parent = chassis
        wheel.matrix_parent_inverse = chassis.matrix_world.inverted()
    _frames(FIRST, last)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    heading = math.radians(30.0)
    left = np.array([-math.cos(heading), -math.sin(heading), 0.0])  # the car faces its +Y, turned 30 degrees
    # The simulated spin: the car's speed over the wheel's radius, from the chassis' keys.
    ends = []
    for frame in (FIRST, last):
        scene.frame_set(frame)
        ends.append(np.array(chassis.matrix_world.translation))
    per_frame = np.linalg.norm(ends[1] - ends[0]) / (last - FIRST) / 0.33
    assert per_frame == pytest.approx(30.0 / 0.33 / FPS, rel=0.05)
    for wheel in wheels:
        _check(wheel, left, per_frame, last)


def _bake_and_check(wheel, axle_world, per_frame: float) -> None:
    scene = bpy.context.scene
    scene.render.fps = FPS
    scene.use_gravity = False
    _frames(FIRST, LAST)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    # The simulated spin: the cylinder, free, keeps the one it was given (about a principal axis):
    # on whole frames the keys are turned by per_frame a frame about the axle (whole turns aside).
    spun = _rotation_at(wheel, LAST) @ _rotation_at(wheel, FIRST).T
    given = quat.to_matrix(quat.exp_rotation(axle_world * per_frame * (LAST - FIRST)))
    assert np.linalg.norm(quat.log_rotation(quat.from_matrix(spun @ given.T))) < 1e-2
    _check(wheel, axle_world, per_frame, LAST)


def _check(wheel, axle_world, per_frame: float, last: int) -> None:
    whole = _quarter_turns(wheel, axle_world, last)
    turned = np.cumsum(whole, axis=1)  # at frame + 1/4, 1/2, 3/4 and 1
    expected = per_frame * np.arange(1, QUARTERS + 1) / QUARTERS
    print(f"{wheel.name} {wheel.rotation_mode}: {per_frame:.3f} rad a frame; keys turned at quarter frames "
          f"{np.round(turned[:3], 3).tolist()}")
    # Each quarter turns the way the body spins, and the path is within 10% of the step's turn
    # (a quaternion's chord-wise path is uneven: right half-way, behind at a quarter).
    assert np.all(np.sign(whole) == np.sign(per_frame))
    assert np.abs(turned - expected).max() < 0.1 * abs(per_frame)
