"""Build ``follow_path.blend``: a car follows an S-shaped road, slowing down for the bends.

The car (``cars.car``, rigged by Create Vehicle) has its Vehicle's Follow Path set to the Bezier
curve "Path": a straight, a bend to the left, a bend to the right and a straight. Speed from
Radius is on: the curve's points' Radius (Alt+S in Edit Mode) scales the Target Speed of 7 m/s,
1 on the straights and 0.5 through the bends (two quarter circles of 4 m). The car starts at
7 m/s (its Initial Speed), brakes before the S, drives it at 3.5 m/s, speeds up again on the last
straight and stops at the curve's end. The
road under it is a ribbon mesh along the same curve (only seen, not simulated); the ground is a
plane Collider. A camera looks at the whole road from above and to the side, a sun light is
set up; it bakes as it is:

    .venv-bpy42/bin/python blend_examples/build_follow_path.py   # writes blend_examples/follow_path.blend
    .venv/bin/jakobsen bake blend_examples/follow_path.blend      # writes blend_examples/follow_path_baked.blend
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cars  # noqa: E402
import common  # noqa: E402

FRAMES = (1, 204)
TARGET_SPEED = 7.0      # m/s on the straights (and the car's Initial Speed)
BEND_SPEED = 0.5        # the points' Radius through the S: 0.5 x 7 = 3.5 m/s
BEND_RADIUS = 4.0       # m, each bend a quarter circle
STRAIGHT = 10.0         # m before and after the S
RAMP = 3.5              # m of straight over which the speed profile goes from 1 to BEND_SPEED
ROAD_WIDTH = 3.0
KAPPA = 4.0 * (math.sqrt(2.0) - 1.0) / 3.0  # a cubic Bezier's handle for a quarter circle, per radius


def path_points():
    """The Bezier points of the S (world XY, z = 0): (co, handle_left, handle_right, radius) each.
    The car starts on the first, facing +Y; the S goes left, then right, back to +Y."""
    R, S, h = BEND_RADIUS, STRAIGHT, KAPPA * BEND_RADIUS
    y0 = S                 # where the first bend starts
    pts = []

    def add(co, tangent, before, after, radius):
        co, t = np.array([*co, 0.0]), np.array([*tangent, 0.0])
        pts.append((co, co - t * before, co + t * after, radius))

    add((0.0, 0.0), (0, 1), 1.0, (S - RAMP) / 3, 1.0)
    add((0.0, S - RAMP), (0, 1), (S - RAMP) / 3, RAMP / 3, 1.0)
    add((0.0, y0), (0, 1), RAMP / 3, h, BEND_SPEED)
    add((-R, y0 + R), (-1, 0), h, h, BEND_SPEED)
    add((-2 * R, y0 + 2 * R), (0, 1), h, RAMP / 3, BEND_SPEED)
    add((-2 * R, y0 + 2 * R + RAMP), (0, 1), RAMP / 3, (S - RAMP) / 3, 1.0)
    add((-2 * R, y0 + 2 * R + S), (0, 1), (S - RAMP) / 3, 1.0, 1.0)
    return pts


def sample_path(count: int = 400) -> np.ndarray:
    """(count, 3) points along the S (the cubic Bezier segments evaluated with numpy)."""
    pts = path_points()
    per = count // (len(pts) - 1)
    t = np.linspace(0.0, 1.0, per, endpoint=False)[:, None]
    out = []
    for (a, _, ar, _), (b, bl, _, _) in zip(pts[:-1], pts[1:]):
        out.append((1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * ar + 3 * (1 - t) * t * t * bl + t ** 3 * b)
    out.append(pts[-1][0][None])
    return np.concatenate(out)


def path_curve(name: str = "Path"):
    """The S as a Bezier curve object (its points' Radius the speed profile)."""
    import bpy

    data = bpy.data.curves.new(name, type='CURVE')
    data.dimensions = '3D'
    data.resolution_u = 16
    spline = data.splines.new('BEZIER')
    pts = path_points()
    spline.bezier_points.add(len(pts) - 1)
    for p, (co, left, right, radius) in zip(spline.bezier_points, pts):
        p.handle_left_type = p.handle_right_type = 'FREE'
        p.co, p.handle_left, p.handle_right, p.radius = co, left, right, radius
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def ribbon(centre: np.ndarray, width: float, z: float):
    """Vertices and quads of a flat strip ``width`` wide along the polyline ``centre`` (n, 3)."""
    tangent = np.gradient(centre[:, :2], axis=0)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    normal = np.c_[-tangent[:, 1], tangent[:, 0]]
    left, right = centre[:, :2] + normal * width / 2, centre[:, :2] - normal * width / 2
    n = len(centre)
    vertices = np.c_[np.concatenate([right, left]), np.full(2 * n, z)]
    faces = [[k, k + 1, n + k + 1, n + k] for k in range(n - 1)]
    return vertices, faces


def build(path: str) -> str:
    scene = common.new_file("Follow Path", frames=FRAMES)
    scene.jakobsen.substeps = 10
    cars.ground_plane("Ground", colour=(0.55, 0.66, 0.45))

    curve = path_curve("Path")
    centre = sample_path()
    common.mesh_object("Road", *ribbon(centre, ROAD_WIDTH, 0.002), material=common.material("Road", (0.36, 0.36, 0.38)))
    # The centre line: dashes of 1 m every 2 m.
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(centre, axis=0), axis=1))])
    dashes_v, dashes_f = [], []
    for start in np.arange(0.5, s[-1] - 1.0, 2.0):
        ts = np.linspace(start, start + 1.0, 6)
        line = np.stack([np.interp(ts, s, centre[:, i]) for i in range(3)], axis=1)
        v, f = ribbon(line, 0.12, 0.004)
        dashes_f += [[i + len(dashes_v) for i in face] for face in f]
        dashes_v += v.tolist()
    common.mesh_object("Centre Line", np.array(dashes_v), dashes_f, material=common.material("Line", (0.95, 0.95, 0.9)))

    chassis, _ = cars.car("Car", location=(0.0, 0.0, 0.0), heading=math.pi, paint=(0.15, 0.40, 0.80))
    v = chassis.jakobsen.vehicle
    v.target_speed = TARGET_SPEED
    v.follow_path = curve
    v.use_path_speed = True
    v.initial_speed = TARGET_SPEED

    # The whole road from above, a little to the side: the car drives from left to right.
    common.camera("Camera", location=(6.0, 13.5, 30.0), target=(-4.0, 13.5, 0.0), lens=33.0)
    common.sun("Sun")
    return common.finish(path, FRAMES[0])


if __name__ == "__main__":
    common.main(build, "follow_path.blend")
