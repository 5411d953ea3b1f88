"""Blender's force fields in a Jakobsen bake (Wind -> the engine's wind, Force -> an attractor with
the sign flipped, Drag -> drag; other types are ignored with a warning), a rigid body's Drag, and
Follow Position / Follow Rotation pulling a dynamic body along its animation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import scene_to_model  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402

from .test_connectors import _cube, _frames  # noqa: E402

pytestmark = pytest.mark.blender


def _field(kind, name, location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), **settings):
    bpy.ops.object.effector_add(type=kind, location=location, rotation=rotation)
    obj = bpy.context.object
    obj.name = name
    for key, value in settings.items():
        setattr(obj.field, key, value)
    return obj


def _weightless():
    bpy.context.scene.use_gravity = False


def test_a_wind_field_pushes_a_body_with_drag_downwind(blender):
    """Wind Strength 10 along the field's Z (turned to world +X) is air at 10 m/s; a 1 kg body with
    Drag 0.5 kg/m starting at rest moves x(t) = w t - (m / c) ln(1 + c w t / m): 2.49 m in 0.5 s."""
    _weightless()
    _field('WIND', "Breeze", rotation=(0.0, math.pi / 2, 0.0), strength=10.0)
    _cube("Kite", size=0.2, location=(0.0, 0.0, 1.0), collision_shape='BOX', mass=1.0, drag=0.5)
    _cube("Stone", size=0.2, location=(0.0, 2.0, 1.0), collision_shape='BOX', mass=1.0)  # no drag: no wind
    _frames(1, 13)
    sm = scene_to_model.build(bpy.context)
    (wind,) = sm.model.forces.of_kind("wind")
    np.testing.assert_allclose(wind["velocity"], (10.0, 0.0, 0.0), atol=1e-6)

    job = BakeJob(bpy.context.scene.name)
    job.run()

    moved = job.body_results("Kite")[-1, :3, 3] - (0.0, 0.0, 1.0)
    w, c, t = 10.0, 0.5, 0.5
    expected = w * t - math.log(1.0 + c * w * t) / c
    print(f"wind: the body moved {moved[0]:.4f} m downwind in 0.5 s, expected {expected:.4f} m")
    assert moved[0] == pytest.approx(expected, rel=0.05)
    assert np.abs(moved[1:]).max() < 1e-3
    stone = job.body_results("Stone")[-1, :3, 3]
    np.testing.assert_allclose(stone, (0.0, 2.0, 1.0), atol=1e-6)


def test_a_force_field_with_negative_strength_pulls_a_body_towards_it(blender):
    """Blender's Force with Strength -5 (attracts) and no falloff: 5 m/s^2 towards the field, so a
    body 2 m away covers 0.5 * 5 * 0.5^2 = 0.625 m in 0.5 s."""
    _weightless()
    _field('FORCE', "Magnet", location=(0.0, 0.0, 1.0), strength=-5.0)
    _cube("Ball", size=0.2, location=(2.0, 0.0, 1.0), collision_shape='BOX', mass=3.0)
    _frames(1, 13)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    x = job.body_results("Ball")[:, 0, 3]
    print(f"force field: the body moved {2.0 - x[-1]:.4f} m towards it in 0.5 s, expected 0.625 m")
    assert 2.0 - x[-1] == pytest.approx(0.625, rel=0.03)
    assert np.all(np.diff(x) <= 1e-9)  # always towards the field


def test_field_settings_map_and_what_cannot_be_mapped_is_named(blender):
    _cube("Box", size=0.2, location=(0.0, 0.0, 1.0), collision_shape='BOX')
    _field('WIND', "Gusty", rotation=(math.pi / 2, 0.0, 0.0), strength=-4.0, noise=0.5, seed=7)
    _field('FORCE', "Pusher", location=(1.0, 2.0, 3.0), strength=2.0, falloff_power=1.5,
           use_min_distance=True, distance_min=0.1, use_max_distance=True, distance_max=5.0)
    _field('DRAG', "Syrup", linear_drag=0.3, quadratic_drag=0.2)
    _field('TURBULENCE', "Swirl")
    _field('MAGNET', "Magnet")
    hidden = bpy.data.collections.new("Off")
    bpy.context.scene.collection.children.link(hidden)
    off = _field('WIND', "Excluded", strength=50.0)
    for c in off.users_collection:
        c.objects.unlink(off)
    hidden.objects.link(off)
    bpy.context.view_layer.layer_collection.children["Off"].exclude = True

    sm = scene_to_model.build(bpy.context)
    forces = sm.model.forces
    (wind,) = forces.of_kind("wind")
    # Rotated 90 degrees about X, the field's Z is world -Y; negative strength blows the other way.
    np.testing.assert_allclose(wind["velocity"], (0.0, 4.0, 0.0), atol=1e-6)
    assert (wind["turbulence"], wind["seed"]) == (pytest.approx(0.5), 7)
    (pull,) = forces.of_kind("attractor")
    assert pull["strength"] == pytest.approx(-2.0)  # positive Blender strength pushes away
    np.testing.assert_allclose(pull["position"], (1.0, 2.0, 3.0), atol=1e-6)
    assert (pull["falloff"], pull["min_distance"], pull["max_distance"]) == ("inverse_square", pytest.approx(0.1),
                                                                               pytest.approx(5.0))
    (drag,) = forces.of_kind("drag")
    assert (drag["linear"], drag["quadratic"]) == pytest.approx((0.3, 0.2))
    text = "\n".join(sm.warnings)
    assert "force field 'Pusher': its Falloff Power 1.5 is simulated as 2" in text
    assert "force field 'Swirl' (Turbulence) is ignored" in text
    assert "force field 'Magnet' (Magnetic) is ignored" in text
    assert "Excluded" not in text and forces.count == 3


def test_cloth_with_air_drag_streams_in_a_wind_field(pinned_cloth):
    cloth = pinned_cloth()
    cloth.jakobsen.cloth.air_drag = 0.6
    m = np.array(cloth.matrix_world)

    def drift() -> float:
        job = BakeJob(bpy.context.scene.name)
        job.run()
        world = job.results("Flag") @ m[:3, :3].T + m[:3, 3]
        return float((world[-1, :, 0] - world[0, :, 0]).mean())

    still = drift()
    _field('WIND', "Breeze", rotation=(0.0, math.pi / 2, 0.0), strength=15.0)
    windy = drift()
    print(f"cloth: mean drift along the wind over 7 frames {windy:.4f} m (still air: {still:.4f} m)")
    assert windy - still > 0.02


def test_follow_position_makes_a_dynamic_body_track_its_animation(blender):
    """Two dynamic bodies keyed to move 2 m along X over a second; the one with Follow Position and
    Rotation 1 stays on its animation (sagging about g / 20^2 = 2.5 cm under gravity), the other
    falls freely."""
    scene = bpy.context.scene
    bodies = {}
    for name, y, follow in (("Puppet", 0.0, 1.0), ("Loose", 3.0, 0.0)):
        body = _cube(name, size=0.3, location=(0.0, y, 2.0), collision_shape='BOX', mass=1.0,
                     follow_position=follow, follow_rotation=follow)
        body.keyframe_insert("location", frame=1)
        body.location.x = 2.0
        body.keyframe_insert("location", frame=25)
        bodies[name] = body
    _frames(1, 25)
    animated = []
    for frame in range(1, 26):
        scene.frame_set(frame)
        animated.append(np.array(bodies["Puppet"].matrix_world.translation))
    scene.frame_set(1)
    sm = scene_to_model.build(bpy.context)
    index = {b.object_name: b.index for b in sm.bodies}
    assert sm.model.bodies.follow_position[index["Puppet"]] == pytest.approx(20.0)
    assert sm.model.bodies.follow_position[index["Loose"]] == 0.0

    job = BakeJob(scene.name)
    job.run()

    gap = np.linalg.norm(job.body_results("Puppet")[:, :3, 3] - np.array(animated), axis=1)
    print(f"follow: largest gap to the animation {gap.max() * 100:.2f} cm, on the last frame "
          f"{gap[-1] * 100:.2f} cm")
    assert gap.max() < 0.06 and gap[-1] < 0.04
    assert job.body_results("Loose")[-1, 2, 3] < 2.0 - 3.0  # fell freely: 4.9 m in a second
    assert not any("Follow" in w and "not" in w for w in sm.warnings)
