"""A cloth or soft body that starts inside a collider, or much nearer to one than its Thickness,
is moved out by its first substep at once: a jump the render shows. The solver names it, the
collider and the distance; a cloth modelled touching a table with a few millimetres of Thickness
is not named (it moves out by that little, as in Blender)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine.geometry.primitives import grid
from tests.engine.rigid_scenes import box_mesh

TOP = 0.75  # the table top's height, m


def _table(builder, kind):
    """A 2 x 2 m table top at z = TOP as a collider of the given kind, named 'Table'."""
    if kind == "plane":
        builder.add_collider(engine.Plane.from_point_normal((0, 0, TOP), (0, 0, 1), name="Table"))
    elif kind == "box":
        t = np.eye(4)
        t[2, 3] = TOP - 0.05
        builder.add_collider(engine.Box(half_extents=(1.0, 1.0, 0.05), transform=t, name="Table"))
    elif kind == "mesh":
        v, f = box_mesh((2.0, 2.0, 0.1), (0.0, 0.0, TOP - 0.05))
        builder.add_collider(engine.TriangleMesh.from_mesh(v, f, name="Table"))
    else:  # a body that does not move (Dynamic off: kinematic, no motion)
        v, f = box_mesh((2.0, 2.0, 0.1), (0.0, 0.0, TOP - 0.05))
        builder.add_rigid_body(v, f, name="Table", mode="kinematic")


def _cloth_over_table(kind, thickness, gap, soft=False):
    builder = engine.ModelBuilder()
    _table(builder, kind)
    v, f = grid(9, 9, 1.0)
    v[:, 2] = TOP + gap
    extra = dict(shape_stiffness=50.0) if soft else {}
    builder.add_cloth(v, f, name="Sheet", thickness=thickness, **extra)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings())
    return solver


@pytest.mark.parametrize("kind", ["plane", "box", "mesh", "body"])
@pytest.mark.parametrize("thickness, gap", [(0.05, 0.0), (0.1, 0.01), (0.03, 0.015), (0.2, 0.05)])
def test_a_cloth_starting_well_within_its_thickness_of_a_collider_is_named_with_the_jump(kind, thickness, gap):
    solver = _cloth_over_table(kind, thickness, gap)
    named = [w for w in solver.warnings if "'Sheet'" in w]
    assert len(named) == 1, solver.warnings
    assert "'Table'" in named[0] and "Thickness" in named[0]
    jump = float(re.search(r"moves it ([\d.]+) (cm|mm) out", named[0]).group(1))
    jump /= 100.0 if "cm out" in named[0] else 1000.0
    assert jump == pytest.approx(thickness - gap, abs=1e-3)
    # ... and that is the jump: the first frame lifts the cloth by it (it then rests on the top).
    state = solver.make_state()
    solver.step_frame(state)
    rise = float(np.mean(state.positions[:, 2])) - (TOP + gap)
    assert rise == pytest.approx(jump, abs=2e-3)


@pytest.mark.parametrize("kind", ["plane", "box", "mesh", "body"])
@pytest.mark.parametrize("thickness, gap", [(0.005, 0.0), (0.005, 0.003), (0.008, 0.0), (0.02, 0.015), (0.005, 0.3)])
def test_a_cloth_touching_or_above_a_collider_within_a_centimetre_is_not_named(kind, thickness, gap):
    solver = _cloth_over_table(kind, thickness, gap)
    assert not [w for w in solver.warnings if "'Sheet'" in w], solver.warnings


@pytest.mark.parametrize("kind", ["plane", "box", "mesh"])
@pytest.mark.parametrize("depth", [0.004, 0.02])
def test_a_cloth_starting_through_a_collider_is_named_as_inside_it(kind, depth):
    solver = _cloth_over_table(kind, 0.005, -depth)
    named = [w for w in solver.warnings if "'Sheet'" in w]
    assert len(named) == 1 and "inside 'Table'" in named[0], solver.warnings
    inside = float(re.search(r"starts ([\d.]+) (cm|mm) inside", named[0]).group(1))
    inside /= 100.0 if "cm inside" in named[0] else 1000.0
    assert inside == pytest.approx(depth, abs=2e-4)


def test_a_soft_body_is_named_as_one():
    solver = _cloth_over_table("plane", 0.1, 0.0, soft=True)
    assert any(w.startswith("soft body 'Sheet'") for w in solver.warnings), solver.warnings


def test_pinned_vertices_within_the_thickness_are_not_named():
    """Pinned vertices do not move, so they do not jump."""
    builder = engine.ModelBuilder()
    _table(builder, "plane")
    v, f = grid(9, 9, 1.0)
    v[:, 2] = TOP + 0.3
    low = v[:, 1] < -0.49  # one edge hangs down onto the top, pinned there
    v[low, 2] = TOP + 0.001
    builder.add_cloth(v, f, name="Sheet", thickness=0.05, pin_weights=low.astype(float))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings())
    assert not [w for w in solver.warnings if "'Sheet'" in w], solver.warnings
