"""The Vehicle panels (Physics tab and the 3D View's sidebar), the panels' labels, the Connector
panel of a vehicle's wheel, and the viewport overlay's geometry.

Headless Blender draws no panel, so the draw code is run against a recording layout: it takes
the calls a ``UILayout`` takes and keeps what would be shown (every setting must exist on the
object it is read from, and the labels must fit the label column). What the panels look like is
checked in the real GUI by ``tests/gui/vehicle_panel.py`` (screenshots in docs/images).
"""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import ui  # noqa: E402
from jakobsen_physics.ui import overlay, vehicle  # noqa: E402

from .test_connectors import _cube, _empty, _enable  # noqa: E402

pytestmark = pytest.mark.blender

# At the default Properties width (277 pixels in Blender 4.3's factory layout on a 1600 pixel
# screen) the label column of use_property_split shows about 75 pixels of text; a checkbox's text
# stands beside it, in about as much room ("Use Vertex M..." is cut). Text widths by a rough model of Blender's font,
# calibrated on labels seen whole or cut in the GUI: "Target Speed", "Lin. Damping", "Tyre
# Friction" fit (72 by this measure), "Ang. Damping", "Wheel Friction", "Linear Damping" are cut
# (75 and more).
LABEL_WIDTH = 74.0
CHECKBOX_WIDTH = 80.0
_NARROW, _WIDE = set("iljtfr .,()/-I:'"), set("mwMW")


def text_width(text: str) -> float:
    return sum(3.6 if c in _NARROW else 10.0 if c in _WIDE else 7.6 if c.isupper() or c.isdigit() else 6.6
               for c in text)


class Recorder:
    """What a panel's draw puts in a UILayout: ``shown`` holds (label, owner, property, kind) for
    each setting drawn, ``texts`` the labels, ``operators`` the buttons."""

    def __init__(self, root=None):
        self.root = root or self
        if root is None:
            self.shown, self.texts, self.operators = [], [], []
            self.buttons = []  # (operator, text, its properties as set, enabled)
        self.use_property_split = False
        self.use_property_decorate = True
        self.active = self.enabled = True
        self.alignment = 'EXPAND'
        self.scale_y = 1.0
        self.in_split = False

    def _child(self, *args, heading="", **kwargs):
        child = Recorder(self.root)
        child.use_property_split = self.use_property_split
        child.in_split = self.in_split
        if heading:  # shown in the label column, beside the first checkbox
            self.root.shown.append((heading, None, "", "split"))
        return child

    column = row = box = grid_flow = column_flow = _child

    def split(self, *args, **kwargs):
        child = self._child()
        child.in_split = True
        return child

    def separator(self, **kwargs):
        pass

    def label(self, text="", **kwargs):
        self.root.texts.append(text)
        if text and self.in_split and self.alignment == 'RIGHT':
            # A label column drawn by hand, as use_property_split draws one (ui.units.prop_with_unit).
            self.root.shown.append((text, None, "", "split"))

    def prop(self, owner, name, text=None, **kwargs):
        rna = owner.bl_rna.properties.get(name)
        assert rna is not None, f"{type(owner).__name__} has no setting '{name}'"
        label = rna.name if text is None else text
        checkbox = rna.type == 'BOOLEAN'
        kind = "checkbox" if checkbox else ("split" if self.use_property_split else "inline")
        if kwargs.get("expand") and rna.type == 'ENUM':
            kind = "expanded" if not self.use_property_split else "split"
        self.root.shown.append((label, owner, name, kind))

    def prop_enum(self, owner, name, value, **kwargs):
        rna = owner.bl_rna.properties[name]
        self.root.shown.append((rna.enum_items[value].name, owner, name, "enum button"))

    def prop_search(self, owner, name, *args, text=None, **kwargs):
        self.prop(owner, name, text=text)

    def prop_decorator(self, *args, **kwargs):
        pass

    def operator(self, idname, text=None, **kwargs):
        self.root.operators.append(idname)
        props = SimpleNamespace()
        self.root.buttons.append((idname, text, props, self.enabled))
        return props

    def operator_menu_enum(self, idname, prop, text=None, **kwargs):
        self.root.operators.append(idname)


def _draw(panel_class, obj, scene=None):
    """Run a panel's header and draw on a recording layout, as Blender would for ``obj``."""
    layout = Recorder()
    context = SimpleNamespace(object=obj, active_object=obj, scene=scene or bpy.context.scene,
                              window_manager=bpy.context.window_manager, view_layer=bpy.context.view_layer)
    panel = SimpleNamespace(layout=layout)
    if hasattr(panel_class, "draw_header"):
        panel_class.draw_header(panel, context)
    panel_class.draw(panel, context)
    return layout


def _polls(panel_class, obj) -> bool:
    context = SimpleNamespace(object=obj, active_object=obj, scene=bpy.context.scene)
    return not hasattr(panel_class, "poll") or bool(panel_class.poll(context))


def _long_labels(layout) -> list[str]:
    out = []
    for label, _owner, _name, kind in layout.shown:
        limit = {"split": LABEL_WIDTH, "checkbox": CHECKBOX_WIDTH}.get(kind)
        if limit is not None and text_width(label) > limit:
            out.append(f"{label!r} ({kind})")
    return out


def _car():
    """A chassis and two wheels on Wheel Suspension connectors, the chassis a vehicle."""
    chassis = _cube("Car", size=1.0, location=(0.0, 0.0, 0.8), collision_shape='BOX', mass=1200.0)
    chassis.jakobsen.vehicle.enabled = True
    wheels, connectors = [], []
    for name, x in (("Left", -0.9), ("Right", 0.9)):
        bpy.ops.mesh.primitive_cylinder_add(radius=0.35, depth=0.25, location=(x, -1.2, 0.35),
                                            rotation=(0.0, math.pi / 2, 0.0))
        wheel = _enable(bpy.context.object, 'RIGID_BODY', collision_shape='CYLINDER')
        wheel.name = f"Wheel {name}"
        connector = _enable(_empty(f"Suspension {name}", (x, -1.2, 0.35), (0.0, 0.0, 0.0)), 'CONNECTOR',
                            connector_type='WHEEL_SUSPENSION', object_a=chassis, object_b=wheel)
        wheels.append(wheel)
        connectors.append(connector)
    bpy.context.view_layer.update()
    return chassis, wheels, connectors


# -- which panels show, and for what -------------------------------------------------------------

def test_the_vehicle_panels_are_sub_panels_of_the_rigid_body_panel_and_of_the_sidebar(blender):
    parents = {cls.__name__: getattr(cls, "bl_parent_id", "") for cls in ui.classes}
    assert parents["PHYSICS_PT_jakobsen_vehicle"] == "PHYSICS_PT_jakobsen_body"
    assert parents["PHYSICS_PT_jakobsen_vehicle_suspension"] == "PHYSICS_PT_jakobsen_vehicle"
    assert parents["PHYSICS_PT_jakobsen_vehicle_path"] == "PHYSICS_PT_jakobsen_vehicle"
    assert parents["VIEW3D_PT_jakobsen_vehicle_suspension"] == "VIEW3D_PT_jakobsen_vehicle"
    assert vehicle.VIEW3D_PT_jakobsen_vehicle.bl_category == "Jakobsen"
    order = [cls.__name__ for cls in ui.classes]
    for child, parent in parents.items():  # Blender registers a sub-panel only after its parent
        if parent:
            assert order.index(parent) < order.index(child)
    for cls in ui.classes:
        assert getattr(bpy.types, cls.__name__, None) is not None, f"{cls.__name__} is not registered"


def test_the_vehicle_panel_shows_for_rigid_bodies_and_its_parts_only_for_a_vehicle(blender, helpers):
    chassis, wheels, connectors = _car()
    sheet = _enable(helpers.link(bpy.data.objects.new("Sheet", helpers.grid_mesh("Sheet", 2, 2, 1.0))), 'CLOTH')
    panel, suspension = vehicle.PHYSICS_PT_jakobsen_vehicle, vehicle.PHYSICS_PT_jakobsen_vehicle_suspension
    assert _polls(panel, chassis) and _polls(suspension, chassis)
    assert _polls(panel, wheels[0]) and not _polls(suspension, wheels[0])  # a rigid body, not a chassis
    assert not _polls(panel, sheet) and not _polls(panel, connectors[0])
    drawn = _draw(panel, chassis)
    assert ("", chassis.jakobsen.vehicle, "enabled", "checkbox") in drawn.shown  # the header's switch
    assert {name for _, owner, name, _ in drawn.shown if owner == chassis.jakobsen.vehicle} >= {
        "forward_axis", "drive", "differential", "target_speed", "throttle", "motor_torque", "steering_angle",
        "max_steering_angle", "use_ackermann", "brake", "handbrake", "brake_torque", "wheel_friction",
        "rolling_resistance", "initial_speed"}
    chassis.jakobsen.vehicle.enabled = False
    off = _draw(panel, chassis)
    assert [name for _, _, name, _ in off.shown] == ["enabled"]  # a rigid body that is not a chassis: short


def test_the_suspension_and_follow_path_panels_draw_front_and_rear_and_the_path(blender):
    chassis, _, _ = _car()
    v = chassis.jakobsen.vehicle
    suspension = _draw(vehicle.PHYSICS_PT_jakobsen_vehicle_suspension, chassis)
    names = [name for _, _, name, _ in suspension.shown]
    for axle in ("front", "rear"):
        for setting in ("suspension_rest", "suspension_travel", "suspension_stiffness", "suspension_damping",
                        "anti_roll"):
            assert f"{axle}_{setting}" in names
    assert {"Front", "Rear", "Stiffness", "Stiffness, Anti-Roll: N/m",
            "Damping: N s/m"} <= set(suspension.texts)
    path = _draw(vehicle.PHYSICS_PT_jakobsen_vehicle_path, chassis)
    assert [name for _, owner, name, _ in path.shown if owner == v] == [
        "follow_path", "use_path_speed", "look_ahead", "max_lateral_acceleration", "steering_response", "drift"]


def test_create_vehicle_and_hitch_trailer_are_drawn_only_when_registered(blender):
    chassis, _, _ = _car()
    drawn = _draw(vehicle.PHYSICS_PT_jakobsen_vehicle, chassis).operators
    for name in ("vehicle_create", "vehicle_hitch"):
        assert (f"jakobsen.{name}" in drawn) == vehicle.has_operator(name)
    assert not vehicle.has_operator("no_such_operator")
    assert vehicle.has_operator("bake")


def test_the_sidebar_shows_the_vehicle_of_the_chassis_its_wheels_and_their_connectors(blender, helpers):
    chassis, wheels, connectors = _car()
    other = _cube("Crate", size=0.5, location=(4.0, 0.0, 0.5))
    for obj in (chassis, wheels[1], connectors[0]):
        bpy.context.view_layer.objects.active = obj
        assert vehicle.vehicle_of(bpy.context) == chassis
        drawn = _draw(vehicle.VIEW3D_PT_jakobsen_vehicle, obj)
        assert "Car" in drawn.texts and ("Torque (N m)", chassis.jakobsen.vehicle, "motor_torque", "split") in \
            drawn.shown
    bpy.context.view_layer.objects.active = other
    assert vehicle.vehicle_of(bpy.context) is None
    drawn = _draw(vehicle.VIEW3D_PT_jakobsen_vehicle, other)
    assert "Select the chassis and its wheels" in drawn.texts
    assert ("", other.jakobsen.vehicle, "enabled", "checkbox") in drawn.shown  # make it one from here


def test_a_wheel_connector_of_a_vehicle_says_its_suspension_is_set_on_the_vehicle(blender):
    from jakobsen_physics.ui.physics import PHYSICS_PT_jakobsen_connector

    chassis, wheels, connectors = _car()
    drawn = _draw(PHYSICS_PT_jakobsen_connector, connectors[0])
    assert "Suspension: set on the vehicle" in drawn.texts and "'Car'" in drawn.texts
    own = {"steering_angle", "suspension_rest", "suspension_stiffness", "suspension_damping", "suspension_lower",
           "suspension_upper"}
    assert not own & {name for _, _, name, _ in drawn.shown}
    chassis.jakobsen.vehicle.enabled = False  # a plain wheel connector: its own suspension
    drawn = _draw(PHYSICS_PT_jakobsen_connector, connectors[0])
    assert own <= {name for _, _, name, _ in drawn.shown}
    assert "Suspension: set on the vehicle" not in drawn.texts


def test_rigid_body_initial_velocity_and_motor_on_are_in_their_panels(blender):
    from jakobsen_physics.ui.physics import PHYSICS_PT_jakobsen_body, PHYSICS_PT_jakobsen_motor

    body = _cube("Body")
    names = [name for _, _, name, _ in _draw(PHYSICS_PT_jakobsen_body, body).shown]
    assert names[-3:] == ["use_initial_velocity", "initial_velocity", "initial_angular_velocity"]
    motor = _enable(_empty("Drive"), 'MOTOR', object_a=body)
    drawn = _draw(PHYSICS_PT_jakobsen_motor, motor)
    assert drawn.shown[0] == ("", motor.jakobsen.motor, "use_motor", "checkbox")  # in the header


# -- labels that fit ------------------------------------------------------------------------------

def _soft_body(name="Soft"):
    bpy.ops.mesh.primitive_cube_add(size=0.5)
    obj = bpy.context.object
    obj.name = name
    obj.jakobsen.enabled = True
    obj.jakobsen.type = 'SOFT_BODY'
    return obj


def _every_panel_and_object(helpers):
    """(panel class, object) for every panel of the add-on (the Physics and Scene tabs, the
    sidebar) on every kind of object it shows for."""
    chassis, wheels, connectors = _car()
    objects = [chassis, wheels[0], connectors[0]]
    for role in ('CLOTH', 'COLLIDER'):
        mesh = helpers.link(bpy.data.objects.new(role, helpers.grid_mesh(role, 2, 2, 1.0)))
        objects.append(_enable(mesh, role))
    objects.append(_soft_body())
    rigid = _soft_body("Soft Rigid")  # the Rigid Stretch and Shear note of the Soft Body panel
    rigid.jakobsen.cloth.use_rigid_stretch = rigid.jakobsen.cloth.use_rigid_shear = True
    objects.append(rigid)
    for kind in ('HINGE', 'SLIDER', 'RAGDOLL', 'CARDAN', 'BOX', 'WHEEL_SUSPENSION'):
        objects.append(_enable(_empty(kind), 'CONNECTOR', connector_type=kind, object_b=chassis))
    for role in ('SPRING', 'MOTOR'):
        objects.append(_enable(_empty(role), role, object_a=chassis))
    for mode in ('SERVO', 'APPLY_FORCE'):
        objects.append(_enable(_empty(f"Motor {mode}"), 'MOTOR', object_a=chassis, mode=mode, motor_type='LINEAR'))
    objects.append(_enable(_empty("Spring Both"), 'SPRING', object_a=chassis, spring_type='BOTH'))
    objects.append(_enable(_empty("Breakable"), 'CONNECTOR', connector_type='HINGE', object_b=chassis,
                           use_breaking=True))
    bpy.ops.object.effector_add(type='WIND')  # the Force Field panel's
    objects.append(bpy.context.object)
    chassis.jakobsen.vehicle.follow_path = None
    scene = bpy.context.scene.jakobsen
    for i, obj in enumerate(objects):
        bpy.context.view_layer.objects.active = obj
        # The Scene tab's panels with each of their switches both ways (what they draw depends on them).
        scene.use_scene_range = scene.use_auto_iterations = scene.use_scene_gravity = i % 2 == 0
        scene.output = 'PC2' if i % 2 else 'SHAPE_KEYS'
        for cls in ui.classes:
            shown = cls.bl_space_type == 'VIEW_3D' or getattr(cls, "bl_context", "") in {"physics", "scene"}
            if shown and _polls(cls, obj):
                yield cls, obj


def test_every_panel_label_fits_the_default_width(blender, helpers):
    """Physics and Scene tabs, the soft body's panels and the sidebar. (The sidebar is about as
    wide as the Properties editor: 291 pixels.)"""
    too_long, drawn = set(), set()
    for cls, obj in _every_panel_and_object(helpers):
        drawn.add(cls.__name__)
        too_long |= {f"{cls.__name__} ({obj.name}): {label}" for label in _long_labels(_draw(cls, obj))}
    assert not sorted(too_long), "\n".join(sorted(too_long))
    # Every panel was measured (a panel left out would pass unmeasured).
    assert drawn == {cls.__name__ for cls in ui.classes if issubclass(cls, bpy.types.Panel)
                     and "presets" not in cls.__name__}


def test_a_label_too_wide_for_the_label_column_is_found(blender):
    """The measure above finds labels that are cut: in the label column of use_property_split, a
    heading, and the label column that ui.units draws by hand."""
    from jakobsen_physics.ui.units import prop_with_unit

    spring = _enable(_empty("Spring"), 'SPRING')
    layout = Recorder()
    layout.use_property_split = True
    layout.prop(spring.jakobsen.spring, "stiffness", text="Stiffness (N/m)")
    layout.column(heading="Linear Damping").prop(spring.jakobsen.spring, "use_plastic", text="")
    prop_with_unit(layout, spring.jakobsen.spring, "damping", "Damping (N s/m)", "N s/m")
    prop_with_unit(layout, spring.jakobsen.spring, "angular_damping", "Damping", "N m s")
    assert _long_labels(layout) == ["'Stiffness (N/m)' (split)", "'Linear Damping' (split)",
                                    "'Damping (N s/m)' (split)"]


def test_the_cache_panel_bakes_frees_and_bakes_from_the_cache_this_object_or_all(blender, helpers):
    """As Blender's Point Cache panel: this object's Bake, Free Bake and Bake from Cache, and the
    same for all (and Free Cache). A rigid body with Dynamic Off is not baked: its Bake is greyed
    out; Free Bake only with a bake to free."""
    from jakobsen_physics.ui.physics import PHYSICS_PT_jakobsen_cache

    body = _cube("Crate")
    drawn = _draw(PHYSICS_PT_jakobsen_cache, body)
    buttons = [(idname, text, vars(props), enabled) for idname, text, props, enabled in drawn.buttons]
    assert buttons == [
        ("jakobsen.bake", "Bake", {"object_name": "Crate"}, True),
        ("jakobsen.free_bake", "Free Bake", {"object_name": "Crate"}, False),
        ("jakobsen.bake_from_cache", "Bake from Cache", {"object_name": "Crate"}, False),
        ("jakobsen.bake", "Bake All", {}, True), ("jakobsen.free_bake", "Free All Bakes", {}, True),
        ("jakobsen.bake_from_cache", "All from Cache", {}, True), ("jakobsen.free_cache", "Free Cache", {}, True)]
    assert bpy.ops.jakobsen.bake(object_name="Crate") == {'FINISHED'}
    assert [enabled for _, _, _, enabled in _draw(PHYSICS_PT_jakobsen_cache, body).buttons][:3] == [True, True, False]
    body.jakobsen.rigid_body.dynamic = 'OFF'
    assert [enabled for _, _, _, enabled in _draw(PHYSICS_PT_jakobsen_cache, body).buttons][:3] == [False, True, False]


# -- units ----------------------------------------------------------------------------------------

# Units as the properties' descriptions name them (in words, or as symbols), and as the panels
# write them; the longest first ("newton metres per radian" before "newton metres").
UNIT_WORDS = (("millinewton metres", "mN m"), ("newton metre seconds", "N m s"),
              ("newton metres per radian", "N m/rad"), ("newton seconds per metre", "N s/m"),
              ("newtons per metre", "N/m"), ("newton metres", "N m"),
              ("newtons", "N"), ("pascals", "Pa"), ("hertz", "Hz"), ("kg/m³", "kg/m³"), ("kg/m²", "kg/m²"),
              ("kg/m", "kg/m"), ("per second", "1/s"))
UNIT_SYMBOLS = {symbol for _, symbol in UNIT_WORDS} | {"kg", "MB"}
# Coefficients and ratios: no unit to show.
DIMENSIONLESS = {"friction", "bounce", "field_weight", "pressure_volume", "tear_factor", "wheel_friction",
                 "rolling_resistance"}
# Factors whose description speaks of a rate that is not their unit ("a pull at 20 per second").
NOT_THEIR_UNIT = {"follow_position", "follow_rotation"}


def described_unit(rna) -> str | None:
    """The unit a property's description names, or None."""
    text = rna.description.lower()
    return next((symbol for words, symbol in UNIT_WORDS if words.lower() in text), None)


def shown_unit(label: str) -> str | None:
    """The unit a label (or a field's own text) carries: "Stiffness (N/m)", "Per m³ (kg)" (kg/m³),
    "Speed per s" (1/s), or the field text "N s/m" of ui.units.prop_with_unit."""
    m = re.fullmatch(r"Per (m[²³]) \(kg\)", label)
    if m:
        return f"kg/{m.group(1)}"
    m = re.search(r"\(([^()]+)\)$", label)
    if m and m.group(1) in UNIT_SYMBOLS:
        return m.group(1)
    if label == "per s" or label.endswith(" per s"):
        return "1/s"
    return label if label in UNIT_SYMBOLS else None


def blender_unit(rna) -> str:
    """The unit Blender shows in the field itself ('NONE' for none; '%' for a percentage)."""
    if rna.unit != 'NONE':  # (read first: the subtype of a property given only a unit reads as a warning)
        return rna.unit
    return '%' if rna.subtype == 'PERCENTAGE' else 'NONE'


def _notes(texts) -> dict[str, str]:
    """{row label: unit} from notes under a table ("Stiffness, Anti-Roll: N/m", the Suspension panel's)."""
    out = {}
    for text in texts:
        labels, _, unit = text.rpartition(": ")
        if labels and unit in UNIT_SYMBOLS:
            out.update({label: unit for label in labels.split(", ")})
    return out


def unit_problems(layout) -> tuple[list[str], set[str]]:
    """(what is wrong, the float settings checked) of a drawn panel: every float setting shows a
    unit (Blender's own in the field, or one in its label or field text), the one its description
    names; only coefficients, ratios and factors show none."""
    problems, checked = [], set()
    table = {f"{side}_{name}": label for label, name, _ in vehicle.SUSPENSION_ROWS for side in ("front", "rear")}
    notes = _notes(layout.texts)
    for label, owner, name, _kind in layout.shown:
        if owner is None or owner.bl_rna.properties[name].type != 'FLOAT':
            continue
        rna = owner.bl_rna.properties[name]
        checked.add(name)
        expected = None if name in NOT_THEIR_UNIT else described_unit(rna)
        blender = blender_unit(rna)
        shown = shown_unit(label) if label else notes.get(table.get(name, ""))
        where = f"{name} ({label!r})"
        if name in DIMENSIONLESS:
            if expected is not None or shown is not None or blender != 'NONE':
                problems.append(f"{where}: listed as having no unit, but it has {expected or shown or blender}")
        elif expected is None:
            if blender == 'NONE' and shown is None and rna.subtype != 'FACTOR':
                problems.append(f"{where}: no unit shown and none described")
        elif expected == "1/s" and blender == 'ROTATION':  # an angle per second: Blender shows the angle
            if shown != "1/s":
                problems.append(f"{where}: an angle per second without 'per s'")
        elif blender == 'NONE' and shown != expected:
            problems.append(f"{where}: shows {shown}, its description says {expected}")
    return problems, checked


def test_every_float_setting_in_the_panels_shows_its_unit(blender, helpers):
    problems, checked = set(), set()
    for cls, obj in _every_panel_and_object(helpers):
        found, names = unit_problems(_draw(cls, obj))
        problems |= {f"{cls.__name__}: {p}" for p in found}
        checked |= names
    assert not problems, "\n".join(sorted(problems))
    # The settings the audit of issue 14 found without a unit are among those checked.
    assert {"stiffness", "damping", "angular_stiffness", "angular_damping", "breaking_force", "breaking_torque",
            "suspension_stiffness", "suspension_damping", "linear_damping", "initial_angular_velocity",
            "front_suspension_stiffness", "rear_anti_roll", "stretch_stiffness", "pin_stiffness",
            "pressure_stiffness", "volume_stiffness", "jiggle_frequency", "plastic_rate", "max_torque",
            "max_force", "motor_torque", "brake_torque", "drag", "air_drag", "density"} <= checked


@pytest.mark.parametrize("panel, role, settings, name, label, unit", [
    ("PHYSICS_PT_jakobsen_spring", 'SPRING', {"spring_type": 'BOTH'}, "stiffness", "Stiffness", "N/m"),
    ("PHYSICS_PT_jakobsen_spring", 'SPRING', {"spring_type": 'BOTH'}, "damping", "Damping", "N s/m"),
    ("PHYSICS_PT_jakobsen_spring", 'SPRING', {"spring_type": 'ANGULAR'}, "angular_stiffness", "Angular",
     "N m/rad"),
    ("PHYSICS_PT_jakobsen_spring", 'SPRING', {"spring_type": 'ANGULAR'}, "angular_damping", "Damping",
     "N m s"),
    ("PHYSICS_PT_jakobsen_connector", 'CONNECTOR', {"connector_type": 'WHEEL_SUSPENSION'}, "suspension_stiffness",
     "Stiffness", "N/m"),
    ("PHYSICS_PT_jakobsen_connector", 'CONNECTOR', {"connector_type": 'WHEEL_SUSPENSION'}, "suspension_damping",
     "Damping", "N s/m"),
    ("PHYSICS_PT_jakobsen_connector", 'CONNECTOR', {}, "breaking_force", "Force (N)", None),
    ("PHYSICS_PT_jakobsen_connector", 'CONNECTOR', {}, "breaking_torque", "Torque (N m)", None),
    ("PHYSICS_PT_jakobsen_body", 'RIGID_BODY', {}, "linear_damping", "Lin. Damping", "per s"),
    ("PHYSICS_PT_jakobsen_body", 'RIGID_BODY', {}, "angular_damping", "Rot. Damping", "per s"),
    ("PHYSICS_PT_jakobsen_body", 'RIGID_BODY', {}, "initial_angular_velocity", "Spin per s", None),
    ("SCENE_PT_jakobsen_solver", 'RIGID_BODY', {}, "damping", "Damping", "1/s"),
])
def test_the_settings_without_a_blender_unit_show_theirs(blender, panel, role, settings, name, label, unit):
    """unit None: in the label of use_property_split; else in the field, its name in a label
    column drawn as use_property_split draws one (ui.units.prop_with_unit)."""
    from jakobsen_physics.ui import physics, scene

    cls = getattr(physics, panel, None) or getattr(scene, panel)
    obj = _cube("Body") if role == 'RIGID_BODY' else _enable(_empty(role), role, **settings)
    drawn = _draw(cls, obj)
    mine = [(text, kind) for text, owner, prop, kind in drawn.shown if prop == name and owner is not None]
    if unit is None:
        assert mine == [(label, "split")]
    else:
        assert mine == [(unit, "inline")]  # the unit in the field
        i = next(i for i, (_, owner, prop, _) in enumerate(drawn.shown) if prop == name and owner is not None)
        assert drawn.shown[i - 1] == (label, None, "", "split")  # its name in the label column before it


# -- the overlay -------------------------------------------------------------------------------------

def test_the_overlay_is_not_drawn_headless_and_its_toggle_is_a_window_manager_setting(blender):
    assert bpy.app.background and not overlay.is_registered()
    wm = bpy.context.window_manager
    assert wm.jakobsen_show_axes is True
    wm.jakobsen_show_axes = False
    assert wm.jakobsen_show_axes is False
    drawn = _draw(ui.sidebar.VIEW3D_PT_jakobsen, None)
    assert ("Show Axes", wm, "jakobsen_show_axes", "checkbox") in drawn.shown


def _direction(segment) -> np.ndarray:
    d = segment[1] - segment[0]
    return d / np.linalg.norm(d)


@pytest.mark.parametrize("rotation", [(0.0, 0.0, 0.0), (0.0, math.pi / 2, 0.0), (0.4, -0.7, 1.9)])
def test_the_overlay_draws_a_connectors_axes_and_a_motors_axis_with_its_turning_sense(blender, rotation):
    from mathutils import Euler

    body = _cube("Body", location=(0.0, 0.0, 0.0))
    hinge = _enable(_empty("Hinge", (1.0, 2.0, 3.0), rotation), 'CONNECTOR', connector_type='HINGE',
                    object_b=body, use_angular_limit=True, angle_min=-0.5, angle_max=1.0)
    hinge.empty_display_size = 0.5
    motor = _enable(_empty("Drive", (-1.0, 0.0, 0.0), rotation), 'MOTOR', object_a=body)
    motor.empty_display_size = 0.8
    bpy.context.view_layer.update()
    r = np.array(Euler(rotation).to_matrix())
    lines = overlay.overlay_lines(bpy.context.view_layer.objects)

    z_axis, x_axis = lines.segments("z"), lines.segments("x")
    assert z_axis[0][0] == pytest.approx([1.0, 2.0, 3.0]) and z_axis[0][1] == pytest.approx([1, 2, 3] + 0.5 * r[:, 2])
    assert x_axis[0][1] == pytest.approx([1, 2, 3] + 0.5 * r[:, 0])
    limit = lines.segments("limit")
    # The hinge's limit arc: from -0.5 to 1.0 rad about Z, from X.
    ends = [limit[-2][1], limit[-1][1]]
    for end, angle in zip(ends, (-0.5, 1.0)):
        expected = np.array([1.0, 2.0, 3.0]) + 0.3 * (math.cos(angle) * r[:, 0] + math.sin(angle) * r[:, 1])
        assert end == pytest.approx(expected, abs=1e-6)

    motor_lines = lines.segments("motor")
    assert _direction(motor_lines[0]) == pytest.approx(r[:, 2])  # the axis
    # The arc turns from the Empty's X towards its Y: positive (right-handed) about Z.
    arc = motor_lines[1:-2]
    centre = np.array([-1.0, 0.0, 0.0]) + 0.9 * 0.8 * r[:, 2]
    turns = [np.cross(a - centre, b - centre) @ r[:, 2] for a, b in arc]
    assert all(t > 0 for t in turns) and len(turns) >= 12


def test_the_overlay_draws_a_slider_range_a_spring_and_a_vehicles_forward_arrow_and_axles(blender):
    chassis, wheels, connectors = _car()
    chassis.jakobsen.vehicle.forward_axis = 'POS_X'
    crate = _cube("Crate", size=0.4, location=(5.0, 0.0, 2.0))
    slider = _enable(_empty("Slider", (5.0, 0.0, 2.0)), 'CONNECTOR', connector_type='SLIDER', object_b=crate,
                     use_linear_limit=True, distance_min=-0.3, distance_max=0.7)
    _enable(_empty("Coil", (5.0, 0.0, 3.0)), 'SPRING', object_a=crate)
    bpy.context.view_layer.update()
    lines = overlay.overlay_lines(bpy.context.view_layer.objects)
    limit = lines.segments("limit")
    assert any(np.allclose(s, [[5.0, 0.0, 1.7], [5.0, 0.0, 2.7]]) for s in limit)  # the slider's range on Z
    assert lines.segments("spring")[0].ravel() == pytest.approx([5.0, 0.0, 2.0, 5.0, 0.0, 3.0])
    forward = lines.segments("forward")
    assert _direction(forward[0]) == pytest.approx([1.0, 0.0, 0.0])  # the chassis' +X, its Forward
    axles = lines.segments("axle")
    assert len(axles) == 2
    for axle, connector in zip(axles, connectors):
        assert abs(_direction(axle) @ np.array(connector.matrix_world)[:3, 0]) == pytest.approx(1.0)
        assert (axle[0] + axle[1]) / 2 == pytest.approx(np.array(connector.matrix_world.translation))
    slider.jakobsen.enabled = False  # what does not take part is not drawn
    assert len(overlay.overlay_lines(bpy.context.view_layer.objects).segments("limit")) < len(limit)


def _angle_between(a, b) -> float:
    return math.acos(max(-1.0, min(1.0, float(_direction((np.zeros(3), a)) @ _direction((np.zeros(3), b))))))


@pytest.mark.parametrize("rotation, cone, twist", [((0.0, 0.0, 0.0), 0.3, 0.2), ((0.0, math.pi / 2, 0.0), 1.2, 1.0),
                                                   ((0.4, -0.7, 1.9), 2.0, 0.05)])
def test_the_overlay_draws_a_ragdolls_cone_and_twist_and_a_cardans_cone_only_when_limited(blender, rotation, cone,
                                                                                         twist):
    from mathutils import Euler

    body = _cube("Body", location=(0.0, 0.0, 0.0))
    origin = np.array([1.0, -2.0, 0.5])
    ragdoll = _enable(_empty("Shoulder", tuple(origin), rotation), 'CONNECTOR', connector_type='RAGDOLL',
                      object_b=body, cone_angle=cone, twist_angle=twist)
    ragdoll.empty_display_size = 0.5
    bpy.context.view_layer.update()
    r = np.array(Euler(rotation).to_matrix())
    limit = overlay.overlay_lines(bpy.context.view_layer.objects).segments("limit")
    points = limit.reshape(-1, 3) - origin
    far = points[np.linalg.norm(points, axis=1) > 0.3]  # the cone's rim and sides' ends, 0.4 from the apex
    assert len(far) >= 24
    assert np.linalg.norm(far, axis=1) == pytest.approx(0.4)
    assert [_angle_between(p, r[:, 2]) for p in far] == pytest.approx([cone] * len(far), abs=1e-6)
    # The twist range: an arc about Z from -twist to +twist, from X, 0.225 from the origin.
    arc = points[np.abs(np.linalg.norm(points, axis=1) - 0.225) < 1e-6]
    twists = sorted(math.atan2(p @ r[:, 1], p @ r[:, 0]) for p in arc)
    assert twists[0] == pytest.approx(-twist) and twists[-1] == pytest.approx(twist)
    assert len(arc) >= 4 and all(abs(p @ r[:, 2]) < 1e-6 for p in arc)

    cardan = _enable(_empty("Joint", (4.0, 0.0, 0.0), rotation), 'CONNECTOR', connector_type='CARDAN',
                     object_b=body, cone_angle=cone)
    cardan.empty_display_size = 0.5
    ragdoll.jakobsen.enabled = False
    bpy.context.view_layer.update()
    assert len(overlay.overlay_lines(bpy.context.view_layer.objects).segments("limit")) == 0
    cardan.jakobsen.connector.use_cone_limit = True
    points = overlay.overlay_lines(bpy.context.view_layer.objects).segments("limit").reshape(-1, 3) - [4.0, 0, 0]
    far = points[np.linalg.norm(points, axis=1) > 0.3]
    assert [_angle_between(p, r[:, 2]) for p in far] == pytest.approx([cone] * len(far), abs=1e-6)


@pytest.mark.parametrize("rotation", [(0.0, 0.0, 0.0), (0.4, -0.7, 1.9)])
def test_the_overlay_draws_a_box_connectors_box_and_a_twist_sliders_range_and_arc(blender, rotation):
    from mathutils import Euler

    body = _cube("Body", location=(0.0, 0.0, 0.0))
    origin = np.array([0.0, 3.0, 1.0])
    lower, upper = np.array([-0.2, -0.5, 0.0]), np.array([0.4, 0.1, 0.3])
    _enable(_empty("Box", tuple(origin), rotation), 'CONNECTOR', connector_type='BOX', object_b=body,
            box_lower=tuple(lower), box_upper=tuple(upper))
    bpy.context.view_layer.update()
    r = np.array(Euler(rotation).to_matrix())
    edges = overlay.overlay_lines(bpy.context.view_layer.objects).segments("limit")
    assert len(edges) == 12
    local = (edges.reshape(-1, 3) - origin) @ r  # in the Empty's axes
    corners = {tuple(np.round(p, 5)) for p in local}  # (matrix_world is single precision)
    assert len(corners) == 8
    assert local.min(axis=0) == pytest.approx(lower, abs=1e-6) and local.max(axis=0) == pytest.approx(upper, abs=1e-6)
    for a, b in (edges - origin) @ r:  # each edge runs along one of the Empty's axes
        assert np.count_nonzero(np.abs(b - a) > 1e-5) == 1

    bpy.data.objects["Box"].jakobsen.enabled = False
    _enable(_empty("Screw", tuple(origin), rotation), 'CONNECTOR', connector_type='TWIST_SLIDER', object_b=body,
            use_linear_limit=True, distance_min=-0.1, distance_max=0.6, use_angular_limit=True,
            angle_min=-1.0, angle_max=2.5)
    bpy.context.view_layer.update()
    limit = overlay.overlay_lines(bpy.context.view_layer.objects).segments("limit")
    assert any(np.allclose(s, [origin - 0.1 * r[:, 2], origin + 0.6 * r[:, 2]], atol=1e-6) for s in limit)
    ends = [limit[-2][1] - origin, limit[-1][1] - origin]  # the arc's closing radii
    for end, angle in zip(ends, (-1.0, 2.5)):
        assert math.atan2(end @ r[:, 1], end @ r[:, 0]) == pytest.approx(angle)


def test_the_sidebar_shows_the_active_objects_name_and_role_each_at_full_width(blender):
    """Side by side on one row the name and the role were both cut at the default width."""
    crate = _cube("A Crate With A Long Name")
    drawn = _draw(ui.sidebar.VIEW3D_PT_jakobsen, crate)
    assert "A Crate With A Long Name" in drawn.texts
    assert ("", crate.jakobsen, "type", "inline") in drawn.shown
