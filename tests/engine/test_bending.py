"""Bending: hinges across a cloth's inner edges (``particles.bending``) hold a fold up as a plate
of the given bending stiffness would, on quads and on triangles, at any substep count."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine.particles.bending import fold_vectors, hinge_stencils, local_folds
from jakobsen_engine.particles.cloth import flatten_faces
from jakobsen_engine.geometry.primitives import grid

G = 9.81


def strip(length, width, nx, ny, kind="quads"):
    """A strip along x in the plane z = 0: (vertices, faces). kind: quads, triangles (each quad
    cut along one diagonal), crossed (along alternating diagonals) or equilateral (rows of
    equilateral triangles, every other row shifted by half an edge)."""
    if kind == "equilateral":
        dx = length / (nx - 1)
        dy = dx * math.sqrt(3.0) / 2.0
        rows = max(int(round(width / dy)), 1) + 1
        pts, ids = [], {}
        for j in range(rows):
            for i in range(nx + (j % 2)):
                x = min(max(i * dx - (dx / 2 if j % 2 else 0.0), 0.0), length)
                ids[i, j] = len(pts)
                pts.append([x, j * dy, 0.0])
        faces = []
        for j in range(rows - 1):
            for i in range(nx + (j % 2) - 1):
                a, b = ids[i, j], ids[i + 1, j]
                if j % 2 == 0:
                    faces += [[a, b, ids[i + 1, j + 1]], [a, ids[i + 1, j + 1], ids[i, j + 1]]]
                else:
                    faces.append([a, b, ids[i, j + 1]])
                    if i + 1 < nx:
                        faces.append([b, ids[i + 1, j + 1], ids[i, j + 1]])
        return np.array(pts), faces
    xs, ys = np.linspace(0.0, length, nx), np.linspace(0.0, width, ny)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    v = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], axis=1)
    faces = []
    for i in range(nx - 1):
        for j in range(ny - 1):
            a, b, c, d = i * ny + j, (i + 1) * ny + j, (i + 1) * ny + j + 1, i * ny + j + 1
            if kind == "quads":
                faces.append([a, b, c, d])
            elif kind == "triangles" or (i + j) % 2 == 0:
                faces += [[a, b, c], [a, c, d]]
            else:
                faces += [[a, b, d], [b, c, d]]
    return v, faces


def clamped_droop(kind, length, bend, nx, substeps=10, density=0.2, seconds=4.0):
    """A strip clamped level along its first two columns of vertices, let hang under gravity
    until still: the mean drop of its free end (m), and the clamp's edge (m from x = 0)."""
    v, faces = strip(length, 0.2 * length, nx, 5, kind)
    dx = length / (nx - 1)
    pins = (v[:, 0] <= dx * 1.001).astype(float)
    b = engine.ModelBuilder()
    b.add_cloth(v, faces, bend_stiffness=bend, pin_weights=pins, density=density)
    solver = engine.Solver(b.finalize(), engine.SolverSettings(substeps=substeps))
    state = solver.make_state()
    for _ in range(int(seconds * 24)):
        solver.step_frame(state)
    used = np.zeros(len(v), bool)
    used[np.concatenate(faces)] = True  # (an equilateral strip's last corner may be in no face)
    tip = (v[:, 0] >= length - 1e-9) & used
    return -float(state.positions[tip, 2].mean()), dx


def test_a_flat_mesh_has_a_hinge_per_inner_edge_whose_measure_ignores_rigid_motion():
    v, f = grid(4, 3, 1.0)  # 3 x 2 quads: 4 inner edges across the rows, 3 across the columns
    h = hinge_stencils(v, *flatten_faces(f, len(v), "grid"))
    assert len(h["rest"]) == 7
    tri = hinge_stencils(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]),
                         *flatten_faces([[0, 1, 2], [1, 3, 2]], 4, "tris"))
    assert len(tri["rest"]) == 1 and {0, 3} <= set(tri["index"][0].tolist())
    for hinges, verts in ((h, v), (tri, np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]))):
        # A translation moves no fold (the weights sum to nothing), flat at rest folds nothing,
        # and a rigid turn of the whole leaves each fold as long as it was.
        assert np.allclose(hinges["weight"].sum(axis=1), 0.0) and np.allclose(hinges["across"].sum(axis=1), 0.0)
        assert np.all(hinges["rest"] == 0.0)
        rng = np.random.default_rng(4)
        bent = verts + rng.normal(scale=0.05, size=verts.shape)
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        w, x, y, z = q
        turn = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                         [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                         [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        moved = bent @ turn.T + np.array([3.0, -1.0, 2.0])
        args = (hinges["index"], hinges["weight"])
        assert np.allclose(np.linalg.norm(fold_vectors(moved, *args), axis=1),
                           np.linalg.norm(fold_vectors(bent, *args), axis=1), atol=1e-12)
        assert np.allclose(local_folds(moved, *args, hinges["across"]), local_folds(bent, *args, hinges["across"]),
                           atol=1e-12)


@pytest.mark.compiled_only
@pytest.mark.parametrize("kind, tolerance", [("quads", 0.04), ("equilateral", 0.06), ("triangles", 0.35),
                                             ("crossed", 0.35)])
@pytest.mark.parametrize("length, bend, nx", [(0.1, 1e-2, 21), (0.1, 3e-3, 11), (0.2, 3e-2, 31), (0.05, 1e-3, 21)])
def test_a_strip_clamped_level_droops_as_the_plate_at_the_default_settings(kind, tolerance, length, bend, nx):
    # A cantilever under its own weight q (N/m^2) droops q L^4 / 8B at its tip (small droops:
    # these are 1-7% of the length). The clamp holds its first two columns of vertices, and the
    # hinge between them bends over the half edge beyond the first: L is measured from there.
    # The strip is 5 vertices wide, so its quads are 2 x 1 to 1 x 1.5. Cut into right triangles
    # the hinges bend by the triangles' shape (0.92 to 1.3 times the plate's droop here: see
    # bending.TRIANGLE_SHARE); equilateral ones, and quads, as the plate.
    droop, dx = clamped_droop(kind, length, bend, nx)
    span = length - dx / 2.0
    expected = 0.2 * G * span ** 4 / (8.0 * bend)
    assert droop == pytest.approx(expected, rel=tolerance), (droop, expected)


@pytest.mark.compiled_only
@pytest.mark.parametrize("kind", ["quads", "crossed"])
def test_a_clamped_strip_droops_alike_at_any_substep_count(kind):
    droops = [clamped_droop(kind, 0.1, 3e-3, 21, substeps=n)[0] for n in (5, 10, 20)]
    assert max(droops) - min(droops) < 0.02 * np.mean(droops), droops


@pytest.mark.compiled_only
def test_a_stiffer_cloth_hangs_less_far_over_an_edge():
    # The presets' cloths (density kg/m^2, bending N m) clamped 0.3 m out over a table edge:
    # silk and cotton fall nearly straight down, denim curls over, leather stands out; a cloth's
    # bending length (B / q)^(1/3) is what sets it (Peirce's cantilever test).
    cloths = {"silk": (0.075, 5e-6), "cotton": (0.15, 5e-5), "denim": (0.5, 1e-3), "leather": (0.2, 1.5e-2)}
    drops = {name: clamped_droop("quads", 0.3, bend, 31, density=rho)[0] for name, (rho, bend) in cloths.items()}
    assert drops["silk"] > drops["cotton"] > drops["denim"] > drops["leather"], drops
    assert drops["silk"] > 0.25 and drops["leather"] < 0.15, drops


def test_a_sheet_modelled_curved_keeps_its_curve():
    # A half cylinder of 0.1 m radius (modelled so: it bends at rest), stiff, held along one
    # straight edge: without bending it would fall flat, with its hinges it keeps its shape.
    n, m = 17, 9
    angle = np.linspace(0.0, math.pi, n)
    ys = np.linspace(0.0, 0.3, m)
    v = np.array([[0.1 * math.cos(a), y, 0.1 * math.sin(a)] for a in angle for y in ys])
    faces = [[i * m + j, (i + 1) * m + j, (i + 1) * m + j + 1, i * m + j + 1]
             for i in range(n - 1) for j in range(m - 1)]
    pins = np.zeros(len(v))
    pins[: 2 * m] = 1.0
    shapes = {}
    for bend in (1e-6, 1.0):
        b = engine.ModelBuilder()
        b.add_cloth(v, faces, bend_stiffness=bend, pin_weights=pins, density=0.2)
        solver = engine.Solver(b.finalize(), engine.SolverSettings())
        state = solver.make_state()
        for _ in range(48):
            solver.step_frame(state)
        shapes[bend] = np.abs(state.positions - v).max()
    assert shapes[1.0] < 2e-3 < 0.05 < shapes[1e-6], shapes


@pytest.mark.compiled_only
def test_a_plastic_strip_keeps_the_fold_it_was_pressed_into():
    # A strip clamped level, pressed down by a load for a second, then let go: an elastic one
    # springs back flat, a plastic one (limit 2%: folds beyond 23 degrees yield) keeps a bend.
    def droop(plastic_limit):
        v, faces = strip(0.1, 0.02, 21, 5)
        pins = (v[:, 0] <= 0.005 * 1.001).astype(float)
        b = engine.ModelBuilder()
        b.add_cloth(v, faces, bend_stiffness=1e-4, pin_weights=pins, density=0.2, plastic_limit=plastic_limit)
        solver = engine.Solver(b.finalize(), engine.SolverSettings(gravity=(0.0, 0.0, 0.0), damping=3.0))
        state = solver.make_state()
        tip = v[:, 0] >= 0.1 - 1e-9
        state.external_accelerations[:] = (0.0, 0.0, -3.0 * G)
        for _ in range(24):
            solver.step_frame(state)
        loaded = -float(state.positions[tip, 2].mean())
        state.external_accelerations[:] = 0.0
        for _ in range(96):
            solver.step_frame(state)
        return loaded, -float(state.positions[tip, 2].mean())

    loaded, elastic = droop(math.inf)
    assert loaded > 0.05 and abs(elastic) < 0.02 * loaded, (loaded, elastic)
    loaded, plastic = droop(0.02)
    assert plastic > 0.3 * loaded, (loaded, plastic)
