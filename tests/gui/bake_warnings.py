"""The bake's warnings as a user sees them in the real Blender GUI: the status bar after the modal
bake, and the Info editor's list.

Run from the checkout:  ../shared/tools/blender-gui tests/gui/bake_warnings.py gui-out/warnings 300
A factory scene gets a table (a Collider, Shape: Mesh) and a sheet of cloth modelled 1 cm over it
with a Thickness of 10 cm (it jumps 9 cm on the first frame: warned), and a box made a Sphere
rigid body (its sphere leaves out much of its mesh: warned). The bake is started from the 3D
View by a hotkey (a real key event, so its reports take Blender's own way; real timer events);
when it ends, the 3D View becomes an Info editor (wide enough to read the lines), and the screen
is shot (OUT/bake_warnings_info.png: the status bar at its foot shows the last report). The
reports go to OUT/result.json. The script only records.
"""

import json
import os
import subprocess
import sys
import tempfile

import bpy

_packages = tempfile.mkdtemp()
for _name, _folder in (("jakobsen_physics", "addon"), ("jakobsen_engine", "engine")):
    os.symlink(f"/repo/{_folder}", os.path.join(_packages, _name))
sys.path.insert(0, _packages)
import jakobsen_physics as addon  # noqa: E402
from jakobsen_physics.operators import bake as bake_op  # noqa: E402

addon.register()
RESULT = {"blender": bpy.app.version_string}
WATCHDOG_S = 280.0


def shot(name):
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    subprocess.run(["import", "-window", "root", f"/out/{name}.png"], check=False)


def area_of(kind):
    win = bpy.context.window_manager.windows[0]
    return win, max((a for a in win.screen.areas if a.type == kind), key=lambda a: a.width * a.height)


def setup():
    scene = bpy.context.scene
    for obj in list(scene.objects):  # the factory cube, camera and light: a clean stage
        bpy.data.objects.remove(obj)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.5), scale=(3.0, 3.0, 1.0))
    table = bpy.context.object
    table.name = "Table"
    table.jakobsen.enabled, table.jakobsen.type = True, 'COLLIDER'
    table.jakobsen.collider.shape = 'MESH'
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=12, y_subdivisions=12, size=1.2, location=(0.0, 0.0, 1.01))
    sheet = bpy.context.object
    sheet.name = "Sheet"
    sheet.jakobsen.enabled, sheet.jakobsen.type = True, 'CLOTH'
    sheet.jakobsen.cloth.thickness = 0.1
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(1.0, 1.0, 2.0), scale=(2.0, 0.5, 0.5))
    box = bpy.context.object
    box.name = "Plank"
    box.jakobsen.enabled, box.jakobsen.type = True, 'RIGID_BODY'
    box.jakobsen.rigid_body.collision_shape = 'SPHERE'
    scene.frame_start, scene.frame_end = 1, 24
    scene.frame_set(1)
    bpy.app.timers.register(start, first_interval=0.5, persistent=True)


def start():
    # Started as a user starts it, through Blender's event system (an operator called from Python
    # hands its reports to Python instead): a hotkey over the 3D View, pressed with xdotool.
    keymap = bpy.context.window_manager.keyconfigs.addon.keymaps.new(name="3D View", space_type='VIEW_3D')
    keymap.keymap_items.new("jakobsen.bake", 'F9', 'PRESS', ctrl=True, shift=True)
    win, view3d = area_of('VIEW_3D')
    height = win.height
    subprocess.run(["xdotool", "mousemove", str(view3d.x + view3d.width // 2),
                    str(height - (view3d.y + view3d.height // 2))], check=False)
    bpy.app.timers.register(press, first_interval=0.5, persistent=True)


def press():
    subprocess.run(["xdotool", "key", "ctrl+shift+F9"], check=False)
    RESULT["pressed"] = True
    bpy.app.timers.register(wait_for_bake, first_interval=1.0, persistent=True)


def wait_for_bake():
    if bake_op.bake_running() is not None:
        return 0.25
    RESULT["bake"] = {k: v for k, v in bake_op.last_bake.items() if isinstance(v, (str, int, float, list))}
    _, area = area_of('VIEW_3D')  # the largest area, so the long lines can be read
    area.type = 'INFO'
    bpy.app.timers.register(read_info, first_interval=0.5, persistent=True)
    return None


def read_info():
    win = bpy.context.window_manager.windows[0]
    area = next(a for a in win.screen.areas if a.type == 'INFO')
    region = next(r for r in area.regions if r.type == 'WINDOW')
    try:
        with bpy.context.temp_override(window=win, area=area, region=region):
            bpy.ops.info.select_all(action='SELECT')
            bpy.ops.info.report_copy()
            RESULT["info_log"] = bpy.context.window_manager.clipboard.splitlines()
            bpy.ops.info.select_all(action='DESELECT')
    except Exception as error:
        RESULT["info_log"] = [f"could not read the Info editor: {type(error).__name__}: {error}"]
    shot("bake_warnings_info")
    return finish()


def finish():
    if RESULT.get("finished"):
        return None
    RESULT["finished"] = True
    with open("/out/result.json", "w") as f:
        json.dump(RESULT, f, indent=1)
    bpy.ops.wm.quit_blender()
    return None


def watchdog():
    RESULT["watchdog"] = f"the script did not end by itself within {WATCHDOG_S:.0f} s"
    return finish()


bpy.app.timers.register(setup, first_interval=1.0)
bpy.app.timers.register(watchdog, first_interval=WATCHDOG_S, persistent=True)
