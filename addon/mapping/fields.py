"""Blender's force-field objects -> the engine's force fields, read as Blender's Cloth and Rigid Body
read them (``effect.cc``): the field's type, strength, shape, falloff and noise.

Units (docs/force_fields.md): a field's Strength S is S newtons on a 1 kg mass, i.e. S m/s^2 on
any cloth vertex or body (as gravity); a Wind's Strength is the air speed in m/s, which pushes
cloth through its Air Drag and bodies through their Drag; Drag's Linear is kg/s and Quadratic
kg/m; Flow (and a Vortex's Inflow) 1/s. Blender's own Cloth and Rigid Body divide a field's force
by the frame rate (and cloth scales it by face area), so the same Strength moves Blender's
objects less, and by an amount that changes with the frame rate; here it does not.
"""

from __future__ import annotations

import numpy as np

from jakobsen_engine import JakobsenError, ModelBuilder
from jakobsen_engine.forces.fields import NOISE_RMS
from jakobsen_engine.tracks import Track

from ..blender_io.reads import may_move
from ..translate.transforms import matrix

SIMULATED = {'WIND': "wind", 'FORCE': "force", 'VORTEX': "vortex", 'TURBULENCE': "turbulence",
             'HARMONIC': "harmonic", 'DRAG': "drag"}
SHAPES = {'POINT': "point", 'LINE': "line", 'PLANE': "plane"}
# Blender clamps a Drag field's Linear and Quadratic to this (``do_physical_effector``).
DRAG_LIMIT = 2.0


def hidden_in_viewports(obj) -> bool:
    """Whether Blender's viewport evaluation leaves the field out: the object or a collection it is
    in has Disable in Viewports (the monitor icon) on. (The eye, Hide in Viewport, does not turn a
    field off in Blender, nor does Disable in Renders for a cache baked in the viewport.)"""
    if obj.hide_viewport:
        return True
    return any(c.hide_viewport for c in obj.users_collection)


def _sample(obj, frames, frame_rate):
    """(matrix_world (k, 4, 4), field strength (k,)) of the evaluated object on each frame."""
    import bpy  # the add-on's own modules may not import bpy at the top (the engine's tests import this)

    scene = bpy.context.scene
    mats, strengths = [], []
    for frame in frames:
        scene.frame_set(frame)
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mats.append(matrix(evaluated.matrix_world))
        strengths.append(float(evaluated.field.strength))
    scene.frame_set(frames[0])
    return np.array(mats), np.array(strengths)


def _bake_frames(frames, frame_rate):
    """The bake's frames and frame rate: as given, else the scene's bake range and frame rate."""
    import bpy

    scene = bpy.context.scene
    if frames is None:
        start, end = scene.jakobsen.frame_range()
        frames = range(start, end + 1)
    if frame_rate is None:
        frame_rate = scene.render.fps / scene.render.fps_base
    return frames, frame_rate


def _axis(where, m):
    z = m[..., :3, 2]
    length = np.linalg.norm(z, axis=-1)
    if np.any(length < 1e-12):
        raise JakobsenError(f"{where}: its Z axis has zero length (its scale is zero); its force acts along "
                            "or about the object's Z axis")
    return z / length[..., None]


def field_weights(builder: ModelBuilder, objects_weight) -> tuple:
    """(particle weights (n,) or None, body weights (B,) or None) from ``objects_weight(name)``:
    each cloth's and body's Field Weight (None where all are 1)."""
    particles = np.ones(builder.particle_count)
    for label, start, stop in getattr(builder, "_labels", ()):
        name = label.split("'", 1)[1].rsplit("'", 1)[0] if "'" in label else None
        if name is not None:
            particles[start:stop] = objects_weight(name)
    bodies = np.array([objects_weight(b.name) for b in getattr(builder, "_bodies", ())], dtype=np.float64)
    return (None if np.all(particles == 1.0) else particles), \
        (None if len(bodies) == 0 or np.all(bodies == 1.0) else bodies)


def _object_weight(name: str) -> float:
    """An object's Field Weight (``jakobsen.cloth.field_weight`` / ``jakobsen.rigid_body.field_weight``,
    1 where the add-on has no such setting)."""
    import bpy

    obj = bpy.data.objects.get(name)
    if obj is None:
        return 1.0
    group = obj.jakobsen.rigid_body if obj.jakobsen.type == 'RIGID_BODY' else obj.jakobsen.cloth
    return float(getattr(group, "field_weight", 1.0))


def add_force_field(builder: ModelBuilder, obj, depsgraph, warnings: list[str], *, frames=None,
                    frame_rate=None) -> None:
    """One of Blender's force-field objects -> an engine force field.

    - Wind: the engine's wind, an air velocity along the object's Z axis (negative Strength: along
      -Z). Blender's Wind with its default Flow 1 drives what it blows towards a speed equal to
      its Strength, so Strength is read as the air speed in m/s; cloth feels it through its Air
      Drag and rigid bodies through their Drag (quadratic, as air). Noise N -> gusts of
      N sqrt(1/6) m/s RMS (the RMS of the random strength Blender adds), Seed -> seed.
    - Force, Vortex, Turbulence, Harmonic: the engine's fields of those names as Blender computes
      them (see ``jakobsen_engine.forces.fields``), Strength in m/s^2 (N per kg), with Flow (a
      Vortex's Inflow), Noise and Seed, Gravitation (Force), Size and Global (Turbulence),
      Damping and Rest Length (Harmonic).
    - Drag: the engine's drag field, Linear (kg/s) and Quadratic (kg/m), each at most 2 as in
      Blender.
    - Every kind: Shape Point, Line or Plane (Surface and Every Point act as Point, with a
      warning), Falloff Sphere, Tube or Cone with its Power, Min and Max Distance, the radial
      limits and Z Direction, as Blender's falloff (1 + d - min)^-power.
    - Off, as in Blender: Type None, Strength 0 on every frame, Affect Location off, or Disable in
      Viewports on the object or its collection. Other types (Magnetic, Charge, Texture...) are
      ignored with a warning.
    - A keyed Strength and an animated field object are sampled a frame at a time over the bake
      (frames, at frame_rate per second; the scene's bake range and frame rate when not given).
    """
    where = f"force field '{obj.name}'"
    f = obj.field
    kind = f.type
    if kind == 'NONE':
        return
    label = f.bl_rna.properties["type"].enum_items[kind].name
    if kind not in SIMULATED:
        warnings.append(f"{where} ({label}) is ignored: Jakobsen Physics simulates Wind, Force, Vortex, "
                        "Turbulence, Harmonic and Drag fields")
        return
    if hidden_in_viewports(obj):
        warnings.append(f"{where} is off: it (or its collection) is disabled in viewports, and Blender leaves "
                        "such a field out too")
        return
    if not f.apply_to_location:
        warnings.append(f"{where} is off: its Affect Location is off")
        return
    m = matrix(obj.evaluated_get(depsgraph).matrix_world)
    if not np.all(np.isfinite(m)):
        raise JakobsenError(f"{where}: its transform is not a number (check its location, rotation, scale and "
                            "parents)")
    # Each a constant, or a Track of its values when the field moves or its Strength is animated.
    strength: float | Track = float(f.strength)
    position: np.ndarray | Track = m[:3, 3]
    axis: np.ndarray | Track = _axis(where, m)
    if may_move(obj) or obj.animation_data is not None:
        frames, frame_rate = _bake_frames(frames, frame_rate)
        mats, strengths = _sample(obj, frames, frame_rate)
        if not np.all(np.isfinite(mats)) or not np.all(np.isfinite(strengths)):
            raise JakobsenError(f"{where}: its transform or Strength is not a number on some frame")
        if np.ptp(mats, axis=0).max() > 1e-9:
            position = Track(rate=frame_rate, values=mats[:, :3, 3])
            axis = Track(rate=frame_rate, values=_axis(where, mats))
        if np.ptp(strengths) > 1e-12:
            strength = Track(rate=frame_rate, values=strengths)
        else:
            strength = float(strengths[0])
    peak = float(np.max(np.abs(strength.values))) if isinstance(strength, Track) else abs(strength)
    region = _region(where, f, position, axis, warnings)
    particle_weights, body_weights = field_weights(builder, _object_weight)
    region.update(particle_weights=particle_weights, body_weights=body_weights)
    if kind == 'DRAG':
        linear, quadratic = float(f.linear_drag), float(f.quadratic_drag)
        if linear < 0.0 or quadratic < 0.0:
            raise JakobsenError(f"{where}: its Linear ({linear:g}) and Quadratic ({quadratic:g}) drag must not be "
                                "negative (a negative drag speeds things up)")
        if linear == 0.0 and quadratic == 0.0:
            return
        builder.add_force("drag", name=obj.name, linear=min(linear, DRAG_LIMIT), quadratic=min(quadratic, DRAG_LIMIT),
                          **region)
        return
    if peak == 0.0:
        return  # Strength 0: Blender's field does nothing
    noise, seed = float(f.noise), int(f.seed)
    if kind == 'WIND':
        # The engine's wind keeps one direction: a turning Wind blows along its first frame's Z.
        z0 = axis.values[0] if isinstance(axis, Track) else axis
        if isinstance(axis, Track) and np.ptp(axis.values, axis=0).max() > 1e-6:
            warnings.append(f"{where} turns during the bake; it blows along its Z axis on the first frame")
        speed: float | Track
        if isinstance(strength, Track):
            direction, speed = z0, strength  # a keyed speed keeps its sign
        else:
            direction, speed = z0 * (1.0 if strength >= 0 else -1.0), abs(strength)
        builder.add_force("wind", name=obj.name, direction=direction, strength=speed,
                          turbulence=NOISE_RMS * noise / peak, seed=seed, **region)
        return
    if kind == 'FORCE' and not isinstance(strength, Track) and _plain_force(f, strength, region):
        # The same field as the engine's attractor (a constant push along the radius, cut at the
        # Maximum Distance), which the energy guard knows as a source; Blender's positive
        # Strength pushes away.
        builder.add_force("attractor", name=obj.name, position=region["position"], strength=-strength,
                          max_distance=region["max_distance"])
        return
    settings = dict(strength=strength, noise=noise, seed=seed, **region)
    if kind != 'HARMONIC':
        settings["flow"] = max(float(f.flow), 0.0)
    if kind == 'FORCE':
        settings["gravitation"] = bool(f.use_gravity_falloff)
    elif kind == 'TURBULENCE':
        # Blender's Size 0 leaves the noise unscaled: as Size 1.
        settings.update(size=float(f.size) if f.size > 0.0 else 1.0, global_coordinates=bool(f.use_global_coords))
    elif kind == 'HARMONIC':
        settings.update(damping=max(float(f.harmonic_damping), 0.0), rest_length=max(float(f.rest_length), 0.0))
    builder.add_force(SIMULATED[kind], name=obj.name, **settings)


def _plain_force(f, strength, region) -> bool:
    """Whether a Force field is the engine's attractor with no falloff: Power 0, Point shape,
    Sphere falloff, both sides, no noise, flow or gravitation, fixed, equal weights."""
    return (not isinstance(strength, Track) and not isinstance(region["position"], Track)
            and region["power"] == 0.0 and region["shape"] == "point" and region["falloff_shape"] == "sphere"
            and region["z_direction"] == "both" and f.noise == 0.0 and f.flow == 0.0 and not f.use_gravity_falloff
            and region["particle_weights"] is None and region["body_weights"] is None
            and (region["max_distance"] is None or region["max_distance"] > 0.0))


def _region(where, f, position, axis, warnings) -> dict:
    shape = SHAPES.get(f.shape)
    if shape is None:
        warnings.append(f"{where}: its {f.bl_rna.properties['shape'].enum_items[f.shape].name} shape acts as "
                        "Point (the object's origin)")
        shape = "point"
    return dict(position=position, axis=axis, shape=shape, falloff_shape=f.falloff_type.lower(),
                power=float(f.falloff_power),
                min_distance=float(f.distance_min) if f.use_min_distance else None,
                max_distance=float(f.distance_max) if f.use_max_distance else None,
                radial_power=float(f.radial_falloff),
                radial_min=float(f.radial_min) if f.use_radial_min else None,
                radial_max=float(f.radial_max) if f.use_radial_max else None,
                z_direction=f.z_direction.lower())
