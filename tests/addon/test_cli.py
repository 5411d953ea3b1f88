"""``jakobsen bake`` and ``jakobsen build`` from the command line, and the example scenes.

The bake command runs as a real subprocess (``python -m jakobsen_tools bake ...``) on a .blend
generated here; argument errors are checked in-process through ``main``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import actions, baking  # noqa: E402
from jakobsen_tools import main  # noqa: E402
from jakobsen_tools.bake import bake_file  # noqa: E402

pytestmark = pytest.mark.blender

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "blend_examples")


def _digest(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _jakobsen(*args, timeout=300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "jakobsen_tools", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)


def _save_scene(path, pinned_cloth, *, box=True, bad_connector=False) -> str:
    """The pinned cloth of the fixtures, a rigid box falling beside it, saved as ``path``."""
    pinned_cloth(frames=(1, 20))
    if box:
        bpy.ops.mesh.primitive_cube_add(size=0.4, location=(2.0, 0.0, 1.0))
        cube = bpy.context.object
        cube.name = "Crate"
        cube.jakobsen.enabled = True
        cube.jakobsen.type = 'RIGID_BODY'
        cube.jakobsen.rigid_body.collision_shape = 'BOX'
    if bad_connector:
        empty = bpy.data.objects.new("Hinge", None)
        bpy.context.scene.collection.objects.link(empty)
        empty.jakobsen.enabled = True
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path)


def test_bake_command_bakes_a_blend_headless_with_progress(tmp_path, pinned_cloth):
    scene = _save_scene(tmp_path / "scene.blend", pinned_cloth)
    before = _digest(scene)

    done = _jakobsen("bake", scene, "--frames", "1-6", "--every", "2")

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    assert f"jakobsen bake: {scene}, scene 'Scene', frames 1-6 at 24 fps, 10 substeps" in out
    assert "1 deforming (Flag (36 vertices)); 1 rigid body (Crate); 1 collider (Ground)" in out
    for frame in (2, 4, 6):
        assert f"  frame {frame} ({frame}/6): " in out
    assert out.count(" ms/frame") >= 4
    assert ("Baked 2 objects (Flag (36 vertices), Crate (rigid body)) as shape keys and keyframes, "
            "frames 1-6, in ") in out
    baked = tmp_path / "scene_baked.blend"
    assert f"jakobsen bake: wrote {baked} (" in out
    assert _digest(scene) == before  # the input is left alone

    bpy.ops.wm.open_mainfile(filepath=str(baked))
    cloth, crate = bpy.data.objects["Flag"], bpy.data.objects["Crate"]
    names = [kb.name for kb in cloth.data.shape_keys.key_blocks]
    assert names == ["Basis"] + [f"JK_Bake_{f:04d}" for f in range(1, 7)]
    assert baking.record_of(crate)["frame_end"] == 6
    curves = actions.assigned_fcurves(crate)
    assert sorted({fc.data_path for fc in curves}) == ["location", "rotation_euler"]
    z = [kp.co[1] for fc in curves if fc.data_path == "location" and fc.array_index == 2 for kp in fc.keyframe_points]
    assert len(z) == 6 and z[-1] < z[0] - 0.05  # it fell


def test_bake_command_writes_where_it_is_told(tmp_path, pinned_cloth):
    scene = _save_scene(tmp_path / "scene.blend", pinned_cloth, box=False)
    out = tmp_path / "elsewhere" / "result.blend"
    done = _jakobsen("bake", scene, "-o", str(out), "--frames", "3-5")
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.is_file() and not (tmp_path / "scene_baked.blend").exists()
    assert "frames 3-5" in done.stdout


def test_bake_command_refuses_a_bad_scene_naming_the_object(tmp_path, pinned_cloth):
    scene = _save_scene(tmp_path / "bad.blend", pinned_cloth, bad_connector=True)
    done = _jakobsen("bake", scene)
    assert done.returncode == 1
    assert "jakobsen bake: error: bad.blend: connector 'Hinge' has neither Object A nor Object B" in done.stderr
    assert not (tmp_path / "bad_baked.blend").exists()


def _newer_blend(path):
    # A header of a Blender far ahead of any this runs on, then nothing Blender can read.
    path.write_bytes(b"BLENDER17-01v0904REND" + bytes(200))


def _older_header_junk(path):
    path.write_bytes(b"BLENDER-v402" + bytes(200))


@pytest.mark.parametrize("make, message", [
    (_newer_blend, "saved by Blender 9.4, newer than this Blender"),
    (_older_header_junk, "Blender could not open it"),
], ids=["newer", "broken"])
def test_a_blend_saved_by_a_newer_blender_is_refused_saying_so(tmp_path, pinned_cloth, capsys, make, message):
    """Blender says only "not a blend file" of a file saved by a newer Blender (a 5.3 file baked
    with 4.2, found by the add-on probe): the bake says which Blender saved it."""
    make(tmp_path / "shot.blend")
    pinned_cloth()  # (the add-on registered, as in a session)
    assert main(["bake", str(tmp_path / "shot.blend")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jakobsen bake: error: ") and message in err, err


@pytest.mark.parametrize("args, message", [
    (["bake", "/nonexistent/scene.blend"], "/nonexistent/scene.blend: no such file"),
    (["bake", "{tmp}/scene.txt"], "scene.txt: not a .blend file"),
    (["bake", "{tmp}/scene.blend", "--frames", "5-3"], "the end frame (3) must come after the start frame (5)"),
    (["bake", "{tmp}/scene.blend", "--frames", "one-ten"], "--frames: expected START-END"),
    (["bake", "{tmp}/scene.blend", "-o", "{tmp}/out.png"], "the output must be a .blend file"),
    (["bake", "{tmp}/scene.blend", "--scene", "Nope"], "no scene named 'Nope' (it has 'Scene')"),
], ids=["missing", "not-blend", "frames-backwards", "frames-words", "out-not-blend", "no-such-scene"])
def test_bake_command_explains_bad_arguments(tmp_path, pinned_cloth, capsys, args, message):
    _save_scene(tmp_path / "scene.blend", pinned_cloth, box=False)
    (tmp_path / "scene.txt").write_text("not a blend file")
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jakobsen bake: error: ") and message in err


def test_build_command_writes_the_zip(tmp_path, capsys):
    assert main(["build", "-o", str(tmp_path)]) == 0
    assert (tmp_path / "jakobsen_physics-0.1.0.zip").is_file()
    assert "Install from Disk" in capsys.readouterr().out


# -- the example scenes -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["flag", "rigid_boxes"])
def test_each_example_bakes_out_of_the_box(blender, tmp_path, name):
    source = os.path.join(EXAMPLES, f"{name}.blend")
    assert os.path.getsize(source) < 400_000  # small: no packed images, no caches
    before = _digest(source)

    report = bake_file(source, str(tmp_path / f"{name}_baked.blend"), frames=(1, 6), log=lambda text: None)

    assert _digest(source) == before
    assert report.frames == (1, 6)
    assert not [w for w in report.warnings], report.warnings  # the examples bake without a warning
    baked = sorted(obj.name for obj in baking.baked_objects(bpy.context.scene))
    if name == "flag":
        assert baked == ["Flag"]
        flag = bpy.data.objects["Flag"]
        assert [kb.name for kb in flag.data.shape_keys.key_blocks][1:] == [f"JK_Bake_{f:04d}" for f in range(1, 7)]
        assert bpy.context.scene.jakobsen.wind.length > 1.0
    else:
        bodies = [o.name for o in bpy.data.objects if o.jakobsen.enabled and o.jakobsen.type == 'RIGID_BODY'
                  and o.jakobsen.rigid_body.dynamic == 'ON']
        assert baked == sorted(bodies) and len(baked) >= 5
        for obj_name in baked:
            curves = actions.assigned_fcurves(bpy.data.objects[obj_name])
            assert len(curves) == 6 and all(len(fc.keyframe_points) == 6 for fc in curves)
        paddle = bpy.data.objects["Paddle"]  # passive and animated: keeps its own animation
        assert baking.record_of(paddle) is None and paddle.animation_data.action.name != "JK_Bake Paddle"
    assert bpy.context.scene.camera is not None


@pytest.mark.parametrize("name", ["flag", "rigid_boxes"])
def test_each_example_is_what_its_script_builds(blender, tmp_path, name):
    out = tmp_path / f"{name}.blend"
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, f"build_{name}.py"), str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def contents(path):
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
        out = {}
        for obj in bpy.data.objects:
            co = np.empty(3 * len(obj.data.vertices), np.float32) if obj.type == 'MESH' else np.zeros(0)
            if obj.type == 'MESH':
                obj.data.vertices.foreach_get("co", co)
            matrix = tuple(round(v, 5) for row in obj.matrix_world for v in row)
            out[obj.name] = (obj.type, matrix, co.round(5).tobytes(), obj.jakobsen.enabled, obj.jakobsen.type)
        return out

    assert contents(out) == contents(os.path.join(EXAMPLES, f"{name}.blend"))
