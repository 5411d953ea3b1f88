"""The car example (``blend_examples/car.blend``), baked through the add-on, as physics.

A 400 kg chassis (with a cabin welded on) on four Wheel Suspension connectors drives over bumpy
ground (a Static Mesh), its rear wheels turned by two speed motors (10 rad/s, radius 0.3 m), its
front wheels steered by a keyframed angle; it runs into two towers of crates. One bake of the
whole scene (frames 1-96) is shared by the tests, which check what a viewer would: the car drives
forward as fast as its wheels turn, the wheels stay on their axles and within the suspension's
travel, the springs work, the steering turns the front wheels, nothing sinks into the ground, and
the crates are knocked over.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_tools.bake import bake_file  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.slow]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "blend_examples")
SOURCE = os.path.join(EXAMPLES, "car.blend")
WHEELS = ("Rear Left", "Rear Right", "Front Left", "Front Right")
G = 9.81


def _matrix(obj) -> np.ndarray:
    return np.array(obj.matrix_world, dtype=np.float64)


def _unit_columns(m: np.ndarray) -> np.ndarray:
    return m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)


def _ground_heights(ground) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ground mesh as a regular grid: xs (nx,), ys (ny,), heights (ny, nx), in world space."""
    co = np.empty(3 * len(ground.data.vertices), np.float64)
    ground.data.vertices.foreach_get("co", co)
    m = _matrix(ground)
    world = co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
    xs, ys = np.unique(world[:, 0].round(6)), np.unique(world[:, 1].round(6))
    assert len(xs) * len(ys) == len(world), "the ground is not a regular grid"
    order = np.lexsort((world[:, 0], world[:, 1]))  # y rows, x varying fastest
    return xs, ys, world[order, 2].reshape(len(ys), len(xs))


def ground_height(ground_grid, x, y) -> np.ndarray:
    """Height of the ground's faces at (x, y): each grid cell is two triangles split along the
    diagonal from its (x0, y0) corner (as its quads are fanned from their first vertex)."""
    xs, ys, z = ground_grid
    x, y = np.asarray(x, float), np.asarray(y, float)
    i = np.clip(np.searchsorted(xs, x) - 1, 0, len(xs) - 2)
    j = np.clip(np.searchsorted(ys, y) - 1, 0, len(ys) - 2)
    u = (x - xs[i]) / (xs[i + 1] - xs[i])
    v = (y - ys[j]) / (ys[j + 1] - ys[j])
    z00, z10, z11, z01 = z[j, i], z[j, i + 1], z[j + 1, i + 1], z[j + 1, i]
    lower = u >= v  # the triangle (x0, y0), (x1, y0), (x1, y1)
    return np.where(lower, z00 + u * (z10 - z00) + v * (z11 - z10), z00 + v * (z01 - z00) + u * (z11 - z01))


@pytest.fixture(scope="module")
def car(tmp_path_factory):
    """Bake car.blend once (all its frames) and sample what the tests need on every frame."""
    import jakobsen_physics as addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    try:
        report = bake_file(SOURCE, str(tmp_path_factory.mktemp("car") / "car_baked.blend"), every=24,
                           log=lambda text: print(text, flush=True))
        scene = bpy.context.scene
        objects = bpy.data.objects
        frames = list(range(report.frames[0], report.frames[1] + 1))
        crates = sorted(o.name for o in objects if o.name.startswith("Crate"))
        tracked = ["Chassis", *(f"Wheel {w}" for w in WHEELS), *crates]
        suspension = {w: objects[f"Suspension {w}"].jakobsen.connector for w in WHEELS}
        motors = [o for o in objects if o.jakobsen.enabled and o.jakobsen.type == 'MOTOR']
        poses = {name: [] for name in tracked}
        steering = {w: [] for w in WHEELS}
        for frame in frames:
            scene.frame_set(frame)
            for name in tracked:
                poses[name].append(_matrix(objects[name]))
            for w in WHEELS:
                steering[w].append(suspension[w].steering_angle)
        scene.frame_set(frames[0])
        chassis_mesh = np.empty(3 * len(objects["Chassis"].data.vertices))
        objects["Chassis"].data.vertices.foreach_get("co", chassis_mesh)
        wheel_co = np.empty(3 * len(objects["Wheel Rear Left"].data.vertices))
        objects["Wheel Rear Left"].data.vertices.foreach_get("co", wheel_co)
        wheel_radius = float(np.linalg.norm(wheel_co.reshape(-1, 3)[:, :2], axis=1).max())
        return SimpleNamespace(
            report=report, frames=np.array(frames), fps=scene.render.fps / scene.render.fps_base,
            poses={name: np.array(p) for name, p in poses.items()}, crates=crates,
            steering={w: np.array(s) for w, s in steering.items()},
            pivots={w: _matrix(objects[f"Suspension {w}"]) for w in WHEELS},
            limits={w: (suspension[w].suspension_lower, suspension[w].suspension_upper) for w in WHEELS},
            rest={w: suspension[w].suspension_rest for w in WHEELS},
            stiffness={w: suspension[w].suspension_stiffness for w in WHEELS},
            motors=[(m.jakobsen.motor.object_a.name, m.jakobsen.motor.target_angular_speed,
                     m.jakobsen.motor.max_torque) for m in motors],
            sprung_mass=sum(objects[n].jakobsen.rigid_body.mass for n in ("Chassis", "Cabin")),
            chassis_corners=chassis_mesh.reshape(-1, 3), wheel_radius=wheel_radius,
            ground=_ground_heights(objects["Ground"]))
    finally:
        addon.unregister()
        bpy.ops.wm.read_factory_settings()


def wheel_offsets(car, wheel: str) -> np.ndarray:
    """(frames, 3) the wheel's centre relative to its connector, in the chassis' frame (the
    connector's frame: X the axle, Z the suspension axis)."""
    chassis, w = car.poses["Chassis"], car.poses[f"Wheel {wheel}"]
    rest_chassis = chassis[0]
    pivot_local = _unit_columns(rest_chassis).T @ (car.pivots[wheel][:3, 3] - rest_chassis[:3, 3])
    rot = np.array([_unit_columns(m) for m in chassis])
    rel = np.einsum("fji,fj->fi", rot, w[:, :3, 3] - chassis[:, :3, 3])
    return rel - pivot_local


def spin_rates(car, wheel: str) -> np.ndarray:
    """(frames - 1,) the wheel's angular speed about its axle relative to the chassis, rad/s, from
    one frame to the next (signed: positive rolls the car forward, +Y)."""
    chassis = np.array([_unit_columns(m) for m in car.poses["Chassis"]])
    w = np.array([_unit_columns(m) for m in car.poses[f"Wheel {wheel}"]])
    rel = np.einsum("fji,fjk->fik", chassis, w)  # the wheel's rotation in the chassis' frame
    step = np.einsum("fji,fjk->fik", rel[:-1], rel[1:])  # from one frame to the next, in the wheel's frame
    angle = np.arccos(np.clip((np.trace(step, axis1=1, axis2=2) - 1) / 2, -1, 1))
    # The sense: the step's rotation axis (the wheel's local Z, its axle) as seen in the chassis:
    # rolling forward (+Y) turns the wheel about the chassis' -X.
    axis_w = np.stack([step[:, 2, 1] - step[:, 1, 2], step[:, 0, 2] - step[:, 2, 0], step[:, 1, 0] - step[:, 0, 1]], 1)
    axis_c = np.einsum("fij,fj->fi", rel[:-1], axis_w)
    return -np.sign(axis_c[:, 0]) * angle * car.fps


def test_the_car_bakes_out_of_the_box(car):
    assert os.path.getsize(SOURCE) < 400_000  # small: no packed images, no caches
    assert car.report.frames == (1, 96)
    assert not car.report.warnings, car.report.warnings
    print(f"car.blend: baked {car.report.frames[1] - car.report.frames[0] + 1} frames in {car.report.seconds:.1f} s")
    assert all(np.isfinite(p).all() for p in car.poses.values())
    # The rear wheels are driven: two motors, each on a rear wheel, against the chassis.
    assert sorted(a for a, _, _ in car.motors) == ["Wheel Rear Left", "Wheel Rear Right"]


def test_the_rear_wheels_turn_at_the_motor_speed_and_the_car_drives_as_fast_as_they_roll(car):
    target = car.motors[0][1]
    radius = car.wheel_radius
    rates = np.mean([spin_rates(car, w) for w in ("Rear Left", "Rear Right")], axis=0)
    chassis = car.poses["Chassis"][:, :3, 3]
    step = np.linalg.norm(np.diff(chassis[:, :2], axis=0), axis=1)
    # The motors drive the wheels up towards their target speed and never past it (rolling over the
    # bumps on a cylinder's rim points costs some of the torque, so they approach it slowly).
    print("rear wheels (rad/s) every 8 frames:", rates[::8].round(2).tolist())
    assert rates.max() < 1.03 * target
    # Driving before the crates (frames 20-36, close to the target): the chassis moves at the wheel
    # speed times the radius, forwards (+Y).
    cruise = slice(19, 35)
    assert 0.85 * target < rates[cruise].mean() < 1.02 * target, rates[cruise]
    speed = step[cruise].sum() / ((cruise.stop - cruise.start) / car.fps)
    print(f"cruise: wheels {rates[cruise].mean():.2f} rad/s (target {target:.2f}), chassis {speed:.2f} m/s, "
          f"wheel speed x radius {rates[cruise].mean() * radius:.2f} m/s")
    assert abs(speed - rates[cruise].mean() * radius) / (rates[cruise].mean() * radius) < 0.2
    assert chassis[35, 1] - chassis[19, 1] > 0.8 * step[cruise].sum()  # straight ahead, along +Y
    # The whole drive, through the crates and the turn: the distance travelled is the distance
    # rolled, less some slip (pushing the crates), never more.
    path, rolled = step.sum(), (rates * radius / car.fps).sum()
    print(f"whole drive: path {path:.2f} m, rolled {rolled:.2f} m ({path / rolled:.1%}), "
          f"forward {chassis[-1, 1] - chassis[0, 1]:.2f} m")
    assert 0.8 < path / rolled < 1.05
    assert chassis[-1, 1] - chassis[0, 1] > 6.0


def test_the_wheels_stay_on_their_axles_within_the_suspension_travel(car):
    worst = 0.0
    for w in WHEELS:
        offsets = wheel_offsets(car, w)
        off_axis = np.hypot(offsets[:, 0], offsets[:, 1])
        worst = max(worst, off_axis.max())
        assert off_axis.max() < 0.002, f"{w}: the wheel's centre is {1e3 * off_axis.max():.2f} mm off its axis"
        lower, upper = car.limits[w]
        travel = offsets[:, 2]
        assert travel.min() > lower - 0.002 and travel.max() < upper + 0.002, (w, travel.min(), travel.max())
        # The spring works: over the bumps the wheel travels up and down.
        assert np.ptp(travel[30:]) > 0.02, f"{w}: the suspension hardly moves ({np.ptp(travel[30:]):.3f} m)"
    print(f"axles: worst wheel centre {1e3 * worst:.3f} mm off its suspension axis")
    # Standing on the flat start (frame 12, before the bumps), the car sags by its weight over the
    # four springs: rest + m g / (4 k) on average (accelerating pitches it, front up, rear down).
    sag = np.mean([wheel_offsets(car, w)[11, 2] for w in WHEELS])
    k, rest = car.stiffness["Rear Left"], car.rest["Rear Left"]
    expected = rest + car.sprung_mass * G / (4 * k)
    print(f"sag: mean wheel offset {sag:.4f} m, expected {expected:.4f} m")
    assert abs(sag - expected) < 0.25 * car.sprung_mass * G / (4 * k)


def test_the_front_wheels_steer_with_the_keyframed_angle(car):
    for w in WHEELS:
        chassis = np.array([_unit_columns(m) for m in car.poses["Chassis"]])
        wheel = np.array([_unit_columns(m) for m in car.poses[f"Wheel {w}"]])
        axle = np.einsum("fji,fj->fi", chassis, wheel[:, :, 2])  # the wheel's Z (its axle) in the chassis
        heading = np.degrees(np.arctan2(axle[:, 1], axle[:, 0]))
        heading = (heading + 90.0) % 180.0 - 90.0  # an axle has no sense: within +-90 degrees
        expected = np.degrees(car.steering[w]) if w.startswith("Front") else np.zeros(len(heading))
        assert np.abs(heading - expected).max() < 1.0, (w, np.abs(heading - expected).max())
        assert np.abs(np.degrees(np.arcsin(np.clip(axle[:, 2], -1, 1)))).max() < 1.0  # the axle stays level
    assert np.degrees(car.steering["Front Left"]).max() > 10.0
    # Steered left, the car turns left: its heading (the chassis' Y) swings towards -X.
    forward = car.poses["Chassis"][:, :3, 1]
    turned = np.degrees(np.arctan2(-forward[-1, 0], forward[-1, 1]))
    print(f"steering: the car turned {turned:.1f} degrees left")
    assert turned > 10.0


def test_the_car_stays_on_the_ground_and_nothing_sinks_into_it(car):
    chassis = car.poses["Chassis"]
    corners = np.einsum("fij,kj->fki", chassis[:, :3, :3], car.chassis_corners) + chassis[:, None, :3, 3]
    clearance = (corners[..., 2] - ground_height(car.ground, corners[..., 0], corners[..., 1])).min(axis=1)
    print(f"chassis: lowest corner {clearance.min():.3f} m to {clearance.max():.3f} m above the ground")
    assert clearance.min() > 0.05
    # On its wheels all the way (it may ride up onto a crate, but it neither jumps nor flips over).
    assert clearance.max() < 0.6, f"the chassis leaves the ground: {clearance.max():.2f} m above it"
    assert chassis[:, 2, 2].min() > math.cos(math.radians(30.0))  # its Z axis stays within 30 degrees of up
    for w in WHEELS:
        centre = car.poses[f"Wheel {w}"][:, :3, 3]
        # The wheel's circle lies above the ground, so the ground below its centre is a radius
        # down or more (less whatever the contacts let it sink).
        depth = ground_height(car.ground, centre[:, 0], centre[:, 1]) - (centre[:, 2] - car.wheel_radius)
        assert depth.max() < 0.01, f"{w}: sinks {depth.max():.3f} m into the ground"
    for name in car.crates:
        assert car.poses[name][:, 2, 3].min() > 0.0, f"{name} fell through the ground"


def test_the_car_knocks_the_crates_over(car):
    moved, turned = {}, {}
    for name in car.crates:
        p = car.poses[name]
        moved[name] = float(np.linalg.norm(p[-1, :3, 3] - p[0, :3, 3]))
        r0, r1 = _unit_columns(p[0]), _unit_columns(p[-1])
        turned[name] = math.degrees(math.acos(np.clip((np.trace(r0.T @ r1) - 1) / 2, -1, 1)))
    print("crates moved (m):", {k: round(v, 2) for k, v in moved.items()})
    print("crates turned (deg):", {k: round(v, 1) for k, v in turned.items()})
    assert sum(d > 0.2 for d in moved.values()) >= 3
    assert max(turned.values()) > 30.0  # knocked over, not only pushed along
    # Before the car reaches them (frame 30) they stand still: the towers are stable by themselves.
    for name in car.crates:
        early = car.poses[name][:30, :3, 3]
        assert np.abs(early - early[0]).max() < 0.01, f"{name} moved before the car reached it"


def test_the_car_example_is_what_its_script_builds(blender, tmp_path):
    out = tmp_path / "car.blend"
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, "build_car.py"), str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def contents(path):
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
        found = {}
        for obj in bpy.data.objects:
            co = np.empty(3 * len(obj.data.vertices), np.float32) if obj.type == 'MESH' else np.zeros(0)
            if obj.type == 'MESH':
                obj.data.vertices.foreach_get("co", co)
            matrix = tuple(round(v, 5) for row in obj.matrix_world for v in row)
            found[obj.name] = (obj.type, matrix, co.round(5).tobytes(), obj.jakobsen.enabled, obj.jakobsen.type)
        return found

    assert contents(out) == contents(SOURCE)
