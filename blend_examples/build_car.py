"""Build ``car.blend``: a car drives over bumpy ground, knocks over two towers of crates and turns.

The car is a chassis (a 400 kg box rigid body) with a cabin on top (a separate box joined to it by
a Fixed connector) on four wheels (15 kg cylinders, friction 1). Each wheel hangs on a Wheel
Suspension connector (an Empty at the wheel's centre: its X axis is the axle, its Z the
suspension and steering axis; rest position -0.1 m, 20000 N/m, 2000 N s/m, limits +-0.25 m).
The front wheels steer: their Steering Angle is keyframed (straight, then a gentle left turn).
Two Motor Empties (Angular, Regulate Speed, 10 rad/s, at most 300 N m; their Z axis along the
axle) drive the rear wheels against the chassis, so the car drives along +Y at about
10 rad/s x 0.3 m = 3 m/s.

The ground is a displaced grid (gentle bumps of up to ~7 cm, from a fixed sum of sines: no random
numbers), a passive rigid body colliding with its faces (Dynamic Off, Static Mesh), flat where the
car starts and under the crates. Six crates stand in two towers in the car's path. A camera follows
the chassis (a Track To constraint), a sun light is set up; it bakes as it is:

    .venv-bpy42/bin/python blend_examples/build_car.py   # writes blend_examples/car.blend
    .venv/bin/jakobsen bake blend_examples/car.blend      # writes blend_examples/car_baked.blend
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

FRAMES = (1, 96)
WHEEL_RADIUS = 0.3
WHEEL_WIDTH = 0.22
WHEEL_MASS = 15.0
WHEEL_X = 0.75          # half the track (wheel centres at x = +-0.75)
WHEEL_Y = 0.9           # half the wheelbase (rear axle at y = -0.9, front at +0.9)
WHEEL_Z = WHEEL_RADIUS + 0.02  # wheel centres 2 cm above the flat start: the car drops onto its wheels
CHASSIS_SIZE = (1.2, 2.4, 0.4)
CHASSIS_Z = WHEEL_Z + 0.1
CHASSIS_MASS = 400.0
CABIN_SIZE = (1.0, 1.1, 0.45)
CABIN_Y = -0.25
CABIN_MASS = 40.0
SUSPENSION = dict(suspension_rest=-0.1, suspension_stiffness=20000.0, suspension_damping=2000.0,
                  suspension_lower=-0.25, suspension_upper=0.25)
MOTOR_SPEED = 10.0      # rad/s
MOTOR_TORQUE = 300.0    # N m
# Steering of the front wheels (frame, degrees; positive turns left): straight, then a gentle turn.
STEERING = ((1, 0.0), (38, 0.0), (56, 20.0))
CRATE_SIZE = 0.45
CRATE_MASS = 5.0
CRATES_Y = 4.6          # centre of the crate towers along the car's path
GROUND_X = (-6.0, 6.0)
GROUND_Y = (-3.0, 15.0)
GROUND_SPACING = 0.25

COLOURS = [(0.90, 0.62, 0.18), (0.20, 0.45, 0.80), (0.90, 0.80, 0.25), (0.30, 0.65, 0.35),
           (0.55, 0.35, 0.70), (0.25, 0.70, 0.75)]


def _smoothstep(e0: float, e1: float, x):
    t = np.clip((np.asarray(x, float) - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def ground_height(x, y):
    """Height (m) of the ground at (x, y): a fixed sum of sines (bumps up to ~7 cm), faded to flat
    where the car starts (y < 1.5) and on a pad under the crates."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    bumps = (0.035 * np.sin(2 * math.pi * x / 1.9 + 0.4) * np.sin(2 * math.pi * y / 2.3 + 1.0)
             + 0.025 * np.sin(2 * math.pi * (0.55 * x + y) / 1.6 + 0.7)
             + 0.015 * np.sin(2 * math.pi * (y - 0.8 * x) / 1.1 + 2.1))
    start = _smoothstep(1.5, 3.0, y)
    pad = _smoothstep(1.4, 2.2, np.hypot(x, y - CRATES_Y))
    return bumps * start * pad


def crate_centres():
    """Centres of the crates: two towers of three, side by side across the car's path."""
    s = CRATE_SIZE
    return [(x, CRATES_Y + dy, s / 2 + level * s + 0.001) for x, dy in ((-0.3, -0.25), (0.35, 0.25))
            for level in range(3)]


def rigid(obj, *, mass: float, shape: str, friction: float = 0.5, dynamic: str = 'ON'):
    obj.jakobsen.enabled = True
    obj.jakobsen.type = 'RIGID_BODY'
    rb = obj.jakobsen.rigid_body
    rb.dynamic, rb.collision_shape = dynamic, shape
    rb.mass, rb.friction = mass, friction
    return obj


def box_object(name: str, size, location, *, colour=None, mat=None):
    vertices, faces = common.box(size)
    obj = common.mesh_object(name, vertices, faces, material=mat or common.material(name, colour))
    obj.location = location
    return obj


def wheel_mesh(segments: int = 24, sectors: int = 4):
    """A closed cylinder along local Z (radius WHEEL_RADIUS, width WHEEL_WIDTH), its caps fans of
    triangles, and each face's material index (0 tyre, 1 hub, 2 hub marks) so the spin shows."""
    angles = np.linspace(0.0, 2 * math.pi, segments, endpoint=False)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1) * WHEEL_RADIUS
    h = WHEEL_WIDTH / 2
    vertices = np.concatenate([np.c_[ring, np.full(segments, -h)], np.c_[ring, np.full(segments, h)],
                               [[0.0, 0.0, -h], [0.0, 0.0, h]]])
    c0, c1 = 2 * segments, 2 * segments + 1
    faces, materials = [], []
    for k in range(segments):
        n = (k + 1) % segments
        faces.append([k, n, segments + n, segments + k])
        materials.append(0)
    for k in range(segments):
        n = (k + 1) % segments
        mark = 2 if (k * sectors // segments) % 2 == 0 else 1
        faces.append([c0, n, k])                         # cap at -Z, facing -Z
        faces.append([c1, segments + k, segments + n])   # cap at +Z, facing +Z
        materials += [mark, mark]
    return vertices, faces, materials


def empty(name: str, location, rotation=(0.0, 0.0, 0.0), *, display='ARROWS', size=0.35):
    import bpy

    obj = bpy.data.objects.new(name, None)
    obj.empty_display_type = display
    obj.empty_display_size = size
    obj.location = location
    obj.rotation_euler = rotation
    bpy.context.scene.collection.objects.link(obj)
    obj.jakobsen.enabled = True
    return obj


def build(path: str) -> str:
    scene = common.new_file("Car", frames=FRAMES)
    scene.jakobsen.substeps = 10

    # -- the ground: a displaced grid, a passive body colliding with its faces --------------------
    nx = int(round((GROUND_X[1] - GROUND_X[0]) / GROUND_SPACING)) + 1
    ny = int(round((GROUND_Y[1] - GROUND_Y[0]) / GROUND_SPACING)) + 1
    vertices, faces = common.grid(nx, ny, GROUND_X[1] - GROUND_X[0], GROUND_Y[1] - GROUND_Y[0])
    vertices[:, 0] += GROUND_X[0]
    vertices[:, 1] += GROUND_Y[0]
    vertices[:, 2] = ground_height(vertices[:, 0], vertices[:, 1])
    ground = common.mesh_object("Ground", vertices, faces, material=common.material("Ground", (0.62, 0.66, 0.52)),
                                smooth=True)
    rigid(ground, mass=1.0, shape='STATIC_MESH', friction=0.9, dynamic='OFF')
    # Beyond it, flat ground out to the horizon (only seen, not simulated), a little below the bumps.
    g = 80.0
    common.mesh_object("Far Ground", np.array([[-g, -g, -0.08], [g, -g, -0.08], [g, g, -0.08], [-g, g, -0.08]]),
                       [[0, 1, 2, 3]], material=ground.data.materials[0])

    # -- the car ------------------------------------------------------------------------------------
    red = common.material("Car Paint", (0.78, 0.12, 0.10))
    chassis = rigid(box_object("Chassis", CHASSIS_SIZE, (0.0, 0.0, CHASSIS_Z), mat=red),
                    mass=CHASSIS_MASS, shape='BOX')
    cabin_z = CHASSIS_Z + CHASSIS_SIZE[2] / 2 + CABIN_SIZE[2] / 2
    cabin = rigid(box_object("Cabin", CABIN_SIZE, (0.0, CABIN_Y, cabin_z), colour=(0.85, 0.85, 0.88)),
                  mass=CABIN_MASS, shape='BOX')
    weld = empty("Cabin Weld", (0.0, CABIN_Y, CHASSIS_Z + CHASSIS_SIZE[2] / 2), display='PLAIN_AXES', size=0.2)
    weld.jakobsen.type = 'CONNECTOR'
    weld.jakobsen.connector.connector_type = 'FIXED'
    weld.jakobsen.connector.object_a, weld.jakobsen.connector.object_b = chassis, cabin

    tyre = common.material("Tyre", (0.10, 0.10, 0.11))
    hub = common.material("Hub", (0.75, 0.76, 0.78))
    mark = common.material("Hub Mark", (0.95, 0.75, 0.15))
    w_vertices, w_faces, w_materials = wheel_mesh()
    for side, sx in (("Left", -1), ("Right", 1)):
        for end, sy in (("Rear", -1), ("Front", 1)):
            centre = (sx * WHEEL_X, sy * WHEEL_Y, WHEEL_Z)
            wheel = common.mesh_object(f"Wheel {end} {side}", w_vertices, w_faces, material=tyre)
            wheel.data.materials.append(hub)
            wheel.data.materials.append(mark)
            wheel.data.polygons.foreach_set("material_index", w_materials)
            wheel.location = centre
            wheel.rotation_euler = (0.0, math.pi / 2, 0.0)  # the cylinder's Z along the axle (world X)
            rigid(wheel, mass=WHEEL_MASS, shape='CYLINDER', friction=1.0)

            # The suspension: X the axle (across the car), Z up (suspension travel and steering).
            susp = empty(f"Suspension {end} {side}", centre)
            susp.jakobsen.type = 'CONNECTOR'
            c = susp.jakobsen.connector
            c.connector_type = 'WHEEL_SUSPENSION'
            c.object_a, c.object_b = chassis, wheel
            for key, value in SUSPENSION.items():
                setattr(c, key, value)
            if end == "Front":
                for frame, degrees in STEERING:
                    c.steering_angle = math.radians(degrees)
                    c.keyframe_insert("steering_angle", frame=frame)

            if end == "Rear":
                # The motor's axis is its Z: along -X, so that a positive speed rolls the car to +Y.
                motor = empty(f"Motor {side}", centre, (0.0, -math.pi / 2, 0.0), display='SINGLE_ARROW', size=0.5)
                motor.jakobsen.type = 'MOTOR'
                m = motor.jakobsen.motor
                m.motor_type, m.mode = 'ANGULAR', 'REGULATE_SPEED'
                m.object_a, m.object_b = wheel, chassis
                m.target_angular_speed = MOTOR_SPEED
                m.max_torque = MOTOR_TORQUE

    # -- two towers of crates in the car's path ---------------------------------------------------------
    for k, (x, y, z) in enumerate(crate_centres()):
        crate = box_object(f"Crate {k + 1}", (CRATE_SIZE,) * 3, (x, y, z), colour=COLOURS[k % len(COLOURS)])
        rigid(crate, mass=CRATE_MASS, shape='BOX', friction=0.5)

    # -- camera following the chassis, and a sun ---------------------------------------------------
    # Ahead of the car and to its right: it drives towards the camera, into the crates.
    cam = common.camera("Camera", location=(5.5, 12.5, 4.0), target=(0.0, 3.0, 0.5), lens=40.0)
    track = cam.constraints.new('TRACK_TO')
    track.target = chassis
    track.track_axis, track.up_axis = 'TRACK_NEGATIVE_Z', 'UP_Y'
    common.sun("Sun")
    scene.frame_set(FRAMES[0])
    return common.save(path)


if __name__ == "__main__":
    common.main(build, "car.blend")
