"""The Cloth and Soft Body panels and the preset popover in the real Blender GUI (opt-in; not
collected by pytest).

Run from the checkout:  ../shared/tools/blender-gui tests/gui/cloth_panel.py gui-out/cloth 240
It makes a subdivided plane a cloth (the Cotton preset applied through the preset operator, Self
Collision on), closes the Outliner above the Properties editor so that the editor, at its default
width, is tall enough for the whole Cloth panel with its sub-panels, and screenshots the editor
cropped: OUT/cloth_panel.png (docs/images/cloth_panel.png); the preset popover opened from the
Cloth panel's header with a user preset added beside the shipped ones (OUT/cloth_presets.png;
removed again afterwards); a cube as a soft body (OUT/soft_body_panel.png);
a rigid body with its presets (OUT/rigid_body_panel.png). Findings (sizes, the preset applied,
the popover's presets, errors) go to OUT/result.json; Blender's output to OUT/blender.log.
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
RESULT = {"errors": [], "blender": bpy.app.version_string}
STEPS = []


def shot(name, area=None):
    """A screenshot of the whole window, or cropped to ``area``."""
    bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=2)
    command = ["import", "-window", "root"]
    if area is not None:
        height = bpy.context.window_manager.windows[0].height
        command += ["-crop", f"{area.width}x{area.height}+{area.x}+{height - area.y - area.height}"]
    subprocess.run(command + [f"/out/{name}.png"], check=False)


def area_of(kind):
    win = bpy.context.window_manager.windows[0]
    return win, next(a for a in win.screen.areas if a.type == kind)


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
    return 0.8


def scroll_properties(notches):
    """Turn the mouse wheel over the Properties editor, as a user scrolls (down when positive)."""
    _, props = area_of('PROPERTIES')
    height = bpy.context.window_manager.windows[0].height
    x, y = props.x + props.width // 2, height - props.y - props.height // 2
    subprocess.run(["xdotool", "mousemove", str(x), str(y)], check=False)
    subprocess.run(["xdotool", "click", "--repeat", str(abs(notches)), "--delay", "20",
                    "5" if notches > 0 else "4"], check=False)


@step
def build():
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=2.0, location=(0.0, 0.0, 1.5))
    cloth = bpy.context.object
    cloth.name = "Tablecloth"
    cloth.jakobsen.enabled = True
    cloth.jakobsen.type = 'CLOTH'
    from jakobsen_physics import presets

    path = os.path.join(presets.shipped_directory(presets.CLOTH_SUBDIR), "Cotton.py")
    RESULT["preset"] = sorted(bpy.ops.script.execute_preset(filepath=path, menu_idname="JAKOBSEN_PT_cloth_presets"))
    cloth.jakobsen.cloth.use_self_collision = True
    RESULT["cotton_density"] = cloth.jakobsen.cloth.density
    RESULT["preset_paths"] = bpy.utils.preset_paths(presets.CLOTH_SUBDIR)
    RESULT["popover_lists"] = presets.preset_directories(presets.CLOTH_SUBDIR)
    win, props = area_of('PROPERTIES')
    props.spaces.active.context = 'PHYSICS'
    RESULT["properties_width"] = props.width


@step
def taller_properties():
    """Close the Outliner above the Properties editor (View > Area > Close Area): the editor
    keeps its default width and grows tall enough for the Cloth panel."""
    win, outliner = area_of('OUTLINER')
    with bpy.context.temp_override(window=win, screen=win.screen, area=outliner):
        RESULT["area_close"] = sorted(bpy.ops.screen.area_close())


@step
def cloth_top():
    _, props = area_of('PROPERTIES')
    RESULT["tall_properties"] = (props.width, props.height)
    shot("cloth_panel_top", props)


@step
def cloth_scrolled():
    scroll_properties(60)  # to the end: the Cloth panel and its sub-panels close the Physics tab


@step
def cloth_shot():
    _, props = area_of('PROPERTIES')
    shot("cloth_panel", props)


@step
def open_presets():
    """Store the cloth's settings as a user preset, as the popover's + does (removed again at the
    end), and scroll back to the top, where the Cloth panel's header is."""
    RESULT["user_preset_add"] = sorted(bpy.ops.jakobsen.cloth_preset_add(name="My Canvas"))
    from jakobsen_physics import presets

    RESULT["popover_files"] = sorted(os.path.basename(f) for d in presets.preset_directories(presets.CLOTH_SUBDIR)
                                     for f in os.listdir(d) if f.endswith(".py"))
    scroll_properties(-60)


@step
def open_presets_click():
    win, props = area_of('PROPERTIES')
    # The preset button at the right end of the Cloth panel's header, scrolled to the top with the
    # Outliner closed: 363 px below the editor's top, 47 px from its right edge (measured on the
    # cropped screenshot of the editor at its default width, Blender 4.3).
    x = props.x + props.width - 47
    y = win.height - (props.y + props.height) + 363
    RESULT["preset_click"] = (x, y)
    # Hover first: a click that arrives with the pointer lands on the header and folds the panel.
    subprocess.run(["xdotool", "mousemove", str(x), str(y)], check=False)


@step
def open_presets_press():
    subprocess.run(["xdotool", "click", "1"], check=False)


@step
def presets_shot():
    shot("cloth_presets")
    subprocess.run(["xdotool", "key", "Escape"], check=False)
    RESULT["user_preset_remove"] = sorted(bpy.ops.jakobsen.cloth_preset_add(name="My Canvas", remove_name=True))


@step
def soft_body():
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(2.5, 0.0, 1.0))
    cube = bpy.context.object
    cube.name = "Jelly"
    cube.jakobsen.enabled = True
    cube.jakobsen.type = 'SOFT_BODY'
    activate(cube)
    scroll_properties(-60)


@step
def soft_body_shot():
    _, props = area_of('PROPERTIES')
    shot("soft_body_panel", props)
    scroll_properties(60)


@step
def soft_body_end_shot():
    _, props = area_of('PROPERTIES')
    shot("soft_body_panel_end", props)


@step
def rigid_body():
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(-2.5, 0.0, 1.0))
    box = bpy.context.object
    box.name = "Crate"
    box.jakobsen.enabled = True
    box.jakobsen.type = 'RIGID_BODY'
    activate(box)
    scroll_properties(-60)


@step
def rigid_body_shot():
    _, props = area_of('PROPERTIES')
    shot("rigid_body_panel", props)


def finish():
    with open("/out/result.json", "w") as f:
        json.dump(RESULT, f, indent=1)
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(run_steps, first_interval=1.5)
