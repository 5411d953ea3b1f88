"""Issue 14, test 3: the modal bake of the flag in the real Blender GUI (opt-in; not collected by pytest).

Run from the checkout:  ../shared/tools/blender-gui tests/gui/modal_bake_flag.py gui-out-flag 300
It opens blend_examples/flag.blend, sets it to bake frames 1-120 and starts the bake from the 3D
View as a user would (real timer events). While it runs it checks that Bake and Free Bake are
greyed out and that a second Bake is refused with a message, that nothing was added to the
Outliner (the previews are drawn), and presses Esc with xdotool; then it checks the scene is as
it was, bakes again to the end and writes the solver and wall time of that bake. Findings go to
OUT/result.json; Blender's output to OUT/blender.log.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import bpy

# The checkout is mounted at /repo; its packages are importable under their installed names.
_packages = tempfile.mkdtemp()
for _name, _folder in (("jakobsen_physics", "addon"), ("jakobsen_engine", "engine")):
    os.symlink(f"/repo/{_folder}", os.path.join(_packages, _name))
sys.path.insert(0, _packages)
import jakobsen_physics as addon  # noqa: E402
from jakobsen_physics import baking, previews  # noqa: E402
from jakobsen_physics.operators import bake as bake_op  # noqa: E402

addon.register()
RESULT = {"blender": bpy.app.version_string}
FRAMES = (1, 120)


def shot(name):
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    subprocess.run(["import", "-window", "root", f"/out/{name}.png"], check=False)


def area_of(kind):
    win = bpy.context.window_manager.windows[0]
    return win, max((a for a in win.screen.areas if a.type == kind), key=lambda a: a.width * a.height)


def co_of(vertices):
    co = [0.0] * (3 * len(vertices))
    vertices.foreach_get("co", co)
    return [round(c, 6) for c in co]


def state():
    scene = bpy.context.scene
    flag = bpy.data.objects["Flag"]
    key = flag.data.shape_keys
    return {
        "frame": scene.frame_current,
        "objects": sorted(o.name for o in bpy.data.objects),
        "view_layer": sorted(o.name for o in bpy.context.view_layer.objects),
        "meshes": len(bpy.data.meshes),
        "actions": sorted(a.name for a in bpy.data.actions),
        "shape_keys": None if key is None else len(key.key_blocks),
        "hidden": sorted(o.name for o in bpy.context.view_layer.objects if o.hide_get()),
        "co": co_of(flag.data.vertices),
        "record": baking.record_of(flag) is not None,
    }


def invoke():
    win, view3d = area_of('VIEW_3D')
    with bpy.context.temp_override(window=win, area=view3d):
        return sorted(bpy.ops.jakobsen.bake('INVOKE_DEFAULT'))


def setup():
    bpy.ops.wm.open_mainfile(filepath="/repo/blend_examples/flag.blend", load_ui=False)
    bpy.app.timers.register(prepare, first_interval=1.0, persistent=True)


def prepare():
    scene = bpy.context.scene
    scene.jakobsen.use_scene_range = True
    scene.frame_start, scene.frame_end = FRAMES
    scene.frame_set(1)
    _, view3d = area_of('VIEW_3D')
    view3d.spaces.active.show_region_ui = True
    RESULT["before"] = state()
    t0 = time.perf_counter()
    RESULT["invoke_1"] = invoke()
    RESULT["invoke_1_returned_after_s"] = round(time.perf_counter() - t0, 3)
    bpy.app.timers.register(during_bake, first_interval=0.05, persistent=True)


def during_bake():
    job = bake_op._running.get("job")
    if job is None:  # it ended before we looked (or never ran)
        RESULT["mid_bake"] = {"error": "the bake was not running", "last": dict(bake_op.last_bake)}
        return finish()
    if job.frame < 30:
        return 0.02
    refused = {}
    win, view3d = area_of('VIEW_3D')
    with bpy.context.temp_override(window=win, area=view3d):
        refused["bake_poll"] = bpy.ops.jakobsen.bake.poll()
        refused["free_poll"] = bpy.ops.jakobsen.free_bake.poll()
        try:
            refused["second_bake"] = sorted(bpy.ops.jakobsen.bake('INVOKE_DEFAULT'))
        except RuntimeError as error:
            refused["second_bake"] = str(error)
    now = state()
    RESULT["mid_bake"] = {
        "frame": bpy.context.scene.frame_current, "job_frame": job.frame, **refused,
        "objects_added": sorted(set(now["objects"]) - set(RESULT["before"]["objects"])),
        "view_layer_added": sorted(set(now["view_layer"]) - set(RESULT["before"]["view_layer"])),
        "meshes": now["meshes"], "hidden": now["hidden"],
        "drawn": sorted(previews.geometry()), "draws_so_far": previews.draw_count(),
        "draw_errors": previews.errors(),
    }
    shot("modal_bake_running")
    win = bpy.context.window_manager.windows[0]
    subprocess.run(["import", "-window", "root", "-crop", f"{win.width}x28+0+{win.height - 28}",
                    "/out/modal_bake_status_bar.png"], check=False)
    subprocess.run(["xdotool", "mousemove", "700", "400"], check=False)
    subprocess.run(["xdotool", "key", "Escape"], check=False)
    bpy.app.timers.register(after_cancel, first_interval=1.0, persistent=True)
    return None


def after_cancel():
    after = state()
    RESULT["cancelled"] = bake_op.bake_running() is None
    RESULT["cancel_restored_everything"] = after == RESULT["before"]
    if not RESULT["cancel_restored_everything"]:
        RESULT["after_cancel_differs"] = [k for k in after if after[k] != RESULT["before"][k]]
    RESULT["invoke_2"] = invoke()
    bpy.app.timers.register(wait_for_bake, first_interval=0.5, persistent=True)
    return None


def wait_for_bake():
    if bake_op.bake_running() is not None:
        RESULT["waits"] = RESULT.get("waits", 0) + 1
        return 0.5 if RESULT["waits"] < 400 else finish()
    RESULT["bake"] = dict(bake_op.last_bake)
    if bake_op.last_bake:
        RESULT["bake"]["wall_over_solver"] = round(bake_op.last_bake["wall"] / bake_op.last_bake["solver"], 3)
    bpy.context.scene.frame_set(90)
    after = state()
    RESULT["after_bake"] = {k: after[k] for k in ("frame", "shape_keys", "actions", "hidden", "record")}
    RESULT["after_bake"]["objects_added"] = sorted(set(after["objects"]) - set(RESULT["before"]["objects"]))
    shot("after_bake_flag_frame_90")
    return finish()


def finish():
    if RESULT.get("finished"):
        return None
    RESULT["finished"] = True
    with open("/out/result.json", "w") as f:
        json.dump({k: v for k, v in RESULT.items() if k != "before"} |
                  {"before_frame": RESULT.get("before", {}).get("frame")}, f, indent=1)
    bpy.ops.wm.quit_blender()
    return None


def watchdog():
    RESULT["watchdog"] = "the script did not end by itself within 150 s"
    return finish()


bpy.app.timers.register(setup, first_interval=1.0)
bpy.app.timers.register(watchdog, first_interval=150.0, persistent=True)
