"""Build ``rigid_boxes.blend``: a crate slides down a ramp into a row of dominoes; more fall.

Five dominoes stand on the ground at the foot of a ramp (a passive rigid body: Dynamic Off). A
crate falls onto the ramp, slides down and knocks the row over; two more crates fall from above,
turned every which way. A long plank is pushed along the ground by an animated passive paddle
(Dynamic Off, keyframed): a body that follows its animation. The ground is a plane collider.
A camera and a sun light are set up; it bakes as it is:

    .venv-bpy42/bin/python blend_examples/build_rigid_boxes.py   # writes blend_examples/rigid_boxes.blend
    .venv/bin/jakobsen bake blend_examples/rigid_boxes.blend      # writes blend_examples/rigid_boxes_baked.blend
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

COLOURS = [(0.85, 0.55, 0.20), (0.20, 0.45, 0.80), (0.85, 0.25, 0.25), (0.30, 0.65, 0.35),
           (0.90, 0.80, 0.25), (0.55, 0.35, 0.70), (0.25, 0.70, 0.75), (0.80, 0.45, 0.60)]


def crate(name: str, size, location, rotation=(0.0, 0.0, 0.0), *, colour, mass: float = 1.0, friction=0.6,
          bounce=0.1):
    vertices, faces = common.box(size)
    obj = common.mesh_object(name, vertices, faces, material=common.material(name, colour))
    obj.location = location
    obj.rotation_euler = rotation
    obj.jakobsen.enabled = True
    obj.jakobsen.type = 'RIGID_BODY'
    rb = obj.jakobsen.rigid_body
    rb.collision_shape = 'BOX'
    rb.mass, rb.friction, rb.bounce = mass, friction, bounce
    return obj


def build(path: str) -> str:
    scene = common.new_file("Rigid Boxes", frames=(1, 72))
    scene.jakobsen.substeps = 10

    # A row of dominoes standing on the ground, at the foot of the ramp.
    for k in range(5):
        crate(f"Domino {k + 1}", (0.12, 0.6, 0.9), (-0.15 + 0.42 * k, 0.0, 0.45), (0.0, 0.0, 0.04 * (k % 2)),
              colour=COLOURS[k % 4], mass=0.8, friction=0.5)
    # Two crates falling, turned, one onto the far end of the row.
    crate("Falling 1", (0.5, 0.4, 0.4), (1.9, 0.2, 2.6), (0.4, 0.7, 0.2), colour=COLOURS[4], mass=1.5)
    crate("Falling 2", (0.4, 0.4, 0.4), (0.9, -1.0, 3.4), (1.1, 0.3, 0.5), colour=COLOURS[5])
    # One lands on the ramp, slides down and knocks the first domino over.
    crate("Slider", (0.45, 0.45, 0.45), (-1.9, 0.0, 2.4), (0.0, math.radians(-25.0), 0.0), colour=COLOURS[6],
          mass=2.0, friction=0.15)

    # The ramp: a passive body (Dynamic Off), tilted 25 degrees down towards the tower.
    ramp = crate("Ramp", (2.4, 1.0, 0.1), (-1.6, 0.0, 0.75), (0.0, math.radians(25.0), 0.0),
                 colour=(0.55, 0.50, 0.45))
    ramp.jakobsen.rigid_body.dynamic = 'OFF'
    ramp.jakobsen.rigid_body.friction = 0.2

    # A plank pushed along the ground by an animated paddle (passive, keyframed).
    crate("Plank", (1.2, 0.25, 0.15), (0.4, -1.8, 0.075), colour=COLOURS[7], mass=2.0)
    paddle = crate("Paddle", (0.1, 0.8, 0.5), (-1.2, -1.8, 0.25), colour=(0.35, 0.35, 0.38))
    paddle.jakobsen.rigid_body.dynamic = 'OFF'
    for frame, x in ((1, -1.2), (12, -1.2), (56, 1.5)):
        paddle.location.x = x
        paddle.keyframe_insert("location", index=0, frame=frame)

    g = 60.0
    ground = common.mesh_object("Ground", np.array([[-g, -g, 0], [g, -g, 0], [g, g, 0], [-g, g, 0]]),
                                [[0, 1, 2, 3]], material=common.material("Floor", (0.80, 0.78, 0.74)))
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    ground.jakobsen.collider.friction = 0.6

    common.camera("Camera", location=(4.6, -7.0, 3.6), target=(0.0, -0.5, 0.9), lens=35.0)
    common.sun("Sun")
    return common.save(path)


if __name__ == "__main__":
    common.main(build, "rigid_boxes.blend")
