"""Connector, spring and motor Empties -> the engine's joints, springs and motors."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from jakobsen_engine import JakobsenError, ModelBuilder, Track
from jakobsen_engine.bodies.rigid import BodyHandle
from jakobsen_engine.constraints import kinds as connector_kinds

from ..blender_io.checks import ROLE_NAMES, check_order, describe
from ..blender_io.reads import has_animation, takes_part, transform_animated
from ..properties import EMPTY_TYPES
from ..translate.settings import JOINT_KINDS, MOTOR_MODES
from ..translate.transforms import matrix
from .bindings import BodyBinding, ColliderBinding


def _is_wheel(ob) -> bool:
    return ob.jakobsen.connector.connector_type == 'WHEEL_SUSPENSION'


def _is_angular(ob) -> bool:
    return ob.jakobsen.motor.motor_type == 'ANGULAR'


# Animatable settings of the Empties, sampled per frame when the Empty has animation:
# setting -> (role, getter of the evaluated object, whether the object uses it). A motor reads
# only the target its mode uses, and the torque or the force its type uses.
ANIMATABLE = {
    "steering": ('CONNECTOR', lambda ob: ob.jakobsen.connector.steering_angle, _is_wheel),
    "motor target": ('MOTOR', lambda ob: motor_target(ob.jakobsen.motor), None),
    "motor on": ('MOTOR', lambda ob: float(ob.jakobsen.motor.use_motor), None),
    "motor torque": ('MOTOR', lambda ob: ob.jakobsen.motor.max_torque, _is_angular),
    "motor force": ('MOTOR', lambda ob: ob.jakobsen.motor.max_force, lambda ob: not _is_angular(ob)),
}


def motor_target(m) -> float:
    """The target the motor's mode uses: rad/s or m/s (speed), rad or m (servo); 0 when applying force."""
    angular = m.motor_type == 'ANGULAR'
    if m.mode == 'REGULATE_SPEED':
        return m.target_angular_speed if angular else m.target_linear_speed
    if m.mode == 'SERVO':
        return m.target_angle if angular else m.target_position
    return 0.0


def animated_settings(objects) -> dict[tuple, Callable]:
    """(object name, setting) -> getter, for the animatable settings of animated Empties."""
    out: dict[tuple, Callable] = {}
    for obj in objects:
        if obj.type != 'EMPTY' or not has_animation(obj):
            continue
        for setting, (role, getter, uses) in ANIMATABLE.items():
            if obj.jakobsen.type == role and (uses is None or uses(obj)):
                out[(obj.name, setting)] = getter
    return out


def setting_over_time(obj, setting: str, sampled: dict, frame_rate: float):
    """A float, or an engine ``Track`` (a sample a frame) if the setting changes during the bake."""
    values = sampled.get((obj.name, setting))
    if values is None:
        return float(ANIMATABLE[setting][1](obj))
    if not np.all(np.isfinite(values)):
        raise JakobsenError(f"{describe(obj)}: its animated {setting} is not a number on some frame")
    if np.allclose(values, values[0], rtol=0.0, atol=1e-12):
        return float(values[0])
    return Track(rate=frame_rate, values=values)


def connector_label(obj) -> str:
    """The connector type as the panel shows it ("Hinge", "Wheel Suspension")."""
    settings = obj.jakobsen.connector
    return settings.bl_rna.properties["connector_type"].enum_items[settings.connector_type].name


def what_it_is(obj) -> str:
    """``a Hinge connector``, ``a spring``, ``a motor``: how messages name what an Empty is."""
    if obj.jakobsen.type == 'CONNECTOR':
        return f"a {connector_label(obj)} connector"
    return f"a {ROLE_NAMES[obj.jakobsen.type]}"


def check_pairs(objects) -> None:
    taking_part = {o.name: o for o in objects}
    for obj in objects:
        if obj.jakobsen.type not in EMPTY_TYPES:
            continue
        where = describe(obj)
        a, b = obj.jakobsen.pair()
        if a is None and b is None:
            raise JakobsenError(f"{where} has neither Object A nor Object B; set at least one "
                                "(an empty slot means the world)")
        if a is not None and a == b:
            raise JakobsenError(f"{where} joins '{a.name}' to itself; Object A and Object B must differ")
        if obj.jakobsen.type == 'MOTOR' and a is None:
            raise JakobsenError(f"{where} has no Object A: Object A is the body the motor drives, Object B the "
                                "one it pushes against (empty: the world)")
        for slot, other in (("Object A", a), ("Object B", b)):
            if other is None:
                continue
            if other.name in taking_part and other.jakobsen.type != 'RIGID_BODY':
                raise JakobsenError(f"{where}: its {slot} '{other.name}' is not a rigid body (it is a "
                                    f"{ROLE_NAMES[other.jakobsen.type]}); {what_it_is(obj)} joins rigid bodies "
                                    "(leave the slot empty to join to the world)")
            if other.name not in taking_part and takes_part(other) and other.jakobsen.type == 'RIGID_BODY':
                raise JakobsenError(f"{where}: its {slot} '{other.name}' is a rigid body but not in the view "
                                    "layer (its collection is excluded, or it is in another scene), so it is not "
                                    "simulated; include its collection (the checkbox in the Outliner)")
            if other.name not in taking_part:
                raise JakobsenError(f"{where}: its {slot} '{other.name}' is not a body in the simulation; "
                                    "enable Jakobsen Physics on it as a rigid body (or leave the slot empty to "
                                    "join to the world)")


def idle_pairs(objects) -> list[str]:
    """Warnings for connectors, springs and motors that cannot act: both their bodies follow
    their animation (Dynamic Off, or the world; they baked without a word). A motor whose driven
    body (Object A) has Dynamic Off still drives its Object B, the other way, by the reaction."""
    def fixed(body) -> bool:
        return body is None or body.jakobsen.rigid_body.dynamic == 'OFF'

    out = []
    for obj in objects:
        if obj.jakobsen.type not in EMPTY_TYPES:
            continue
        a, b = obj.jakobsen.pair()
        if fixed(a) and fixed(b):
            out.append(f"{describe(obj)}: both its bodies follow their animation (Dynamic Off, or the world), so "
                       "it does nothing; set Dynamic On on the one it should move")
    return out


# An Empty whose axes are further than this from square is warned about (its axis is then about
# half that from the one the solver takes).
SHEAR_DEGREES = 1.0


def sheared_empties(objects, depsgraph) -> list[str]:
    """Warnings for connectors, springs and motors whose Empty is sheared (its axes not square
    to each other: a rotated Empty under an unevenly scaled parent, as imports make): Blender
    draws the sheared axes, and the solver takes the rotation nearest to them (a hinge tilted 45
    degrees under a parent scaled (3, 1, 1) was drawn 26.6 degrees from the axis it turned about,
    silently; found by the add-on probe)."""
    out = []
    for obj in objects:
        if obj.jakobsen.type not in EMPTY_TYPES:
            continue
        m = matrix(obj.evaluated_get(depsgraph).matrix_world)[:3, :3]
        lengths = np.linalg.norm(m, axis=0)
        if not np.all(np.isfinite(m)) or np.any(lengths < 1e-12):
            continue  # (refused by empty_frame, naming it)
        axes = m / lengths
        off = max(abs(90.0 - math.degrees(math.acos(max(-1.0, min(1.0, float(axes[:, i] @ axes[:, j]))))))
                  for i, j in ((0, 1), (0, 2), (1, 2)))
        if off > SHEAR_DEGREES:
            out.append(f"{describe(obj)}: its axes are sheared ({off:.1f} degrees from square) by the uneven scale "
                       f"of its parent '{obj.parent.name if obj.parent else ''}', so {what_it_is(obj)} takes the "
                       "rotation nearest to them, not the axes drawn; give the parent an even scale (or apply "
                       "it), or unparent the Empty keeping its transform")
    return out


def empty_frame(obj, depsgraph) -> np.ndarray:
    """The Empty's matrix_world on the first frame with its scale taken out: columns X, Y, Z are
    unit axes (the connector's frame, the motor's Z axis)."""
    where = describe(obj)
    m = matrix(obj.evaluated_get(depsgraph).matrix_world)
    if not np.all(np.isfinite(m)):
        raise JakobsenError(f"{where}: its transform is not a number (check its location, rotation, "
                            "scale and parents)")
    lengths = np.linalg.norm(m[:3, :3], axis=0)
    for axis, length in zip("XYZ", lengths):
        if length < 1e-12:
            raise JakobsenError(f"{where}: its {axis} axis has zero length (its scale is zero); "
                                f"{what_it_is(obj)} takes its axes from the Empty's rotation")
    m[:3, :3] /= lengths
    if np.linalg.det(m[:3, :3]) < 0:
        raise JakobsenError(f"{where}: its scale is negative (mirrored); {what_it_is(obj)} takes its axes "
                            "from the Empty's rotation, so give it a positive scale")
    return m


def joint_settings(obj, sampled: dict, frame_rate: float) -> dict:
    """The Connector panel's settings that apply to the chosen type (the engine's table of which
    kind takes which setting), as add_joint keywords; a limit switched off is left out."""
    c = obj.jakobsen.connector
    out = {}
    for setting in connector_kinds.settings_of(JOINT_KINDS[c.connector_type]):
        value = _PANEL_READERS[setting](obj, c, sampled, frame_rate)
        if value is not None:
            out[setting] = value
    return out


def _box_limits(obj, c, *_):
    lower, upper = tuple(float(v) for v in c.box_lower), tuple(float(v) for v in c.box_upper)
    bad = [axis for axis, lo, hi in zip("XYZ", lower, upper) if lo > hi]
    if bad:
        raise JakobsenError(f"{describe(obj)}: the Box's Lower {bad[0]} is above its Upper {bad[0]}")
    return lower, upper


def _limits(switch: str | None, low: str, high: str, *, angle: bool):
    """A (low, high) pair read from the panel when its switch is on (or there is none)."""
    def read(obj, c, *_):
        if switch is not None and not getattr(c, switch):
            return None
        check_order(c, low, high, describe(obj), angle=angle)
        return float(getattr(c, low)), float(getattr(c, high))
    return read


# add_joint keyword -> reader(obj, connector settings, sampled settings, frame rate): its value
# from the Connector panel, or None when the panel leaves it off.
_PANEL_READERS = {
    "angle_limits": _limits("use_angular_limit", "angle_min", "angle_max", angle=True),
    "distance_limits": _limits("use_linear_limit", "distance_min", "distance_max", angle=False),
    # A Ragdoll always has its cone; a Cardan's is switched.
    "cone_angle": lambda obj, c, *_: (float(c.cone_angle) if c.connector_type == 'RAGDOLL' or c.use_cone_limit
                                      else None),
    "twist_limits": lambda obj, c, *_: (-float(c.twist_angle), float(c.twist_angle)),
    "box_limits": _box_limits,
    "steering": lambda obj, c, sampled, rate: setting_over_time(obj, "steering", sampled, rate),
    "suspension_rest": lambda obj, c, *_: float(c.suspension_rest),
    "suspension_stiffness": lambda obj, c, *_: float(c.suspension_stiffness),
    "suspension_damping": lambda obj, c, *_: float(c.suspension_damping),
    "suspension_limits": _limits(None, "suspension_lower", "suspension_upper", angle=False),
    "limit_bounce": lambda obj, c, *_: float(c.limit_bounce),
    "breaking_force": lambda obj, c, *_: float(c.breaking_force) if c.use_breaking else math.inf,
    "breaking_torque": lambda obj, c, *_: float(c.breaking_torque) if c.use_breaking else math.inf,
    "ignore_collisions": lambda obj, c, *_: bool(c.ignore_collisions),
}


MOTOR_AXLE_DEGREES = 10.0  # a motor further than this from its wheel's axle is warned about


# The axis each connector leaves free, as a column of its Empty's frame, for a motor that turns
# (about it) or pushes (along it): a Wheel Suspension spins about X, a Hinge, Twist Slider or
# Planar turns about Z, a Slider or Twist Slider slides along Z.
FREE_AXES = {'ANGULAR': {'WHEEL_SUSPENSION': 0, 'HINGE': 2, 'TWIST_SLIDER': 2, 'PLANAR': 2},
             'LINEAR': {'SLIDER': 2, 'TWIST_SLIDER': 2}}
_FREE_AXIS_NAMES = {'WHEEL_SUSPENSION': "X", 'HINGE': "Z", 'TWIST_SLIDER': "Z", 'PLANAR': "Z", 'SLIDER': "Z"}


def freeing_connectors(body, other, objects, motor_type: str) -> list:
    """The connectors among ``objects`` that leave ``body`` free to turn (``motor_type``
    'ANGULAR') or slide ('LINEAR') about or along one axis relative to ``other`` (a motor's
    Object A and Object B; None: the world): those joining the two, either way round; failing
    that, with ``other`` the world, those holding ``body`` as their Object B (a wheel driven
    against the world, held to its chassis). A chassis, Object A of its wheels' connectors, is
    not taken as held by them."""
    if body is None:
        return []
    kinds = FREE_AXES[motor_type]
    held = [o for o in objects if o.type == 'EMPTY' and o.jakobsen.type == 'CONNECTOR'
            and o.jakobsen.connector.connector_type in kinds]
    pair = [o for o in held if {o.jakobsen.connector.object_a, o.jakobsen.connector.object_b} == {body, other}]
    if pair or other is not None:
        return pair
    return [o for o in held if o.jakobsen.connector.object_b == body]


def free_axis(connector, depsgraph, motor_type: str) -> np.ndarray:
    """(3,) the world axis ``connector`` leaves free for a motor of ``motor_type``."""
    return empty_frame(connector, depsgraph)[:3, FREE_AXES[motor_type][connector.jakobsen.connector.connector_type]]


def motor_axle_warnings(motor, axis: np.ndarray, objects, depsgraph) -> list[str]:
    """Warnings for a motor whose Object A a connector holds free about (or along) one axis only:
    the motor turns about (or pushes along) its Empty's Z, so a motor more than a few degrees off
    that axis pushes against the connector (a door on a vertical hinge with its motor across the
    slab stood still, silently; at 90 degrees nothing moves)."""
    m = motor.jakobsen.motor
    body = m.object_a
    turns = m.motor_type == 'ANGULAR'
    out = []
    for connector in freeing_connectors(body, m.object_b, objects, m.motor_type):
        free = free_axis(connector, depsgraph, m.motor_type)
        angle = math.degrees(math.acos(min(1.0, abs(float(np.dot(axis, free))))))
        if angle > MOTOR_AXLE_DEGREES:
            kind = connector.jakobsen.connector.connector_type.replace("_", " ").title()
            out.append(f"{describe(motor)}: its axis (the Empty's Z) is {angle:.0f} degrees from the axis "
                       f"'{body.name}' {'turns about' if turns else 'slides along'} (the "
                       f"{_FREE_AXIS_NAMES[connector.jakobsen.connector.connector_type]} axis of the {kind} "
                       f"'{connector.name}'), so only the part of its {'torque' if turns else 'force'} along "
                       "it moves the body and the connector takes the rest (at 90 degrees nothing moves); "
                       f"turn the Empty so that its Z lies along that axis (Add Motor with '{body.name}' active "
                       "does)")
    return out


def add_empties(builder: ModelBuilder, objects, depsgraph, bodies: list[BodyBinding],
                 colliders: list[ColliderBinding], sampled: dict, frame_rate: float,
                 warnings: list[str]) -> dict[str, str]:
    """Connector, spring and motor Empties -> engine joints, springs and motors, as on the bake's
    first frame. Returns what may break: engine name -> "connector" or "spring"."""
    handles = {b.object_name: BodyHandle(name=b.object_name, index=b.index) for b in bodies}
    as_colliders = {c.object_name for c in colliders}
    breakable = {}
    for obj in objects:
        role = obj.jakobsen.type
        if role not in EMPTY_TYPES:
            continue
        where = describe(obj)
        if transform_animated(obj):
            # A connector is fixed in its bodies from the first frame on (as in Cinema 4D); moving
            # the Empty afterwards changes nothing, which a user animating it would not expect.
            warnings.append(f"{where}: its transform is animated, but {what_it_is(obj)} stays where it is "
                            "on the bake's first frame and then moves with its bodies")
        ends: list[BodyHandle | None] = []
        for slot, other in zip(("Object A", "Object B"), obj.jakobsen.pair()):
            if other is None:
                ends.append(None)
            elif other.name in handles:
                ends.append(handles[other.name])
            else:
                why = ("collides with its faces (Dynamic Off with a Static Mesh shape, or a flat mesh with "
                       f"Automatic), so it is a collider, not a body {what_it_is(obj)} can hold; give it "
                       "another collision shape" if other.name in as_colliders
                       else "is not a rigid body of this bake")
                raise JakobsenError(f"{where}: its {slot} '{other.name}' {why}, "
                                    "or leave the slot empty to join to the world")
        frame = empty_frame(obj, depsgraph)
        if role == 'CONNECTOR':
            builder.add_joint(JOINT_KINDS[obj.jakobsen.connector.connector_type], ends[0], ends[1], frame[:3, 3],
                              frame=frame[:3, :3], name=obj.name, **joint_settings(obj, sampled, frame_rate))
            breakable[obj.name] = "connector"
        elif role == 'SPRING':
            s = obj.jakobsen.spring
            # Each end holds its body at the body's origin; a world end holds at the Empty.
            anchors = [frame[:3, 3] if other is None else matrix(other.evaluated_get(depsgraph).matrix_world)[:3, 3]
                       for other in obj.jakobsen.pair()]
            builder.add_spring(
                ends[0], ends[1], anchors[0], anchors[1], name=obj.name, kind=s.spring_type.lower(),
                rest_length=None if s.use_current_length else float(s.rest_length),
                stiffness=float(s.stiffness), damping=float(s.damping),
                angular_stiffness=float(s.angular_stiffness), angular_damping=float(s.angular_damping),
                elastic_limits=(float(s.elastic_compression), float(s.elastic_stretch)) if s.use_plastic else None,
                break_stretch=float(s.break_stretch) if s.use_breaking else math.inf,
                break_compression=float(s.break_compression) if s.use_breaking else math.inf)
            breakable.setdefault(obj.name, "spring")
        else:
            m = obj.jakobsen.motor
            effort = (("torque", "motor torque") if m.motor_type == 'ANGULAR' else ("force", "motor force"))
            settings = {effort[0]: setting_over_time(obj, effort[1], sampled, frame_rate)}
            enabled = setting_over_time(obj, "motor on", sampled, frame_rate)
            if isinstance(enabled, Track):
                # Keyed on and off: a boolean's keys hold their value, so each frame's sample is 0 or 1.
                settings["enabled"] = Track(rate=frame_rate, values=(np.asarray(enabled.values) > 0.5).astype(float))
            elif not enabled:
                settings["enabled"] = 0.0
            # (A motor that is on throughout leaves ``enabled`` at the engine's default.)
            warnings.extend(motor_axle_warnings(obj, frame[:3, 2], objects, depsgraph))
            assert ends[0] is not None  # check_pairs has refused a motor without Object A
            builder.add_motor(ends[0], ends[1], frame[:3, 2], name=obj.name, kind=m.motor_type.lower(),
                              mode=MOTOR_MODES[m.mode],
                              target=setting_over_time(obj, "motor target", sampled, frame_rate), **settings)
    return breakable
