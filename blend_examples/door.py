"""Build the car-door example: a door panel that a ram dents, and the dent stays.

``door.blend``
    A car door's outer panel (a closed shell of sheet steel, 1.1 m long, 0.9 m high and
    ``DEPTH`` thick, bowed outwards by ``BOW`` across its length, as a door's skin is; 20 x 16
    quads on each face, 2 across its edges) held by its hinges and its latch (its two short ends
    pinned, vertex group "Frame") just in front of a wall (a Collider box) that its back edges
    all but touch, its bowed middle clear of it. A Soft Body with Jiggle ``JIGGLE`` Hz (stiff),
    Volume off (a door is a shell, not a balloon) and Plasticity on (Limit ``PLASTIC_LIMIT`` %, a
    high Rate: steel yields at once). A ram (a log, a Dynamic rigid body Cylinder with an Initial
    Velocity, thrown on an arc that is level where it meets the door) hits the middle of the door
    at ``RAM_SPEED`` m/s, pushes the bow in, bounces off and falls to the floor: the dent stays,
    the node-and-beam way of BeamNG or Rigs of Rods. (A soft body moves by physics only, with no
    initial velocity of its own, so the door stands and the ram moves.)

    The door is soft for steel: shape matching at 10 Hz is about 2 kN/m at its middle (a 1 kg ram
    at 0.5 m/s pushes it in 12 mm and bounces back), so a gentle ram dents it. A harder blow
    (tens of joules) pushes the skin flat against the wall.

Run with the project's Python (bpy installed); the committed file is built with the oldest
Blender the add-on supports (see ``common``):

    .venv-bpy42/bin/python blend_examples/door.py             # blend_examples/door.blend
    .venv-bpy42/bin/python blend_examples/door.py OUT.blend   # elsewhere
    .venv/bin/jakobsen bake blend_examples/door.blend
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DOOR_SIZE = (1.1, 0.9)           # length (along X) and height (m)
DEPTH = 0.03                     # the shell's thickness, front skin to back skin
BOW = 0.035                      # how far the middle bows out from the straight line between its ends
DIVISIONS = (20, 2, 16)          # quads along the length, through the depth, up the height
LIFT = 0.25                      # the door's bottom above the floor
GAP = 0.002                      # its back edges this far in front of the wall: it starts touching nothing
THICKNESS = 0.004                # the soft body's collision thickness (m)
JIGGLE = 10.0                    # Hz: stiff
PLASTIC_LIMIT = 2.0              # % of the door's size: a vertex pushed further from its shape moves its rest
PLASTIC_RATE = 1000.0            # 1/s: at once
DENSITY = 8.0                    # kg/m^2 of its surface: 1 mm steel, about 8 kg/m^2
RAM_RADIUS = 0.09
RAM_LENGTH = 0.5
RAM_MASS = 4.0                   # kg: a log of light wood
RAM_SPEED = 1.2                  # m/s where it meets the door
RAM_GAP = 0.15                   # m from the ram's nose to the door at the start
HIT_HEIGHT = 0.45                # the ram's axis meets the door this high up it (along its height)
FRAMES = (1, 72)
GRAVITY = 9.81


def shell(divisions=DIVISIONS, size=(DOOR_SIZE[0], DEPTH, DOOR_SIZE[1])):
    """A closed box surface centred on the origin, cut into nx x ny x nz quads along its sides,
    faces pointing outwards. Returns vertices (v, 3) and quads (f, 4)."""
    n = np.asarray(divisions, np.int64)
    lattice = np.stack(np.meshgrid(*(np.arange(k + 1) for k in n), indexing="ij"), axis=-1).reshape(-1, 3)
    on_surface = np.any((lattice == 0) | (lattice == n), axis=1)
    points = lattice[on_surface]
    number = np.full(len(lattice), -1, np.int64)

    def key(p):
        return (p[..., 0] * (n[1] + 1) + p[..., 1]) * (n[2] + 1) + p[..., 2]

    number[key(points)] = np.arange(len(points))
    faces = []
    for axis in range(3):
        a, b = (axis + 1) % 3, (axis + 2) % 3
        u, v = np.meshgrid(np.arange(n[a]), np.arange(n[b]), indexing="ij")
        u, v = u.ravel(), v.ravel()
        for level, outward in ((0, -1), (n[axis], 1)):
            corners = []
            for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1)):
                p = np.zeros((len(u), 3), np.int64)
                p[:, axis], p[:, a], p[:, b] = level, u + du, v + dv
                corners.append(number[key(p)])
            quad = np.stack(corners, axis=1)
            # (a, b, axis) is right-handed: a -> b counter-clockwise seen from +axis.
            faces.append(quad if outward > 0 else quad[:, ::-1])
    vertices = points / n * np.asarray(size) - np.asarray(size) / 2
    return vertices.astype(np.float64), np.concatenate(faces)


def door_mesh(divisions=DIVISIONS, bow: float = BOW):
    """The door in its own frame: X along its length, Z up its height, -Y out of its front (the
    bowed side); its back edges' ends at y = 0 and its bottom at z = 0. Returns vertices, quads."""
    vertices, faces = shell(divisions)
    half = DOOR_SIZE[0] / 2
    # A circular arc through the ends and the middle, bowed out by ``bow``, bends the box.
    vertices[:, 1] -= bow * (1.0 - (vertices[:, 0] / half) ** 2) + DEPTH / 2
    vertices[:, 2] += DOOR_SIZE[1] / 2
    return vertices, faces


def door_scene(*, plasticity: bool = True, limit: float = PLASTIC_LIMIT, jiggle: float = JIGGLE,
               speed: float = RAM_SPEED, mass: float = RAM_MASS, frames=FRAMES):
    """The scene in a new file (the numbers may be changed: the tests turn Plasticity off and hit
    the door at other speeds and with other rams). Returns (door, ram, wall)."""
    scene = common.new_file("Door", frames=frames)
    scene.jakobsen.substeps = 10
    display = scene.display.shading
    display.studio_light = "rim.sl"  # light from the sides: a shallow dent reads (paint.sl's front light flattens it)
    display.show_specular_highlight = True
    display.cavity_ridge_factor, display.cavity_valley_factor = 1.0, 1.5

    vertices, faces = door_mesh()
    door = common.mesh_object("Door", vertices, faces, material=common.material("Paint", (0.30, 0.50, 0.85)),
                              smooth=True)
    door.location = (0.0, -GAP, LIFT)
    # Held by its hinges and its latch: both short ends pinned where they are.
    ends = np.flatnonzero(np.abs(vertices[:, 0]) > DOOR_SIZE[0] / 2 - 1e-6)
    door.vertex_groups.new(name="Frame").add(ends.tolist(), 1.0, 'REPLACE')
    door.jakobsen.enabled = True
    door.jakobsen.type = 'SOFT_BODY'
    sb = door.jakobsen.soft_body
    sb.jiggle_frequency = jiggle
    sb.use_volume = False
    s = door.jakobsen.cloth
    s.density = DENSITY
    s.use_rigid_stretch = s.use_rigid_shear = True   # sheet steel does not stretch
    s.bend_stiffness = 5.0
    s.thickness = THICKNESS
    s.friction = 0.6
    s.pin_group = "Frame"
    s.use_plasticity = plasticity
    s.plastic_limit = limit
    s.plastic_rate = PLASTIC_RATE

    # The wall: its face the plane y = 0, the door's back edges GAP in front of it.
    v, f = common.box((3.0, 0.3, 2.0))
    wall = common.mesh_object("Wall", v, f, material=common.material("Concrete", (0.62, 0.60, 0.57)))
    wall.location = (0.0, 0.15, 1.0)
    wall.jakobsen.enabled = True
    wall.jakobsen.type = 'COLLIDER'
    wall.jakobsen.collider.shape = 'BOX'
    wall.jakobsen.collider.friction = 0.6

    # The ram: its axis along -Y, its nose RAM_GAP in front of the door's bowed middle, thrown on
    # an arc whose top is where it meets the door (level there, at ``speed``).
    t = RAM_GAP / speed
    ram = common.mesh_object("Ram", *_cylinder(RAM_RADIUS, RAM_LENGTH),
                             material=common.material("Wood", (0.50, 0.34, 0.18)))
    ram.rotation_euler = (math.pi / 2, 0.0, 0.0)   # its local Z (the cylinder's axis) along -Y
    ram.location = (0.0, -(GAP + DEPTH + BOW + RAM_GAP + RAM_LENGTH / 2), LIFT + HIT_HEIGHT - 0.5 * GRAVITY * t * t)
    ram.jakobsen.enabled = True
    ram.jakobsen.type = 'RIGID_BODY'
    rb = ram.jakobsen.rigid_body
    rb.dynamic = 'ON'
    rb.collision_shape = 'CYLINDER'
    rb.mass = mass
    rb.friction = 0.4
    rb.use_initial_velocity = True
    rb.initial_velocity = (0.0, speed, GRAVITY * t)

    g = 20.0
    ground = common.mesh_object("Floor", np.array([[-g, -g, 0.0], [g, -g, 0.0], [g, g, 0.0], [-g, g, 0.0]]),
                                [[0, 1, 2, 3]], material=common.material("Floor", (0.78, 0.74, 0.68)))
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    ground.jakobsen.collider.shape = 'PLANE'
    ground.jakobsen.collider.friction = 0.8

    common.camera("Camera", location=(1.9, -1.75, 1.25), target=(0.0, -0.05, 0.68), lens=36.0)
    common.sun("Sun")
    return door, ram, wall


def _cylinder(radius: float, length: float, segments: int = 24):
    """A closed cylinder along the local Z axis, centred on the origin: vertices, faces."""
    a = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    ring = np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1)
    vertices = np.concatenate([np.column_stack([ring, np.full(segments, z)]) for z in (-length / 2, length / 2)])
    k = np.arange(segments)
    sides = np.stack([k, (k + 1) % segments, (k + 1) % segments + segments, k + segments], axis=1).tolist()
    return vertices, sides + [list(k[::-1]), list(k + segments)]


def build_door(path: str) -> str:
    door_scene()
    return common.finish(path, FRAMES[0])


if __name__ == "__main__":
    common.main(build_door, "door.blend")
