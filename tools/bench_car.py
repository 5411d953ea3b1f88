"""``jakobsen bench car``: the car example (``blend_examples/car.blend``) baked headless with the
add-on, on both kernel backends: the engine's time per frame (``BakeJob.step_seconds``, what the
solver takes; reading the scene and writing keys are not in it) against real time at 24 fps.

Also the numba kernels' compile time: the first bake in a fresh Python process with an empty
kernel cache (what a user waits for once per Blender version), and the same with the cache
warm. A table to read, not a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "blend_examples", "car.blend")
FRAMES = 96

# Runs in a child process: open the example, bake it with one backend, print what it measured.
CHILD = r'''
import json, sys, time
t_start = time.perf_counter()
import bpy
import jakobsen_physics
from jakobsen_engine import backend
from jakobsen_physics.bake_job import BakeJob
path, name, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
jakobsen_physics.register()
bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
scene = bpy.context.scene
with backend.use(name):
    job = BakeJob(scene.name, frame_range=(scene.frame_start, scene.frame_start + frames))
    t0 = time.perf_counter()
    job.start(bpy.context)
    t1 = time.perf_counter()
    first = None
    while True:
        s0 = time.perf_counter()
        more = job.step()
        if first is None:
            first = time.perf_counter() - s0
        if not more:
            break
    steps = job.step_seconds
    job.finish()
print("RESULT " + json.dumps({"backend": job.solver.backend.name, "start": t1 - t0, "first_frame": first,
                              "ms_per_frame": 1e3 * steps / frames,
                              "ms_per_frame_after_first": 1e3 * (steps - first) / max(frames - 1, 1)}), flush=True)
'''


def _child(backend: str, frames: int, cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, "-c", CHILD, EXAMPLE, backend, str(frames)], capture_output=True,
                          text=True, env=env, timeout=3600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the car bake ({backend}) failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def run_car_benchmark(frames: int = FRAMES) -> dict:
    print(f"car: {os.path.relpath(EXAMPLE)}, {frames} frames at 24 fps (real time: 41.7 ms a frame), baked with "
          "the add-on headless, each backend in a fresh process", flush=True)
    with tempfile.TemporaryDirectory(prefix="jakobsen_numba_cache_") as cache:
        t = time.perf_counter()
        cold = _child("numba", frames, cache)
        cold_total = time.perf_counter() - t
        t = time.perf_counter()
        warm = _child("numba", frames, cache)
        warm_total = time.perf_counter() - t
        slow = _child("numpy", frames, cache)
    print(f"{'kernels':<28} {'ms/frame':>9} {'after the first frame':>22} {'first frame':>12}")
    for name, r in (("numba, cache warm", warm), ("numba, cache cold", cold), ("numpy", slow)):
        print(f"{name:<28} {r['ms_per_frame']:9.1f} {r['ms_per_frame_after_first']:22.1f} "
              f"{r['first_frame'] * 1e3:10.0f} ms")
    print(f"compiling the kernels: the first bake in a fresh process took {cold_total:.1f} s in all with an empty "
          f"cache, {warm_total:.1f} s with it warm (first frame {cold['first_frame']:.1f} s against "
          f"{warm['first_frame'] * 1e3:.0f} ms)")
    return {"numba": warm, "numba_cold": cold, "numpy": slow, "cold_total": cold_total, "warm_total": warm_total}
