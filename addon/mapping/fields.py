"""Blender's force-field objects -> the engine's force fields."""

from __future__ import annotations

import numpy as np

from jakobsen_engine import JakobsenError, ModelBuilder

from ..blender_io.reads import may_move
from ..translate.settings import FALLOFFS
from ..translate.transforms import matrix


def add_force_field(builder: ModelBuilder, obj, depsgraph, warnings: list[str]) -> None:
    """One of Blender's force-field objects -> an engine force field, as on the bake's first frame.

    - Wind: the engine's wind, an air velocity along the object's Z axis. Blender's wind has no air
      speed (its Strength is a force); here Strength is read as the air speed in m/s (negative:
      along -Z), which pushes rigid bodies through their Drag and cloth through its Air Drag.
      Noise -> turbulence (the gusts' RMS speed as a fraction of the air speed: Noise 0.5 gusts
      at half the wind speed), Seed -> seed; the gusts are about 1 m in size and change about
      once a second. Blender's falloff is not simulated: the wind blows everywhere.
    - Force: the engine's attractor at the object's origin, Strength read as an acceleration in
      m/s² at 1 m; Blender's positive Strength pushes away, so the sign is flipped. Falloff Power
      0, 1, 2 -> none, 1/r, 1/r² (other powers take the nearest of these, with a warning);
      Blender's (1 + r)^-power becomes r^-power, r kept at least the Minimum Distance (when on);
      the Maximum Distance (when on) ends the field. Tube and Cone falloff shapes act as Sphere.
    - Drag: the engine's drag field, Linear (kg/s) and Quadratic (kg/m) as they are.
    - Turbulence and the other types have no engine counterpart (a turbulence without a wind to
      carry it has no air speed to vary): ignored, with a warning.
    """
    where = f"force field '{obj.name}'"
    f = obj.field
    kind = f.type
    label = f.bl_rna.properties["type"].enum_items[kind].name
    m = matrix(obj.evaluated_get(depsgraph).matrix_world)
    if not np.all(np.isfinite(m)):
        raise JakobsenError(f"{where}: its transform is not a number (check its location, rotation, scale and "
                            "parents)")
    if kind not in ('WIND', 'FORCE', 'DRAG'):
        warnings.append(f"{where} ({label}) is ignored: Jakobsen Physics simulates Wind, Force and Drag fields")
        return
    if may_move(obj):
        warnings.append(f"{where} is animated; the field stays as it is on the bake's first frame")
    if kind == 'WIND':
        z = m[:3, 2]
        length = float(np.linalg.norm(z))
        if length < 1e-12:
            raise JakobsenError(f"{where}: its Z axis has zero length (its scale is zero); the wind blows along "
                                "the object's Z axis")
        direction = z / length * (1.0 if f.strength >= 0 else -1.0)
        if f.use_max_distance or f.use_min_distance or f.falloff_power != 0.0:
            warnings.append(f"{where}: its falloff (power, minimum or maximum distance) is not simulated; "
                            "the wind blows everywhere")
        builder.add_force("wind", name=obj.name, direction=direction, strength=abs(float(f.strength)),
                          turbulence=float(f.noise), seed=int(f.seed))
    elif kind == 'DRAG':
        if f.use_max_distance or f.use_min_distance:
            warnings.append(f"{where}: its minimum and maximum distance are not simulated; the drag acts "
                            "everywhere")
        builder.add_force("drag", name=obj.name, linear=float(f.linear_drag), quadratic=float(f.quadratic_drag))
    else:
        power = float(f.falloff_power)
        nearest = min(max(int(round(power)), 0), 2)
        if abs(power - nearest) > 1e-6:
            warnings.append(f"{where}: its Falloff Power {power:g} is simulated as {nearest} "
                            "(the engine has powers 0, 1 and 2)")
        if f.falloff_type != 'SPHERE':
            warnings.append(f"{where}: its {f.falloff_type.title()} falloff is simulated as Sphere")
        if f.shape != 'POINT':
            warnings.append(f"{where}: its {f.shape.title()} shape is simulated as Point (the object's origin)")
        min_distance = float(f.distance_min) if f.use_min_distance else 0.0
        max_distance = float(f.distance_max) if f.use_max_distance else None
        if max_distance is not None and max_distance <= min_distance:
            raise JakobsenError(f"{where}: its Maximum Distance ({max_distance:g} m) must exceed its Minimum "
                                f"Distance ({min_distance:g} m)")
        builder.add_force("attractor", name=obj.name, position=m[:3, 3], strength=-float(f.strength),
                          falloff=FALLOFFS[nearest], min_distance=min_distance, max_distance=max_distance)
