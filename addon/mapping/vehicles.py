"""Vehicles: a rigid body with ``jakobsen.vehicle`` enabled is a chassis; its wheels are the bodies
held by the Wheel Suspension connectors whose Object A it is -> ``ModelBuilder.add_vehicle``.

The driver's settings (Target Speed, Throttle, Motor Torque, Steering, Brake, Handbrake) are
animatable: when the chassis has animation they are sampled on every frame of the bake, like a
connector's steering. Follow Path reads the curve as it is on the bake's first frame, in world
space (Bezier segments at the curve's resolution, poly and NURBS splines through their points;
the first spline only), and its points' Radius when Speed from Radius is on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from jakobsen_engine import JakobsenError, ModelBuilder, Track
from jakobsen_engine.bodies.rigid import BodyHandle

from ..blender_io.checks import check_numbers, describe
from ..blender_io.reads import has_animation
from ..translate.transforms import matrix
from ..translate.wheels import AXES
from .bindings import BodyBinding

# Animatable settings of a chassis: engine keyword -> Vehicle property.
ANIMATED = {"target_speed": "target_speed", "throttle": "throttle", "motor_torque": "motor_torque",
            "steering": "steering_angle", "brake": "brake", "handbrake": "handbrake"}

# Forward axis -> (local axis index, sign), as Create Vehicle names them.
_AXES = AXES


def is_chassis(obj) -> bool:
    return obj.type == 'MESH' and obj.jakobsen.type == 'RIGID_BODY' and obj.jakobsen.vehicle.enabled


def animated_settings(objects) -> dict[tuple, Callable]:
    """(chassis name, "vehicle <setting>") -> getter, for chassis that have animation."""
    out: dict[tuple, Callable] = {}
    for obj in objects:
        if is_chassis(obj) and has_animation(obj):
            for keyword, prop in ANIMATED.items():
                out[(obj.name, f"vehicle {keyword}")] = (lambda p: lambda ob: getattr(ob.jakobsen.vehicle, p))(prop)
    return out


def wheel_connectors(chassis, objects) -> list:
    """The enabled Wheel Suspension connectors of this bake whose Object A is ``chassis``."""
    return [o for o in objects if o.type == 'EMPTY' and o.jakobsen.type == 'CONNECTOR'
            and o.jakobsen.connector.connector_type == 'WHEEL_SUSPENSION' and o.jakobsen.connector.object_a == chassis]


def _over_time(obj, keyword: str, sampled: dict, frame_rate: float):
    values = sampled.get((obj.name, f"vehicle {keyword}"))
    if values is None:
        return float(getattr(obj.jakobsen.vehicle, ANIMATED[keyword]))
    if not np.all(np.isfinite(values)):
        raise JakobsenError(f"{describe(obj)}: its animated vehicle {ANIMATED[keyword]} is not a number on some frame")
    if np.allclose(values, values[0], rtol=0.0, atol=1e-12):
        return float(values[0])
    return Track(rate=frame_rate, values=values)


def curve_points(curve, depsgraph, where: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """World points (P, 3), point radii (P,) and whether it is closed, of the curve's first spline."""
    from mathutils import Vector
    from mathutils.geometry import interpolate_bezier

    ob = curve.evaluated_get(depsgraph)
    data = ob.data
    if not len(data.splines):
        raise JakobsenError(f"{where}: its Follow Path curve '{curve.name}' has no splines")
    spline = data.splines[0]
    m = matrix(ob.matrix_world)
    if spline.type == 'BEZIER':
        n = len(spline.bezier_points)
        co: np.ndarray = np.zeros(n * 3)  # flat for foreach_get, then (n, 3)
        left: np.ndarray = np.zeros(n * 3)
        right: np.ndarray = np.zeros(n * 3)
        radius = np.zeros(n)
        spline.bezier_points.foreach_get("co", co)
        spline.bezier_points.foreach_get("handle_left", left)
        spline.bezier_points.foreach_get("handle_right", right)
        spline.bezier_points.foreach_get("radius", radius)
        co, left, right = co.reshape(-1, 3), left.reshape(-1, 3), right.reshape(-1, 3)
        segments = n if spline.use_cyclic_u else n - 1
        resolution = max(int(spline.resolution_u), 12)
        pts, rad = [co[:1]], [radius[:1]]
        for k in range(segments):
            j = (k + 1) % n
            seg = interpolate_bezier(Vector(co[k]), Vector(right[k]), Vector(left[j]), Vector(co[j]), resolution + 1)
            pts.append(np.array([p[:] for p in seg[1:]]))
            rad.append(np.linspace(radius[k], radius[j], resolution + 1)[1:])
        local, radii = np.concatenate(pts), np.concatenate(rad)
    else:
        n = len(spline.points)
        co4, radius = np.zeros(n * 4), np.zeros(n)
        spline.points.foreach_get("co", co4)
        spline.points.foreach_get("radius", radius)
        local, radii = co4.reshape(-1, 4)[:, :3], radius
        if spline.use_cyclic_u:
            local, radii = np.vstack([local, local[:1]]), np.append(radii, radii[0])
    if len(local) < 2:
        raise JakobsenError(f"{where}: its Follow Path curve '{curve.name}' needs at least two points")
    world = local @ m[:3, :3].T + m[:3, 3]
    return world, radii, bool(spline.use_cyclic_u)


def add_vehicles(builder: ModelBuilder, objects, depsgraph, bodies: list[BodyBinding], sampled: dict,
                 frame_rate: float, warnings: list[str]) -> None:
    """Every chassis among ``objects`` -> an engine vehicle on its wheel connectors."""
    handles = {b.object_name: b for b in bodies}
    for obj in objects:
        if not is_chassis(obj):
            continue
        where = describe(obj)
        v = obj.jakobsen.vehicle
        check_numbers(v, f"{where} (Vehicle)")
        binding = handles.get(obj.name)
        if binding is None or not binding.keyed or obj.jakobsen.rigid_body.dynamic != 'ON':
            raise JakobsenError(f"{where} is a vehicle's chassis, so it must be a rigid body with Dynamic On")
        connectors = wheel_connectors(obj, objects)
        if len(connectors) < 2:
            raise JakobsenError(f"{where} is a vehicle but has {len(connectors)} Wheel Suspension connector"
                                f"{'' if len(connectors) == 1 else 's'} with it as Object A; a vehicle needs its "
                                "wheels on them (select the chassis and its wheels and use Create Vehicle)")
        joints, wheels = [], []
        for c in connectors:
            wheel = c.jakobsen.connector.object_b
            if wheel is None or wheel.name not in handles:
                raise JakobsenError(f"{describe(c)}: a wheel of vehicle '{obj.name}' needs its wheel, a rigid body, "
                                    "in Object B")
            joints.append(builder.joint_index(c.name))
            wheels.append(wheel)
        m = matrix(obj.evaluated_get(depsgraph).matrix_world)
        axis, sign = _AXES[v.forward_axis]
        forward = m[:3, axis] * sign
        path = path_speed = None
        cyclic = False
        if v.follow_path is not None:
            path, radii, cyclic = curve_points(v.follow_path, depsgraph, where)
            path_speed = radii if v.use_path_speed else None
        axle = {}
        for end in ("front", "rear"):
            axle[end] = dict(rest=getattr(v, f"{end}_suspension_rest"), travel=getattr(v, f"{end}_suspension_travel"),
                             stiffness=getattr(v, f"{end}_suspension_stiffness"),
                             damping=getattr(v, f"{end}_suspension_damping"), anti_roll=getattr(v, f"{end}_anti_roll"))
        try:
            builder.add_vehicle(
                BodyHandle(name=obj.name, index=binding.index), joints, name=obj.name, forward=forward,
                drive=v.drive.lower(),
                differential=v.differential.lower(), max_steering=float(v.max_steering_angle),
                ackermann=bool(v.use_ackermann), brake_torque=float(v.brake_torque),
                rolling_resistance=float(v.rolling_resistance), initial_speed=float(v.initial_speed),
                wheel_friction=float(v.wheel_friction), suspension=axle, path=path, path_speed=path_speed,
                path_cyclic=cyclic, look_ahead=float(v.look_ahead),
                max_lateral_acceleration=float(v.max_lateral_acceleration),
                steering_response=float(v.steering_response), drift=float(v.drift),
                **{k: _over_time(obj, k, sampled, frame_rate) for k in ANIMATED})
        except JakobsenError as error:
            raise JakobsenError(f"{where}: {error}".replace(f"vehicle '{obj.name}': ", "")) from None
        if v.follow_path is not None and math.isclose(v.target_speed, 0.0) and not has_animation(obj):
            warnings.append(f"{where} follows the path '{v.follow_path.name}' at a Target Speed of 0: it stays put")
