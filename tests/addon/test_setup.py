"""Registration, settings, panels and the operators that set up a scene from the selection."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import jakobsen_physics as addon  # noqa: E402
from jakobsen_physics import actions, baking, operators, properties, ui  # noqa: E402

pytestmark = pytest.mark.blender

CLASSES = properties.classes + operators.classes + ui.classes
CLASS_NAMES = [cls.__name__ for cls in CLASSES]


def _registered() -> dict:
    return {
        "Scene.jakobsen": hasattr(bpy.types.Scene, "jakobsen"),
        "Object.jakobsen": hasattr(bpy.types.Object, "jakobsen"),
        "classes": [cls.__name__ for cls in CLASSES if cls.is_registered],
        "types": [cls.__name__ for cls in CLASSES if hasattr(bpy.types, cls.__name__)],
        "operators": [name for name in ("bake", "free_bake", "add_body", "add_connector", "add_spring", "add_motor")
                      if hasattr(bpy.types, f"JAKOBSEN_OT_{name}")],
    }


def test_register_unregister_register_leaves_nothing_behind(blender):
    assert _registered()["classes"] == CLASS_NAMES
    addon.unregister()
    try:
        assert _registered() == {"Scene.jakobsen": False, "Object.jakobsen": False, "classes": [], "types": [],
                                 "operators": []}
        with pytest.raises((AttributeError, RuntimeError)):
            bpy.ops.jakobsen.bake()
    finally:
        addon.register()
    state = _registered()
    assert state["Scene.jakobsen"] and state["Object.jakobsen"] and state["classes"] == CLASS_NAMES
    assert len(state["operators"]) == 6
    assert bpy.context.scene.jakobsen.substeps == 10


def _setting_groups():
    return [cls for cls in properties.classes]


def test_every_setting_has_a_tooltip_and_a_unit_where_one_applies(blender):
    missing = [f"{cls.__name__}.{p.identifier}" for cls in _setting_groups()
               for p in cls.bl_rna.properties if p.identifier not in ("rna_type", "name") and not p.description]
    assert missing == []
    o = bpy.types.Object.bl_rna.properties["jakobsen"].fixed_type
    props = {g: o.properties[g].fixed_type.properties
             for g in ("rigid_body", "cloth", "connector", "spring", "motor")}
    assert props["rigid_body"]["mass"].unit == 'MASS'
    assert props["cloth"]["thickness"].subtype == 'DISTANCE'
    assert props["cloth"]["vertex_mass"].unit == 'MASS'
    assert props["connector"]["angle_min"].subtype == 'ANGLE'
    assert props["connector"]["suspension_rest"].subtype == 'DISTANCE'
    assert props["motor"]["target_linear_speed"].unit == 'VELOCITY'
    assert props["connector"]["box_lower"].subtype == 'XYZ_LENGTH'
    assert props["spring"]["break_stretch"].subtype == 'DISTANCE'
    assert "kg/m" in props["rigid_body"]["drag"].description
    assert "20 per second" in props["rigid_body"]["follow_position"].description
    scene = bpy.types.Scene.bl_rna.properties["jakobsen"].fixed_type.properties
    assert scene["gravity"].subtype == 'ACCELERATION'
    assert scene["cache_directory"].subtype == 'DIR_PATH'


def test_defaults_and_choices(blender):
    props = bpy.context.scene.jakobsen
    assert (props.substeps, props.iterations, props.output, props.use_scene_gravity) == (10, 1, 'SHAPE_KEYS', True)
    assert [i.identifier for i in props.bl_rna.properties["output"].enum_items] == ['SHAPE_KEYS', 'PC2']
    ob = bpy.types.Object.bl_rna.properties["jakobsen"].fixed_type
    connector = ob.properties["connector"].fixed_type.properties["connector_type"]
    assert [i.identifier for i in connector.enum_items] == [
        'FIXED', 'HINGE', 'BALL_SOCKET', 'CARDAN', 'RAGDOLL', 'SLIDER', 'TWIST_SLIDER', 'PLANAR', 'BOX',
        'WHEEL_SUSPENSION']
    motor = ob.properties["motor"].fixed_type.properties["mode"]
    assert [i.identifier for i in motor.enum_items] == ['REGULATE_SPEED', 'APPLY_FORCE', 'SERVO']
    rigid = ob.properties["rigid_body"].fixed_type.properties
    assert [i.identifier for i in rigid["dynamic"].enum_items] == ['ON', 'OFF', 'GHOST']
    assert [i.identifier for i in rigid["collision_shape"].enum_items] == [
        'AUTOMATIC', 'BOX', 'SPHERE', 'CAPSULE', 'CYLINDER', 'CONVEX_HULL', 'STATIC_MESH']


def test_frame_range_follows_the_scene_unless_told_otherwise(blender):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 11, 42
    props = scene.jakobsen
    assert props.frame_range() == (11, 42)
    props.use_scene_range = False
    props.frame_start, props.frame_end = 3, 9
    assert props.frame_range() == (3, 9)


def test_enabling_an_empty_makes_it_a_connector(blender, helpers):
    empty = helpers.link(bpy.data.objects.new("E", None))
    mesh = helpers.link(bpy.data.objects.new("M", helpers.grid_mesh("M", 2, 2, 1.0)))
    empty.jakobsen.enabled = True
    mesh.jakobsen.enabled = True
    assert (empty.jakobsen.type, mesh.jakobsen.type) == ('CONNECTOR', 'RIGID_BODY')
    empty.jakobsen.connector.object_a = mesh
    assert empty.jakobsen.pair() == (mesh, None)


def _panel_polls(obj) -> list[str]:
    context = SimpleNamespace(object=obj)
    # The top-level panels (sub-panels such as Cloth > Pressure open inside their parent).
    return [cls.__name__ for cls in ui.physics.classes if cls.bl_region_type == 'WINDOW'
            and getattr(cls, "bl_parent_id", "PHYSICS_PT_jakobsen") == "PHYSICS_PT_jakobsen" and cls.poll(context)]


def test_physics_panels_show_only_what_applies(blender, helpers):
    mesh = helpers.link(bpy.data.objects.new("M", helpers.grid_mesh("M", 2, 2, 1.0)))
    empty = helpers.link(bpy.data.objects.new("E", None))
    camera = helpers.link(bpy.data.objects.new("C", bpy.data.cameras.new("C")))
    assert _panel_polls(mesh) == ["PHYSICS_PT_jakobsen"]
    assert _panel_polls(camera) == []
    mesh.jakobsen.enabled = True
    # Simulated objects end with their Cache panel (as Blender's Cloth does); a collider has none.
    expected = {'RIGID_BODY': ["body", "cache"], 'CLOTH': ["cloth", "cache"],
                'SOFT_BODY': ["soft_body", "cloth", "cache"], 'COLLIDER': ["collider"]}
    for role, panels in expected.items():
        mesh.jakobsen.type = role
        assert _panel_polls(mesh) == ["PHYSICS_PT_jakobsen"] + [f"PHYSICS_PT_jakobsen_{p}" for p in panels]
    empty.jakobsen.enabled = True
    for role in ('CONNECTOR', 'SPRING', 'MOTOR'):
        empty.jakobsen.type = role
        assert _panel_polls(empty) == ["PHYSICS_PT_jakobsen", f"PHYSICS_PT_jakobsen_{role.lower()}"]
    empty.jakobsen.type = 'CLOTH'  # a type that does not suit an Empty shows no settings
    assert _panel_polls(empty) == ["PHYSICS_PT_jakobsen"]
    parents = {cls.__name__: getattr(cls, "bl_parent_id", "") for cls in ui.classes}

    def root(name):  # a sub-panel's chain of parents (the Vehicle panel hangs under Rigid Body)
        while parents.get(name):
            name = parents[name]
        return name

    assert {root(name) for name in parents if name.startswith("PHYSICS_PT_jakobsen_")} == {"PHYSICS_PT_jakobsen"}
    assert parents["SCENE_PT_jakobsen_bake"] == "SCENE_PT_jakobsen_solver"


def _select(*objects, active):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in objects:
        obj.select_set(True)
    bpy.context.view_layer.objects.active = active


def test_add_connector_spring_and_motor_from_the_selection(blender, helpers):
    base = helpers.link(bpy.data.objects.new("Base", helpers.grid_mesh("Base", 2, 2, 1.0)))
    wheel = helpers.link(bpy.data.objects.new("Wheel", helpers.grid_mesh("Wheel", 2, 2, 0.5)))
    base.location, wheel.location = (0.0, 0.0, 1.0), (1.0, 0.5, 0.4)
    bpy.context.view_layer.update()

    _select(base, wheel, active=wheel)
    assert bpy.ops.jakobsen.add_connector(connector_type='WHEEL_SUSPENSION') == {'FINISHED'}
    connector = bpy.context.view_layer.objects.active
    assert connector.type == 'EMPTY' and connector.jakobsen.enabled and connector.jakobsen.type == 'CONNECTOR'
    c = connector.jakobsen.connector
    assert (c.connector_type, c.object_a, c.object_b) == ('WHEEL_SUSPENSION', base, wheel)
    assert tuple(connector.matrix_world.translation) == pytest.approx((1.0, 0.5, 0.4))
    assert base.jakobsen.enabled and base.jakobsen.type == 'RIGID_BODY' and wheel.jakobsen.enabled

    _select(base, wheel, active=wheel)
    assert bpy.ops.jakobsen.add_spring() == {'FINISHED'}
    spring = bpy.context.view_layer.objects.active
    assert spring.jakobsen.type == 'SPRING'
    assert spring.jakobsen.spring.rest_length == pytest.approx(np.linalg.norm([1.0, 0.5, -0.6]), abs=1e-6)
    assert tuple(spring.matrix_world.translation) == pytest.approx((0.5, 0.25, 0.7))

    _select(wheel, active=wheel)
    assert bpy.ops.jakobsen.add_motor(motor_type='ANGULAR') == {'FINISHED'}
    motor = bpy.context.view_layer.objects.active
    assert motor.jakobsen.pair() == (wheel, None)  # a motor drives Object A, relative to the world here
    _select(base, wheel, active=wheel)
    assert bpy.ops.jakobsen.add_motor(motor_type='LINEAR') == {'FINISHED'}
    assert bpy.context.view_layer.objects.active.jakobsen.pair() == (wheel, base)  # driven, reference

    third = helpers.link(bpy.data.objects.new("Third", helpers.grid_mesh("Third", 2, 2, 0.5)))
    bpy.context.view_layer.update()
    _select(base, wheel, third, active=wheel)
    with pytest.raises(RuntimeError, match="Select one or two meshes, not 3"):
        bpy.ops.jakobsen.add_connector()


def test_add_body_sets_the_selected_meshes(blender, helpers):
    a = helpers.link(bpy.data.objects.new("A", helpers.grid_mesh("A", 2, 2, 1.0)))
    b = helpers.link(bpy.data.objects.new("B", helpers.grid_mesh("B", 2, 2, 1.0)))
    bpy.context.view_layer.update()
    _select(a, b, active=a)
    assert bpy.ops.jakobsen.add_body(type='CLOTH') == {'FINISHED'}
    assert [(o.jakobsen.enabled, o.jakobsen.type) for o in (a, b)] == [(True, 'CLOTH')] * 2


@pytest.mark.parametrize("mode", ['XYZ', 'ZXY', 'QUATERNION', 'AXIS_ANGLE'])
def test_transform_keys_replay_the_poses_and_free_restores_the_action(blender, helpers, mode):
    from mathutils import Euler, Matrix

    obj = helpers.link(bpy.data.objects.new("Body", helpers.grid_mesh("Body", 2, 2, 1.0)))
    obj.rotation_mode = mode
    obj.scale = (1.0, 2.0, 1.0)
    obj.keyframe_insert("location", frame=1)  # the user's own animation, to be put back
    user = obj.animation_data.action
    # A body tumbling past +-180 degrees (Euler continuity) and moving, 12 frames.
    poses = np.array([np.array(Matrix.Translation((0.1 * k, 0.0, 2.0 - 0.05 * k * k))
                               @ Euler((0.6 * k, 0.3 * k, -0.45 * k), 'XYZ').to_matrix().to_4x4())
                      for k in range(12)])

    baking.write_transform_keys(obj, 5, poses)

    assert obj.animation_data.action.name == "JK_Bake Body"
    assert len(actions.assigned_fcurves(obj)) == 3 + (4 if mode in ('QUATERNION', 'AXIS_ANGLE') else 3)
    scene = bpy.context.scene
    for k in (0, 5, 11):
        scene.frame_set(5 + k)
        m = np.array(obj.matrix_world)
        np.testing.assert_allclose(m[:3, 3], poses[k][:3, 3], atol=1e-5)
        np.testing.assert_allclose(m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0), poses[k][:3, :3], atol=1e-5)
        assert np.linalg.norm(m[:3, 1]) == pytest.approx(2.0)  # scale left alone
    if mode in ('XYZ', 'ZXY'):
        fc = [f for f in actions.assigned_fcurves(obj) if f.data_path == "rotation_euler"]
        values = np.array([[kp.co[1] for kp in f.keyframe_points] for f in fc])
        assert np.abs(np.diff(values, axis=1)).max() < 3.0  # no +-2 pi jumps or flips between frames

    assert baking.free_bake(obj)
    assert obj.animation_data.action == user
    assert "JK_Bake Body" not in bpy.data.actions


class FakeLayout:
    """Stands in for ``UILayout`` so panels can be drawn headless: every property, enum value,
    vertex-group search and operator a panel names must exist, and what is drawn is recorded."""

    def __init__(self, drawn: list):
        self.drawn = drawn

    def _sub(self, *args, **kwargs):
        return FakeLayout(self.drawn)

    row = column = box = split = grid_flow = _sub
    use_property_decorate = True

    def prop(self, data, prop, **kwargs):
        assert prop in data.bl_rna.properties, f"{data.bl_rna.identifier} has no property {prop!r}"
        self.drawn.append(prop)

    def prop_decorator(self, data, prop, **kwargs):
        assert prop in data.bl_rna.properties, f"{data.bl_rna.identifier} has no property {prop!r}"

    def prop_enum(self, data, prop, value, **kwargs):
        assert value in data.bl_rna.properties[prop].enum_items, f"{prop} has no item {value!r}"
        self.drawn.append(f"{prop}={value}")

    def prop_search(self, data, prop, search_data, search_prop, **kwargs):
        assert prop in data.bl_rna.properties and search_prop in search_data.bl_rna.properties
        self.drawn.append(prop)

    def _operator_type(self, idname):
        module, name = idname.split(".")
        return getattr(getattr(bpy.ops, module), name).get_rna_type()

    def operator(self, idname, **kwargs):
        rna = self._operator_type(idname)
        self.drawn.append(idname)
        drawn = self.drawn

        class Properties:
            def __setattr__(self, key, value):
                assert key in rna.properties, f"{idname} has no property {key!r}"
                drawn.append(f"{idname}.{key}={value}")

        return Properties()

    def operator_menu_enum(self, idname, prop, **kwargs):
        assert prop in self._operator_type(idname).properties
        self.drawn.append(f"{idname}:{prop}")

    def label(self, **kwargs):
        self.drawn.append(f"label:{kwargs.get('text', '')}")

    def separator(self, **kwargs):
        pass


def _draw(panel_class, context) -> list[str]:
    drawn = []
    panel = SimpleNamespace(layout=FakeLayout(drawn))
    if hasattr(panel_class, "draw_header"):
        panel_class.draw_header(panel, context)
    panel_class.draw(panel, context)
    return drawn


def _unit_box():
    corners = [(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return corners, faces


def test_the_connector_mapping_reads_what_the_engines_table_gives_each_type(blender, helpers):
    """One table says which connector type takes which setting; the mapping passes exactly those
    (every limit switched on), and the engine accepts them."""
    from jakobsen_engine import ModelBuilder
    from jakobsen_engine.constraints import kinds
    from jakobsen_physics.mapping.connectors import joint_settings
    from jakobsen_physics.translate.settings import JOINT_KINDS

    empty = helpers.link(bpy.data.objects.new("E", None))
    empty.jakobsen.enabled = True
    c = empty.jakobsen.connector
    c.use_angular_limit = c.use_linear_limit = c.use_cone_limit = c.use_breaking = True
    types = [i.identifier for i in c.bl_rna.properties["connector_type"].enum_items]
    assert sorted(JOINT_KINDS) == sorted(types) and sorted(JOINT_KINDS.values()) == sorted(kinds.KINDS)
    for kind in types:
        c.connector_type = kind
        settings = joint_settings(empty, {}, 24.0)
        assert set(settings) == set(kinds.settings_of(JOINT_KINDS[kind])), kind
        builder = ModelBuilder()
        box = builder.add_rigid_body(*_unit_box(), name="Box")
        builder.add_joint(JOINT_KINDS[kind], None, box, (0.0, 0.0, 0.0), name=empty.name, **settings)
    c.connector_type = 'HINGE'
    c.use_angular_limit = False
    assert "angle_limits" not in joint_settings(empty, {}, 24.0)


def test_panels_draw_existing_settings_and_only_those_that_apply(blender, helpers):
    mesh = helpers.link(bpy.data.objects.new("M", helpers.grid_mesh("M", 2, 2, 1.0)))
    empty = helpers.link(bpy.data.objects.new("E", None))
    scene = bpy.context.scene
    context = SimpleNamespace(object=mesh, scene=scene)
    physics = {cls.__name__: cls for cls in ui.physics.classes}

    assert _draw(physics["PHYSICS_PT_jakobsen"], context) == [
        "enabled", "type=RIGID_BODY", "type=CLOTH", "type=SOFT_BODY", "type=COLLIDER"]
    s = mesh.jakobsen
    for s.rigid_body.use_density in (False, True):
        drawn = _draw(physics["PHYSICS_PT_jakobsen_body"], context)
        assert ("density" in drawn, "mass" in drawn) == (s.rigid_body.use_density, not s.rigid_body.use_density)
    for s.cloth.use_vertex_mass in (False, True):
        drawn = _draw(physics["PHYSICS_PT_jakobsen_cloth"], context)
        assert "pin_group" in drawn and ("vertex_mass" in drawn) == s.cloth.use_vertex_mass
    assert "shape" in _draw(physics["PHYSICS_PT_jakobsen_collider"], context)

    context.object = empty
    empty.jakobsen.enabled = True
    assert _draw(physics["PHYSICS_PT_jakobsen"], context) == [
        "enabled", "type=CONNECTOR", "type=SPRING", "type=MOTOR"]
    c = empty.jakobsen.connector
    for kind in [i.identifier for i in c.bl_rna.properties["connector_type"].enum_items]:
        c.connector_type = kind
        drawn = _draw(physics["PHYSICS_PT_jakobsen_connector"], context)
        assert ("suspension_stiffness" in drawn) == (kind == 'WHEEL_SUSPENSION')
        assert ("cone_angle" in drawn) == (kind in ('RAGDOLL', 'CARDAN'))
        assert ("angle_min" in drawn) == (kind in ('HINGE', 'TWIST_SLIDER'))
        assert ("distance_min" in drawn) == (kind in ('SLIDER', 'TWIST_SLIDER'))
        assert ("box_lower" in drawn) == (kind == 'BOX')
        assert ("limit_bounce" in drawn) == (kind not in ('FIXED', 'BALL_SOCKET', 'PLANAR'))
        assert "breaking_force" in drawn and "ignore_collisions" in drawn
        assert "label:Set Object A, Object B or both" in drawn
    sp = empty.jakobsen.spring
    for kind, linear, angular in (('LINEAR', True, False), ('ANGULAR', False, True), ('BOTH', True, True)):
        sp.spring_type = kind
        drawn = _draw(physics["PHYSICS_PT_jakobsen_spring"], context)
        assert ("rest_length" in drawn, "angular_stiffness" in drawn) == (linear, angular)
        assert ("use_current_length" in drawn, "break_stretch" in drawn, "elastic_stretch" in drawn) == \
            (linear, linear, linear)
    m = empty.jakobsen.motor
    for m.motor_type in ('ANGULAR', 'LINEAR'):
        for m.mode in ('REGULATE_SPEED', 'APPLY_FORCE', 'SERVO'):
            drawn = _draw(physics["PHYSICS_PT_jakobsen_motor"], context)
            assert ("max_torque" in drawn) == (m.motor_type == 'ANGULAR')
            assert ("target_angle" in drawn) == (m.motor_type == 'ANGULAR' and m.mode == 'SERVO')

    props = scene.jakobsen
    for props.use_scene_gravity in (True, False):
        for props.output in ('SHAPE_KEYS', 'PC2'):
            for props.use_scene_range in (True, False):
                _draw(ui.scene.SCENE_PT_jakobsen_solver, context)
                drawn = _draw(ui.scene.SCENE_PT_jakobsen_bake, context)
                assert "jakobsen.bake" in drawn and "jakobsen.free_bake" in drawn
                assert ("cache_directory" in drawn) == (props.output == 'PC2')
    drawn = _draw(ui.sidebar.VIEW3D_PT_jakobsen, context)
    assert {"jakobsen.add_body.type=CLOTH", "jakobsen.add_connector:connector_type", "jakobsen.add_spring",
            "jakobsen.add_motor:motor_type", "jakobsen.bake", "jakobsen.free_bake"} <= set(drawn)
