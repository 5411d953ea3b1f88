"""The vehicle examples besides the off-road car, baked through the add-on, as physics.

``follow_path.blend``: a car rigged by Create Vehicle follows an S-shaped Bezier curve (Follow
Path) with Speed from Radius on (the points' Radius: 1 on the straights, 0.5 through the bends).
It stays within half its width of the curve along the whole S, reaches the end, and drives the
profile: slower in the bends than on the straights.

``trailer.blend``: a car tows a trailer hitched by Hitch Trailer (a Ball and Socket) round a keyed
left turn. The hitch holds (the point the car carries and the point the trailer carries stay
together), the trailer stays behind the car and upright on its wheels, and turns with it.

Each example is baked once (all its frames) for its tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_tools.bake import bake_file  # noqa: E402

from .test_examples_car import example_contents  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.slow]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "blend_examples")
CAR_WHEELS = ("FL", "FR", "RL", "RR")


def _matrix(obj) -> np.ndarray:
    return np.array(obj.matrix_world, dtype=np.float64)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _vertices(obj) -> np.ndarray:
    co = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def _bake(name: str, tmp_path_factory, tracked, read):
    """Bake ``name``.blend; returns the report, the world matrices (frames, 4, 4) of ``tracked``
    on every frame, and ``read()`` of the baked scene (on its first frame)."""
    import jakobsen_physics as addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    try:
        report = bake_file(os.path.join(EXAMPLES, f"{name}.blend"),
                           str(tmp_path_factory.mktemp(name) / f"{name}_baked.blend"), every=48,
                           log=lambda text: print(text, flush=True))
        scene = bpy.context.scene
        poses = {n: [] for n in tracked}
        for frame in range(report.frames[0], report.frames[1] + 1):
            scene.frame_set(frame)
            for n in tracked:
                poses[n].append(_matrix(bpy.data.objects[n]))
        scene.frame_set(report.frames[0])
        return report, {n: np.array(p) for n, p in poses.items()}, read(), scene.render.fps / scene.render.fps_base
    finally:
        addon.unregister()
        bpy.ops.wm.read_factory_settings()


def _half_width(wheel_poses: list[np.ndarray], wheel_co: np.ndarray, chassis_co: np.ndarray,
                chassis_pose: np.ndarray) -> float:
    """Half the car's width on the first frame: the widest of its body and its wheels' outer faces,
    across the car (the wheels' axles)."""
    axle = _unit(wheel_poses[0][0, :3, 2])
    hubs = np.array([p[0, :3, 3] for p in wheel_poses])
    across = hubs @ axle
    half_width = float(np.abs(wheel_co[:, 2]).max())
    body = chassis_co @ chassis_pose[:3, :3].T @ axle
    return 0.5 * max(np.ptp(across) + 2 * half_width, float(np.ptp(body)))


# -- Follow Path ---------------------------------------------------------------------------------

def _bezier_dense(curve, per_segment: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """World points (n, 3) along the curve's first (Bezier) spline and the point Radius at each
    (linear along each segment, as Blender interpolates it)."""
    from mathutils import Vector
    from mathutils.geometry import interpolate_bezier

    spline = curve.data.splines[0]
    m = _matrix(curve)
    pts, radii = [], []
    bp = spline.bezier_points
    for a, b in zip(bp[:-1], bp[1:]):
        seg = interpolate_bezier(Vector(a.co), Vector(a.handle_right), Vector(b.handle_left), Vector(b.co),
                                 per_segment)
        pts.append(np.array([tuple(p) for p in seg]))
        radii.append(np.linspace(a.radius, b.radius, per_segment))
    local = np.concatenate(pts)
    return local @ m[:3, :3].T + m[:3, 3], np.concatenate(radii)


@pytest.fixture(scope="module")
def follow_path(tmp_path_factory):
    wheels = [f"Car Wheel {w}" for w in CAR_WHEELS]

    def read():
        objects = bpy.data.objects
        v = objects["Car"].jakobsen.vehicle
        curve = v.follow_path
        dense, radii = _bezier_dense(curve)
        return SimpleNamespace(curve=curve.name, curve_type=curve.data.splines[0].type, use_path_speed=v.use_path_speed,
                               target_speed=v.target_speed, dense=dense, radii=radii,
                               wheel_co=_vertices(objects[wheels[0]]), chassis_co=_vertices(objects["Car"]))

    report, poses, info, fps = _bake("follow_path", tmp_path_factory, ["Car", *wheels], read)
    footprint = np.mean([poses[w][:, :3, 3] for w in wheels], axis=0)  # the middle of the wheels' hubs
    return SimpleNamespace(report=report, poses=poses, info=info, fps=fps, footprint=footprint,
                           half_width=_half_width([poses[w] for w in wheels], info.wheel_co, info.chassis_co,
                                                  poses["Car"][0]))


def _closest(dense: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each point (n, 3): the distance (on the ground plane) to the nearest of ``dense``, and its index."""
    d = np.linalg.norm(points[:, None, :2] - dense[None, :, :2], axis=2)
    k = np.argmin(d, axis=1)
    return d[np.arange(len(points)), k], k


def test_the_follow_path_example_bakes_out_of_the_box(follow_path):
    info = follow_path.info
    assert not follow_path.report.warnings, follow_path.report.warnings
    assert os.path.getsize(os.path.join(EXAMPLES, "follow_path.blend")) < 400_000
    assert info.curve == "Path" and info.curve_type == 'BEZIER' and info.use_path_speed
    assert all(np.isfinite(p).all() for p in follow_path.poses.values())
    print(f"follow_path.blend: baked {follow_path.report.frames} in {follow_path.report.seconds:.1f} s")


def test_the_car_stays_within_half_its_width_of_the_s_and_reaches_its_end(follow_path):
    info = follow_path.info
    distance, nearest = _closest(info.dense, follow_path.footprint)
    print(f"follow path: at most {distance.max():.3f} m from the curve (half the car's width: "
          f"{follow_path.half_width:.3f} m)")
    assert distance.max() < follow_path.half_width
    # Along the whole S, in order: from the first point to the last.
    assert nearest[0] < 0.02 * len(info.dense)
    assert np.all(np.diff(nearest) >= -2)
    end = np.linalg.norm(follow_path.poses["Car"][-1, :2, 3] - info.dense[-1, :2])
    print(f"follow path: the car stopped {end:.2f} m from the curve's end")
    assert end < 1.5
    # It went round both bends: its heading turned left by about 90 degrees, then back.
    heading = _unit(-follow_path.poses["Car"][:, :3, 1])
    yaw = np.unwrap(np.arctan2(heading[:, 1], heading[:, 0]))
    assert np.degrees(yaw.max() - yaw[0]) > 75.0
    assert abs(np.degrees(yaw[-1] - yaw[0])) < 10.0


def test_the_car_drives_the_speed_profile_slower_in_the_bends(follow_path):
    info = follow_path.info
    step = np.linalg.norm(np.diff(follow_path.footprint[:, :2], axis=0), axis=1) * follow_path.fps
    mid = 0.5 * (follow_path.footprint[1:] + follow_path.footprint[:-1])
    _, nearest = _closest(info.dense, mid)
    factor = info.radii[nearest]
    bends = factor <= factor.min() + 1e-6
    straights = factor >= factor.max() - 1e-6
    bend_speed = step[bends].mean()
    print(f"speed: {step.max():.2f} m/s at most on the straights, {bend_speed:.2f} m/s on average through the bends "
          f"(the profile: {info.target_speed * factor.min():.2f}), every 12 frames {step[::12].round(2).tolist()}")
    assert bends.sum() > 24 and straights.sum() > 24
    # Through the bends it holds the profile's speed, and on the straights it goes much faster.
    assert abs(bend_speed - info.target_speed * factor.min()) < 0.15 * info.target_speed * factor.min()
    assert step[bends].max() < 1.2 * info.target_speed * factor.min()
    assert step[straights].max() > 1.6 * bend_speed
    assert step.max() < 1.05 * info.target_speed


def test_the_follow_path_example_is_what_its_script_builds(blender, tmp_path):
    _same_as_built("follow_path", tmp_path)


# -- Trailer -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trailer(tmp_path_factory):
    tracked = ["Car", "Trailer", "Trailer Wheel L", "Trailer Wheel R"]

    def read():
        objects = bpy.data.objects
        hitch = objects["Car Hitch"]
        c = hitch.jakobsen.connector
        t = objects["Trailer"].jakobsen.vehicle
        suspension = sorted(o.name for o in objects if o.type == 'EMPTY' and o.jakobsen.type == 'CONNECTOR'
                            and o.jakobsen.connector.connector_type == 'WHEEL_SUSPENSION'
                            and o.jakobsen.connector.object_a == objects["Trailer"])
        wheel_co = _vertices(objects["Trailer Wheel L"])
        return SimpleNamespace(hitch=_matrix(hitch)[:3, 3], hitch_type=c.connector_type,
                               hitch_pair=(c.object_a.name, c.object_b.name), trailer_drive=t.drive,
                               trailer_vehicle=t.enabled, trailer_wheels=suspension,
                               wheel_radius=float(np.linalg.norm(wheel_co[:, :2], axis=1).max()))

    report, poses, info, fps = _bake("trailer", tmp_path_factory, tracked, read)
    return SimpleNamespace(report=report, poses=poses, info=info, fps=fps)


def _carried(poses: np.ndarray, point: np.ndarray) -> np.ndarray:
    """(frames, 3): where a point fixed to a body (given in the world on the first frame) is."""
    local = np.linalg.inv(poses[0]) @ np.append(point, 1.0)
    return np.einsum("fij,j->fi", poses, local)[:, :3]


def _yaw(poses: np.ndarray) -> np.ndarray:
    """(frames,) the heading (its front: local -Y) about world Z, radians, unwrapped."""
    front = -poses[:, :3, 1]
    return np.unwrap(np.arctan2(front[:, 1], front[:, 0]))


def test_the_trailer_example_bakes_out_of_the_box_hitched_by_hitch_trailer(trailer):
    info = trailer.info
    assert not trailer.report.warnings, trailer.report.warnings
    assert os.path.getsize(os.path.join(EXAMPLES, "trailer.blend")) < 400_000
    assert info.hitch_type == 'BALL_SOCKET' and info.hitch_pair == ("Car", "Trailer")
    assert info.trailer_vehicle and info.trailer_drive == 'NONE'
    assert info.trailer_wheels == ["Trailer Wheel L Suspension", "Trailer Wheel R Suspension"]
    assert all(np.isfinite(p).all() for p in trailer.poses.values())
    print(f"trailer.blend: baked {trailer.report.frames} in {trailer.report.seconds:.1f} s")


def test_the_hitch_holds_and_the_trailer_follows_behind_the_car(trailer):
    car, towed = trailer.poses["Car"], trailer.poses["Trailer"]
    on_car, on_trailer = _carried(car, trailer.info.hitch), _carried(towed, trailer.info.hitch)
    gap = np.linalg.norm(on_car - on_trailer, axis=1)
    print(f"hitch: the car's and the trailer's hitch points at most {1e3 * gap.max():.2f} mm apart")
    assert gap.max() < 0.01
    front = _unit(-car[:, :3, 1])
    behind = np.einsum("fi,fi->f", towed[:, :3, 3] - on_car, front)
    ahead = np.einsum("fi,fi->f", car[:, :3, 3] - on_car, front)
    assert behind.max() < -1.0 and ahead.min() > 1.0, "the trailer is not behind the car"
    yaw_car, yaw_trailer = _yaw(car), _yaw(towed)
    articulation = np.degrees(np.abs(yaw_car - yaw_trailer))
    turned_car, turned_trailer = np.degrees(yaw_car[-1] - yaw_car[0]), np.degrees(yaw_trailer[-1] - yaw_trailer[0])
    print(f"turn: the car turned {turned_car:.1f} degrees left, the trailer {turned_trailer:.1f}; at most "
          f"{articulation.max():.1f} degrees between them")
    assert turned_car > 90.0
    assert turned_trailer > 0.85 * turned_car  # it follows round the turn
    assert 10.0 < articulation.max() < 60.0  # it swings out behind the car in the turn, and never jack-knifes
    # Both upright all the way, the trailer on its wheels on the (flat) ground.
    for name, poses in (("car", car), ("trailer", towed)):
        up = _unit(poses[:, :3, 2])
        assert np.degrees(np.arccos(up[:, 2].min())) < 15.0, f"the {name} tilts"
    for side in ("L", "R"):
        m = trailer.poses[f"Trailer Wheel {side}"]
        axle = _unit(m[:, :3, 2])
        bottom = m[:, 2, 3] - trailer.info.wheel_radius * np.sqrt(1.0 - axle[:, 2] ** 2)
        assert bottom.min() > -0.01 and bottom[12:].max() < 0.02, (side, bottom.min(), bottom[12:].max())


def test_the_trailer_example_is_what_its_script_builds(blender, tmp_path):
    _same_as_built("trailer", tmp_path)


def _same_as_built(name: str, tmp_path) -> None:
    out = tmp_path / f"{name}.blend"
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, f"build_{name}.py"), str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert example_contents(out) == example_contents(os.path.join(EXAMPLES, f"{name}.blend"))
