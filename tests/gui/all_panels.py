"""Every Jakobsen Physics panel in the real Blender GUI, and the overlay for every connector type
(issue 14: fresh screenshots at the default Properties width; test 4). Opt-in; not collected by pytest.

Run from the checkout:  ../shared/tools/blender-gui tests/gui/all_panels.py /tmp/gui_all 300
It builds one scene with every role: a cloth (Self Collision, Pressure, Plasticity and Tearing on;
a Pin Group holding its far edge at weight 1 and a few vertices of the next row at 0.4),
a soft body, a rigid body (its Vehicle sub-panel header), a collider (Shape Mesh), one Empty per
connector type (all ten, each joining its own pair of rigid bodies), a spring, a motor and a Wind
force field. With the Outliner above the Properties editor closed (the editor keeps its default
width and grows tall), it screenshots the editor cropped, scrolled to the top and to the end, for
each role (OUT/panel_<role>[_top].png: _top only when it differs, OUT/panel_connector_<type>.png;
the spring also as Both: OUT/panel_spring_both.png),
the object's Cache panel (opened as tests/gui/playback_cache.py does), the Scene tab's panels (top,
end, and the Bake panel with Output PC2: its Directory row), the 3D View's sidebar (Jakobsen tab,
with a vehicle selected) and the 3D View with the overlay on, framed on all connectors, springs,
motors and the pinned cloth (OUT/overlay_all_connectors.png). The overlay's draw errors, its
draw count and the lines its geometry function gives for each connector type (or the error it
raises) go to OUT/result.json; Blender's output to OUT/blender.log.
"""

import filecmp
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
from jakobsen_physics.properties import CONNECTOR_TYPE_ITEMS  # noqa: E402

addon.register()
RESULT = {"errors": [], "blender": bpy.app.version_string, "shots": []}
STEPS = []
KINDS = [item[0] for item in CONNECTOR_TYPE_ITEMS]


def area_of(kind):
    win = bpy.context.window_manager.windows[0]
    return win, max((a for a in win.screen.areas if a.type == kind), key=lambda a: a.width * a.height)


def shot(name, area=None):
    """A screenshot of the whole window, or cropped to ``area``."""
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=2)
    command = ["import", "-window", "root"]
    if area is not None:
        height = bpy.context.window_manager.windows[0].height
        command += ["-crop", f"{area.width}x{area.height}+{area.x}+{height - area.y - area.height}"]
    subprocess.run(command + [f"/out/{name}.png"], check=False)
    RESULT["shots"].append(name)


def scroll(down: bool, notches=60):
    """Scroll the Properties editor (its View2D) to the top or the end."""
    win, props = area_of('PROPERTIES')
    region = next(r for r in props.regions if r.type == 'WINDOW')
    with bpy.context.temp_override(window=win, area=props, region=region):
        for _ in range(notches):
            if down:
                bpy.ops.view2d.scroll_down(deltay=60)
            else:
                bpy.ops.view2d.scroll_up(deltay=60)


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
        RESULT["errors"].append(f"{function.__name__}: {traceback.format_exc()}")
    return 0.7


def cube(name, location, size=0.5):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.name = name
    return obj


@step
def build():
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=12, y_subdivisions=12, size=2.0, location=(0.0, -4.0, 0.5))
    cloth = bpy.context.object
    cloth.name = "Cloth"
    cloth.jakobsen.enabled, cloth.jakobsen.type = True, 'CLOTH'
    c = cloth.jakobsen.cloth
    for switch in ("use_self_collision", "use_pressure", "use_plasticity", "use_tearing"):
        if hasattr(c, switch):
            setattr(c, switch, True)
        else:
            RESULT.setdefault("missing_switches", []).append(switch)
    # Pins for the overlay: the far edge held (weight 1, big opaque dots), a few vertices of the
    # row in front of it softly pinned (0.4, small faint dots), as a user paints a curtain's top.
    ys = sorted({round(v.co.y, 5) for v in cloth.data.vertices})
    pins = cloth.vertex_groups.new(name="Pins")
    pins.add([v.index for v in cloth.data.vertices if round(v.co.y, 5) == ys[-1]], 1.0, 'REPLACE')
    row = [v.index for v in cloth.data.vertices if round(v.co.y, 5) == ys[-2]]
    pins.add(row[::3], 0.4, 'REPLACE')
    c.pin_group = "Pins"
    RESULT["pins_painted"] = {"full": sum(round(v.co.y, 5) == ys[-1] for v in cloth.data.vertices),
                              "soft": len(row[::3])}
    jelly = cube("Soft Body", (3.0, -4.0, 1.0))
    jelly.jakobsen.enabled, jelly.jakobsen.type = True, 'SOFT_BODY'
    crate = cube("Rigid Body", (-3.0, -4.0, 1.0))
    crate.jakobsen.enabled, crate.jakobsen.type = True, 'RIGID_BODY'
    bpy.ops.mesh.primitive_plane_add(size=40.0, location=(0.0, 0.0, -1.0))
    ground = bpy.context.object
    ground.name = "Collider"
    ground.jakobsen.enabled, ground.jakobsen.type = True, 'COLLIDER'
    ground.jakobsen.collider.shape = 'MESH'
    # One pair of rigid bodies a connector type, in a row along X.
    for i, kind in enumerate(KINDS):
        x = -6.75 + 1.5 * i
        a = cube(f"A {kind}", (x, 0.0, 1.0))
        if kind == 'WHEEL_SUSPENSION':
            bpy.ops.mesh.primitive_cylinder_add(vertices=24, radius=0.35, depth=0.25, location=(x, 0.0, 0.0),
                                                rotation=(0.0, 1.5708, 0.0))
            b = bpy.context.object
            b.name = f"B {kind}"
        else:
            b = cube(f"B {kind}", (x, 0.0, 0.0))
        activate(b)
        a.select_set(True)  # Object A selected, the active one Object B
        RESULT.setdefault("add_connector", {})[kind] = sorted(bpy.ops.jakobsen.add_connector(connector_type=kind))
        empty = bpy.context.object
        empty.name = f"Connector {kind}"
        settings = empty.jakobsen.connector
        for switch in ("use_angular_limit", "use_cone_limit", "use_linear_limit"):
            setattr(settings, switch, True)  # the limits on: their fields active, the overlay's arcs and bars
        for body in (a, b):
            body.jakobsen.enabled, body.jakobsen.type = True, 'RIGID_BODY'
    sa, sb = cube("Spring A", (0.0, 4.0, 2.0)), cube("Spring B", (0.0, 4.0, 0.5))
    activate(sb)
    sa.select_set(True)
    RESULT["add_spring"] = sorted(bpy.ops.jakobsen.add_spring())
    bpy.context.object.name = "Spring"
    bpy.ops.mesh.primitive_cylinder_add(vertices=24, radius=0.4, depth=0.2, location=(4.0, 4.0, 1.0),
                                        rotation=(0.0, 1.5708, 0.0))
    rotor = bpy.context.object
    rotor.name = "Rotor"
    stand = cube("Stand", (4.0, 4.0, 0.0))
    activate(rotor)
    stand.select_set(True)
    RESULT["add_motor"] = sorted(bpy.ops.jakobsen.add_motor(motor_type='ANGULAR'))
    bpy.context.object.name = "Motor"
    bpy.ops.object.effector_add(type='WIND', location=(-4.0, 4.0, 1.0))
    bpy.context.object.name = "Wind"
    bpy.context.scene.frame_set(1)
    _, props = area_of('PROPERTIES')
    props.spaces.active.context = 'PHYSICS'
    RESULT["properties_width"] = props.width
    RESULT["objects"] = sorted(o.name for o in bpy.data.objects)


@step
def taller_properties():
    """Close the Outliner above the Properties editor (View > Area > Close Area)."""
    win = bpy.context.window_manager.windows[0]
    outliner = next(a for a in win.screen.areas if a.type == 'OUTLINER')
    with bpy.context.temp_override(window=win, screen=win.screen, area=outliner):
        RESULT["area_close"] = sorted(bpy.ops.screen.area_close())


def role_steps(name, object_name, end=True):
    def select():
        activate(bpy.data.objects[object_name])
        scroll(False)

    def top():
        _, props = area_of('PROPERTIES')
        RESULT.setdefault("tall_properties", (props.width, props.height))
        shot(f"panel_{name}_top", props)
        if end:
            scroll(True)

    select.__name__, top.__name__ = f"select_{name}", f"shot_{name}"
    step(select)
    step(top)
    if end:
        def bottom():
            _, props = area_of('PROPERTIES')
            shot(f"panel_{name}", props)
            # Nothing to scroll (the whole panel fits): the top is the same picture, not kept.
            top = f"/out/panel_{name}_top.png"
            if filecmp.cmp(top, f"/out/panel_{name}.png", shallow=False):
                os.remove(top)
                RESULT["shots"].remove(f"panel_{name}_top")
        bottom.__name__ = f"shot_{name}_end"
        step(bottom)


role_steps("cloth", "Cloth")
role_steps("soft_body", "Soft Body")
role_steps("rigid_body", "Rigid Body")
role_steps("collider", "Collider")
for _kind in KINDS:
    role_steps(f"connector_{_kind.lower()}", f"Connector {_kind}")
role_steps("spring", "Spring")


@step
def spring_both():
    """The same spring as Both: its angular rows too (units in the fields: "N m s/rad")."""
    bpy.data.objects["Spring"].jakobsen.spring.spring_type = 'BOTH'
    scroll(True)


@step
def spring_both_shot():
    _, props = area_of('PROPERTIES')
    shot("panel_spring_both", props)
    bpy.data.objects["Spring"].jakobsen.spring.spring_type = 'LINEAR'


role_steps("motor", "Motor")
role_steps("force_field", "Wind")


@step
def open_cache_panel():
    from jakobsen_physics.ui.physics import PHYSICS_PT_jakobsen_cache

    PHYSICS_PT_jakobsen_cache.bl_options = set()  # (open: as tests/gui/playback_cache.py does)
    bpy.utils.unregister_class(PHYSICS_PT_jakobsen_cache)
    bpy.utils.register_class(PHYSICS_PT_jakobsen_cache)
    activate(bpy.data.objects["Cloth"])


@step
def cache_scroll():
    scroll(True, 400)


@step
def cache_click():
    """The panel already drawn closed in this editor stays closed: click its header (the last line
    of the editor, scrolled to the end), as a user opens it."""
    win, props = area_of('PROPERTIES')
    x, y = props.x + 100, win.height - props.y - 14
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=False)


@step
def cache_scroll_again():
    scroll(True, 400)


@step
def cache_shot():
    _, props = area_of('PROPERTIES')
    shot("panel_object_cache", props)


@step
def scene_tab():
    _, props = area_of('PROPERTIES')
    props.spaces.active.context = 'SCENE'
    scroll(False)


@step
def scene_shot():
    _, props = area_of('PROPERTIES')
    shot("panel_scene", props)
    scroll(True)


@step
def scene_end_shot():
    _, props = area_of('PROPERTIES')
    shot("panel_scene_end", props)


@step
def scene_pc2():
    """Output: PC2 shows the Bake panel's Directory row (its label must fit the default width)."""
    bpy.context.scene.jakobsen.output = 'PC2'
    scroll(True)


@step
def scene_pc2_shot():
    _, props = area_of('PROPERTIES')
    shot("panel_scene_bake_pc2", props)
    bpy.context.scene.jakobsen.output = 'SHAPE_KEYS'


@step
def sidebar():
    _, view3d = area_of('VIEW_3D')
    view3d.spaces.active.show_region_ui = True
    crate = bpy.data.objects["Rigid Body"]
    crate.jakobsen.vehicle.enabled = True  # the sidebar's Vehicle panel with a chassis
    activate(crate)
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)
    ui = next(r for r in view3d.regions if r.type == 'UI')
    # Click the sidebar's "Jakobsen" tab like a user (Item, Tool, View, Jakobsen; as vehicle_panel.py).
    window_height = bpy.context.window_manager.windows[0].height
    x, y = ui.x + ui.width - 10, window_height - (ui.y + ui.height) + 176
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=False)
    RESULT["sidebar_width"] = ui.width


@step
def sidebar_shot():
    _, view3d = area_of('VIEW_3D')
    shot("sidebar", view3d)


@step
def frame_connectors():
    win, view3d = area_of('VIEW_3D')
    view3d.spaces.active.show_region_ui = False
    view3d.spaces.active.shading.type = 'SOLID'
    for o in bpy.context.view_layer.objects:
        o.select_set(o.name == "Cloth" or (o.type == 'EMPTY' and o.jakobsen.enabled
                                           and o.jakobsen.type in ('CONNECTOR', 'SPRING', 'MOTOR')))
    # Framed on them and the pinned cloth: their middle, seen from the front right and above, far enough for all.
    points = [o.matrix_world.translation for o in bpy.context.view_layer.objects if o.select_get()]
    from mathutils import Euler, Vector

    r3d = view3d.spaces.active.region_3d
    r3d.view_location = sum(points, Vector()) / len(points)
    r3d.view_rotation = Euler((1.05, 0.0, 0.45)).to_quaternion()
    r3d.view_distance = 1.1 * max((p - r3d.view_location).length for p in points) + 4.0
    r3d.view_perspective = 'PERSP'
    RESULT["overlay_framed"] = len(points)
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    from jakobsen_physics.ui import overlay

    RESULT["overlay_registered"] = overlay.is_registered()
    bpy.context.window_manager.jakobsen_show_axes = True


@step
def overlay_shot():
    from jakobsen_physics.ui import overlay

    _, view3d = area_of('VIEW_3D')
    shot("overlay_all_connectors", view3d)
    RESULT["overlay_draws"] = overlay.last_draw_count()
    RESULT["overlay_errors"] = overlay.errors()
    # The overlay's geometry for each Empty alone: the lines by colour, or the error it raises.
    per_object = {}
    for o in bpy.context.view_layer.objects:
        if o.type != 'EMPTY' or not o.jakobsen.enabled:
            continue
        try:
            lines = overlay.overlay_lines([o])
            per_object[o.name] = {k: len(v) // 2 for k, v in lines.by_colour.items() if v}
        except Exception as error:  # noqa: BLE001 - recorded per object
            per_object[o.name] = f"{type(error).__name__}: {error}"
    RESULT["overlay_lines"] = per_object
    everything = overlay.overlay_lines(bpy.context.view_layer.objects)
    RESULT["overlay_lines_all"] = {k: len(v) // 2 for k, v in everything.by_colour.items()}
    # The pin dots drawn: (size in pixels, how many, their alphas) for the full and the soft pins.
    RESULT["overlay_pin_dots"] = [(size, len(points), sorted({round(float(a), 2) for a in colours[:, 3]}))
                                  for size, points, colours in everything.pin_dots()]


def finish():
    with open("/out/result.json", "w") as f:
        json.dump(RESULT, f, indent=1)
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(run_steps, first_interval=1.5)
