"""``jakobsen bake --checkpoint-every N`` / ``--resume``, and ``--alembic`` / ``--usd`` exports.

A bake stopped part way (a Ctrl-C at a checkpoint, in this process) and resumed by a new
``jakobsen bake --resume`` process must end with exactly the values of a bake that never
stopped. The exports are imported into a fresh file with Blender's own importers and their
vertices compared with the baked shape keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_tools.bake import BakeCommandError, bake_file, checkpoint_path  # noqa: E402

pytestmark = pytest.mark.blender

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _jakobsen(*args, timeout=600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), REPO) if p))
    return subprocess.run([sys.executable, "-m", "jakobsen_tools", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)


def _scene(path, pinned_cloth, *, self_collision: bool, hinge: bool) -> str:
    """The fixtures' pinned cloth (10 x 10) over the ground, a crate that falls and lands beside it
    (rigid contacts), optionally the cloth colliding with itself and a hinged door (a connector)."""
    cloth = pinned_cloth(nx=10, ny=10, frames=(1, 60))
    cloth.jakobsen.cloth.use_self_collision = self_collision
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(2.0, 0.0, 0.8), rotation=(0.3, 0.2, 0.0))
    crate = bpy.context.object
    crate.name = "Crate"
    crate.jakobsen.enabled, crate.jakobsen.type = True, 'RIGID_BODY'
    if hinge:
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(-2.0, 0.0, 1.0), scale=(0.05, 0.5, 0.5))
        door = bpy.context.object
        door.name = "Door"
        door.jakobsen.enabled, door.jakobsen.type = True, 'RIGID_BODY'
        door.jakobsen.rigid_body.initial_angular_velocity = (0.0, 0.0, 3.0)
        empty = bpy.data.objects.new("Door Hinge", None)
        bpy.context.scene.collection.objects.link(empty)
        empty.location = (-2.0, -0.5, 1.0)
        empty.jakobsen.enabled, empty.jakobsen.type = True, 'CONNECTOR'
        empty.jakobsen.connector.connector_type = 'HINGE'
        empty.jakobsen.connector.object_a = door
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path)


def _baked(path) -> dict:
    """Every baked value of the file: the cloth's shape keys, the bodies' F-curve points."""
    from jakobsen_physics import actions

    bpy.ops.wm.open_mainfile(filepath=str(path))
    out = {}
    for kb in bpy.data.objects["Flag"].data.shape_keys.key_blocks:
        co = np.empty(len(kb.data) * 3, np.float32)
        kb.data.foreach_get("co", co)
        out[kb.name] = co
    for name in ("Crate", "Door"):
        obj = bpy.data.objects.get(name)
        for fc in (actions.assigned_fcurves(obj) or ()) if obj else ():
            points = np.empty(len(fc.keyframe_points) * 2, np.float32)
            fc.keyframe_points.foreach_get("co", points)
            out[f"{name}.{fc.data_path}[{fc.array_index}]"] = points
    return out


def _checksum(path) -> str:
    with open(os.path.splitext(str(path))[0] + ".json", encoding="utf-8") as f:
        return json.load(f)["checksum"]


@pytest.mark.parametrize("stop_at, every, self_collision, hinge", [(30, 10, False, True), (21, 7, True, False)])
def test_a_bake_stopped_part_way_resumes_to_the_values_of_one_that_never_stopped(
        tmp_path, pinned_cloth, stop_at, every, self_collision, hinge):
    scene = _scene(tmp_path / "scene.blend", pinned_cloth, self_collision=self_collision, hinge=hinge)
    full = tmp_path / "full.blend"
    done = _jakobsen("bake", scene, "-o", str(full))
    assert done.returncode == 0, done.stderr[-3000:]

    out = str(tmp_path / "stopped.blend")
    seen = []

    def stop_at_checkpoint(text):  # Ctrl-C right after the checkpoint of frame stop_at
        seen.append(text)
        if text.strip() == f"checkpoint at frame {stop_at}":
            raise KeyboardInterrupt

    with pytest.raises(BakeCommandError, match=f"the checkpoint of frame {stop_at} is kept"):
        bake_file(scene, out, checkpoint_every=every, log=stop_at_checkpoint)
    assert not os.path.exists(out) and os.path.isfile(checkpoint_path(out))
    assert sum("checkpoint at frame" in t for t in seen) == stop_at // every

    resumed = _jakobsen("bake", scene, "-o", out, "--checkpoint-every", str(every), "--resume")

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from the checkpoint at frame {stop_at}" in resumed.stdout
    assert not os.path.exists(checkpoint_path(out))  # the finished bake needs it no more
    with open(os.path.splitext(out)[0] + ".json", encoding="utf-8") as f:
        assert json.load(f)["resumed_from_frame"] == stop_at
    assert _checksum(out) == _checksum(full)
    a, b = _baked(out), _baked(full)
    assert a.keys() == b.keys() and len(a) > 60
    for key in a:
        assert np.array_equal(a[key], b[key]), key


def test_a_checkpoint_of_another_bake_is_refused_by_name_and_nothing_is_written(tmp_path, pinned_cloth):
    scene = _scene(tmp_path / "scene.blend", pinned_cloth, self_collision=False, hinge=False)
    out = str(tmp_path / "stopped.blend")

    def stop(text):
        if text.strip() == "checkpoint at frame 20":
            raise KeyboardInterrupt

    with pytest.raises(BakeCommandError):
        bake_file(scene, out, checkpoint_every=10, log=stop)
    with pytest.raises(BakeCommandError, match="another bake .what differs: wedge"):
        bake_file(scene, out, resume=True, wedge=(("Flag.jakobsen.cloth.air_drag", "2"),), log=lambda t: None)
    assert not os.path.exists(out)
    assert os.path.isfile(checkpoint_path(out))  # still there for the bake it belongs to


def _world_keys(path, frames) -> dict[int, np.ndarray]:
    """World positions (n, 3) of the cloth's baked shape key of each frame."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Flag"]
    m = np.array(obj.matrix_world)
    out = {}
    for f in frames:
        kb = obj.data.shape_keys.key_blocks[f"JK_Bake_{f:04d}"]
        co = np.empty(len(kb.data) * 3, np.float32)
        kb.data.foreach_get("co", co)
        local = co.reshape(-1, 3).astype(np.float64)
        out[f] = local @ m[:3, :3].T + m[:3, 3]
    return out


def _imported_world(frames, name_hint="Flag") -> dict[int, np.ndarray]:
    scene = bpy.context.scene
    obj = next(o for o in bpy.data.objects if o.type == 'MESH' and o.name.startswith(name_hint))
    out = {}
    for f in frames:
        scene.frame_set(f)
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mesh = ev.data
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        m = np.array(ev.matrix_world)
        out[f] = co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    return out


def test_alembic_and_usd_exports_import_with_the_baked_vertices(tmp_path, pinned_cloth):
    scene = _scene(tmp_path / "scene.blend", pinned_cloth, self_collision=False, hinge=False)
    abc, usd, out = tmp_path / "cache" / "flag.abc", tmp_path / "cache" / "flag.usdc", tmp_path / "baked.blend"

    done = _jakobsen("bake", scene, "-o", str(out), "--frames", "1-40", "--alembic", str(abc), "--usd", str(usd))

    assert done.returncode == 0, done.stderr[-3000:]
    assert f"wrote the Alembic cache {abc}" in done.stdout and f"wrote the USD cache {usd}" in done.stdout
    frames = (5, 22, 40)
    baked = _world_keys(out, frames)
    assert np.ptp([baked[f][:, 2].mean() for f in frames]) > 0.05  # the cloth moved between them
    for importer, path in ((bpy.ops.wm.alembic_import, abc), (bpy.ops.wm.usd_import, usd)):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        importer(filepath=str(path))
        got = _imported_world(frames)
        for f in frames:
            assert got[f].shape == baked[f].shape, (path.suffix, f)
            assert np.abs(got[f] - baked[f]).max() < 1e-5, (path.suffix, f)
    bpy.ops.wm.read_factory_settings()
