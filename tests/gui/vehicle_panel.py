"""The Vehicle panels and the viewport overlay in the real Blender GUI (opt-in; not collected by pytest).

Run from the checkout:  ../shared/tools/blender-gui tests/gui/vehicle_panel.py gui-out/vehicle 240
It builds a small car with the add-on's own operators (four wheels on Wheel Suspension
connectors, a motor on a rear wheel, a spring and a slider), makes the chassis a vehicle and
screenshots, cropped to the Properties editor at its default width: the Physics tab scrolled
down a few wheel notches at a time; then, with the Outliner above it closed so the editor is
tall enough, the whole Vehicle panel (OUT/vehicle_panel.png) and with Follow Path opened
(OUT/vehicle_panel_follow_path.png: docs/images/vehicle_panel.png); the Connector panel of one
of its wheels and the Motor panel. Then the sidebar's Vehicle panel and the 3D View with the
overlay of axes on (OUT/overlay_car.png: docs/images/vehicle_overlay.png) and off. Findings
(the editors' sizes, the overlay's draw calls and any error) go to OUT/result.json; Blender's
output to OUT/blender.log.
"""

import json
import os
import subprocess
import sys
import tempfile
import traceback

import bpy

# The checkout is mounted at /repo; its packages are importable under their installed names.
_packages = tempfile.mkdtemp()
for _name, _folder in (("jakobsen_physics", "addon"), ("jakobsen_engine", "engine")):
    os.symlink(f"/repo/{_folder}", os.path.join(_packages, _name))
sys.path.insert(0, _packages)
import jakobsen_physics as addon  # noqa: E402

addon.register()
RESULT = {"errors": []}
STEPS = []


def shot(name, area=None):
    """A screenshot of the whole window, or cropped to ``area``."""
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=2)
    command = ["import", "-window", "root"]
    if area is not None:
        height = bpy.context.window_manager.windows[0].height
        command += ["-crop", f"{area.width}x{area.height}+{area.x}+{height - area.y - area.height}"]
    subprocess.run(command + [f"/out/{name}.png"], check=False)


def area_of(kind, biggest=False):
    win = bpy.context.window_manager.windows[0]
    areas = [a for a in win.screen.areas if a.type == kind]
    return win, (max(areas, key=lambda a: a.width * a.height) if biggest else areas[0])


def activate(obj):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def step(function):
    STEPS.append(function)
    return function


def run_steps():
    """One step a timer call, so that the editors redraw between them."""
    if not STEPS:
        return finish()
    function = STEPS.pop(0)
    try:
        function()
    except Exception:  # noqa: BLE001 - recorded, and the run goes on to the screenshots left
        RESULT["errors"].append(traceback.format_exc())
    return 0.6


@step
def build_car():
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_plane_add(size=30.0)
    ground = bpy.context.object
    ground.name = "Ground"
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.75))
    chassis = bpy.context.object
    chassis.name = "Car"
    chassis.scale = (1.7, 3.8, 0.5)
    bpy.ops.object.transform_apply(scale=True)
    for name, x, y in (("Wheel FL", -0.95, -1.3), ("Wheel FR", 0.95, -1.3), ("Wheel RL", -0.95, 1.3),
                       ("Wheel RR", 0.95, 1.3)):
        bpy.ops.mesh.primitive_cylinder_add(vertices=24, radius=0.35, depth=0.25, location=(x, y, 0.35),
                                            rotation=(0.0, 1.5708, 0.0))
        wheel = bpy.context.object
        wheel.name = name
        chassis.select_set(True)  # the chassis is Object A, the active wheel Object B
        bpy.ops.jakobsen.add_connector(connector_type='WHEEL_SUSPENSION')
        bpy.context.object.name = f"Suspension {name[6:]}"
        if name == "Wheel RL":
            activate(wheel)
            chassis.select_set(True)
            bpy.ops.jakobsen.add_motor(motor_type='ANGULAR')
    for wheel in [o for o in bpy.data.objects if o.name.startswith("Wheel")]:
        wheel.jakobsen.rigid_body.collision_shape = 'CYLINDER'
    # A box on a spring and a slider beside the car, so the overlay has those to draw too.
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(3.0, 0.0, 1.5))
    box = bpy.context.object
    box.name = "Box"
    bpy.ops.jakobsen.add_spring()
    activate(box)
    bpy.ops.jakobsen.add_connector(connector_type='SLIDER')
    slider = bpy.context.object
    c = slider.jakobsen.connector
    c.use_linear_limit, c.distance_min, c.distance_max = True, -0.3, 0.5
    rb = chassis.jakobsen.rigid_body
    rb.mass = 1200.0
    chassis.jakobsen.vehicle.enabled = True
    activate(chassis)
    bpy.context.scene.frame_set(1)
    win, props = area_of('PROPERTIES')
    props.spaces.active.context = 'PHYSICS'
    RESULT["properties_width"] = props.width
    RESULT["objects"] = sorted(o.name for o in bpy.data.objects)


def scroll_properties(notches):
    """Turn the mouse wheel over the Properties editor, as a user scrolls (down when positive)."""
    _, props = area_of('PROPERTIES')
    height = bpy.context.window_manager.windows[0].height
    x, y = props.x + props.width // 2, height - props.y - props.height // 2
    subprocess.run(["xdotool", "mousemove", str(x), str(y)], check=False)
    subprocess.run(["xdotool", "click", "--repeat", str(abs(notches)), "--delay", "20",
                    "5" if notches > 0 else "4"], check=False)


@step
def properties_top():
    _, props = area_of('PROPERTIES')
    shot("vehicle_panel_0", props)


for _k in range(1, 7):
    def _scroll_and_shoot(k=_k):
        scroll_properties(5)
        _, props = area_of('PROPERTIES')
        shot(f"vehicle_panel_{k}", props)
    step(_scroll_and_shoot)


@step
def taller_properties():
    """Close the Outliner above the Properties editor (View > Area > Close Area): the editor
    keeps its default width and grows tall enough for the whole Vehicle panel."""
    win, outliner = area_of('OUTLINER')
    with bpy.context.temp_override(window=win, screen=win.screen, area=outliner):
        RESULT["area_close"] = sorted(bpy.ops.screen.area_close())


@step
def whole_vehicle_panel():
    scroll_properties(60)  # to the end: the Vehicle panel and its sub-panels close the Physics tab
    _, props = area_of('PROPERTIES')
    RESULT["tall_properties"] = (props.width, props.height)


@step
def whole_vehicle_panel_shot():
    _, props = area_of('PROPERTIES')
    shot("vehicle_panel", props)


@step
def open_follow_path():
    """Click the Follow Path sub-panel's header (the last line of the editor, scrolled to the end)."""
    win, props = area_of('PROPERTIES')
    x, y = props.x + 100, win.height - props.y - 14
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=False)


@step
def follow_path_scroll():
    scroll_properties(60)


@step
def follow_path_shot():
    _, props = area_of('PROPERTIES')
    shot("vehicle_panel_follow_path", props)


@step
def connector_panel():
    activate(bpy.data.objects["Suspension RL"])
    scroll_properties(-60)


@step
def connector_shot():
    _, props = area_of('PROPERTIES')
    shot("vehicle_wheel_connector", props)
    activate(bpy.data.objects["Motor"])


@step
def motor_shot():
    _, props = area_of('PROPERTIES')
    shot("vehicle_motor", props)


@step
def sidebar():
    _, view3d = area_of('VIEW_3D')
    view3d.spaces.active.show_region_ui = True
    activate(bpy.data.objects["Car"])
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    ui = next(r for r in view3d.regions if r.type == 'UI')
    # Region.active_panel_category is read-only: click the sidebar's "Jakobsen" tab like a user.
    # Tabs are listed top-down at the region's right edge: Item, Tool, View, Jakobsen.
    window_height = bpy.context.window_manager.windows[0].height
    x = ui.x + ui.width - 10
    y = window_height - (ui.y + ui.height) + 176
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=False)
    RESULT["sidebar_width"] = ui.width


@step
def sidebar_shot():
    shot("vehicle_sidebar")


@step
def view_the_car():
    _, view3d = area_of('VIEW_3D')
    space = view3d.spaces.active
    space.shading.type = 'SOLID'
    r3d = space.region_3d
    from mathutils import Euler, Vector

    r3d.view_location = Vector((1.2, 0.0, 0.6))
    r3d.view_rotation = Euler((1.15, 0.0, 2.3)).to_quaternion()
    r3d.view_distance = 7.5
    r3d.view_perspective = 'PERSP'
    for o in bpy.context.view_layer.objects:
        o.select_set(False)


@step
def overlay_on():
    from jakobsen_physics.ui import overlay

    RESULT["overlay_registered"] = overlay.is_registered()
    bpy.context.window_manager.jakobsen_show_axes = True


@step
def overlay_shot():
    from jakobsen_physics.ui import overlay

    shot("overlay_car")
    RESULT["overlay_draws"] = overlay.last_draw_count()
    RESULT["overlay_errors"] = overlay.errors()


@step
def overlay_off():
    bpy.context.window_manager.jakobsen_show_axes = False


@step
def overlay_off_shot():
    shot("overlay_off")


def finish():
    with open("/out/result.json", "w") as f:
        json.dump(RESULT, f, indent=1)
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(run_steps, first_interval=1.5)
