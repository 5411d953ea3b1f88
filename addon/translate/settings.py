"""The panels' settings as the engine's: shape and mode names, connector kinds, motor modes,
falloffs, and the conversions of rates. No bpy here."""

from __future__ import annotations

import math


# Collision shapes of rigid bodies: the property's item -> the engine's shape.
RIGID_SHAPES = {'AUTOMATIC': "automatic", 'CONVEX_HULL': "convex_hull", 'BOX': "box", 'SPHERE': "sphere",
                'CAPSULE': "capsule", 'CYLINDER': "cylinder", 'STATIC_MESH': "convex_hull"}


RIGID_MODES = {'ON': "dynamic", 'OFF': "kinematic", 'GHOST': "ghost"}


# Connector types, as the engine's add_joint kinds.
JOINT_KINDS = {'FIXED': "fixed", 'HINGE': "hinge", 'BALL_SOCKET': "ball_socket", 'CARDAN': "cardan",
               'RAGDOLL': "ragdoll", 'SLIDER': "slider", 'TWIST_SLIDER': "twist_slider", 'PLANAR': "planar",
               'BOX': "box", 'WHEEL_SUSPENSION': "wheel_suspension"}


MOTOR_MODES = {'REGULATE_SPEED': "speed", 'APPLY_FORCE': "force", 'SERVO': "servo"}


# Blender's falloff power -> the engine's falloff: 1 / r^power.
FALLOFFS = {0: "none", 1: "inverse", 2: "inverse_square"}


# Follow Position / Rotation: the panel's 0..1 -> the engine's pull in 1/s. At 20/s a critically
# damped pull closes most of a gap within about a tenth of a second (a few frames), so 1 means
# "stays on the animation" while still reacting to hits; small values lag visibly.
FOLLOW_RATE = 20.0


def damping_rate(fraction: float) -> float:
    """A fraction of velocity lost per second (the panel's 0..1) -> the engine's rate in 1/s."""
    return -math.log(max(1.0 - float(fraction), 1e-6))


PIN_WEIGHT = 1.0 - 1e-6  # the engine pins a vertex at this weight and above
