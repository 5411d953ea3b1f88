"""Build ``car.blend``: an off-road car drives over bumpy ground, through a wall of crates, and turns.

The car is rigged the way a user rigs one (``cars.car``): a chassis mesh (a body with a cabin on
top) and four wheel meshes, selected with the chassis active, then *Create Vehicle*
(``bpy.ops.jakobsen.vehicle_create``), which adds a Wheel Suspension connector at each hub and
sets the masses and the suspension. What drives it is the chassis' Vehicle settings: rear-wheel
drive at a Target Speed of 5 m/s with twice the Motor Torque Create Vehicle gave it (an
off-roader's low gear: it pulls away at about half a g), and a keyed Steering angle (straight
through the wall, then a gentle turn to the left). No motor Empties.

The ground is a displaced grid (bumps of up to ~10 cm from a fixed sum of sines: no random
numbers), a Collider with Shape Mesh (its faces, not a fitted box), flat where the car starts and
under the wall. The wall is 6 x 3 crates (Dynamic rigid boxes) standing across the car's path.
A camera follows the chassis (Copy Location with an offset, Track To), a sun light is set up; it
bakes as it is:

    .venv-bpy42/bin/python blend_examples/build_car.py   # writes blend_examples/car.blend
    .venv/bin/jakobsen bake blend_examples/car.blend      # writes blend_examples/car_baked.blend
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cars  # noqa: E402
import common  # noqa: E402

FRAMES = (1, 96)
TARGET_SPEED = 5.0      # m/s
MOTOR_BOOST = 2.0       # the Vehicle's Motor Torque, times what Create Vehicle set
# The Vehicle's Steering (frame, degrees; positive turns left): straight through the wall, then a
# gentle turn.
STEERING = ((1, 0.0), (62, 0.0), (80, 12.0))
CRATE_SIZE = 0.35
CRATE_MASS = 4.0
WALL_Y = 9.0            # the wall's middle along the car's path
WALL_COLUMNS, WALL_ROWS = 6, 3
GROUND_X = (-7.0, 7.0)
GROUND_Y = (-4.0, 24.0)
GROUND_SPACING = 0.25

COLOURS = [(0.90, 0.62, 0.18), (0.20, 0.45, 0.80), (0.90, 0.80, 0.25), (0.30, 0.65, 0.35),
           (0.55, 0.35, 0.70), (0.25, 0.70, 0.75)]


def _smoothstep(e0: float, e1: float, x):
    t = np.clip((np.asarray(x, float) - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def ground_height(x, y):
    """Height (m) of the ground at (x, y): a fixed sum of sines (bumps of up to ~10 cm), faded to
    flat where the car starts (y < 2), across a strip under the wall and towards the edges (where
    the flat ground beyond takes over)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    bumps = (0.05 * np.sin(2 * math.pi * x / 3.2 + 0.4) * np.sin(2 * math.pi * y / 2.5 + 1.0)
             + 0.035 * np.sin(2 * math.pi * (0.35 * x + y) / 1.7 + 0.7)
             + 0.02 * np.sin(2 * math.pi * (y - 0.5 * x) / 1.2 + 2.1))
    start = _smoothstep(2.0, 3.5, y)
    pad = _smoothstep(0.8, 1.6, np.abs(y - WALL_Y))
    edge = _smoothstep(0.0, 2.0, np.minimum(np.minimum(x - GROUND_X[0], GROUND_X[1] - x), GROUND_Y[1] - y))
    return bumps * start * pad * edge


def crate_centres():
    """Centres of the wall's crates: WALL_COLUMNS across the path, WALL_ROWS high, each row set
    off by a few centimetres from the one below (as stacked by hand)."""
    s = CRATE_SIZE
    out = []
    for row in range(WALL_ROWS):
        shift = 0.04 * (row % 2)
        for col in range(WALL_COLUMNS):
            x = (col - (WALL_COLUMNS - 1) / 2) * (s + 0.01) + shift
            out.append((x, WALL_Y, s / 2 + row * (s + 0.002) + 0.002))
    return out


def build(path: str) -> str:
    scene = common.new_file("Car", frames=FRAMES)
    scene.jakobsen.substeps = 10

    # -- the ground: a displaced grid, a Collider colliding with its faces (Shape: Mesh) ---------
    nx = int(round((GROUND_X[1] - GROUND_X[0]) / GROUND_SPACING)) + 1
    ny = int(round((GROUND_Y[1] - GROUND_Y[0]) / GROUND_SPACING)) + 1
    vertices, faces = common.grid(nx, ny, GROUND_X[1] - GROUND_X[0], GROUND_Y[1] - GROUND_Y[0])
    vertices[:, 0] += GROUND_X[0]
    vertices[:, 1] += GROUND_Y[0]
    vertices[:, 2] = ground_height(vertices[:, 0], vertices[:, 1])
    ground = common.mesh_object("Ground", vertices, faces, material=common.material("Ground", (0.62, 0.66, 0.52)),
                                smooth=True)
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    ground.jakobsen.collider.shape = 'MESH'
    ground.jakobsen.collider.friction = 1.0
    # Beyond it, flat ground out to the horizon (only seen, not simulated), a centimetre below its edges.
    g = 80.0
    common.mesh_object("Far Ground", np.array([[-g, -g, -0.01], [g, -g, -0.01], [g, g, -0.01], [-g, g, -0.01]]),
                       [[0, 1, 2, 3]], material=ground.data.materials[0])

    # -- the car: modelled facing -Y, turned to face +Y, rigged by Create Vehicle --------------
    chassis, _ = cars.car("Car", location=(0.0, 0.0, 0.0), heading=math.pi, paint=(0.78, 0.12, 0.10))
    v = chassis.jakobsen.vehicle
    v.drive = 'REAR'
    v.target_speed = TARGET_SPEED
    v.motor_torque *= MOTOR_BOOST  # an off-roader's low gear: it pulls away at about 0.5 g
    for frame, degrees in STEERING:
        v.steering_angle = math.radians(degrees)
        v.keyframe_insert("steering_angle", frame=frame)

    # -- the wall of crates across its path --------------------------------------------------------
    for k, centre in enumerate(crate_centres()):
        vertices, faces = common.box((CRATE_SIZE,) * 3)
        crate = common.mesh_object(f"Crate {k + 1:02d}", vertices, faces,
                                   material=common.material(f"Crate {k + 1:02d}", COLOURS[k % len(COLOURS)]))
        crate.location = centre
        crate.jakobsen.enabled = True
        crate.jakobsen.type = 'RIGID_BODY'
        rb = crate.jakobsen.rigid_body
        rb.collision_shape, rb.mass, rb.friction = 'BOX', CRATE_MASS, 0.5

    # -- a camera following the car, and a sun -----------------------------------------------------
    # Behind the car and to its right, looking past it at the wall.
    cars.follow_camera(chassis, offset=(6.0, -6.5, 3.2), lens=35.0)
    common.sun("Sun")
    return common.finish(path, FRAMES[0])


if __name__ == "__main__":
    common.main(build, "car.blend")
