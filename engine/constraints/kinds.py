"""Which connector kind takes which setting: one table for the engine's check, the add-on's
mapping and the Connector panel, so the three cannot disagree.

Every kind takes the common settings (breaking force and torque, ignore collisions); a kind with
a limit also takes ``limit_bounce``. The settings are ``ModelBuilder.add_joint`` keywords.
"""

from __future__ import annotations

COMMON_SETTINGS = ("breaking_force", "breaking_torque", "ignore_collisions")

# kind -> its own settings, in the order the panel shows them.
CONNECTOR_SETTINGS: dict[str, tuple[str, ...]] = {
    "fixed": (),
    "hinge": ("angle_limits",),
    "ball_socket": (),
    "cardan": ("cone_angle",),
    "ragdoll": ("cone_angle", "twist_limits"),
    "slider": ("distance_limits",),
    "twist_slider": ("angle_limits", "distance_limits"),
    "planar": (),
    "box": ("box_limits",),
    "wheel_suspension": ("steering", "suspension_rest", "suspension_stiffness", "suspension_damping",
                         "suspension_limits"),
}

# The settings that limit motion: a kind with one of them can bounce off it (limit_bounce).
LIMIT_SETTINGS = frozenset({"angle_limits", "distance_limits", "cone_angle", "twist_limits", "box_limits",
                            "suspension_limits"})

KINDS = tuple(CONNECTOR_SETTINGS)


def settings_of(kind: str) -> tuple[str, ...]:
    """Every keyword ``add_joint`` takes for ``kind``: its own, then limit_bounce if it has a
    limit, then the common ones."""
    own = CONNECTOR_SETTINGS[kind]
    bounce = ("limit_bounce",) if LIMIT_SETTINGS.intersection(own) else ()
    return own + bounce + COMMON_SETTINGS


def has_limits(kind: str) -> bool:
    return bool(LIMIT_SETTINGS.intersection(CONNECTOR_SETTINGS[kind]))
