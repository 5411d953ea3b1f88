"""Blender's force fields in a Jakobsen bake (Wind -> the engine's wind, Force, Vortex, Turbulence,
Harmonic -> the engine's fields of those names (a plain Force -> an attractor with the sign
flipped), Drag -> drag, each with Blender's shape and falloff; other types are ignored with a
warning; a field that is off in Blender is off here), a rigid body's Drag, and Follow Position /
Follow Rotation pulling a dynamic body along its animation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import scene_to_model  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402

from .conftest import grid_mesh, link  # noqa: E402
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
    # Noise 0.5: gusts of 0.5 sqrt(1/6) m/s RMS, as a fraction of the 4 m/s wind.
    assert (wind["turbulence"], wind["seed"]) == (pytest.approx(0.5 * math.sqrt(1 / 6) / 4.0), 7)
    (push,) = forces.of_kind("force")  # Blender's falloff: no attractor can take power 1.5
    assert push["strength"] == pytest.approx(2.0)  # positive pushes away, as in Blender
    np.testing.assert_allclose(push["position"], (1.0, 2.0, 3.0), atol=1e-6)
    assert (push["power"], push["min_distance"], push["max_distance"]) == (pytest.approx(1.5), pytest.approx(0.1),
                                                                            pytest.approx(5.0))
    (drag,) = forces.of_kind("drag")
    assert (drag["linear"], drag["quadratic"]) == pytest.approx((0.3, 0.2))
    (swirl,) = forces.of_kind("turbulence")
    assert swirl["size"] == 1.0  # Blender's Size 0: the noise unscaled
    text = "\n".join(sm.warnings)
    assert "force field 'Magnet' (Magnetic) is ignored" in text
    assert "Excluded" not in text and forces.count == 4


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


# -- cloth in Blender's fields --------------------------------------------------------------------


def _flag_drift(name="Flag") -> np.ndarray:
    """Mean displacement (3,) of the flag's vertices over the bake, in world space."""
    cloth = bpy.data.objects[name]
    m = np.array(cloth.matrix_world)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    world = job.results(name) @ m[:3, :3].T + m[:3, 3]
    return (world[-1] - world[0]).mean(axis=0)


@pytest.mark.parametrize("turn", [(0.0, math.pi / 2, 0.0), (-math.pi / 2, 0.0, 0.0)])
def test_a_flag_streams_downwind_in_a_wind_field_and_turning_it_off_stops_it(pinned_cloth, turn):
    """Wind Strength 15 along the field's Z (turned to world +X, or to +Y), Air Drag 0.6: the flag
    drifts along the wind (more than 5 cm in 7 frames, less than 0.6 of that sideways); with the field
    off in any of Blender's ways (Strength 0, Type None, disabled in viewports) it hangs exactly as in
    still air."""
    cloth = pinned_cloth()
    cloth.jakobsen.cloth.air_drag = 0.6
    still = _flag_drift()
    wind = _field('WIND', "Breeze", rotation=turn, strength=15.0)
    downwind = np.array(wind.matrix_world)[:3, 2]
    windy = _flag_drift() - still
    along = float(windy @ downwind)
    across = (windy - along * downwind)[:2]  # sideways (the air also slows its fall: not counted)
    print(f"wind: the flag drifted {along:.4f} m downwind, {np.linalg.norm(across):.4f} m sideways")
    assert along > 0.05
    # (Sideways: the flag swings about its pinned edge, 0.5 rad from the object's X; a rigid plate
    # hinged there and blown along +Y moves tan(0.5) = 0.55 as far sideways as downwind, and the
    # flag, its stretch solved along whole rows and columns, does: 0.53.)
    assert np.linalg.norm(across) < 0.6 * along
    for off in ("strength", "type", "hide_viewport"):
        if off == "strength":
            wind.field.strength = 0.0
        elif off == "type":
            wind.field.type = 'NONE'
        else:
            wind.hide_viewport = True
        bpy.context.view_layer.update()
        np.testing.assert_allclose(_flag_drift() - still, 0.0, atol=1e-9, err_msg=f"field off by {off}")
        wind.field.type, wind.field.strength, wind.hide_viewport = 'WIND', 15.0, False
    # The Wind's Plane shape measures from the plane across its Z: moved 5 m upwind with a Maximum
    # Distance of 1 m, it no longer reaches the flag.
    wind.location = np.array(wind.location) - 5.0 * downwind
    wind.field.use_max_distance, wind.field.distance_max = True, 1.0
    bpy.context.view_layer.update()
    np.testing.assert_allclose(_flag_drift() - still, 0.0, atol=1e-9)


def test_the_default_air_drag_lets_a_wind_field_blow_a_flag(pinned_cloth):
    """Issue 13: at the cloth's default Air Drag (about 0.6 kg/m^3) a Wind field moves the flag."""
    pinned_cloth()
    still = _flag_drift()
    _field('WIND', "Breeze", rotation=(0.0, math.pi / 2, 0.0), strength=15.0)
    assert float((_flag_drift() - still)[0]) > 0.05


def _free_patch(name, location, size=0.3):
    """A small free cloth square; no Air Drag, so only the field moves it."""
    patch = link(bpy.data.objects.new(name, grid_mesh(name, 3, 3, size)))
    patch.location = location
    patch.jakobsen.enabled = True
    patch.jakobsen.type = 'CLOTH'
    patch.jakobsen.cloth.air_drag = 0.0
    return patch


def test_a_vortex_turns_cloth_counter_clockwise_about_its_z(blender):
    """Blender's Vortex (Plane shape, its default) with Strength 1.5 rad/s about a Z turned to
    world -Y... here about world +Z at (2, 0, 0): a free patch 1 m from the axis circles it
    counter-clockwise seen from +Z, at a radius between r0 |1 + iW| / |1 + 2iW| and r0."""
    _weightless()
    vortex = _field('VORTEX', "Whirl", location=(2.0, 0.0, 0.0), strength=1.5)
    assert vortex.field.shape == 'PLANE'
    _free_patch("Leaf", (3.0, 0.0, 0.5))
    _frames(1, 49)
    sm = scene_to_model.build(bpy.context)
    (field,) = sm.model.forces.of_kind("vortex")
    assert field["shape"] == "plane"
    np.testing.assert_allclose(field["axis"], (0, 0, 1), atol=1e-9)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    centre = job.results("Leaf").mean(axis=1) + (3.0, 0.0, 0.5)
    offset = centre[:, :2] - (2.0, 0.0)
    angle = np.unwrap(np.arctan2(offset[:, 1], offset[:, 0]))
    radius = np.linalg.norm(offset, axis=1)
    w = 1.5
    print(f"vortex: turned {math.degrees(angle[-1]):.0f} degrees in 2 s, radius {radius[-1]:.3f} m")
    assert np.all(np.diff(angle) > 0.0) and angle[-1] > 1.0
    assert math.sqrt(1 + w * w) / math.sqrt(1 + 4 * w * w) - 0.05 < radius[-1] < 1.0 + 0.02
    assert np.abs(centre[:, 2] - 0.5).max() < 1e-6  # a swirl about Z: nothing along it


def test_a_turbulence_field_shakes_cloth_the_same_way_every_bake_and_falloff_cuts_it(blender):
    _weightless()
    turbulence = _field('TURBULENCE', "Gusts", strength=4.0, size=0.5, flow=0.5, use_max_distance=True,
                        distance_max=2.0)
    _free_patch("Near", (0.5, 0.0, 0.0))
    _free_patch("Far", (6.0, 0.0, 0.0))
    _frames(1, 13)
    sm = scene_to_model.build(bpy.context)
    (field,) = sm.model.forces.of_kind("turbulence")
    assert (field["size"], field["flow"], field["max_distance"]) == (pytest.approx(0.5), pytest.approx(0.5),
                                                                      pytest.approx(2.0))
    runs = []
    for _ in range(2):
        job = BakeJob(bpy.context.scene.name)
        job.run()
        runs.append((job.results("Near"), job.results("Far")))
    assert np.array_equal(runs[0][0], runs[1][0])
    near = np.linalg.norm(runs[0][0][-1] - runs[0][0][0], axis=1)
    print(f"turbulence: the near patch moved {near.mean():.3f} m, the far one "
          f"{np.abs(runs[0][1][-1] - runs[0][1][0]).max():.2e} m")
    assert near.mean() > 0.01
    np.testing.assert_allclose(runs[0][1][-1], runs[0][1][0], atol=1e-9)  # beyond Max Distance
    turbulence.field.strength = 0.0
    sm = scene_to_model.build(bpy.context)
    assert sm.model.forces.count == 0


def test_a_harmonic_field_pulls_cloth_back_and_forth_and_a_keyed_strength_is_followed(blender):
    """Harmonic Strength 16 (4 rad/s), Damping 0: a patch released 0.5 m from the field swings
    through it within a quarter period (0.39 s) and is back near 0.5 m a period (1.57 s) after
    release; keyed to 0 until frame 13 it stays put until then."""
    _weightless()
    harmonic = _field('HARMONIC', "Spring", strength=16.0, harmonic_damping=0.0)
    _free_patch("Bob", (0.5, 0.0, 0.0), size=0.05)
    _frames(1, 49)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    x = job.results("Bob").mean(axis=1)[:, 0] + 0.5
    t = np.arange(len(x)) / 24.0
    assert x[t <= 0.45].min() < 0.0 < x[0]
    assert x[np.argmin(np.abs(t - 2 * math.pi / 4.0))] == pytest.approx(0.5, abs=0.05)
    harmonic.field.strength = 0.0
    harmonic.field.keyframe_insert("strength", frame=13)
    harmonic.field.strength = 16.0
    harmonic.field.keyframe_insert("strength", frame=14)
    sm = scene_to_model.build(bpy.context)
    (field,) = sm.model.forces.of_kind("harmonic")
    assert field["strength"].at(0.0) == 0.0 and field["strength"].at(13 / 24.0) == pytest.approx(16.0)
    job = BakeJob(bpy.context.scene.name)
    job.run()
    x = job.results("Bob").mean(axis=1)[:, 0] + 0.5
    np.testing.assert_allclose(x[:13], 0.5, atol=1e-9)
    assert x[13:].min() < 0.0  # then it swings through the field


def test_field_weights_follow_each_cloth_and_body(blender):
    """Each cloth's and body's Field Weight (``jakobsen.cloth/rigid_body.field_weight`` where the
    add-on has it) becomes the field's per-particle and per-body weights; all 1: none."""
    from jakobsen_engine import ModelBuilder
    from jakobsen_physics.mapping.fields import field_weights

    builder = ModelBuilder()
    grid = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    builder.add_cloth(grid, [[0, 1, 2, 3]], name="Near")
    builder.add_cloth(grid + 5.0, [[0, 1, 2, 3]], name="Far")
    particles, bodies = field_weights(builder, lambda name: {"Far": 0.25}.get(name, 1.0))
    np.testing.assert_array_equal(particles, [1, 1, 1, 1, 0.25, 0.25, 0.25, 0.25])
    assert bodies is None
    assert field_weights(builder, lambda name: 1.0) == (None, None)


def test_a_cloths_field_weight_scales_what_the_fields_do_to_it(pinned_cloth):
    """Field Weight (Blender's Effector Weights > All): 0 leaves the flag as in still air, a half
    blows it less than 1 does."""
    cloth = pinned_cloth()
    still = _flag_drift()
    _field('WIND', "Breeze", rotation=(0.0, math.pi / 2, 0.0), strength=15.0)
    drift = {}
    for weight in (1.0, 0.5, 0.0):
        cloth.jakobsen.cloth.field_weight = weight
        drift[weight] = float((_flag_drift() - still)[0])
    assert drift[1.0] > 0.05
    assert 0.1 * drift[1.0] < drift[0.5] < 0.9 * drift[1.0]
    assert abs(drift[0.0]) < 1e-9
