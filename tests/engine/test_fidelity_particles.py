"""Physical fidelity of particles on sticks (issue 11): a pendulum's period against the exact
elliptic-integral value and its amplitude kept with damping off, a spinning dumbbell that keeps
its spin, a hanging chain that keeps most of its energy, and the two backends agreeing on the
sweep that does it."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import backend
from jakobsen_engine.builder import colour_sticks

G = 9.81


def agm(a: float, b: float) -> float:
    """The arithmetic-geometric mean of a and b."""
    while abs(a - b) > 1e-15 * a:
        a, b = 0.5 * (a + b), math.sqrt(a * b)
    return a


def exact_period(length: float, amplitude: float) -> float:
    """A simple pendulum's period, s: 4 sqrt(L/g) K(k), k = sin(amplitude / 2), with the complete
    elliptic integral of the first kind K(k) = pi / (2 AGM(1, sqrt(1 - k^2)))."""
    k = math.sin(0.5 * amplitude)
    return 4.0 * math.sqrt(length / G) * math.pi / (2.0 * agm(1.0, math.sqrt(1.0 - k * k)))


def test_the_exact_period_is_the_small_angle_one_for_small_swings_and_known_at_90_degrees():
    # Check of the reference itself: 2 pi sqrt(L/g) as the amplitude goes to 0, and the
    # tabulated K(sin 45 deg) = 1.854075 at 90 degrees.
    assert exact_period(1.0, 1e-6) == pytest.approx(2.0 * math.pi / math.sqrt(G), rel=1e-12)
    assert exact_period(1.0, math.pi / 2) == pytest.approx(4.0 / math.sqrt(G) * 1.8540746773, rel=1e-9)


def swing(amplitude_deg: float, length: float, periods: float, settings: engine.SolverSettings):
    """A 1 kg particle on a rigid stick from a fixed pivot, released at rest; returns (t, angle)
    at every frame."""
    b = engine.ModelBuilder()
    a = math.radians(amplitude_deg)
    b.add_particles([[0.0, 0.0, 0.0], [length * math.sin(a), 0.0, -length * math.cos(a)]], masses=[0.0, 1.0])
    b.add_sticks([0], [1])
    solver = engine.Solver(b.finalize(), settings)
    state = solver.make_state()
    frames = int(math.ceil(periods * exact_period(length, a) * settings.frame_rate)) + 2
    t, angle = np.zeros(frames), np.zeros(frames)
    for f in range(frames):
        solver.step_frame(state)
        x = state.positions[1]
        t[f], angle[f] = state.time, math.atan2(x[0], -x[2])
    return t, angle


def measured_period(t, angle):
    """Mean time between the upward zero crossings of the angle (linear between frames)."""
    k = np.flatnonzero((angle[:-1] < 0.0) & (angle[1:] >= 0.0))
    crossing = t[k] - angle[k] * (t[k + 1] - t[k]) / (angle[k + 1] - angle[k])
    return float(np.mean(np.diff(crossing))), len(crossing)


@pytest.mark.parametrize("settings", [engine.SolverSettings(),  # the defaults: 24 fps, 10 substeps
                                      engine.SolverSettings(frame_rate=30.0, substeps=6),
                                      engine.SolverSettings(frame_rate=60.0, substeps=20)],
                         ids=["defaults", "30fps-6", "60fps-20"])
@pytest.mark.compiled_only
@pytest.mark.parametrize("length", [0.4, 2.0])
@pytest.mark.parametrize("amplitude", [5.0, 20.0, 45.0, 70.0, 80.0])
def test_a_pendulum_swings_with_the_exact_period_and_keeps_its_amplitude(amplitude, length, settings):
    # A rigid stick projected along its direction at the end of the substep shortened each
    # swing's arc by about theta^3 per substep: the amplitude fell from 70 to 48 degrees in six
    # periods and the period came out 3.4% short. Projected along its direction at the start
    # (SHAKE), the swing keeps its energy; damping is off (the default).
    assert settings.damping == 0.0
    t, angle = swing(amplitude, length, 5.0, settings)
    period, crossings = measured_period(t, angle)
    assert crossings >= 5
    exact = exact_period(length, math.radians(amplitude))
    assert period == pytest.approx(exact, rel=0.002)  # the issue asks 1%; measured 0.005% at most
    last = t > t[-1] - exact  # the fifth period
    kept = math.degrees(np.abs(angle[last]).max()) / amplitude  # sampled per frame: at most low
    assert 0.98 < kept < 1.0 + 1e-6


@pytest.mark.parametrize("revolutions", [0.5, 2.0, 5.0])
def test_a_spinning_dumbbell_keeps_its_spin(revolutions):
    # Two 1 kg particles on a 0.5 m rigid stick, spinning in free space about their centre: the
    # thesis's warning (plain projection bleeds theta^2 of the spin per step; a wheel at 5 rev/s
    # kept 17% after a second at 60 Hz). Angular momentum has nothing to take it away.
    b = engine.ModelBuilder()
    r = 0.25
    speed = 2.0 * math.pi * revolutions * r
    b.add_particles([[-r, 0.0, 0.0], [r, 0.0, 0.0]], masses=1.0, velocities=[[0.0, -speed, 0.0], [0.0, speed, 0.0]])
    b.add_sticks([0], [1])
    solver = engine.Solver(b.finalize(), engine.SolverSettings(gravity=(0.0, 0.0, 0.0)))
    state = solver.make_state()
    for _ in range(48):
        solver.step_frame(state)
    v = solver.velocities(state)
    d = state.positions[1] - state.positions[0]
    spin = np.cross(d, v[1] - v[0])[2] / float(d @ d)  # rad/s
    assert spin / (2.0 * math.pi * revolutions) > 0.99
    assert np.linalg.norm(d) == pytest.approx(2 * r, rel=1e-4)  # and the stick holds


@pytest.mark.parametrize("links", [1, 2, 4, 8])
def test_a_chain_released_level_keeps_its_energy(links):
    # A chain of rigid 0.3 m links of 0.5 kg from a fixed pivot, released level, damping off:
    # its energy (kinetic + potential) after 5 s, against the potential energy it can give up
    # (m g z from level to hanging). Its links are one chain (particles.chains), solved at once
    # along their directions at the substep's start: it keeps it within 1% (solved a colour at a
    # time, 4 links lost 6% and 8 lost 29% at one iteration; plain projection 66%, 44%, 31%).
    n, length, mass = links, 0.3, 0.5
    b = engine.ModelBuilder()
    pos = np.zeros((n + 1, 3))
    pos[:, 0] = np.arange(n + 1) * length
    m = np.full(n + 1, mass)
    m[0] = 0.0
    b.add_particles(pos, masses=m)
    b.add_sticks(np.arange(n), np.arange(1, n + 1))
    solver = engine.Solver(b.finalize())
    state = solver.make_state()

    def energy():
        v = solver.velocities(state)  # the mean over the last substep: the velocity h/2 ago
        z = state.positions[:, 2] - 0.5 * v[:, 2] * solver.h
        return float((0.5 * m * (v * v).sum(axis=1) + m * G * z).sum())

    start = energy()
    scale = mass * G * length * n * (n + 1) / 2  # what hanging straight down gives up
    lowest = start
    for _ in range(5 * 24):
        solver.step_frame(state)
        lowest = min(lowest, energy())
        assert np.all(np.abs(np.linalg.norm(np.diff(state.positions, axis=0), axis=1) - length) < 0.02 * length)
    loss = (start - energy()) / scale
    assert loss < 0.01
    assert energy() < start + 0.005 * scale  # and it gains none
    assert (start - lowest) / scale < 0.01


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("threads", ["serial", "colours on all cores"])
def test_sweeps_along_the_starting_directions_agree_on_both_backends(seed, threads, monkeypatch):
    # The same random net as tests/engine/test_kernels.py, now with where the particles were at
    # the substep's start: turned a little (SHAKE along it), a lot (the direction now) and
    # strained (the direction now); bit for bit on numba and numpy.
    from jakobsen_engine.backend.numba import particles as compiled

    if threads != "serial":
        monkeypatch.setattr(compiled, "PARALLEL_STICKS", 1)
    n, m = 300, 900

    def args(sqrt):
        r = np.random.default_rng(2000 + seed)
        x = r.normal(size=(n, 3))
        inv = np.where(r.random(n) < 0.1, 0.0, r.random(n) + 0.5)
        i = r.integers(0, n, m)
        j = (i + 1 + r.integers(0, n - 1, m)) % n
        keep = (inv[i] > 0) | (inv[j] > 0)
        i, j = i[keep], j[keep]
        colour = colour_sticks(i, j, inv > 0)
        order = np.argsort(colour, kind="stable")
        i, j, colour = i[order], j[order], colour[order]
        offsets = np.searchsorted(colour, np.arange(colour.max() + 2))
        count = len(i)
        start = x + r.normal(scale=np.where(r.random(n) < 0.2, 0.5, 0.01)[:, None], size=(n, 3))
        # rest: the length at the start (within SHAKE_STRAIN) for most, anything for the others
        rest = np.linalg.norm(start[j] - start[i], axis=1) * np.where(r.random(count) < 0.8, 1.0, 1.2)
        alpha = np.where(r.random(count) < 0.5, 0.0, r.random(count) * 1e-3)
        kind = r.integers(0, 3, count).astype(np.int8)
        c = len(offsets) - 1
        passes = np.array([[0, c // 2, 1], [c // 2, c, 3]], dtype=np.int64)
        return [x, i, j, inv[i], inv[j], rest, alpha, kind, np.zeros(count), offsets, passes, sqrt, start]

    for sqrt in (False, True):
        out = []
        for name in ("numba", "numpy"):
            a = args(sqrt)
            backend.select(name).particles.project_sticks(*a)
            out.append(a)
        for p, q in zip(*out):
            if isinstance(p, np.ndarray):
                np.testing.assert_array_equal(p, q)
        assert np.abs(out[0][0] - args(sqrt)[0]).max() > 1e-3  # it moved something
        plain = args(sqrt)
        backend.select("numpy").particles.project_sticks(*plain[:12])
        assert np.abs(plain[0] - out[1][0]).max() > 1e-6  # and the starting directions mattered


def hanging_sag(n: int, stiffness: float, density: float, substeps: int, iterations, global_solve=False):
    """How far (m) the lowest vertex of a 1 m square curtain of n x n vertices, pinned along its
    top edge, hangs below where it started, once it has come to rest; and its fastest vertex's
    speed then, m/s."""
    from jakobsen_engine.geometry.primitives import grid

    v, f = grid(n, n, 1.0)
    v = np.stack([v[:, 0], np.zeros(len(v)), v[:, 1] - 0.5], axis=1)
    b = engine.ModelBuilder()
    b.add_cloth(v, f, pin_weights=(v[:, 2] > -1e-9).astype(float), stretch_stiffness=stiffness,
                shear_stiffness=stiffness, bend_stiffness=0.01, density=density)
    solver = engine.Solver(b.finalize(), engine.SolverSettings(substeps=substeps, iterations=iterations, damping=8.0,
                                                                        global_solve=global_solve))
    state = solver.make_state()
    for _ in range(24 * 4):
        solver.step_frame(state)
    return v[:, 2].min() - state.positions[:, 2].min(), float(np.abs(solver.velocities(state)).max())


@pytest.mark.parametrize("n, stiffness, density", [(11, 0.5, 0.2), (11, 5.0, 0.2), (11, 5.0, 1.0), (16, 5.0, 0.5),
                                                   (21, 5.0, 0.2)])
@pytest.mark.compiled_only
def test_on_auto_iterations_a_soft_curtain_sags_the_same_at_5_10_and_20_substeps(n, stiffness, density):
    # (The global solve, SolverSettings.global_solve, does it at one iteration: see below.)
    # The stretch stiffness (N per unit strain) sets the sag; one sweep a substep leaves the
    # stretch unconverged, an extra compliance that shrinks with the substep (21 x 21 at 5 N:
    # 40, 14 and 7.8 mm at 5, 10 and 20 substeps). On auto the solver sweeps until an iteration
    # moves nothing by more than 1e-4 of an edge, and the sags agree within 3%. (Stiffer and
    # larger cloths need more sweeps than auto's 32: 33 x 33 at 5 N sags 5.4, 4.3 and 4.2 mm.)
    # Physical damping brings it to rest; the solve adds none of its own.
    sags = []
    for substeps in (5, 10, 20):
        sag, speed = hanging_sag(n, stiffness, density, substeps, "auto")
        assert speed < 2e-3  # at rest
        sags.append(sag)
    sags = np.array(sags)
    assert sags.min() > 0.005  # a visible sag, set by the stiffness
    assert (sags.max() - sags.min()) / sags.mean() < 0.03
    one, _ = hanging_sag(n, stiffness, density, 5, 1)
    assert one > sags[0]  # one iteration at 5 substeps: softer than the stiffness says


def test_iterations_on_auto_are_accepted_and_other_words_refused():
    engine.SolverSettings(iterations="auto").validate()
    for bad in ("Auto", "many", 0, 2.5):
        with pytest.raises(engine.JakobsenError, match="iterations") as error:
            engine.SolverSettings(iterations=bad).validate()
        assert error.value.setting == "iterations"


def settled_sag(n: int, stiffness: float, substeps: int, frames: int, global_solve=True, shear=True):
    # (global_solve: the setting is off by default for now; see SolverSettings)
    """How far (m) the middle of the free (bottom) edge of a 1 m square curtain of n x n vertices
    (0.2 kg/m^2), pinned along its top edge, hangs below its unstretched place after ``frames``
    frames at one iteration (the default), started at rest near its sag (each column stretched
    under the weight below it as if its stretch sticks alone held it; the settings' damping of
    8/s settles the rest); and its fastest vertex's speed then, m/s."""
    from jakobsen_engine.geometry.primitives import grid

    density = 0.2
    v, f = grid(n, n, 1.0)
    v = np.stack([v[:, 0], np.zeros(len(v)), v[:, 1] - 0.5], axis=1)
    b = engine.ModelBuilder()
    b.add_cloth(v, f, pin_weights=(v[:, 2] > -1e-9).astype(float), stretch_stiffness=stiffness,
                bend_stiffness=0.01, density=density, **(dict(shear_stiffness=stiffness) if shear else {}))
    solver = engine.Solver(b.finalize(), engine.SolverSettings(substeps=substeps, damping=8.0,
                                                               global_solve=global_solve))
    state = solver.make_state()
    depth = -v[:, 2]  # 0 at the pins, 1 m at the free edge
    column_weight = density * G / (n - 1)  # N per m of height on one column's sticks
    start = v.copy()
    start[:, 2] -= column_weight / stiffness * (depth - 0.5 * depth * depth)
    state.positions[...] = start
    state.previous_positions[...] = start
    for _ in range(frames):
        solver.step_frame(state)
    middle = int(np.argmin(np.abs(v[:, 0]) + np.abs(v[:, 2] + 1.0)))
    return v[middle, 2] - state.positions[middle, 2], float(np.abs(solver.velocities(state)).max())


# At the default settings (one iteration), each row, column and diagonal of sticks solved
# along its whole length (particles.chains). Not yet (strict xfail, to be noticed when they
# pass): the stiffnesses between soft and nearly inextensible, where the shear diagonals and the
# columns share the weight and a Gauss-Seidel between them has not converged in one iteration
# (11 x 11 at 100 N: 695 / 678 / 662 um, 4.8%; 33 x 33 at 100 N 3.8%; 65 x 65 at 5 N 3.5%).
DEFAULT_CURTAINS = [(11, 0.5), (11, 5.0), (11, 1e4), (21, 1.0), (21, 5.0), (33, 5.0), (33, 1e3), (33, 1e4),
                    pytest.param(11, 100.0, marks=pytest.mark.xfail(strict=True, reason="shear and stretch share"))]


@pytest.mark.compiled_only
@pytest.mark.parametrize("n, stiffness", DEFAULT_CURTAINS)
def test_at_the_default_settings_a_curtain_sags_the_same_at_5_10_and_20_substeps(n, stiffness):
    # Issue 11 test 4 at the default iteration setting. One sweep of sticks a colour at a time
    # left an extra compliance of about h^2 / m (33 x 33 at 5 N: 89, 26 and 8.9 mm at 5, 10 and
    # 20 substeps); a chain solved at once carries the weight from the free edge to the pins in
    # one pass, so the stiffness alone sets the sag: within 3% at rest.
    sags = []
    for substeps in (5, 10, 20):
        sag, speed = settled_sag(n, stiffness, substeps, 48, global_solve=False)
        assert speed < 1e-3  # at rest
        sags.append(sag)
    sags = np.array(sags)
    assert sags.min() > 0.0
    assert (sags.max() - sags.min()) / sags.mean() < 0.03


@pytest.mark.compiled_only
@pytest.mark.parametrize("n, stiffness", [(11, 0.5), (11, 5.0), (21, 5.0), (33, 1e3)])
def test_a_curtain_given_only_a_stretch_stiffness_sags_the_same_at_5_10_and_20_substeps(n, stiffness):
    """Given a stretch stiffness and no shear, the diagonals stretch as the edges do. They were
    left rigid: under soft edges their unconverged solve set the sag (11 x 11 at 5 N: 6.3, 5.6
    and 5.3 mm at 5, 10 and 20 substeps, 17%; at 0.5 N the curtain buckled)."""
    sags = []
    for substeps in (5, 10, 20):
        sag, speed = settled_sag(n, stiffness, substeps, 48, global_solve=False, shear=False)
        assert speed < 1e-3  # at rest
        sags.append(sag)
    sags = np.array(sags)
    assert sags.min() > 0.0
    assert (sags.max() - sags.min()) / sags.mean() < 0.03


# (size, stiffness N per unit strain): 11 x 11 soft to nearly inextensible; 33 x 33 soft and
# stiff; 65 x 65 stiff (the hardest to converge; 4225 vertices). Not yet (strict xfail, so that
# they are noticed when they pass): 33 x 33 at 100 N (0.306 / 0.305 / 0.295 mm, 3.7%: its shear
# sticks are too stiff for the global solve's warm start and too soft to leave out); 65 x 65 at
# 5 N is not at rest at 5 substeps after 2 s (24.9 mm then, 10.3 at 10 and 20; not run here).
CURTAINS = [(11, 5.0), (11, 100.0), (11, 1e4), (33, 5.0), (33, 1e4), (65, 1e4),
            pytest.param(33, 100.0, marks=pytest.mark.xfail(strict=True, reason="shear between the regimes"))]


@pytest.mark.compiled_only
@pytest.mark.parametrize("n, stiffness", CURTAINS)
def test_with_the_global_solve_a_curtain_sags_the_same_at_5_10_and_20_substeps_at_one_iteration(n, stiffness,
                                                                                                  kernel_backend):
    # Issue 11 test 4. XPBD makes the stretch stiffness (N per unit strain) set the sag at any
    # substep count only if each substep's solve converges; one Gauss-Seidel sweep left an
    # extra compliance of about h^2 / m (33 x 33 at 5 N: 89, 26 and 8.9 mm at 5, 10 and 20
    # substeps). The global solve (conjugate gradients on the stretch sticks, warm-started from
    # the last substep's multipliers, whose rest is the converged XPBD rest) converges it: the
    # sags of the free edge's middle agree within 3%, at rest, at one iteration a substep.
    if kernel_backend == "numpy" and n > 11:
        pytest.skip("the numpy reference is too slow for this here; the kernel tests hold it to numba's numbers")
    sags = []
    for substeps in (5, 10, 20):
        sag, speed = settled_sag(n, stiffness, substeps, 48)
        assert speed < 1e-3  # at rest
        sags.append(sag)
    sags = np.array(sags)
    assert sags.min() > 0.0
    assert (sags.max() - sags.min()) / sags.mean() < 0.03
