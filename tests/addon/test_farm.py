"""``jakobsen bake`` of many scenes and wedges on Dask distributed (``jakobsen_tools.farm``).

Everything runs for real: the command as a subprocess, a Dask LocalCluster of worker processes,
each job in a Blender process of its own; the worker that is killed is killed by its pid. Each
result is compared with the plain one-scene ``jakobsen bake`` of the same scene and values, run
serially: the baked checksums (of every baked value as Blender holds it) and the shape keys
themselves must be equal, bit for bit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")
pytest.importorskip("distributed")

pytestmark = pytest.mark.blender

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRAG = "Flag.jakobsen.cloth.air_drag=0.1,3"
MASS = "Flag.jakobsen.cloth.density=0.05,0.4"
FRAMES = "1-24"


def _env():
    # The checkout's own packages first (the tests may run from a worktree), for the workers too.
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), REPO) if p))


def _jakobsen(*args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jakobsen_tools", *args], capture_output=True, text=True,
                          timeout=timeout, env=_env(), cwd=REPO)


def _make_flag(path, *, bad=False) -> str:
    """A 12 x 12 cloth pinned along one edge over a ground plane, a rigid crate beside it, frames
    1-24, saved as ``path`` (in a fresh file; the add-on registered for it); ``bad``: also a
    connector with nothing to connect, which a bake refuses with a message naming it."""
    import jakobsen_physics as addon

    from tests.addon.conftest import grid_mesh, link

    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    try:
        cloth = link(bpy.data.objects.new("Flag", grid_mesh("Flag", 12, 12, 1.0)))
        cloth.location = (0.3, -0.2, 1.2)
        cloth.rotation_euler = (0.2, 0.0, 0.5)
        co = np.empty(len(cloth.data.vertices) * 3, np.float32)
        cloth.data.vertices.foreach_get("co", co)
        cloth.vertex_groups.new(name="pin").add(np.flatnonzero(co.reshape(-1, 3)[:, 1] > 0.49).tolist(), 1.0,
                                                'REPLACE')
        cloth.jakobsen.enabled, cloth.jakobsen.type = True, 'CLOTH'
        cloth.jakobsen.cloth.pin_group = "pin"
        ground = link(bpy.data.objects.new("Ground", grid_mesh("Ground", 2, 2, 4.0)))
        ground.jakobsen.enabled, ground.jakobsen.type = True, 'COLLIDER'
        bpy.ops.mesh.primitive_cube_add(size=0.4, location=(2.0, 0.0, 1.0))
        cube = bpy.context.object
        cube.name = "Crate"
        cube.jakobsen.enabled, cube.jakobsen.type = True, 'RIGID_BODY'
        if bad:
            empty = link(bpy.data.objects.new("Loose Hinge", None))
            empty.jakobsen.enabled = True
        bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 24
        bpy.ops.wm.save_as_mainfile(filepath=str(path))
    finally:
        addon.unregister()
        bpy.ops.wm.read_factory_settings()
    return str(path)


def _shape_keys(path) -> np.ndarray:
    bpy.ops.wm.open_mainfile(filepath=str(path))
    blocks = [kb for kb in bpy.data.objects["Flag"].data.shape_keys.key_blocks if kb.name.startswith("JK_Bake_")]
    out = np.empty((len(blocks), len(blocks[0].data) * 3), np.float32)
    for k, kb in enumerate(blocks):
        kb.data.foreach_get("co", out[k])
    return out


def _report(path) -> dict:
    with open(os.path.splitext(str(path))[0] + ".json", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The scene, and each wedge combination baked serially by the plain one-job command."""
    tmp = tmp_path_factory.mktemp("serial")
    scene = _make_flag(tmp / "flag.blend")
    baked = {}
    for drag in ("0.1", "3"):
        for mass in ("0.05", "0.4"):
            out = tmp / f"serial_{drag}_{mass}.blend"
            done = _jakobsen("bake", scene, "--frames", FRAMES, "-o", str(out),
                             "--wedge", f"Flag.jakobsen.cloth.air_drag={drag}",
                             "--wedge", f"Flag.jakobsen.cloth.density={mass}")
            assert done.returncode == 0, done.stderr[-3000:]
            baked[(drag, mass)] = out
    return scene, baked


def test_a_wedge_bakes_every_combination_on_two_workers_bit_identical_to_serial_bakes(serial, tmp_path):
    scene, baked = serial
    out = tmp_path / "farm"

    done = _jakobsen("bake", scene, "--frames", FRAMES, "--wedge", DRAG, "--wedge", MASS, "--workers", "2",
                     "-o", str(out))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    log = done.stdout
    assert "4 jobs on a Dask LocalCluster of 2 workers" in log
    assert log.count("  started  [") == 4 and log.count("  finished [") == 4
    assert "[##############################] 4/4 jobs done, 0 failed" in log
    assert "Dask dashboard: http://" in log
    pids = {int(line.split("worker pid ")[1].split()[0]) for line in log.splitlines() if "  started  [" in line}
    assert len(pids) == 2  # both workers took jobs
    checksums = set()
    for (drag, mass), serial_out in baked.items():
        name = f"flag__Flag.air_drag-{drag}__Flag.density-{mass}"
        job_out = out / f"{name}.blend"
        report = _report(job_out)
        assert report["status"] == "baked"
        assert report["wedge"] == {"Flag.jakobsen.cloth.air_drag": drag, "Flag.jakobsen.cloth.density": mass}
        assert report["frames"] == [1, 24] and report["solver_seconds"] > 0
        assert report["wall_seconds"] >= report["solver_seconds"]
        assert report["checksum"] == _report(serial_out)["checksum"], name
        assert np.array_equal(_shape_keys(job_out), _shape_keys(serial_out)), name
        checksums.add(report["checksum"])
        assert (out / f"{name}.png").is_file()
    assert len(checksums) == 4  # the wedge values changed the bake
    with open(out / "farm.json", encoding="utf-8") as f:
        summary = json.load(f)
    assert summary["failed"] == 0 and len(summary["jobs"]) == 4
    sheet = bpy.data.images.load(str(out / "contact_sheet.png"))
    try:
        width, height = sheet.size
    finally:
        bpy.data.images.remove(sheet)
    assert height >= 4 * 180 and width > 4 * 320  # a row per job and a column of labels


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads worker processes from /proc")
def test_a_killed_worker_has_its_job_run_again_with_the_same_result(serial, tmp_path):
    scene, baked = serial
    out = tmp_path / "farm"
    proc = subprocess.Popen([sys.executable, "-m", "jakobsen_tools", "bake", scene, "--frames", FRAMES,
                             "--wedge", "Flag.jakobsen.cloth.air_drag=0.1,3", "--wedge",
                             "Flag.jakobsen.cloth.density=0.4", "--workers", "2", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)
    lines, killed, blender = [], None, []
    try:
        for line in proc.stdout:
            lines.append(line)
            if killed is None and "  started  [1/2]" in line:
                killed = int(line.split("worker pid ")[1].split()[0])
                deadline = time.time() + 30
                while not blender and time.time() < deadline:  # the job's Blender process has started
                    blender = _children(killed)
                    time.sleep(0.05)
                os.kill(killed, signal.SIGKILL)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = "".join(lines)
    assert proc.returncode == 0, log[-3000:] + proc.stderr.read()[-3000:]
    assert killed is not None and blender, log
    assert "[1/2]" in log and "(attempt 2: its worker was lost)" in log
    assert not any(_alive(pid) for pid in blender)  # the killed worker's Blender died with it
    job = out / "flag__Flag.air_drag-0.1__Flag.density-0.4.blend"
    assert _report(job)["checksum"] == _report(baked[("0.1", "0.4")])["checksum"]
    with open(out / "farm.json", encoding="utf-8") as f:
        assert json.load(f)["jobs"][0]["attempts"] == 2


def test_a_bad_scene_among_three_is_reported_by_name_and_the_others_bake(serial, tmp_path):
    scene, _ = serial
    bad = _make_flag(tmp_path / "broken_rig.blend", bad=True)
    other = tmp_path / "second.blend"
    other.write_bytes(open(scene, "rb").read())
    out = tmp_path / "farm"

    done = _jakobsen("bake", scene, bad, str(other), "--frames", FRAMES, "--workers", "2", "-o", str(out))

    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "FAILED   [2/3] broken_rig: " in done.stdout
    error = next(line for line in done.stderr.splitlines() if "broken_rig" in line)
    assert "Loose Hinge" in error  # the message names the object at fault
    assert "2 of 3 jobs baked" in done.stdout and "1 failed" in done.stdout
    assert not (out / "broken_rig.blend").exists()
    with open(out / "farm.json", encoding="utf-8") as f:
        jobs = {j["name"]: j for j in json.load(f)["jobs"]}
    assert jobs["broken_rig"]["status"] == "failed" and "Loose Hinge" in jobs["broken_rig"]["message"]
    assert jobs["flag"]["status"] == jobs["second"]["status"] == "baked"
    assert jobs["flag"]["checksum"] == jobs["second"]["checksum"]  # the same scene, twice


def test_a_wedge_that_names_nothing_fails_every_job_with_its_name(serial, tmp_path):
    scene, _ = serial
    done = _jakobsen("bake", scene, "--frames", "1-4", "--wedge", "Flga.jakobsen.cloth.air_drag=1,2",
                     "--workers", "1", "-o", str(tmp_path / "farm"))
    assert done.returncode == 2
    assert done.stderr.count("no object or scene named 'Flga'") == 2
    # (and it lists the file's scenes too: 'Scene.jakobsen...' in a file whose scene is named
    # otherwise listed its objects alone, found by the add-on probe)
    assert "its scenes: '" in done.stderr, done.stderr


def test_jobs_run_on_an_existing_cluster_named_by_its_scheduler(serial, tmp_path):
    """A scheduler and a worker started as a farm starts them (``dask scheduler``, ``dask worker``),
    the bake pointed at it with --scheduler: the same results as the serial bakes."""
    scene, baked = serial
    info = tmp_path / "scheduler.json"
    env = _env()
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--scheduler-file",
                                  str(info), "--port", "0", "--dashboard-address", ":0"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    worker = None
    try:
        deadline = time.time() + 60
        while not info.exists() and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                   str(info), "--nthreads", "1", "--nworkers", "1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        done = _jakobsen("bake", scene, "--frames", FRAMES, "--wedge", "Flag.jakobsen.cloth.air_drag=0.1,3",
                         "--wedge", "Flag.jakobsen.cloth.density=0.4", "--scheduler", address,
                         "-o", str(tmp_path / "farm"))
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"2 jobs on the Dask cluster at {address}" in done.stdout
    assert "Dask dashboard: http://" in done.stdout
    for drag in ("0.1", "3"):
        job = tmp_path / "farm" / f"flag__Flag.air_drag-{drag}__Flag.density-0.4.blend"
        assert _report(job)["checksum"] == _report(baked[(drag, "0.4")])["checksum"]
