"""``jakobsen bench boxes``: 1,000 boxes dropped on a plane, this engine and Blender's Rigid Body
World (Bullet, defaults) in one process. Prints ms per frame, the ratio, and the worst
penetration at the last frame for both. A table to read, not a test."""

from __future__ import annotations

import time

import numpy as np

import jakobsen_engine as engine
from jakobsen_engine.geometry import quaternions as quat

from .bench import warm_up

BOX = 0.9  # m, edge of each box
SPACING = 1.0  # m between box centres in the grid
GRID = 10  # 10 x 10 x 10
FPS = 24
FACES = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]


def _centres(grid: int):
    k = np.arange(grid) * SPACING
    gx, gy, gz = np.meshgrid(k - k.mean(), k - k.mean(), k + BOX / 2 + 0.05, indexing="ij")
    return np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)


def _corners():
    return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * BOX / 2


def _worst_penetration(centres, rotations):
    """Deepest any box corner lies below the ground or inside another box, m."""
    corners = centres[:, None, :] + np.einsum("bij,kj->bki", rotations, _corners())
    worst = max(0.0, -corners[..., 2].min())
    half = BOX / 2
    for b in range(len(centres)):
        near = np.flatnonzero(np.linalg.norm(centres - centres[b], axis=1) < 2 * BOX)
        near = near[near != b]
        if not len(near):
            continue
        local = np.einsum("ji,nkj->nki", rotations[b], corners[near] - centres[b])
        depth = np.min(half - np.abs(local), axis=2)  # > 0: inside box b
        worst = max(worst, float(depth.max()))
    return worst


def bench_engine(frames: int, grid: int, backend: str = "numba", sleeping: bool = True):
    centres = _centres(grid)
    builder = engine.ModelBuilder()
    for k, c in enumerate(centres):
        builder.add_rigid_body(_corners() + c, FACES, name=f"box {k}", shape="box")
    builder.add_collider(engine.Plane())
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS, backend=backend,
                                                                     sleeping=sleeping))
    warm_up(solver, frames)
    state = solver.make_state()
    start = time.perf_counter()
    for _ in range(frames):
        solver.step_frame(state)
    ms = (time.perf_counter() - start) * 1e3 / frames
    translation, rotation = solver.body_poses(state)
    return ms, _worst_penetration(centres + translation, quat.to_matrix(rotation))


def bench_blender(frames: int, grid: int, deactivation: bool = False):
    import bpy

    centres = _centres(grid)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = FPS
    bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.point_cache.frame_start, world.point_cache.frame_end = 1, frames + 1
    bpy.ops.mesh.primitive_plane_add(size=200)
    bpy.ops.rigidbody.object_add(type="PASSIVE")
    mesh = bpy.data.meshes.new("bench_box")
    mesh.from_pydata(_corners().tolist(), [], FACES)
    for k, c in enumerate(centres):
        obj = bpy.data.objects.new(f"box {k}", mesh)
        obj.location = c.tolist()
        scene.collection.objects.link(obj)
        world.collection.objects.link(obj)  # makes it an active rigid body with defaults
        obj.rigid_body.collision_shape = "BOX"
        obj.rigid_body.use_deactivation = deactivation  # (off by default in Blender)
    scene.frame_set(1)
    start = time.perf_counter()
    for frame in range(2, frames + 2):
        scene.frame_set(frame)
    ms = (time.perf_counter() - start) * 1e3 / frames
    boxes = [o for o in scene.objects if o.name.startswith("box")]
    boxes.sort(key=lambda o: int(o.name.split()[1]))
    matrices = np.array([np.array(o.matrix_world) for o in boxes])
    return ms, _worst_penetration(matrices[:, :3, 3], matrices[:, :3, :3]), bpy.app.version_string


def run_boxes_benchmark(frames: int = 100, grid: int = GRID, numpy_frames: int = 10) -> dict:
    count = grid ** 3
    print(f"boxes: {count} boxes of {BOX} m in a {grid}x{grid}x{grid} grid dropped on a plane, "
          f"{frames} frames at {FPS} fps (the numpy kernels: the first {numpy_frames})", flush=True)
    e_ms, e_pen = bench_engine(frames, grid, "numba")
    w_ms, w_pen = bench_engine(frames, grid, "numba", sleeping=False)
    n_ms, n_pen = bench_engine(min(numpy_frames, frames), grid, "numpy")
    b_ms, b_pen, version = bench_blender(frames, grid)
    d_ms, d_pen, _ = bench_blender(frames, grid, deactivation=True)
    # Both solvers at their defaults first (Blender: deactivation off; Jakobsen: sleeping on),
    # then each with the other's choice, so neither's figure hides what that choice is worth.
    w = 52
    print(f"{'solver':<{w}} {'ms/frame':>9} {'ratio':>7} {'worst penetration':>18}")
    rows = ((f"Blender {version} Rigid Body World (Bullet), defaults", b_ms, b_pen),
            ("Jakobsen, numba kernels, defaults (sleeping)", e_ms, e_pen),
            ("Blender, Bullet with Deactivation on", d_ms, d_pen),
            ("Jakobsen, numba kernels, sleeping off", w_ms, w_pen),
            ("Jakobsen, numpy kernels (first frames only)", n_ms, n_pen))
    for name, ms, pen in rows:
        print(f"{name:<{w}} {ms:9.1f} {ms / b_ms:7.2f} {pen * 1000:15.1f} mm")
    print(f"penetration as a share of the box: Bullet {b_pen / BOX:.2%}, Jakobsen {e_pen / BOX:.2%}")
    return {"engine_ms": e_ms, "awake_ms": w_ms, "numpy_ms": n_ms, "blender_ms": b_ms, "blender_deactivated_ms": d_ms,
            "engine_pen": e_pen, "blender_pen": b_pen}


if __name__ == "__main__":
    import sys

    run_boxes_benchmark(frames=int(sys.argv[1]) if len(sys.argv) > 1 else 100,
                        grid=int(sys.argv[2]) if len(sys.argv) > 2 else GRID)
