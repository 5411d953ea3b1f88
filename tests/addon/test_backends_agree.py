"""The example scenes, read by the add-on, step to the same motion on both kernel backends.

The kernel tests compare each kernel on random inputs; this compares what users get: the whole
scene as the add-on builds it (the flag; the crates; the off-road car, driven by its Vehicle
settings over a mesh collider into a wall of crates), stepped 48 frames by the numba kernels and
by the numpy reference.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_engine import Solver, backend  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "blend_examples"
FRAMES = 48


def _step(sm, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Particle positions, body positions and body orientations after FRAMES frames."""
    solver = Solver(sm.model, dataclasses.replace(sm.settings, backend=name))
    assert solver.backend.name == name
    state = solver.make_state()
    for frame in range(sm.frame_start + 1, sm.frame_start + FRAMES + 1):
        solver.step_frame(state, pinned_positions=sm.pinned_positions(frame))
    bodies = state.bodies
    return state.positions.copy(), bodies.x[:-1].copy(), bodies.q[:-1].copy()


@pytest.mark.parametrize("example", ["flag", "rigid_boxes", "car"])
def test_an_example_scene_steps_to_the_same_motion_on_both_backends(example):
    if backend.numba_problem():
        pytest.skip(f"numba cannot load here: {backend.numba_problem()}")
    import jakobsen_physics as addon
    from jakobsen_physics import scene_to_model

    bpy.ops.wm.open_mainfile(filepath=str(EXAMPLES / f"{example}.blend"))
    addon.register()
    try:
        scene = bpy.context.scene
        start = scene.jakobsen.frame_range()[0]
        sm = scene_to_model.build(bpy.context, frame_range=(start, start + FRAMES))
        rest = solver_start(sm)
        numba, numpy = _step(sm, "numba"), _step(sm, "numpy")
    finally:
        addon.unregister()
        bpy.ops.wm.read_factory_settings()
    for what, a, b in zip(("particle", "body position", "body orientation"), numba, numpy):
        assert a.shape == b.shape
        if len(a):
            gap = float(np.abs(a - b).max())
            print(f"{example}: {what}s differ by at most {gap:.2e}")
            assert gap <= 1e-6, f"{example}.blend: the backends' {what}s differ by {gap:.2e} after {FRAMES} frames"
    # The comparison is of motion, not of a scene at rest: something travelled a few centimetres.
    travelled = max(float(np.abs(a - r).max()) if len(a) else 0.0 for a, r in zip(numpy[:2], rest))
    assert travelled > 0.03, f"{example}.blend: nothing moved in {FRAMES} frames"


def solver_start(sm) -> tuple[np.ndarray, np.ndarray]:
    state = Solver(sm.model, dataclasses.replace(sm.settings, backend="numpy")).make_state()
    return state.positions.copy(), state.bodies.x[:-1].copy()
