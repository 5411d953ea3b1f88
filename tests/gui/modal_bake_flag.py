"""Issue 14, test 3: the modal bake of the flag in the real Blender GUI (run by tests/addon/test_gui.py).

Run from the checkout:  ../shared/tools/blender-gui tests/gui/modal_bake_flag.py gui-out/flag 300
It opens blend_examples/flag.blend, sets it to bake frames 1-120 and starts the bake from the 3D
View as a user would (real timer events). While it runs it samples, many times, that Bake and
Free Bake are greyed out (their poll is False), that a second Bake is refused with the operator's
message, and that nothing was added to the scene or the Outliner (the previews are drawn); then
it presses Esc with xdotool (a real key event) and records the whole scene before and after, so
the test can compare them. Then it bakes again to the end and records the bake's own numbers
(solver and wall time, frames) and what was written. Findings go to OUT/result.json; Blender's
output, where operator reports are printed as "Info: ...", to OUT/blender.log.

The script only records; tests/addon/test_gui.py::test_modal_bake_of_the_flag... asserts.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

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
PREVIOUS_BAKE = (1, 24)  # the user's earlier bake, replaced in the end
START_FRAME = 7  # where the user is when pressing Bake (Esc must bring the scene back to it)
CANCEL_AT = 30  # the frame of the first bake after which Esc is pressed
WATCHDOG_S = 280.0


def log(message):
    # Into blender.log beside Blender's "Info: ..." report lines, so the two can be read in order.
    print(f"modal_bake_flag: {message}", flush=True)


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


def digest(values):
    return hashlib.sha1(json.dumps(values).encode()).hexdigest()[:16]


def evaluated_co(obj):
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    try:
        return co_of(mesh.vertices)
    finally:
        evaluated.to_mesh_clear()


def object_state(obj):
    """Everything of one object a bake (or its cancel) could change."""
    data = obj.data
    key = getattr(data, "shape_keys", None)
    anim = obj.animation_data
    key_anim = key.animation_data if key is not None else None
    return {
        "type": obj.type,
        "data": None if data is None else data.name,
        "matrix_world": [round(v, 6) for row in obj.matrix_world for v in row],
        "action": None if anim is None or anim.action is None else anim.action.name,
        "modifiers": [[m.name, m.type, m.show_viewport, m.show_render] for m in obj.modifiers],
        "shape_keys": None if key is None else [k.name for k in key.key_blocks],
        # Each key's positions, value and mute as digests (the flag has 693 vertices a key).
        "shape_key_data": None if key is None else
        [[k.name, round(k.value, 6), k.mute, digest(co_of(k.data))] for k in key.key_blocks],
        "shape_key_action": None if key_anim is None or key_anim.action is None else key_anim.action.name,
        "vertex_groups": [g.name for g in obj.vertex_groups],
        "collections": sorted(c.name for c in obj.users_collection),
        "hidden": obj.hide_get(), "hide_viewport": obj.hide_viewport, "hide_render": obj.hide_render,
        "selected": obj.select_get(),
        "properties": sorted(obj.keys()),
        "record": baking.record_of(obj) is not None,
        "co": co_of(data.vertices) if obj.type == 'MESH' else None,
        # What the viewport shows on the current frame (shape keys and modifiers applied).
        "evaluated": digest(evaluated_co(obj)) if obj.type == 'MESH' else None,
    }


def state():
    """The scene as the user sees it: objects (by name, with their data, actions, shape keys,
    modifiers), the Outliner's view layer and collections, the data-blocks, the frame."""
    scene = bpy.context.scene
    view_layer = bpy.context.view_layer
    active = view_layer.objects.active
    return {
        "frame": scene.frame_current,
        "frame_range": [scene.frame_start, scene.frame_end],
        "objects": {o.name: object_state(o) for o in bpy.data.objects},
        "scene_objects": sorted(o.name for o in scene.objects),
        "view_layer": sorted(o.name for o in view_layer.objects),
        "active": None if active is None else active.name,
        "collections": sorted(c.name for c in bpy.data.collections),
        "meshes": sorted(m.name for m in bpy.data.meshes),
        "actions": sorted(a.name for a in bpy.data.actions),
        "shape_key_blocks": sorted(k.name for k in bpy.data.shape_keys),
        "materials": sorted(m.name for m in bpy.data.materials),
    }


def outliner():
    """What the Outliner lists (objects and collections of the scene), to see nothing is added."""
    scene = bpy.context.scene
    return {"objects": sorted(o.name for o in bpy.data.objects),
            "scene_objects": sorted(o.name for o in scene.objects),
            "view_layer": sorted(o.name for o in bpy.context.view_layer.objects),
            "collections": sorted(c.name for c in bpy.data.collections),
            "meshes": sorted(m.name for m in bpy.data.meshes)}


def in_view3d(call):
    win, view3d = area_of('VIEW_3D')
    with bpy.context.temp_override(window=win, area=view3d):
        return call()


def bake_poll():
    return in_view3d(bpy.ops.jakobsen.bake.poll)


def invoke():
    """Bake as the button does (INVOKE_DEFAULT from the 3D View): the operator's result, or, when
    it is refused before it runs (its poll), the message Blender raises with."""
    try:
        return sorted(in_view3d(lambda: bpy.ops.jakobsen.bake('INVOKE_DEFAULT')))
    except RuntimeError as error:
        return {"refused": str(error)}


def setup():
    bpy.ops.wm.open_mainfile(filepath="/repo/blend_examples/flag.blend", load_ui=False)
    bpy.app.timers.register(sidebar, first_interval=1.0, persistent=True)


def sidebar():
    scene = bpy.context.scene
    scene.jakobsen.use_scene_range = True
    user_scene()
    scene.frame_start, scene.frame_end = FRAMES
    scene.frame_set(START_FRAME)
    _, view3d = area_of('VIEW_3D')
    view3d.spaces.active.show_region_ui = True
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    # Click the sidebar's "Jakobsen" tab like a user (as tests/gui/modal_bake.py does), so the
    # screenshots show its Bake button greyed out while the bake runs.
    ui = next(r for r in view3d.regions if r.type == 'UI')
    window_height = bpy.context.window_manager.windows[0].height
    subprocess.run(["xdotool", "mousemove", str(ui.x + ui.width - 10),
                    str(window_height - (ui.y + ui.height) + 176), "click", "1"], check=False)
    bpy.app.timers.register(start, first_interval=0.5, persistent=True)


def user_scene():
    """What a user has before baking, so that "Esc restores everything" has something to restore:
    a deforming modifier on the flag, a previous (shorter) bake of it, which muted that modifier
    and gave it shape keys, an action and a record, and an animated camera the bake must not touch."""
    scene = bpy.context.scene
    flag = bpy.data.objects["Flag"]
    ripple = flag.modifiers.new("Ripple", 'DISPLACE')
    ripple.strength = 0.01
    camera = bpy.data.objects["Camera"]
    camera.keyframe_insert("location", frame=1)
    camera.location.x += 0.5
    camera.keyframe_insert("location", frame=120)
    scene.frame_start, scene.frame_end = PREVIOUS_BAKE
    scene.frame_set(PREVIOUS_BAKE[0])
    RESULT["previous_bake"] = sorted(bpy.ops.jakobsen.bake())  # (executed: at once, not modal)


def start():
    shot("flag_before_bake")
    RESULT["before"] = state()
    RESULT["bake_poll_before"] = bake_poll()
    RESULT["running_message"] = bake_op.RUNNING_MESSAGE
    log("first bake (to be cancelled with Esc)")
    RESULT["invoke_1"] = invoke()
    RESULT["samples"] = []
    bpy.app.timers.register(during_bake, first_interval=0.02, persistent=True)


def during_bake():
    """Sampled every 20 ms while the first bake runs: polls, a second Bake, the Outliner."""
    job = bake_op._running.get("job")
    if job is None:  # it ended before Esc (or never ran)
        RESULT["first_bake_ended_by_itself"] = {"last": dict(bake_op.last_bake)}
        return finish()
    added = {k: sorted(set(v) - set(RESULT["before"][k])) for k, v in outliner().items()}
    sample = {
        "job_frame": job.frame, "scene_frame": bpy.context.scene.frame_current,
        "bake_poll": bake_poll(),
        "free_poll": in_view3d(bpy.ops.jakobsen.free_bake.poll),
        "added": {k: v for k, v in added.items() if v},
        "drawn": sorted(previews.geometry()), "hidden": sorted(previews.hidden_objects()),
    }
    RESULT["samples"].append(sample)
    if job.frame < CANCEL_AT:
        return 0.02
    # A second Bake, as a script or a hotkey would ask for it, while the first one runs.
    second = invoke()
    RESULT["second_bake"] = second
    log(f"second bake during the bake at frame {job.frame}: {second}")
    RESULT["still_running_after_second"] = bake_op._running.get("job") is job
    RESULT["frame_at_second"] = job.frame
    RESULT["draws_so_far"] = previews.draw_count()
    RESULT["draw_errors"] = previews.errors()
    shot("modal_bake_running")
    win = bpy.context.window_manager.windows[0]
    subprocess.run(["import", "-window", "root", "-crop", f"{win.width}x28+0+{win.height - 28}",
                    "/out/modal_bake_status_bar.png"], check=False)
    # Esc as a real key event from the X server, with the mouse over the 3D View.
    subprocess.run(["xdotool", "mousemove", "700", "400"], check=False)
    RESULT["esc_sent_at_frame"] = job.frame
    log(f"Esc sent at frame {job.frame}")
    subprocess.run(["xdotool", "key", "Escape"], check=False)
    bpy.app.timers.register(after_cancel, first_interval=1.0, persistent=True)
    return None


def after_cancel():
    RESULT["cancelled"] = bake_op.bake_running() is None
    RESULT["after_cancel"] = state()
    RESULT["bake_poll_after_cancel"] = bake_poll()
    shot("flag_after_cancel")
    log("second full bake")
    RESULT["invoke_2"] = invoke()
    bpy.app.timers.register(wait_for_bake, first_interval=0.5, persistent=True)
    return None


def wait_for_bake():
    if bake_op.bake_running() is not None:
        return 0.25
    RESULT["bake"] = dict(bake_op.last_bake)
    RESULT["bake_poll_after_bake"] = bake_poll()
    after = state()
    RESULT["after_bake"] = after
    flag = bpy.data.objects["Flag"]
    before = RESULT["before"]["objects"]["Flag"]["co"]
    moved = {}
    for frame in (1, 60, 90, 120):
        bpy.context.scene.frame_set(frame)
        moved[frame] = max(abs(a - b) for a, b in zip(evaluated_co(flag), before))
    RESULT["after_bake_moved_from_rest"] = moved
    bpy.context.scene.frame_set(90)
    shot("after_bake_flag_frame_90")
    RESULT["info_log"] = info_log()
    return finish()


def info_log():
    """The reports as the Info editor lists them (a cancelled operator's report is not printed to
    the console, only kept there): the bottom area becomes an Info editor for a moment, all its
    reports are selected and copied, and the clipboard read."""
    win = bpy.context.window_manager.windows[0]
    area = min(win.screen.areas, key=lambda a: a.y)  # the Timeline
    ui_type = area.ui_type
    area.type = 'INFO'
    try:
        region = next(r for r in area.regions if r.type == 'WINDOW')
        with bpy.context.temp_override(window=win, area=area, region=region):
            bpy.ops.info.select_all(action='SELECT')
            bpy.ops.info.report_copy()
        return bpy.context.window_manager.clipboard.splitlines()
    except Exception as error:  # (recorded: the test then says why it has no log)
        return [f"could not read the Info editor: {type(error).__name__}: {error}"]
    finally:
        area.ui_type = ui_type


def finish():
    if RESULT.get("finished"):
        return None
    RESULT["finished"] = True
    with open("/out/result.json", "w") as f:
        json.dump(RESULT, f, indent=1)
    log("result written")
    bpy.ops.wm.quit_blender()
    return None


def watchdog():
    RESULT["watchdog"] = f"the script did not end by itself within {WATCHDOG_S:.0f} s"
    return finish()


bpy.app.timers.register(setup, first_interval=1.0)
bpy.app.timers.register(watchdog, first_interval=WATCHDOG_S, persistent=True)
