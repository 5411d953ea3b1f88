"""The modal bake and the panels in the real Blender GUI (opt-in; not collected by pytest).

Run from the checkout:  ../shared/tools/blender-gui tests/gui/modal_bake.py gui-out 240
It screenshots every Jakobsen panel, starts the bake from the 3D View as a user would (with real
timer events), presses Esc half way with xdotool and checks that nothing changed, then bakes to
the end and checks the result. Findings go to OUT/result.json; Blender's output to OUT/blender.log.
"""

import json
import subprocess
import sys

import bpy

import os  # noqa: E402
import tempfile  # noqa: E402

# The checkout is mounted at /repo; its packages are importable under their installed names.
_packages = tempfile.mkdtemp()
for _name, _folder in (("jakobsen_physics", "addon"), ("jakobsen_engine", "engine")):
    os.symlink(f"/repo/{_folder}", os.path.join(_packages, _name))
sys.path.insert(0, _packages)
import jakobsen_physics as addon  # noqa: E402
from jakobsen_physics import baking, previews  # noqa: E402

addon.register()
RESULT = {}
FRAMES = (1, 48)


def shot(name):
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    subprocess.run(["import", "-window", "root", f"/out/{name}.png"], check=False)


def area_of(kind):
    win = bpy.context.window_manager.windows[0]
    return win, max((a for a in win.screen.areas if a.type == kind), key=lambda a: a.width * a.height)


def activate(obj):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def state():
    scene = bpy.context.scene
    cloth = bpy.data.objects["Curtain"]
    key = cloth.data.shape_keys
    return {
        "frame": scene.frame_current,
        "objects": sorted(o.name for o in bpy.data.objects),
        "meshes": len(bpy.data.meshes),
        "actions": sorted(a.name for a in bpy.data.actions),
        "shape_keys": None if key is None else len(key.key_blocks),
        "hidden": cloth.hide_get(),
        "co": [round(c, 6) for v in cloth.data.vertices for c in v.co],
        "record": baking.record_of(cloth) is not None,  # (a shape-key bake keeps it on the mesh)
    }


def setup():
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=24, y_subdivisions=24, size=2.0, location=(0, 0, 1.6),
                                    rotation=(1.5708, 0, 0))
    cloth = bpy.context.object
    cloth.name = "Curtain"
    group = cloth.vertex_groups.new(name="pin")
    group.add([v.index for v in cloth.data.vertices if v.co.y > 0.99], 1.0, 'REPLACE')
    cloth.jakobsen.enabled = True
    cloth.jakobsen.type = 'CLOTH'
    cloth.jakobsen.cloth.pin_group = "pin"
    cloth.jakobsen.cloth.air_drag = 0.6
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.4, location=(0.3, -0.6, 0.8))
    ball = bpy.context.object
    ball.name = "Ball"
    ball.jakobsen.enabled = True
    ball.jakobsen.type = 'COLLIDER'
    ball.keyframe_insert("location", frame=1)
    ball.location.y = 0.6
    ball.keyframe_insert("location", frame=40)
    bpy.ops.mesh.primitive_plane_add(size=6)
    ground = bpy.context.object
    ground.name = "Ground"
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(2, 0, 0.25))
    base = bpy.context.object
    base.name = "Base"
    bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=0.2, location=(2.6, 0, 0.3), rotation=(0, 1.5708, 0))
    wheel = bpy.context.object
    wheel.name = "Wheel"
    base.select_set(True)
    bpy.ops.jakobsen.add_connector(connector_type='WHEEL_SUSPENSION')
    activate(wheel)
    base.select_set(True)
    bpy.ops.jakobsen.add_motor(motor_type='ANGULAR')
    activate(wheel)
    base.select_set(True)
    bpy.ops.jakobsen.add_spring()
    scene.frame_set(1)
    _, props = area_of('PROPERTIES')
    props.spaces.active.context = 'PHYSICS'
    bpy.app.timers.register(panels, first_interval=1.0)


def panels():
    # The 3D View's big area becomes a Properties editor for the panel screenshots, then goes back.
    _, area = area_of('VIEW_3D')
    area.type = 'PROPERTIES'
    bpy.app.timers.register(panel_shots, first_interval=0.5)


PANEL_SHOTS = [("Curtain", 'PHYSICS'), ("Ball", 'PHYSICS'), ("Base", 'PHYSICS'), ("Connector", 'PHYSICS'),
               ("Motor", 'PHYSICS'), ("Spring", 'PHYSICS'), ("Curtain", 'SCENE')]


def panel_shots():
    # One object per timer call: sub-panels appear only after the editor has redrawn once.
    _, area = area_of('PROPERTIES')  # the biggest one: the former 3D View
    if getattr(panel_shots, "pending", None):
        name, tab = panel_shots.pending
        bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=2)
        shot(f"physics_{name.lower()}" if tab == 'PHYSICS' else "scene_tab")
    if not PANEL_SHOTS:
        area.type = 'VIEW_3D'
        bpy.app.timers.register(sidebar, first_interval=0.5)
        return None
    name, tab = panel_shots.pending = PANEL_SHOTS.pop(0)
    activate(bpy.data.objects[name])
    area.spaces.active.context = tab
    return 0.4


def sidebar():
    _, view3d = area_of('VIEW_3D')
    view3d.spaces.active.show_region_ui = True
    ui = next(r for r in view3d.regions if r.type == 'UI')
    activate(bpy.data.objects["Curtain"])
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    # Region.active_panel_category is read-only: click the sidebar's "Jakobsen" tab like a user.
    # Tabs are listed top-down at the region's right edge: Item, Tool, View, Jakobsen.
    window_height = bpy.context.window_manager.windows[0].height
    x = ui.x + ui.width - 10
    y = window_height - (ui.y + ui.height) + 176
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=False)
    bpy.app.timers.register(start_bake, first_interval=0.5)


def start_bake():
    shot("sidebar")
    RESULT["before"] = state()
    win, view3d = area_of('VIEW_3D')
    with bpy.context.temp_override(window=win, area=view3d):
        RESULT["invoke_1"] = sorted(bpy.ops.jakobsen.bake('INVOKE_DEFAULT'))
    bpy.app.timers.register(during_bake, first_interval=1.5)


def during_bake():
    # The previews are drawn (jakobsen_physics.previews), not objects: what is drawn, and that no
    # object was added for it.
    RESULT["mid_bake"] = {"frame": bpy.context.scene.frame_current,
                          "previews": sorted(previews.geometry()),
                          "objects_added": sorted(set(o.name for o in bpy.data.objects) -
                                                  set(RESULT["before"]["objects"])),
                          "draw_errors": previews.errors(),
                          "curtain_hidden": bpy.data.objects["Curtain"].hide_get()}
    shot("modal_bake_running")
    subprocess.run(["xdotool", "mousemove", "700", "400"], check=False)
    subprocess.run(["xdotool", "key", "Escape"], check=False)
    bpy.app.timers.register(after_cancel, first_interval=1.0)


def after_cancel():
    RESULT["after_cancel"] = state()
    RESULT["cancel_restored_everything"] = RESULT["after_cancel"] == RESULT["before"]
    shot("after_cancel")
    win, view3d = area_of('VIEW_3D')
    with bpy.context.temp_override(window=win, area=view3d):
        RESULT["invoke_2"] = sorted(bpy.ops.jakobsen.bake('INVOKE_DEFAULT'))
    bpy.app.timers.register(wait_for_bake, first_interval=1.0)


def wait_for_bake():
    if baking.record_of(bpy.data.objects["Curtain"]) is None:
        RESULT["waits"] = RESULT.get("waits", 0) + 1
        return 0.5 if RESULT["waits"] < 600 else finish()
    bpy.context.scene.frame_set(40)
    after = state()
    RESULT["after_bake"] = {k: after[k] for k in ("frame", "shape_keys", "actions", "hidden", "record")}
    shot("after_bake_frame_40")
    return finish()


def finish():
    with open("/out/result.json", "w") as f:
        json.dump({k: v for k, v in RESULT.items() if k not in ("before", "after_cancel")} |
                  {"before_frame": RESULT.get("before", {}).get("frame")}, f, indent=1)
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(setup, first_interval=1.0)
