"""A cloth's Pin Group follows its vertex group renamed in the real Blender GUI (opt-in; run by
``tests/addon/test_gui.py``), as Blender's Cloth modifier's does: the rename goes through the
message bus, which only the interface delivers.

Run from the checkout:  ../shared/tools/blender-gui tests/gui/rename_pin_group.py gui-out/rename 120
A plane made a cloth with its Pin Group 'pin' (and a Cloth modifier on a second plane with its
Pin Group 'pin' too, for comparison); both groups are renamed 'shoulders' from a timer; a later
timer records both settings in OUT/result.json and screenshots the Physics tab (OUT/renamed.png).
"""

import json
import os
import subprocess
import sys
import tempfile
import traceback

import bpy

_packages = tempfile.mkdtemp()
for _name, _folder in (("jakobsen_physics", "addon"), ("jakobsen_engine", "engine")):
    os.symlink(f"/repo/{_folder}", os.path.join(_packages, _name))
sys.path.insert(0, _packages)
import jakobsen_physics as addon  # noqa: E402

addon.register()
RESULT = {"errors": [], "blender": bpy.app.version_string}


def shot(name):
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=2)
    subprocess.run(["import", "-window", "root", f"/out/{name}.png"], check=False)


def setup():
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0, 0, 1))
    ours = bpy.context.object
    ours.name = "Flag"
    ours.vertex_groups.new(name="pin")
    ours.vertex_groups.new(name="other")
    ours.jakobsen.enabled = True
    ours.jakobsen.type = 'CLOTH'
    ours.jakobsen.cloth.pin_group = "pin"
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(2, 0, 1))
    theirs = bpy.context.object
    theirs.name = "Blender Cloth"
    theirs.vertex_groups.new(name="pin")
    theirs.modifiers.new("Cloth", 'CLOTH').settings.vertex_group_mass = "pin"
    bpy.context.view_layer.objects.active = ours
    win = bpy.context.window_manager.windows[0]
    props = next(a for a in win.screen.areas if a.type == 'PROPERTIES')
    props.spaces.active.context = 'PHYSICS'
    return 0.5


def rename():
    bpy.data.objects["Flag"].vertex_groups["pin"].name = "shoulders"
    bpy.data.objects["Blender Cloth"].vertex_groups["pin"].name = "shoulders"
    RESULT["right_after"] = bpy.data.objects["Flag"].jakobsen.cloth.pin_group
    return 1.0


def check():
    RESULT["ours"] = bpy.data.objects["Flag"].jakobsen.cloth.pin_group
    RESULT["blenders"] = bpy.data.objects["Blender Cloth"].modifiers["Cloth"].settings.vertex_group_mass
    shot("renamed")
    return None


STEPS = [setup, rename, check]


def run_steps():
    if not STEPS:
        with open("/out/result.json", "w") as f:
            json.dump(RESULT, f, indent=1)
        bpy.ops.wm.quit_blender()
        return None
    try:
        wait = STEPS.pop(0)()
    except Exception:  # noqa: BLE001 - recorded
        RESULT["errors"].append(traceback.format_exc())
        wait = 0.5
    return wait if wait is not None else 0.5


bpy.app.timers.register(run_steps, first_interval=1.5)
