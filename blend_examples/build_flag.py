"""Build ``flag.blend``: a flag on a pole, swung round and streaming in the wind.

The flag is a 2 x 1.2 m cloth (33 x 21 vertices) whose edge at the pole is pinned by the vertex
group "Pole Edge". It starts flat along +X; the wind (Scene > Jakobsen Physics > Wind, 4.6 m/s
mostly along +Y) swings it round the pole through its Air Drag while it sags a little. The pole
is a collider (a capsule), the ground a plane collider; a camera and a sun light are set up.
It bakes as it is:

    .venv-bpy42/bin/python blend_examples/build_flag.py   # writes blend_examples/flag.blend
    .venv/bin/jakobsen bake blend_examples/flag.blend      # writes blend_examples/flag_baked.blend
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

POLE_HEIGHT = 4.0
POLE_RADIUS = 0.05
FLAG_SIZE = (2.0, 1.2)
FLAG_VERTICES = (33, 21)


def build(path: str) -> str:
    import bpy

    scene = common.new_file("Flag", frames=(1, 96))
    settings = scene.jakobsen
    settings.substeps = 10
    settings.wind = (1.0, 4.5, 0.0)
    settings.damping = 0.1

    # The flag: a vertical grid in the XZ plane, its left edge (x = 0) at the pole.
    nx, ny = FLAG_VERTICES
    vertices, faces = common.grid(nx, ny, *FLAG_SIZE)
    vertices = vertices[:, [0, 2, 1]]  # the grid's Y becomes Z: the flag stands up
    red = common.material("Flag Red", (0.80, 0.12, 0.08))
    flag = common.mesh_object("Flag", vertices, faces, material=red, smooth=True)
    flag.location = (POLE_RADIUS + 0.02, 0.0, POLE_HEIGHT - FLAG_SIZE[1] - 0.05)
    group = flag.vertex_groups.new(name="Pole Edge")
    group.add(np.flatnonzero(vertices[:, 0] < 1e-9).tolist(), 1.0, 'REPLACE')
    flag.jakobsen.enabled = True
    flag.jakobsen.type = 'CLOTH'
    cloth = flag.jakobsen.cloth
    cloth.pin_group = "Pole Edge"
    cloth.density = 0.15  # light polyester
    cloth.air_drag = 0.6
    cloth.bend_stiffness = 0.02
    cloth.thickness = 0.01

    # The pole: a cylinder, colliding as a capsule.
    bpy.ops.mesh.primitive_cylinder_add(vertices=24, radius=POLE_RADIUS, depth=POLE_HEIGHT,
                                        location=(0.0, 0.0, POLE_HEIGHT / 2))
    pole = bpy.context.object
    pole.name = pole.data.name = "Pole"
    pole.data.materials.append(common.material("Pole Grey", (0.75, 0.75, 0.78)))
    pole.data.shade_smooth()
    pole.jakobsen.enabled = True
    pole.jakobsen.type = 'COLLIDER'
    pole.jakobsen.collider.shape = 'CAPSULE'

    # The ground: a plane collider at z = 0.
    g = 60.0
    ground = common.mesh_object("Ground", np.array([[-g, -g, 0], [g, -g, 0], [g, g, 0], [-g, g, 0]]),
                                [[0, 1, 2, 3]], material=common.material("Grass", (0.45, 0.62, 0.35)))
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'

    common.camera("Camera", location=(2.2, -7.0, 3.6), target=(0.9, 0.4, 2.9), lens=42.0)
    common.sun("Sun")
    return common.save(path)


if __name__ == "__main__":
    common.main(build, "flag.blend")
