"""Issue 14, test 2 in the real GUI: simulate on playback with Blender's own Play (opt-in; not
collected by pytest).

Run from the checkout:  ../shared/tools/blender-gui tests/gui/playback_cache.py gui-out-playback 240
It opens blend_examples/flag.blend (frames 1-24), turns Simulate on Playback on and presses Play
(``screen.animation_play``, real frame changes), stops when 24 frames are cached, compares them with
a plain bake of 1-24, screenshots the cache panel at the default Properties width, edits a
stiffness (the add-on's watch marks the cache outdated within a second, no frame change), screenshots
again, frees and replays, and writes Bake from Cache. Findings go to OUT/result.json.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import bpy
import numpy as np

_packages = tempfile.mkdtemp()
for _name, _folder in (("jakobsen_physics", "addon"), ("jakobsen_engine", "engine")):
    os.symlink(f"/repo/{_folder}", os.path.join(_packages, _name))
sys.path.insert(0, _packages)
import jakobsen_physics as addon  # noqa: E402
from jakobsen_physics import baking, playback, previews  # noqa: E402
from jakobsen_physics.bake_job import BakeJob  # noqa: E402

addon.register()
RESULT = {"blender": bpy.app.version_string}
FRAMES = (1, 24)


def shot(name):
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    subprocess.run(["import", "-window", "root", f"/out/{name}.png"], check=False)


def panel_shot(name, scrolls=40):
    """The Properties editor alone, scrolled down to the cache panel (its default width)."""
    win, props = area_of('PROPERTIES')
    region = next(r for r in props.regions if r.type == 'WINDOW')
    with bpy.context.temp_override(window=win, area=props, region=region):
        for _ in range(scrolls):
            bpy.ops.view2d.scroll_down(deltay=60)
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    top = win.height - (props.y + props.height)
    subprocess.run(["import", "-window", "root", "-crop", f"{props.width}x{props.height}+{props.x}+{top}",
                    f"/out/{name}.png"], check=False)


def area_of(kind):
    win = bpy.context.window_manager.windows[0]
    return win, max((a for a in win.screen.areas if a.type == kind), key=lambda a: a.width * a.height)


def setup():
    bpy.ops.wm.open_mainfile(filepath="/repo/blend_examples/flag.blend", load_ui=False)
    bpy.app.timers.register(prepare, first_interval=1.0, persistent=True)


def prepare():
    scene = bpy.context.scene
    scene.jakobsen.use_scene_range = True
    scene.frame_start, scene.frame_end = FRAMES
    scene.frame_set(1)
    # The reference: a plain bake of the same frames, kept in memory (not written).
    job = BakeJob(scene.name)
    job.start(bpy.context)
    while job.step():
        pass
    RESULT["reference"] = job.results("Flag")
    job.cancel()
    _, props = area_of('PROPERTIES')
    props.spaces.active.context = 'SCENE'
    RESULT["properties_width"] = props.width
    scene.jakobsen.use_simulate_on_playback = True  # on frame 1: the cache starts
    win, view3d = area_of('VIEW_3D')
    RESULT["play_started"] = time.perf_counter()
    with bpy.context.temp_override(window=win, area=view3d):
        bpy.ops.screen.animation_play()
    bpy.app.timers.register(wait_for_cache, first_interval=0.2, persistent=True)


def wait_for_cache():
    cache = playback.cache_of(bpy.context.scene)
    if cache is None or cache.job is None or cache.frames_cached < FRAMES[1]:
        RESULT["waits"] = RESULT.get("waits", 0) + 1
        return 0.2 if RESULT["waits"] < 300 else finish()
    win, view3d = area_of('VIEW_3D')
    with bpy.context.temp_override(window=win, area=view3d):
        bpy.ops.screen.animation_cancel(restore_frame=False)
    RESULT["played_s"] = round(time.perf_counter() - RESULT.pop("play_started"), 2)
    diff = np.abs(cache.job.results("Flag") - RESULT.pop("reference")).max()
    RESULT["cache_vs_bake_max_m"] = float(diff)
    RESULT["frames_cached"] = cache.frames_cached
    RESULT["memory_mb"] = round(cache.memory_bytes() / 2**20, 3)
    RESULT["draw_errors"] = previews.errors()
    RESULT["draws"] = previews.draw_count()
    RESULT["outliner_objects"] = sorted(o.name for o in bpy.context.view_layer.objects)
    bpy.context.scene.frame_set(12)
    shot("playback_cached_frame_12")
    panel_shot("scene_cache_panel")
    bpy.context.scene.frame_set(10)
    bpy.data.objects["Flag"].jakobsen.cloth.bend_stiffness *= 10.0
    # No frame change: the add-on's watch (twice a second) finds the edit, as after a click.
    bpy.app.timers.register(after_edit, first_interval=1.2, persistent=True)
    return None


def after_edit():
    cache = playback.cache_of(bpy.context.scene)
    RESULT["outdated_after_edit"] = bool(cache.outdated)
    RESULT["outdated_at"] = cache.outdated_at
    RESULT["frames_after_edit"] = cache.frames_cached
    panel_shot("scene_cache_panel_outdated")
    win, props = area_of('PROPERTIES')
    scene = bpy.context.scene
    scene.frame_set(1)  # back to the start: an outdated cache starts again
    for frame in range(2, FRAMES[1] + 1):
        scene.frame_set(frame)
    cache = playback.cache_of(scene)
    RESULT["replayed_frames"] = cache.frames_cached
    RESULT["replayed_outdated"] = cache.outdated
    flag = bpy.data.objects["Flag"]
    # The object's own Cache panel (Physics tab), opened, before and after its Bake from Cache.
    props.spaces.active.context = 'PHYSICS'
    bpy.context.view_layer.objects.active = flag
    from jakobsen_physics.ui.physics import PHYSICS_PT_jakobsen_cache
    PHYSICS_PT_jakobsen_cache.bl_options = set()  # (open: a screenshot cannot click it open)
    bpy.utils.unregister_class(PHYSICS_PT_jakobsen_cache)
    bpy.utils.register_class(PHYSICS_PT_jakobsen_cache)
    panel_shot("object_cache_panel", 400)
    with bpy.context.temp_override(window=win, area=props):
        RESULT["bake_from_cache"] = sorted(bpy.ops.jakobsen.bake_from_cache(object_name="Flag"))
    panel_shot("object_cache_panel_baked", 400)
    RESULT["shape_keys"] = len(flag.data.shape_keys.key_blocks) if flag.data.shape_keys else None
    RESULT["record"] = baking.record_of(flag) is not None
    RESULT["hidden_after"] = flag.hide_get()
    scene.frame_set(12)
    shot("after_bake_from_cache")
    return finish()


def finish():
    if RESULT.get("finished"):
        return None
    RESULT["finished"] = True
    RESULT.pop("reference", None)
    RESULT.pop("play_started", None)
    with open("/out/result.json", "w") as f:
        json.dump(RESULT, f, indent=1)
    bpy.ops.wm.quit_blender()
    return None


def watchdog():
    RESULT["watchdog"] = "the script did not end by itself within 150 s"
    return finish()


bpy.app.timers.register(setup, first_interval=1.0)
bpy.app.timers.register(watchdog, first_interval=150.0, persistent=True)
