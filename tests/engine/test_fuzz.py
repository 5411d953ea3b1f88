"""A seeded fuzz of small random scenes through the public engine API.

Every scene mixes what the engine has (cloth, loose particles, rigid bodies of every shape,
connectors of every kind, several of them on one pair of bodies, springs, motors, force fields,
colliders of every kind, kinematic bodies and moving colliders) at a random scale (a millimetre to
twenty metres), with random speeds (tens of m/s) and settings (1 to 20 substeps), and runs a few
frames. For each, it asserts:

- nothing raises but ``JakobsenError`` (which is allowed: a scene the engine refuses, or a frame
  the energy guard stops, is an answer; a crash or a nonsense result is not);
- everything stays finite;
- without an energy source (motors, force fields, kinematic bodies, moving colliders, animated
  pins; also bodies pushing cloth, which the engine couples one way, so for the cloth they are
  moving colliders) the energy (kinetic plus gravitational potential above the scene's floor, of
  bodies and particles) never exceeds twice the starting energy;
- with a ground plane, no body sample point and no particle ends a frame deeper below it than a
  small tolerance (a quarter of the body's thickness for bodies, which is what one substep may
  drive a fast contact in before the solve takes it back; a particle's radius).

Scenes are built without overlaps (every object in its own cell of a grid above the ground), so
energy from pushing overlaps apart does not count against the engine. A failure names its seed:
``pytest tests/engine/test_fuzz.py -k "seed_17"``.
"""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError
from jakobsen_engine import quaternions as quat
from jakobsen_engine.solver.energy import particle_energies
from jakobsen_engine.constraints.joints import KINDS
from jakobsen_engine.constraints import kinds as connector_kinds
from jakobsen_engine.geometry.primitives import grid
from jakobsen_engine.bodies.rigid import BodyMode
from jakobsen_engine.bodies.rigid import body_thickness

from .rigid_scenes import box_mesh, rotation, uv_sphere

SEEDS = 200
SHAPES = ("box", "sphere", "capsule", "cylinder", "convex_hull", "automatic")


def random_mesh(rng, size, centre, thin=False):
    """A closed mesh about ``centre``: a box (maybe a thin plate), a UV sphere or a random hull."""
    rot = rotation(rng.normal(size=3), rng.uniform(0.0, 180.0))
    pick = rng.random()
    if pick < 0.6:
        dims = size * rng.uniform(0.3, 1.0, 3)
        if thin:
            dims[int(rng.integers(3))] = size * rng.uniform(0.02, 0.08)
        return box_mesh(dims, centre=centre, rotation=rot)
    if pick < 0.8:
        return uv_sphere(radius=0.5 * size, centre=centre, rings=6, segments=8)
    points = rng.normal(size=(12, 3))
    points *= 0.5 * size / np.abs(points).max()
    points = points @ rot.T + centre
    return points, None  # an open "mesh": the engine takes its convex hull


class Scene:
    """A built scene: solver, state, and what the checks need."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.scale = 10.0 ** rng.uniform(-3.0, 1.3)
        substeps = int(rng.integers(1, 21))
        gravity = (0.0, 0.0, -9.81) if rng.random() < 0.8 else tuple(rng.normal(size=3) * 3.0)
        self.settings = engine.SolverSettings(
            frame_rate=float(rng.choice([24.0, 30.0, 60.0])), substeps=substeps, gravity=gravity,
            iterations=int(rng.integers(1, 3)), damping=float(rng.choice([0.0, 0.0, 0.5])),
            contact_iterations=int(rng.integers(2, 5)), velocity_iterations=int(rng.integers(1, 5)))
        self.frames = max(2, min(5, 48 // substeps))
        self.sources = []
        b = self.builder = engine.ModelBuilder()
        self.ground = rng.random() < 0.75
        if self.ground:
            b.add_collider(engine.Plane(friction=float(rng.uniform(0.0, 1.0)),
                                        restitution=float(rng.uniform(0.0, 1.0))))
        # Objects go in the cells of a grid above the ground, so none overlaps another at rest.
        self.cells = [(i, j, k) for i in range(3) for j in range(3) for k in range(2)]
        rng.shuffle(self.cells)
        self.bodies, self.centres, self.kinematic = [], [], []
        for _ in range(int(rng.integers(0, 5))):
            self.add_body()
        if len(self.bodies) and rng.random() < 0.6:
            self.add_joints()
        if len(self.bodies) and rng.random() < 0.3:
            self.add_springs()
        if len(self.bodies) and rng.random() < 0.2:
            self.add_motor()
        if rng.random() < 0.15:
            self.add_force()
        for _ in range(int(rng.integers(0, 3))):
            self.add_collider()
        self.cloth = None
        self.pin_motion = None
        if rng.random() < 0.35 or not self.bodies:
            self.add_cloth()
        if rng.random() < 0.2:
            self.add_particles()

    def cell(self):
        i, j, k = self.cells.pop()
        s = 2.5 * self.scale
        return np.array([(i - 1) * s, (j - 1) * s, (k + 0.9) * s])

    def speed(self):
        return self.rng.normal(size=3) * self.rng.uniform(0.0, 12.0)

    def add_body(self):
        rng, scale = self.rng, self.scale
        centre = self.cell()
        size = scale * rng.uniform(0.2, 1.0)
        mesh = random_mesh(rng, size, centre, thin=rng.random() < 0.3)
        mode = "dynamic"
        motion = None
        if rng.random() < 0.1:
            mode = "kinematic"
            omega, radius = rng.uniform(-3.0, 3.0), 0.3 * scale

            def motion(t, omega=omega, radius=radius):
                # A horizontal circle: it never drives anything into the ground.
                m = np.eye(4)
                m[:2, 3] = radius * np.array([math.cos(omega * t) - 1.0, math.sin(omega * t)])
                return m
        elif rng.random() < 0.05:
            mode = "ghost"
        handle = self.builder.add_rigid_body(
            *mesh, name=f"body {len(self.bodies)}", shape=str(rng.choice(SHAPES)), mode=mode, motion=motion,
            density=float(10.0 ** rng.uniform(1.5, 3.5)), friction=float(rng.uniform(0.0, 1.0)),
            restitution=float(rng.uniform(0.0, 1.0)), velocity=self.speed(),
            angular_velocity=rng.normal(size=3) * rng.uniform(0.0, 10.0),
            linear_damping=float(rng.choice([0.0, 0.0, 0.3])))
        self.bodies.append(handle)
        self.centres.append(centre)
        if mode == "kinematic":
            self.kinematic.append(handle)
            self.sources.append("kinematic body")

    def add_joints(self):
        rng = self.rng
        count = int(rng.integers(1, 5))
        same_pair = rng.random() < 0.5  # several connectors on one pair of bodies
        pair = None
        for k in range(count):
            if pair is None or not same_pair:
                a = self.bodies[int(rng.integers(len(self.bodies)))]
                others = [h for h in self.bodies if h != a]
                b = others[int(rng.integers(len(others)))] if others and rng.random() < 0.8 else None
                pair = (a, b) if rng.random() < 0.5 else (b, a)
            kind = str(rng.choice(KINDS))
            settings = dict(ignore_collisions=bool(rng.random() < 0.8),
                            limit_bounce=float(rng.choice([0.0, rng.uniform(0.0, 1.0)])))
            if not connector_kinds.has_limits(kind):
                del settings["limit_bounce"]  # drawn all the same, so the scenes stay the same
            if kind == "box":
                half = 0.1 * self.scale
                settings["box_limits"] = ((-half,) * 3, (half,) * 3)
            if kind in ("hinge", "twist_slider") and rng.random() < 0.5:
                settings["angle_limits"] = (-0.5, 0.7)
            if kind in ("slider", "twist_slider") and rng.random() < 0.5:
                settings["distance_limits"] = (-0.2 * self.scale, 0.3 * self.scale)
            if kind == "cardan" and rng.random() < 0.5:
                settings["cone_angle"] = 0.4
            if kind == "wheel_suspension":
                settings.update(suspension_limits=(-0.2 * self.scale, 0.0),
                                suspension_stiffness=float(rng.uniform(0.0, 1e3)),
                                suspension_damping=float(rng.uniform(0.0, 10.0)))
            if rng.random() < 0.2:
                settings["breaking_force"] = float(10.0 ** rng.uniform(0, 4))
            ends = [h for h in pair if h is not None]
            centres = [self.centres[h.index] for h in ends]
            pivot = np.mean(centres, axis=0) + rng.normal(size=3) * 0.2 * self.scale
            self.builder.add_joint(kind, pair[0], pair[1], pivot, axis=rng.normal(size=3), name=f"joint {k}",
                                   **settings)

    def add_springs(self):
        rng = self.rng
        for k in range(int(rng.integers(1, 3))):
            a = self.bodies[int(rng.integers(len(self.bodies)))]
            others = [h for h in self.bodies if h != a]
            b = others[int(rng.integers(len(others)))] if others and rng.random() < 0.7 else None
            pa = self.centres[a.index]
            pb = self.centres[b.index] if b is not None else pa + (0, 0, self.scale)
            kind = str(rng.choice(["linear", "angular", "both"]))
            # At their rest length: a spring starts with no energy stored.
            self.builder.add_spring(a, b, pa, pb, name=f"spring {k}", kind=kind,
                                    stiffness=float(10.0 ** rng.uniform(0, 6)),
                                    damping=float(rng.uniform(0.0, 10.0)),
                                    angular_stiffness=float(10.0 ** rng.uniform(-2, 4)),
                                    angular_damping=float(rng.uniform(0.0, 1.0)))

    def add_motor(self):
        rng = self.rng
        a = self.bodies[int(rng.integers(len(self.bodies)))]
        linear = rng.random() < 0.5
        mode = str(rng.choice(["speed", "force", "servo"]))
        effort = float(10.0 ** rng.uniform(0, 5))
        target = float(rng.uniform(-20.0, 20.0)) if mode != "servo" else float(rng.uniform(-2.0, 2.0))
        settings = dict(kind="linear" if linear else "angular", mode=mode, target=target)
        settings["force" if linear else "torque"] = effort
        self.builder.add_motor(a, None, rng.normal(size=3), name="motor", **settings)
        self.sources.append("motor")

    def add_force(self):
        rng = self.rng
        kind = str(rng.choice(["wind", "drag", "attractor"]))
        if kind == "wind":
            self.builder.add_force("wind", direction=rng.normal(size=3), strength=float(rng.uniform(0, 20)),
                                   turbulence=float(rng.uniform(0, 1)))
        elif kind == "drag":
            self.builder.add_force("drag", linear=float(rng.uniform(0, 1)), quadratic=float(rng.uniform(0, 1)))
        else:
            self.builder.add_force("attractor", position=rng.normal(size=3) * self.scale,
                                   strength=float(rng.uniform(-20, 20)), falloff="inverse_square",
                                   min_distance=0.1 * self.scale)
        self.sources.append(f"{kind} field")

    def add_collider(self):
        rng, scale = self.rng, self.scale
        if not self.cells:
            return
        centre = self.cell()
        m = np.eye(4)
        m[:3, :3] = rotation(rng.normal(size=3), rng.uniform(0.0, 90.0))
        m[:3, 3] = centre
        size = scale * rng.uniform(0.2, 0.8)
        kind = str(rng.choice(["sphere", "box", "capsule", "cylinder", "hull", "mesh", "interior"]))
        common = dict(friction=float(rng.uniform(0.0, 1.0)), restitution=float(rng.uniform(0.0, 1.0)))
        motion = None
        if rng.random() < 0.15:
            speed = rng.uniform(-2.0, 2.0) * scale
            start = m.copy()

            def motion(t, start=start, speed=speed):
                out = start.copy()
                out[0, 3] += speed * t  # sideways: never into the ground
                return out
            self.sources.append("moving collider")
        if kind == "sphere":
            c = engine.Sphere(radius=0.5 * size, transform=m, motion=motion, **common)
        elif kind == "box":
            c = engine.Box(half_extents=tuple(0.5 * size * rng.uniform(0.1, 1.0, 3)), transform=m, motion=motion,
                           **common)
        elif kind == "capsule":
            c = engine.Capsule(radius=0.25 * size, half_height=0.3 * size, transform=m, motion=motion, **common)
        elif kind == "cylinder":
            c = engine.Cylinder(radius=0.4 * size, half_height=0.2 * size, transform=m, motion=motion, **common)
        elif kind == "hull":
            c = engine.ConvexHull.from_points(rng.normal(size=(10, 3)) * 0.4 * size + centre, motion=None, **common)
        elif kind == "mesh":
            v, f = grid(4, 4, 2.0 * size)
            v[:, 2] += rng.uniform(-0.1, 0.1, len(v)) * size
            v += centre - (0, 0, 0.5 * size)
            c = engine.TriangleMesh.from_mesh(v, f, margin=0.1 * size, **common)
        else:
            # A cube world around the whole scene: what starts inside stays inside.
            c = engine.BoxInterior(half_extents=(40.0 * scale,) * 3, **common)
        self.builder.add_collider(c)

    def add_cloth(self):
        rng = self.rng
        if not self.cells:
            return
        n = int(rng.integers(4, 9))
        size = self.scale * rng.uniform(0.5, 1.5)
        v, f = grid(n, n, size)
        v = v @ rotation(rng.normal(size=3), rng.uniform(0, 40)).T + self.cell()
        pins = None
        if rng.random() < 0.5:
            pins = (v[:, 1] >= v[:, 1].max() - 1e-9 * size).astype(float)
        stiff = rng.random() < 0.5
        self.cloth = self.builder.add_cloth(
            v, f, name="cloth", density=float(rng.uniform(0.05, 1.0)), thickness=0.01 * size,
            stretch_stiffness=math.inf if stiff else float(10.0 ** rng.uniform(1, 4)),
            bend_stiffness=float(10.0 ** rng.uniform(-3, 0)), pin_weights=pins, friction=float(rng.uniform(0, 1)),
            restitution=float(rng.uniform(0, 1)), drag=float(rng.choice([0.0, 0.1])))
        self.cloth_velocity = self.speed()
        if pins is not None and rng.random() < 0.5:
            shift = rng.normal(size=3) * self.scale
            shift[2] = abs(shift[2])  # animated pins move up or sideways, never into the ground
            self.pin_motion = shift
            self.sources.append("animated pins")

    def add_particles(self):
        rng = self.rng
        if not self.cells:
            return
        centre = self.cell()
        count = int(rng.integers(1, 6))
        positions = centre + rng.normal(size=(count, 3)) * 0.3 * self.scale
        self.builder.add_particles(positions, masses=float(rng.uniform(0.01, 1.0)), radius=0.02 * self.scale,
                                   velocities=np.array([self.speed() for _ in range(count)]),
                                   restitution=float(rng.uniform(0, 1)), name="drops")

    def build(self):
        self.solver = engine.Solver(self.builder.finalize(self.settings), self.settings)
        self.state = self.solver.make_state()
        model = self.solver.model
        if self.cloth is not None:
            velocities = np.zeros_like(self.state.positions)
            velocities[self.cloth.slice] = self.cloth_velocity
            velocities[model.inverse_masses == 0.0] = 0.0
            self.solver.set_velocities(self.state, velocities + self.solver.velocities(self.state))
        if model.particle_count and model.bodies.count and np.any(model.bodies.mode != BodyMode.KINEMATIC):
            # Bodies push particles (one way): for the particles, a moving collider.
            self.sources.append("bodies pushing cloth")
        self.pinned = np.flatnonzero(model.inverse_masses == 0.0)
        self.pin_start = self.state.positions[self.pinned].copy()

    def step(self, frame):
        pins = None
        if self.pin_motion is not None:
            pins = self.state.positions.copy()
            pins[self.pinned] = self.pin_start + self.pin_motion * (frame + 1) / self.frames
        self.solver.step_frame(self.state, pins)

    # -- measurements ------------------------------------------------------------------------

    def energy(self, floor):
        """Kinetic plus potential energy above ``floor`` (along gravity) of bodies and particles."""
        model, state = self.solver.model, self.state
        g = np.asarray(self.settings.gravity, dtype=np.float64)
        b = model.bodies
        total = 0.0
        if b.count:
            rot = quat.to_matrix(state.bodies.orientation)
            w = np.einsum("bji,bj->bi", rot, state.bodies.angular_velocity)
            v = state.bodies.velocity
            ke = 0.5 * b.mass * np.einsum("bi,bi->b", v, v) + 0.5 * np.einsum("bi,bi->b", b.inertia * w, w)
            pe = -b.mass * (state.bodies.position @ g) - b.mass * floor
            total += float(np.sum(np.where(b.mode == BodyMode.KINEMATIC, 0.0, ke + pe)))
        if model.particle_count:
            inv = model.inverse_masses
            mass = np.divide(1.0, inv, out=np.zeros_like(inv), where=inv > 0)
            e = particle_energies(model, state.positions, state.previous_positions, self.solver.h, g)
            total += float(np.sum(e - mass * floor))
        return total

    def floor(self):
        """The lowest potential (per kg, -g . x) anything may reach: the ground's, or a generous
        one below everything."""
        g = np.asarray(self.settings.gravity, dtype=np.float64)
        if self.ground and g[0] == 0.0 and g[1] == 0.0:
            return 0.0
        points = [self.state.positions] if len(self.state.positions) else []
        if self.solver.model.bodies.count:
            points.append(self.state.bodies.position)
        lowest = min(float(np.min(-(p @ g))) for p in points)
        speed = 40.0 * self.scale + 30.0  # what can be reached in a few frames, m/s times s
        return lowest - float(np.linalg.norm(g)) * speed * self.frames / self.settings.frame_rate * 10.0

    def mass_weight_size(self):
        model = self.solver.model
        g = float(np.linalg.norm(self.settings.gravity)) + 1.0
        b = model.bodies
        e = float(np.sum(b.mass * g * b.bound_radius)) if b.count else 0.0
        inv = model.inverse_masses
        return e + float(np.sum(np.divide(1.0, inv, out=np.zeros_like(inv), where=inv > 0))) * g * self.scale

    def deepest_below_ground(self):
        """How far (m) below the ground plane each dynamic body's sample points (less their radius)
        and each free particle (less its radius) are, relative to what is allowed: > 1 fails."""
        model, state = self.solver.model, self.state
        worst = 0.0
        b = model.bodies
        if b.count:
            rot = quat.to_matrix(state.bodies.orientation)
            p = state.bodies.position[b.point_body] + np.einsum("kij,kj->ki", rot[b.point_body], b.point_local)
            depth = -(p[:, 2] - b.point_radius)
            allowed = 0.25 * body_thickness(b)[b.point_body] + 1e-6 * self.scale
            # dynamic ones: kinematic ones follow their motion, ghosts fall through everything
            solid = (b.mode == BodyMode.DYNAMIC)[b.point_body]
            if np.any(solid):
                worst = max(worst, float(np.max(depth[solid] / allowed[solid])))
        if model.particle_count:
            free = model.inverse_masses > 0
            depth = -(state.positions[:, 2] - model.radii)
            allowed = np.maximum(model.radii, 1e-3 * self.scale)
            if np.any(free):
                worst = max(worst, float(np.max(depth[free] / allowed[free])))
        return worst


def run_scene(seed):
    """Build and run one scene; returns a short report. Raises AssertionError on a failure."""
    scene = Scene(seed)
    try:
        scene.build()
    except JakobsenError as e:
        assert str(e), "a JakobsenError without a message"
        return f"refused: {e}"
    floor = scene.floor()
    start = scene.energy(floor)
    slack = 1e-6 * scene.mass_weight_size()
    for frame in range(scene.frames):
        try:
            scene.step(frame)
        except JakobsenError as e:
            assert str(e), "a JakobsenError without a message"
            return f"stopped in frame {frame + 1}: {e}"
        state = scene.state
        assert np.all(np.isfinite(state.positions)) and np.all(np.isfinite(state.previous_positions))
        assert np.all(np.isfinite(np.hstack(state.bodies.arrays())))
        if not scene.sources:
            energy = scene.energy(floor)
            assert energy <= 2.0 * start + slack, (
                f"seed {seed}: energy grew from {start:.4g} J to {energy:.4g} J by frame {frame + 1} "
                "with nothing driving it")
        if scene.ground:
            worst = scene.deepest_below_ground()
            assert worst <= 1.0, f"seed {seed}: something is {worst:.3g} times its allowed depth below the ground " \
                                 f"in frame {frame + 1}"
    return "ran"


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed_{s}") for s in range(SEEDS)])
def test_random_scene(seed):
    run_scene(seed)
