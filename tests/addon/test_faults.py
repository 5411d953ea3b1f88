"""The fault suite: bad input and awkward life cycles through the add-on, as a user or a script
meets them.

Every case is built from code in an empty file and asserts (a) the exact kind of outcome (the
bake refused with the add-on's own report, not a Python exception escaping it; or baked with
every written value finite; or cancelled), (b) that the message names the object (by name, in
quotes) and, for a setting, the setting as the panel labels it, and (c) for every refused or
cancelled bake, that a snapshot of the scene (every object's matrix, mesh, shape keys, actions,
modifiers, visibility, the frame) is bit-identical afterwards.

A refused bake through the operator shows up in a script as the ``RuntimeError`` Blender raises
for an operator's ERROR report: ``Error: <the message>``. A Python exception escaping the
operator shows up as ``Error: Python: Traceback ...``: that is a crash, never an answer.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics import baking, previews  # noqa: E402
from jakobsen_physics.bake_job import PREVIEW_PROPERTY, BakeJob  # noqa: E402
from jakobsen_tools import main  # noqa: E402
from jakobsen_tools.bake import BakeCommandError, bake_file  # noqa: E402
from jakobsen_engine import JakobsenError, Solver  # noqa: E402

from . import fault_scenes as fs  # noqa: E402

pytestmark = pytest.mark.blender


# -- outcomes ---------------------------------------------------------------------------------------

def snap(helpers) -> dict:
    """The snapshot, with the depsgraph brought up to date first (objects built from code have a
    stale matrix_world until then, which a bake's frame change would update)."""
    bpy.context.view_layer.update()
    return helpers.snapshot()


def _assert_same(before: dict, after: dict, what: str) -> None:
    diff = fs.differences(before, after)
    assert not diff, f"{what} changed the scene:\n  " + "\n  ".join(diff)


def _assert_names(message: str, objects=(), settings=()) -> None:
    for name in objects:
        assert fs.names_object(message, name), f"the message does not name '{name}': {message!r}"
    for label in settings:
        assert fs.names_setting(message, label), f"the message does not name the setting {label}: {message!r}"


def _assert_reported(message: str, *, internal_error_allowed: bool = False) -> None:
    """The add-on's own report; for bad input not an "internal error" either (another exception
    type caught and reported as a fault of the add-on: bad input must get a message of its own)."""
    assert fs.is_report(message), f"the add-on did not report this itself, something escaped it:\n{message}"
    if not internal_error_allowed:
        assert "internal error" not in message, f"bad input reported as a fault of the add-on: {message!r}"


def refused(helpers, *, objects=(), settings=(), before: dict | None = None) -> str:
    """Bake through the operator, as a script does: it must be refused before anything is
    computed, with the add-on's report naming ``objects`` and ``settings``, and leave the scene
    bit-identical. Returns the message."""
    before = before if before is not None else snap(helpers)
    with pytest.raises(RuntimeError) as info:
        bpy.ops.jakobsen.bake()
    message = str(info.value)
    _assert_reported(message)
    assert "Bake stopped at frame" not in message, f"not refused up front, stopped mid-bake: {message!r}"
    _assert_names(message, objects, settings)
    _assert_same(before, snap(helpers), "a refused bake")
    return message


def refused_or_finite(helpers, *, any_of: tuple[str, ...], settings_any_of: tuple[str, ...] = ()) -> str:
    """Bake through the operator: either it is refused or stopped with the add-on's report naming
    one of the objects ``any_of`` or one of the settings ``settings_any_of``, and the scene is
    bit-identical; or it finishes and every key and shape-key coordinate written is finite
    (float32). Returns "refused" or "baked"."""
    before = snap(helpers)
    try:
        result = bpy.ops.jakobsen.bake()
    except RuntimeError as error:
        message = str(error)
        _assert_reported(message)
        assert (any(fs.names_object(message, n) for n in any_of)
                or any(fs.names_setting(message, s) for s in settings_any_of)), (
            f"the message names none of {any_of + settings_any_of}: {message!r}")
        _assert_same(before, snap(helpers), "a refused bake")
        print(f"refused: {message.strip()}")
        return "refused"
    assert result == {'FINISHED'}
    baked_finite()
    print("baked, every value finite")
    return "baked"


def baked_finite() -> None:
    problems = fs.non_finite_output()
    assert not problems, "the bake wrote non-finite values:\n  " + "\n  ".join(problems[:10])


def jk_actions() -> list[str]:
    return sorted(a.name for a in bpy.data.actions if a.name.startswith("JK_") or baking.RECORD in a)


def preview_objects() -> list[str]:
    return sorted(o.name for o in bpy.data.objects if PREVIEW_PROPERTY in o or o.name.startswith("JK Preview"))


# -- bad meshes ---------------------------------------------------------------------------------------

def _cube_with(index: int, co):
    def make(name, location):
        obj = fs.mesh_object(name, fs.cube_verts(), fs.CUBE_FACES, location=location)
        fs.set_co(obj, index, co)
        return obj
    return make


def _raw(verts, faces=(), edges=()):
    def make(name, location):
        return fs.mesh_object(name, verts, faces, edges, location=location)
    return make


BAD_MESHES = {
    "no-faces": _raw([(0, 0, 0), (0, 0, 1), (0, 1, 1)], edges=[(0, 1), (1, 2)]),
    "no-vertices": _raw([]),
    "one-place": _raw([(0.25, 0.25, 0.0)] * 4, faces=[(0, 1, 2, 3)]),
    "nan-vertex": _cube_with(3, (fs.NAN, 0.0, 0.0)),
    "inf-vertex": _cube_with(5, (0.0, fs.INF, 0.0)),
    "minus-inf-vertex": _cube_with(6, (0.0, 0.0, -fs.INF)),
}
BAD_MESH_CASES = [(kind, role) for kind in BAD_MESHES for role in ('RIGID_BODY', 'CLOTH', 'COLLIDER')
                  if not (kind == "no-faces" and role == 'COLLIDER')]  # a collider fits a shape to edges too


@pytest.fixture
def previous_bake(pinned_cloth):
    """The fixtures' pinned cloth 'Flag' over a ground, baked once (frames 1-4): a refused bake
    must leave this previous bake alone."""
    cloth = pinned_cloth(frames=(1, 4))
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    return cloth


@pytest.mark.parametrize("kind, role", BAD_MESH_CASES, ids=[f"{k}-{r.lower()}" for k, r in BAD_MESH_CASES])
def test_a_bad_mesh_is_refused_by_name(previous_bake, helpers, kind, role):
    obj = BAD_MESHES[kind]("Lump", (3.0, 0.0, 2.0))
    fs.enable(obj, role)
    refused(helpers, objects=["Lump"])


ZERO_SCALES = {
    "rigid-body-y": ('RIGID_BODY', (1.0, 0.0, 1.0)),
    "collider-y": ('COLLIDER', (1.0, 0.0, 1.0)),
    "cloth-z-flat": ('CLOTH', (1.0, 1.0, 0.0)),  # a flat sheet keeps its area, but has no object space
    "cloth-x": ('CLOTH', (0.0, 1.0, 1.0)),
}


@pytest.mark.parametrize("role, scale", ZERO_SCALES.values(), ids=ZERO_SCALES.keys())
def test_a_zero_scale_on_an_axis_is_refused_by_name(previous_bake, helpers, role, scale):
    obj = (fs.sheet("Lump", location=(3.0, 0.0, 2.0), role=role) if role == 'CLOTH'
           else fs.box("Lump", location=(3.0, 0.0, 2.0), role=role))
    obj.scale = scale
    message = refused(helpers, objects=["Lump"])
    assert re.search(r"scale|zero area", message, re.IGNORECASE), message


@pytest.mark.parametrize("which", ["cloth", "rigid-body"])
def test_a_mesh_in_edit_mode_is_refused_by_name(previous_bake, helpers, which):
    obj = previous_bake if which == "cloth" else fs.box("Lump", location=(3.0, 0.0, 2.0))
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode='EDIT')
    try:
        assert obj.mode == 'EDIT'
        refused(helpers, objects=[obj.name], settings=["Edit Mode"])
    finally:
        bpy.ops.object.mode_set(mode='OBJECT')


def test_shared_mesh_data_with_shape_key_output_is_refused_by_name(previous_bake, helpers):
    fs.link(bpy.data.objects.new("Flag Twin", previous_bake.data))
    refused(helpers, objects=["Flag", previous_bake.data.name])


@pytest.mark.parametrize("modifier, settings", [
    ('SUBSURF', {"levels": 1}),
    ('DECIMATE', {"ratio": 0.5}),
    ('ARRAY', {"count": 2}),
], ids=["subdivision-adds", "decimate-removes", "array-adds"])
def test_modifiers_that_change_the_vertex_count_are_refused_for_shape_keys(previous_bake, helpers, modifier,
                                                                           settings):
    mod = previous_bake.modifiers.new("Changer", modifier)
    for key, value in settings.items():
        setattr(mod, key, value)
    refused(helpers, objects=["Flag"])


@pytest.mark.parametrize("case", ["cloth-modifier", "soft-body-modifier", "render-only-cloth-modifier",
                                  "active-rigid-body"])
def test_blenders_own_physics_on_a_baked_object_is_refused_by_name(previous_bake, helpers, case):
    """Blender's own simulation on an object the bake moves would replace the baked motion on
    playback (measured: an Active Rigid Body held the keyed cube at its start on every frame)."""
    if case == "active-rigid-body":
        obj = fs.box("Crate", location=(3.0, 0.0, 2.0))
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.rigidbody.object_add(type='ACTIVE') == {'FINISHED'}
        refused(helpers, objects=["Crate"], settings=["Rigid Body"])
        return
    mod = previous_bake.modifiers.new("Sim", 'SOFT_BODY' if case == "soft-body-modifier" else 'CLOTH')
    if case == "render-only-cloth-modifier":
        mod.show_viewport = False  # still simulated in the render
    refused(helpers, objects=["Flag", "Sim"])


@pytest.mark.parametrize("case", ["cloth-modifier-off", "animated-rigid-body", "passive-rigid-body"])
def test_blenders_own_physics_that_does_not_move_the_object_bakes(previous_bake, helpers, case):
    """What Blender's physics does not move on playback is no conflict: a Cloth modifier turned
    off, a Rigid Body ticked Animated (Bullet follows the keys), a Passive one."""
    if case == "cloth-modifier-off":
        mod = previous_bake.modifiers.new("Sim", 'CLOTH')
        mod.show_viewport = mod.show_render = False
        assert bpy.ops.jakobsen.bake() == {'FINISHED'}
        return
    obj = fs.box("Crate", location=(3.0, 0.0, 2.0))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.rigidbody.object_add(type='PASSIVE' if case == "passive-rigid-body" else 'ACTIVE') == {'FINISHED'}
    obj.rigid_body.kinematic = case == "animated-rigid-body"
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(4)
    assert obj.matrix_world.translation.z < 2.0 - 0.5 * 9.81 * (3 / 24) ** 2 * 0.9  # it plays the bake's fall


def _linked_from_a_library(tmp_path, roles: dict) -> list:
    """Objects made in a library file (name -> role), linked into the empty file the add-on is
    registered in, as a shot links a set's props: the linked objects."""
    import jakobsen_physics as addon
    for name, role in roles.items():
        (fs.sheet if role == 'CLOTH' else fs.box)(name, location=(0.0, 0.0, 2.0), role=role)
    fs.ground("Floor")
    library = str(tmp_path / "props.blend")
    bpy.ops.wm.save_as_mainfile(filepath=library)
    addon.unregister()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    with bpy.data.libraries.load(library, link=True) as (_, into):
        into.objects = [*roles, "Floor"]
    for obj in into.objects:
        bpy.context.scene.collection.objects.link(obj)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 6
    return into.objects


@pytest.mark.parametrize("role", ['RIGID_BODY', 'CLOTH'])
def test_an_object_linked_from_a_library_is_refused_by_name(blender, helpers, tmp_path, role):
    """Blender does not save what is written to linked data: a linked crate baked, played its
    fall, and lost its keys when the file was saved and opened again."""
    _linked_from_a_library(tmp_path, {"Prop": role})
    message = refused(helpers, objects=["Prop"])
    assert "props.blend" in message and "Library Override" in message, message


def test_a_library_override_of_a_linked_body_bakes_and_keeps_its_keys(blender, tmp_path):
    """The way to bake a linked prop: a library override of it bakes, and its keys are still
    there after saving the file and opening it again."""
    linked = _linked_from_a_library(tmp_path, {"Prop": 'RIGID_BODY'})
    for obj in linked:
        obj.override_create(remap_local_usages=True)
    prop = bpy.data.objects["Prop", None]
    assert prop.override_library is not None
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(6)
    fallen = prop.matrix_world.translation.z
    assert fallen < 2.0 - 0.5 * 9.81 * (5 / 24) ** 2 * 0.9
    shot = str(tmp_path / "shot.blend")
    bpy.ops.wm.save_as_mainfile(filepath=shot)
    bpy.ops.wm.open_mainfile(filepath=shot)
    bpy.context.scene.frame_set(6)
    assert bpy.data.objects["Prop", None].matrix_world.translation.z == pytest.approx(fallen, abs=1e-6)


def test_an_overridden_cloth_with_a_linked_mesh_is_refused_shape_keys_and_bakes_to_pc2(blender, helpers, tmp_path):
    """A library override of a linked cloth keeps its mesh linked: shape keys on it would not be
    saved, so that is refused, naming the mesh; PC2 (a Mesh Cache modifier on the override) bakes."""
    for obj in _linked_from_a_library(tmp_path, {"Sheet": 'CLOTH'}):
        obj.override_create(remap_local_usages=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))  # (PC2 files go next to it)
    sheet = bpy.data.objects["Sheet", None]
    assert sheet.data.library is not None
    refused(helpers, objects=["Sheet", sheet.data.name], settings=["Output"])
    bpy.context.scene.jakobsen.output = 'PC2'
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert [m.type for m in sheet.modifiers] == ['MESH_CACHE']


@pytest.mark.parametrize("blend, influence", [('ADD', 1.0), ('REPLACE', 0.5), ('MULTIPLY', 0.8)])
def test_baked_keys_play_as_simulated_over_the_users_nla_and_free_puts_its_mixing_back(blender, blend, influence):
    """A crate whose animation was pushed down into an NLA strip (as an import leaves it), with
    its animation's Blending and Influence set otherwise than Replace at 1: the baked keys play
    exactly the simulated fall (they were added to the strip, or mixed in at part strength: a
    crate resting on the ground played 3 m or 1.4 m up), and Free Bake puts the strip, the
    Blending and the Influence back."""
    crate = fs.box("Crate", location=(0.0, 0.0, 2.0), size=0.5)
    crate.keyframe_insert("location", frame=1)
    crate.location.z = 5.0
    crate.keyframe_insert("location", frame=12)
    users = crate.animation_data.action
    crate.animation_data.nla_tracks.new().strips.new("lift", 1, users)
    crate.animation_data.action = None
    crate.animation_data.action_blend_type, crate.animation_data.action_influence = blend, influence
    fs.ground()
    fs.frames(1, 12)
    job = BakeJob(bpy.context.scene.name)
    job.run(bpy.context)
    simulated = job.state.bodies.position[0].copy()  # (the crate's centre, its origin, after the last frame)
    assert simulated[2] < 1.0  # it fell
    bpy.context.scene.frame_set(12)
    np.testing.assert_allclose(np.array(crate.matrix_world)[:3, 3], simulated, atol=1e-4)
    # A bake refused while it reads the scene (the user's animation shown for it) leaves this one playing.
    fs.sheet("Rag", location=(3.0, 0.0, 2.0), pin_group="Nope")
    with pytest.raises(RuntimeError):
        bpy.ops.jakobsen.bake()
    bpy.data.objects.remove(bpy.data.objects["Rag"])
    bpy.context.scene.frame_set(12)
    np.testing.assert_allclose(np.array(crate.matrix_world)[:3, 3], simulated, atol=1e-4)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    anim = crate.animation_data
    assert (anim.action, anim.action_blend_type) == (None, blend)
    assert anim.action_influence == pytest.approx(influence)
    assert [s.action for t in anim.nla_tracks for s in t.strips] == [users]


def test_absolute_shape_keys_are_refused_for_shape_key_output_and_bake_to_pc2(previous_bake, helpers, tmp_path):
    """Absolute shape keys (Relative off) play by the Evaluation Time, not by each key's value:
    the baked cloth played back lying where it started. Refused by name; PC2 bakes."""
    sheet = fs.sheet("Sheet", location=(3.0, 0.0, 2.0))
    sheet.shape_key_add(name="Basis")
    sheet.shape_key_add(name="Pleat")
    sheet.data.shape_keys.use_relative = False
    refused(helpers, objects=["Sheet"], settings=["Relative"])
    bpy.context.scene.jakobsen.output = 'PC2'
    bpy.context.scene.jakobsen.cache_directory = str(tmp_path)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}


def test_a_pin_group_that_does_not_exist_is_refused_by_name(previous_bake, helpers):
    previous_bake.jakobsen.cloth.pin_group = "Pins"
    refused(helpers, objects=["Flag", "Pins"], settings=["Pin Group"])


@pytest.mark.parametrize("more_groups", [0, 2])
def test_a_renamed_pin_group_is_followed_as_blender_s_cloth_follows_it(pinned_cloth, helpers, more_groups):
    """Renaming the pin vertex group (Blender's Cloth modifier takes the new name) bakes the same
    cloth: at bake time the group in the old one's place is used, and the bake says so; when
    Blender reports the rename (its message bus, in the interface) the Pin Group takes the new
    name. A deleted group is not replaced by the one that moves into its place."""
    from .conftest import evaluated_world

    from jakobsen_physics import renames

    cloth = pinned_cloth(frames=(1, 12))
    for k in range(more_groups):  # (groups added after the Pin Group was set)
        cloth.vertex_groups.new(name=f"other {k}")
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(12)
    pinned = evaluated_world(cloth)
    assert pinned[:, 2].min() < 1.0  # (it swings down from its pins)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    bpy.context.scene.frame_set(1)

    cloth.vertex_groups["pin"].name = "shoulders"
    job = BakeJob(bpy.context.scene.name)
    job.start(bpy.context)
    said = [w for w in job.warnings if fs.names_object(w, "Flag") and "'pin'" in w and "'shoulders'" in w]
    job.cancel()
    assert said, job.warnings
    assert cloth.jakobsen.cloth.pin_group == "pin"  # (the bake changes no setting)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(12)
    np.testing.assert_array_equal(evaluated_world(cloth), pinned)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    bpy.context.scene.frame_set(1)

    renames.follow_renamed_pin_groups()  # (what the message bus calls on a rename)
    assert cloth.jakobsen.cloth.pin_group == "shoulders"
    job = BakeJob(bpy.context.scene.name)
    job.start(bpy.context)
    assert not [w for w in job.warnings if "renamed" in w], job.warnings
    job.cancel()

    # Deleted, and another group added (with none left, in its place, as a renamed one would
    # be; it is told apart by its weights: the add-on probe's 'Mask' of every vertex pinned the
    # whole cloth).
    cloth.vertex_groups.remove(cloth.vertex_groups["shoulders"])
    cloth.vertex_groups.new(name="new pins").add(list(range(len(cloth.data.vertices))), 1.0, 'REPLACE')
    refused(helpers, objects=["Flag", "shoulders"], settings=["Pin Group"])


def test_an_empty_pin_group_is_named_in_a_warning_or_a_refusal(pinned_cloth, helpers):
    """A pin group that exists but holds no vertex pins nothing: either the bake warns (and the
    cloth falls free) or it is refused; either way the message names the object and the group
    and says that the group is empty (not that it does not exist)."""
    cloth = pinned_cloth(frames=(1, 4))
    cloth.vertex_groups.new(name="Nothing")
    cloth.jakobsen.cloth.pin_group = "Nothing"
    before = snap(helpers)
    job = BakeJob(bpy.context.scene.name)
    try:
        job.start(bpy.context)
    except JakobsenError as error:
        refused_, messages = True, [str(error)]
        _assert_same(before, snap(helpers), "a refused bake")
    else:
        job.cancel()
        _assert_same(before, snap(helpers), "a cancelled bake")
        refused_, messages = False, job.warnings
    about = [m for m in messages if fs.names_object(m, "Flag") and fs.names_object(m, "Nothing")]
    assert about, f"no message names the pin group 'Nothing' of 'Flag': {messages}"
    assert any(re.search(r"empty|no vertices|pins nothing|no weights", m, re.IGNORECASE) for m in about), (
        f"the message does not say the pin group is empty: {about}")
    if not refused_:
        assert bpy.ops.jakobsen.bake() == {'FINISHED'}
        baked_finite()


# Awkward but legal meshes: baked, with a warning naming the object (cloth), every value finite.
AWKWARD = {
    # two quads and a triangle on one edge
    "non-manifold": ([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0), (2, 1, 0), (1, 0.5, 1)],
                     [(0, 1, 2, 3), (1, 4, 5, 2), (1, 2, 6)], "non-manifold"),
    "loose-vertex": ([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (3, 3, 0)], [(0, 1, 2, 3)], "loose"),
    "zero-area-face": ([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0), (2, 0, 0), (2, 0, 0)],
                       [(0, 1, 2, 3), (4, 5, 6)], "zero area"),
    "collinear-face": ([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0), (3, 0, 0), (4, 0, 0)],
                       [(0, 1, 2, 3), (4, 5, 6)], "zero area"),
}


@pytest.mark.parametrize("kind", AWKWARD, ids=AWKWARD)
def test_an_awkward_cloth_bakes_with_a_warning_naming_it(blender, helpers, kind):
    verts, faces, words = AWKWARD[kind]
    fs.enable(fs.mesh_object("Rag", verts, faces, location=(0.0, 0.0, 2.0)), 'CLOTH')
    fs.frames(1, 4)
    job = BakeJob(bpy.context.scene.name)
    job.run(bpy.context)
    matching = [w for w in job.warnings if fs.names_object(w, "Rag") and words in w]
    assert matching, f"no warning names 'Rag' and says {words!r}: {job.warnings}"
    baked_finite()


@pytest.mark.parametrize("verts, why", [
    ([(0, 0, 0), (1, 1, 0), (1, 0, 0), (0, 1, 0)], "crosses itself"),  # a bow tie: corners out of order
    ([(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)], "one line or point"),
], ids=["bow-tie", "on-a-line"])
def test_a_cloth_whose_faces_all_have_zero_area_is_refused_saying_why(blender, helpers, verts, why):
    """A bow-tie quad's halves cancel: refused as of zero area, but not as lying on a line (which
    its vertices do not: the add-on probe found the message saying so)."""
    fs.enable(fs.mesh_object("Tie", verts, [(0, 1, 2, 3)], location=(0.0, 0.0, 1.0)), 'CLOTH')
    fs.frames(1, 4)
    message = refused(helpers, objects=["Tie"])
    assert "zero area" in message and why in message, message


AWKWARD_BODIES = {
    "cube-with-a-loose-vertex": (fs.cube_verts() + [(2.0, 0.0, 0.0)], fs.CUBE_FACES),
    "cube-with-a-fin": (fs.cube_verts() + [(0.0, 0.0, 1.5)], fs.CUBE_FACES + [(5, 7, 8)]),  # edge 5-7 in 3 faces
    "cube-with-a-zero-area-face": (fs.cube_verts() + [(0.5, 0.5, 0.5)] * 2, fs.CUBE_FACES + [(7, 8, 9)]),
}


@pytest.mark.parametrize("kind", AWKWARD_BODIES, ids=AWKWARD_BODIES)
def test_an_awkward_rigid_body_bakes_finite(blender, helpers, kind):
    verts, faces = AWKWARD_BODIES[kind]
    fs.enable(fs.mesh_object("Crate", verts, faces, location=(0.0, 0.0, 2.0)), 'RIGID_BODY')
    fs.ground()
    fs.frames(1, 6)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    baked_finite()
    assert not fs.non_finite_poses(["Crate"], range(1, 7))


SIZES = [1e-5, 1e-6, 1e4]


@pytest.mark.parametrize("size", SIZES, ids=[f"{s:g}m" for s in SIZES])
@pytest.mark.parametrize("role", ["rigid-body", "cloth"])
def test_a_very_small_or_large_object_bakes_finite_or_is_refused_by_name(blender, helpers, role, size):
    """Either a finite bake that did not blow up, or a refusal that says what is too small or too
    large and names the object, never a traceback of some other exception."""
    if role == "cloth":
        obj = fs.sheet("Speck", size=size, location=(0.0, 0.0, 2.0 * size))
    else:
        obj = fs.box("Speck", size=size, location=(0.0, 0.0, 2.0 * size))
    fs.frames(1, 4)
    rest = np.array(obj.matrix_world)
    co = np.empty(3 * len(obj.data.vertices), np.float32)
    obj.data.vertices.foreach_get("co", co)
    before = snap(helpers)
    try:
        result = bpy.ops.jakobsen.bake()
    except RuntimeError as error:
        message = str(error)
        _assert_reported(message)
        _assert_names(message, objects=["Speck"])
        assert re.search(r"small|large|tiny|big|size", message, re.IGNORECASE), (
            f"the message does not say what is too small or too large: {message!r}")
        _assert_same(before, snap(helpers), "a refused bake")
        return
    assert result == {'FINISHED'}
    baked_finite()
    # Three frames of free fall move it by 8 cm; whatever its size, it must not have blown up.
    fall = 0.5 * 9.81 * (3 / 24) ** 2
    bpy.context.scene.frame_set(4)
    if role == "cloth":
        world = helpers.evaluated_world(obj)
        start = co.reshape(-1, 3).astype(np.float64) @ rest[:3, :3].T + rest[:3, 3]
        moved = world - start
        assert np.abs(moved - moved.mean(axis=0)).max() <= 0.05 * size + 1e-9, "the cloth lost its shape"
        assert -2 * fall <= moved[:, 2].mean() <= 0.0
    else:
        m = np.array(obj.matrix_world)
        assert np.isfinite(m).all()
        np.testing.assert_allclose(m[:3, :3], rest[:3, :3], atol=1e-3 * size)
        assert -2 * fall <= m[2, 3] - rest[2, 3] <= 0.0


# -- bad settings -------------------------------------------------------------------------------------

def _solver_scene(kind: str):
    """A cloth 'Sail' (with Air Drag, for the wind) or a rigid body 'Crate' (with Drag), falling,
    frames 1-6. Returns the object's name."""
    if kind == "cloth":
        fs.sheet("Sail", air_drag=0.6)
        name = "Sail"
    else:
        fs.box("Crate", drag=0.5)
        name = "Crate"
    fs.frames(1, 6)
    return name


def _own_gravity(value):
    def apply(scene):
        scene.jakobsen.use_scene_gravity = False
        scene.jakobsen.gravity = value
    return apply


def _scene_gravity(value):
    def apply(scene):
        scene.gravity = value
    return apply


def _wind(value):
    def apply(scene):
        scene.jakobsen.wind = value
    return apply


def _damping(value):
    def apply(scene):
        scene.jakobsen.damping = value
    return apply


# Settings near float32's limit (what the properties allow): refused or stopped with a message
# naming the setting or the object, or a finite bake.
HUGE_SETTINGS = {
    "scene-gravity-3e38": (_scene_gravity((0.0, 0.0, -3e38)), ("Gravity",)),
    "scene-gravity-inf": (_scene_gravity((0.0, 0.0, -fs.INF)), ("Gravity",)),  # held at -FLT_MAX
    "own-gravity-3e38": (_own_gravity((3e38, 0.0, -3e38)), ("Gravity",)),
    "own-gravity-inf": (_own_gravity((0.0, fs.INF, 0.0)), ("Gravity",)),
    "wind-3e38": (_wind((3e38, 0.0, 0.0)), ("Wind",)),
    "wind-inf": (_wind((0.0, -fs.INF, 0.0)), ("Wind",)),
    "damping-huge": (_damping(fs.INF), ("Damping",)),
}
# Settings that are not numbers at all: refused up front, naming the setting.
NAN_SETTINGS = {
    "scene-gravity-nan": (_scene_gravity((0.0, 0.0, fs.NAN)), ("Gravity",)),
    "own-gravity-nan": (_own_gravity((fs.NAN, 0.0, -9.81)), ("Gravity",)),
    "wind-nan": (_wind((fs.NAN, 0.0, 0.0)), ("Wind",)),
    "damping-nan": (_damping(fs.NAN), ("Damping",)),
}


@pytest.mark.parametrize("kind", ["cloth", "rigid"])
@pytest.mark.parametrize("setting", HUGE_SETTINGS, ids=HUGE_SETTINGS)
def test_a_huge_solver_setting_is_refused_or_bakes_finite(blender, helpers, setting, kind):
    name = _solver_scene(kind)
    apply, labels = HUGE_SETTINGS[setting]
    apply(bpy.context.scene)
    refused_or_finite(helpers, any_of=(name,), settings_any_of=labels)
    if kind == "rigid" and baking.record_of(bpy.data.objects[name]) is not None:
        assert not fs.non_finite_poses([name], range(1, 7))


@pytest.mark.parametrize("kind", ["cloth", "rigid"])
@pytest.mark.parametrize("setting", NAN_SETTINGS, ids=NAN_SETTINGS)
def test_a_solver_setting_that_is_not_a_number_is_refused_by_its_name(blender, helpers, setting, kind):
    _solver_scene(kind)
    apply, labels = NAN_SETTINGS[setting]
    apply(bpy.context.scene)
    refused(helpers, settings=labels)


@pytest.mark.parametrize("prop, label", [("substeps", "Substeps"), ("iterations", "Iterations")])
def test_zero_substeps_or_iterations_are_held_at_one_and_bake(blender, helpers, prop, label):
    _solver_scene("cloth")
    props = bpy.context.scene.jakobsen
    setattr(props, prop, 0)
    assert getattr(props, prop) == 1, f"{label} accepted 0"
    setattr(props, prop, -5)
    assert getattr(props, prop) == 1, f"{label} accepted -5"
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    baked_finite()


@pytest.mark.slow
@pytest.mark.parametrize("prop, label", [("substeps", "Substeps"), ("iterations", "Iterations")])
def test_the_most_substeps_or_iterations_allowed_bake_finite_or_are_refused(blender, helpers, prop, label):
    fs.sheet("Sail", n=3)
    fs.frames(1, 2)
    props = bpy.context.scene.jakobsen
    props.substeps = props.iterations = 1  # the other one at its least, to keep this to seconds
    setattr(props, prop, 10 ** 9)
    largest = getattr(props, prop)
    assert 1 < largest < 10 ** 9, f"{label}: the property took {largest}"
    refused_or_finite(helpers, any_of=("Sail",), settings_any_of=(label,))


@pytest.mark.parametrize("scene_range, own_range", [
    ((5, 5), None),
    (None, (10, 3)),
    (None, (4, 4)),
], ids=["scene-range-one-frame", "bake-range-backwards", "bake-range-one-frame"])
def test_a_frame_range_that_ends_before_it_starts_is_refused(blender, helpers, scene_range, own_range):
    _solver_scene("cloth")
    scene = bpy.context.scene
    if scene_range:
        scene.frame_start, scene.frame_end = scene_range
        assert (scene.frame_start, scene.frame_end) == scene_range
    else:
        props = scene.jakobsen
        props.use_scene_range = False
        props.frame_start, props.frame_end = own_range
        assert (props.frame_start, props.frame_end) == own_range
    start, end = scene_range or own_range
    message = refused(helpers, settings=["Start", "End"])
    assert str(start) in message and str(end) in message, message


# Settings of an object (its role's panel) that are not numbers: refused up front, naming the
# object and the setting. (role, setting, value, the panel's label, other settings it needs)
NAN = fs.NAN
OBJECT_NAN_SETTINGS = {
    "rigid-mass": ('RIGID_BODY', "mass", NAN, "Mass", {}),
    "rigid-density": ('RIGID_BODY', "density", NAN, "Density", {"use_density": True}),
    "rigid-friction": ('RIGID_BODY', "friction", NAN, "Friction", {}),
    "rigid-bounce": ('RIGID_BODY', "bounce", NAN, "Bounce", {}),
    "rigid-linear-damping": ('RIGID_BODY', "linear_damping", NAN, "Linear Damping", {}),
    "rigid-drag": ('RIGID_BODY', "drag", NAN, "Drag", {}),
    "cloth-density": ('CLOTH', "density", NAN, "Density", {}),
    "cloth-vertex-mass": ('CLOTH', "vertex_mass", NAN, "Vertex Mass", {"use_vertex_mass": True}),
    "cloth-stretch": ('CLOTH', "stretch_stiffness", NAN, "Stretch", {"use_rigid_stretch": False}),
    "cloth-bending": ('CLOTH', "bend_stiffness", NAN, "Bending", {}),
    "cloth-thickness": ('CLOTH', "thickness", NAN, "Thickness", {}),
    "cloth-air-drag": ('CLOTH', "air_drag", NAN, "Air Drag", {}),
    "collider-friction": ('COLLIDER', "friction", NAN, "Friction", {}),
    "connector-breaking-force": ('CONNECTOR', "breaking_force", NAN, "Breaking Force", {"use_breaking": True}),
    "connector-angle-max": ('CONNECTOR', "angle_max", NAN, "Angle Max", {"use_angular_limit": True}),
    "connector-box-upper": ('CONNECTOR', "box_upper", (NAN, 0.5, 0.5), "Upper", {"connector_type": 'BOX'}),
    "spring-stiffness": ('SPRING', "stiffness", NAN, "Stiffness", {}),
    "spring-rest-length": ('SPRING', "rest_length", NAN, "Rest Length", {"use_current_length": False}),
    "motor-target-speed": ('MOTOR', "target_angular_speed", NAN, "Target Speed", {}),
    "motor-torque": ('MOTOR', "max_torque", NAN, "Torque", {}),
}
# The same settings at the largest value the property allows (inf is held at FLT_MAX): refused
# naming the object, or a finite bake.
OBJECT_HUGE_SETTINGS = {
    "rigid-mass": ('RIGID_BODY', "mass", fs.INF, "Mass", {}),
    "cloth-density": ('CLOTH', "density", fs.INF, "Density", {}),
    "cloth-stretch": ('CLOTH', "stretch_stiffness", fs.INF, "Stretch", {"use_rigid_stretch": False}),
    "spring-stiffness": ('SPRING', "stiffness", fs.INF, "Stiffness", {}),
    "motor-torque": ('MOTOR', "max_torque", fs.INF, "Torque", {}),
}


def _object_setting_scene(role: str, prop: str, value, extra: dict) -> str:
    """A rigid body 'Crate', a cloth 'Sail', a ground 'Ground' and, for the Empties' roles, an
    Empty 'Joint' holding 'Crate' (Object A; B for a connector); the setting is put on the object
    of ``role``. Returns that object's name."""
    fs.box("Crate", location=(0.0, 0.0, 1.5))
    fs.sheet("Sail", location=(3.0, 0.0, 1.5))
    fs.ground()
    crate = bpy.data.objects["Crate"]
    target = {'RIGID_BODY': "Crate", 'CLOTH': "Sail", 'COLLIDER': "Ground"}.get(role)
    if target is None:
        slots = {"object_b": crate} if role == 'CONNECTOR' else {"object_a": crate}
        fs.empty("Joint", role, location=(0.0, 0.0, 2.0), **slots)
        target = "Joint"
    group = fs.role_settings(bpy.data.objects[target])
    for key, v in extra.items():
        setattr(group, key, v)
    setattr(group, prop, value)
    fs.frames(1, 6)
    return target


@pytest.mark.parametrize("case", OBJECT_NAN_SETTINGS, ids=OBJECT_NAN_SETTINGS)
def test_an_object_setting_that_is_not_a_number_is_refused_naming_object_and_setting(blender, helpers, case):
    role, prop, value, label, extra = OBJECT_NAN_SETTINGS[case]
    target = _object_setting_scene(role, prop, value, extra)
    refused(helpers, objects=[target], settings=[label])


@pytest.mark.parametrize("case", OBJECT_HUGE_SETTINGS, ids=OBJECT_HUGE_SETTINGS)
def test_an_object_setting_at_its_largest_is_refused_or_bakes_finite(blender, helpers, case):
    role, prop, value, label, extra = OBJECT_HUGE_SETTINGS[case]
    target = _object_setting_scene(role, prop, value, extra)
    refused_or_finite(helpers, any_of=(target,), settings_any_of=(label,))
    assert not fs.non_finite_poses(["Crate"], range(1, 7))


# -- connectors, springs, motors ----------------------------------------------------------------------

def _rig():
    """Two rigid boxes 'Left' and 'Right', a cloth 'Sheet', a collider 'Wall' and a mesh 'Prop'
    that does not take part."""
    fs.box("Left", location=(-1.0, 0.0, 2.0), size=0.5)
    fs.box("Right", location=(1.0, 0.0, 2.0), size=0.5)
    fs.sheet("Sheet", location=(0.0, 3.0, 2.0))
    fs.box("Wall", location=(0.0, -3.0, 1.0), role='COLLIDER')
    fs.mesh_object("Prop", fs.cube_verts(0.5), fs.CUBE_FACES, location=(0.0, 0.0, 4.0))
    fs.frames(1, 6)


def _ob(name):
    return None if name is None else bpy.data.objects[name]


# (role, Object A, Object B, settings, names the message must have, settings it must name; for a
# limit whose lower end is above its upper end, the lower end's label)
PAIR_CASES = {
    "connector-with-no-objects": ('CONNECTOR', None, None, {}, ["Joint"], ["Object A", "Object B"]),
    "spring-with-no-objects": ('SPRING', None, None, {}, ["Joint"], ["Object A", "Object B"]),
    "motor-with-no-objects": ('MOTOR', None, None, {}, ["Joint"], ["Object A"]),
    "connector-same-object-twice": ('CONNECTOR', "Left", "Left", {}, ["Joint", "Left"], []),
    "spring-same-object-twice": ('SPRING', "Left", "Left", {}, ["Joint", "Left"], []),
    "motor-same-object-twice": ('MOTOR', "Left", "Left", {}, ["Joint", "Left"], []),
    "connector-a-not-enabled": ('CONNECTOR', "Prop", "Right", {}, ["Joint", "Prop"], ["Object A"]),
    "connector-a-is-cloth": ('CONNECTOR', "Sheet", "Right", {}, ["Joint", "Sheet"], ["Object A"]),
    "connector-a-is-collider": ('CONNECTOR', "Wall", "Right", {}, ["Joint", "Wall"], ["Object A"]),
    "spring-b-is-cloth": ('SPRING', "Left", "Sheet", {}, ["Joint", "Sheet"], ["Object B"]),
    "motor-a-is-collider": ('MOTOR', "Wall", None, {}, ["Joint", "Wall"], ["Object A"]),
    "motor-with-no-object-a": ('MOTOR', None, "Right", {}, ["Joint"], ["Object A"]),
    "box-lower-above-upper": ('CONNECTOR', None, "Left", {"connector_type": 'BOX', "box_lower": (0.3, -0.5, -0.5),
                                                           "box_upper": (0.2, 0.5, 0.5)}, ["Joint"], ["Lower"]),
    "slider-min-above-max": ('CONNECTOR', None, "Left", {"connector_type": 'SLIDER', "use_linear_limit": True,
                                                          "distance_min": 0.4, "distance_max": -0.4},
                             ["Joint"], ["Distance Min"]),
    "hinge-min-above-max": ('CONNECTOR', None, "Left", {"use_angular_limit": True, "angle_min": 0.5,
                                                         "angle_max": -0.5}, ["Joint"], ["Angle Min"]),
    "suspension-lower-above-upper": ('CONNECTOR', "Left", "Right", {"connector_type": 'WHEEL_SUSPENSION',
                                                                     "suspension_lower": 0.2,
                                                                     "suspension_upper": -0.2},
                                     ["Joint"], ["Lower Limit"]),
}


@pytest.mark.parametrize("case", PAIR_CASES, ids=PAIR_CASES)
def test_a_bad_connector_spring_or_motor_is_refused_by_name(blender, helpers, case):
    role, a, b, settings, objects, labels = PAIR_CASES[case]
    _rig()
    joint = fs.empty("Joint", role, location=(0.0, 0.0, 2.0))
    group = fs.role_settings(joint)
    group.object_a, group.object_b = _ob(a), _ob(b)
    for key, value in settings.items():
        setattr(group, key, value)
    refused(helpers, objects=objects, settings=labels)


@pytest.mark.parametrize("role, scale", [
    ('CONNECTOR', (-1.0, 1.0, 1.0)),
    ('MOTOR', (1.0, 1.0, -2.0)),
    ('CONNECTOR', (1.0, 0.0, 1.0)),
], ids=["mirrored-connector", "mirrored-motor", "zero-scale-connector"])
def test_a_mirrored_or_flattened_empty_is_refused_by_name(blender, helpers, role, scale):
    _rig()
    joint = fs.empty("Joint", role, location=(-1.0, 0.0, 2.25), object_a=bpy.data.objects["Left"])
    joint.rotation_euler = (0.3, 0.0, 0.2)
    joint.scale = scale
    message = refused(helpers, objects=["Joint"])
    assert re.search(r"scale|mirror", message, re.IGNORECASE), message


def test_a_negative_breaking_force_is_held_at_zero_and_breaks_at_once_by_name(blender, helpers):
    _rig()
    joint = fs.empty("Joint", 'CONNECTOR', location=(-1.0, 0.0, 2.25), object_b=bpy.data.objects["Left"],
                     use_breaking=True)
    joint.jakobsen.connector.breaking_force = -5.0
    assert joint.jakobsen.connector.breaking_force == 0.0
    job = BakeJob(bpy.context.scene.name)
    summary = job.run(bpy.context)
    assert "connector 'Joint' broke at frame 2" in summary, summary
    baked_finite()


@pytest.mark.parametrize("spring_type, use_current_length", [
    ('LINEAR', True), ('LINEAR', False), ('BOTH', True),
], ids=["current-length", "rest-length-0", "linear-and-angular"])
def test_a_spring_of_zero_length_between_coincident_anchors_bakes_finite_or_is_refused(blender, helpers,
                                                                                       spring_type,
                                                                                       use_current_length):
    _rig()
    left = bpy.data.objects["Left"]
    # Object B empty: that end is the Empty, here exactly at Left's origin.
    fs.empty("Joint", 'SPRING', location=tuple(left.location), object_a=left, spring_type=spring_type,
             use_current_length=use_current_length, rest_length=-1.0)
    assert bpy.data.objects["Joint"].jakobsen.spring.rest_length == 0.0
    refused_or_finite(helpers, any_of=("Joint",))
    assert not fs.non_finite_poses(["Left"], range(1, 7))


# -- bake life cycles ---------------------------------------------------------------------------------

def _users_cloth(pinned_cloth, *, own_keys: bool):
    cloth = pinned_cloth(frames=(1, 6))
    if own_keys:
        cloth.shape_key_add(name="Basis")
        wave = cloth.shape_key_add(name="Wave")
        co = np.empty(3 * len(wave.data), np.float32)
        wave.data.foreach_get("co", co)
        co[2::3] += 0.1
        wave.data.foreach_set("co", co)
        wave.value = 0.3
        wave.keyframe_insert("value", frame=1)
        wave.value = 0.8
        wave.keyframe_insert("value", frame=6)
        cloth.data.shape_keys.animation_data.action.name = "Wave Action"
        cloth.active_shape_key_index = 1
        bpy.context.scene.frame_set(1)
    return cloth


def _users_box(*, own_action: bool, name="Box"):
    box = fs.box(name, location=(0.0, 0.0, 2.0))
    box.rotation_euler = (0.3, 0.2, 0.1)
    fs.ground()
    if own_action:
        box.keyframe_insert("location", frame=1)
        box.location.x = 1.0
        box.keyframe_insert("location", frame=6)
        box.location.x = 0.0
        box.animation_data.action.name = "Box Action"
    fs.frames(1, 6)
    return box


SCENES = ["cloth", "cloth-with-own-keys", "rigid", "rigid-with-own-action", "cloth-and-rigid"]


def _scene(kind, pinned_cloth) -> list[str]:
    """Build one of ``SCENES``; returns the names of the objects the bake writes to."""
    names = []
    if kind.startswith("cloth"):
        _users_cloth(pinned_cloth, own_keys=kind == "cloth-with-own-keys")
        names.append("Flag")
    if "rigid" in kind:
        _users_box(own_action=kind == "rigid-with-own-action", name="Box")
        names.append("Box")
    fs.frames(1, 6)
    return names


@pytest.mark.parametrize("kind", SCENES)
def test_bake_then_free_restores_everything(pinned_cloth, helpers, kind):
    _scene(kind, pinned_cloth)
    before = snap(helpers)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    _assert_same(before, snap(helpers), "bake and free")
    assert not jk_actions()


@pytest.mark.parametrize("kind", SCENES)
def test_baking_twice_gives_the_same_result(pinned_cloth, helpers, kind):
    _scene(kind, pinned_cloth)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    first = snap(helpers)
    bpy.context.scene.frame_set(4)  # bake again from another frame: the result must not depend on it
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.context.scene.frame_set(first["frame"][0])
    _assert_same(first, snap(helpers), "baking again")


@pytest.mark.parametrize("kind", ["rigid-with-own-action", "cloth-with-own-keys"])
def test_bake_save_reopen_free_gives_back_the_users_animation(pinned_cloth, helpers, tmp_path, kind):
    names = _scene(kind, pinned_cloth)
    before = snap(helpers)
    own = {"rigid-with-own-action": "Box Action", "cloth-with-own-keys": "Wave Action"}[kind]
    own_keys = before["actions"][own]
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    path = str(tmp_path / "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)

    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    obj = bpy.data.objects[names[0]]
    id_data = obj if kind.startswith("rigid") else obj.data.shape_keys
    assert id_data.animation_data is not None and id_data.animation_data.action is not None
    assert id_data.animation_data.action.name == own
    assert snap(helpers)["actions"][own] == own_keys
    assert not jk_actions()
    _assert_same(before, snap(helpers), "bake, save, reopen and free")


@pytest.mark.parametrize("kind", ["cloth", "rigid-with-own-action"])
def test_renaming_a_baked_object_then_free_removes_everything(pinned_cloth, helpers, kind):
    name = _scene(kind, pinned_cloth)[0]
    before = snap(helpers)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.data.objects[name].name = "Renamed"
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert not jk_actions(), f"orphaned by Free Bake: {jk_actions()}"
    bpy.data.objects["Renamed"].name = name
    _assert_same(before, snap(helpers), "bake, rename and free")


@pytest.mark.parametrize("kind", ["cloth", "rigid-with-own-action"])
def test_renaming_a_baked_object_and_baking_again_leaves_no_orphan(pinned_cloth, helpers, kind):
    name = _scene(kind, pinned_cloth)[0]
    before = snap(helpers)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.data.objects[name].name = "Renamed"
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    assert len(jk_actions()) == 1, f"one bake, but these actions: {jk_actions()}"
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert not jk_actions(), f"orphaned: {jk_actions()}"
    bpy.data.objects["Renamed"].name = name
    _assert_same(before, snap(helpers), "bake, rename, bake and free")


@pytest.mark.parametrize("kind", ["rigid-with-own-action", "cloth-with-own-keys"])
def test_renaming_the_users_action_after_a_bake_then_free_gives_it_back(pinned_cloth, helpers, kind):
    names = _scene(kind, pinned_cloth)
    own = {"rigid-with-own-action": "Box Action", "cloth-with-own-keys": "Wave Action"}[kind]
    before = snap(helpers)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.data.actions[own].name = "My Moves"
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    obj = bpy.data.objects[names[0]]
    id_data = obj if kind.startswith("rigid") else obj.data.shape_keys
    assert id_data.animation_data is not None and id_data.animation_data.action is not None, (
        "Free Bake lost the user's renamed action")
    assert id_data.animation_data.action.name == "My Moves"
    bpy.data.actions["My Moves"].name = own
    _assert_same(before, snap(helpers), "bake, rename the action and free")


@pytest.mark.parametrize("deleted", ["Box", "Flag"])
def test_deleting_a_baked_object_then_free_leaves_nothing_behind(pinned_cloth, helpers, deleted):
    _scene("cloth-and-rigid", pinned_cloth)
    before = snap(helpers)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    bpy.data.objects.remove(bpy.data.objects[deleted])
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert not jk_actions(), f"left behind: {jk_actions()}"
    after = snap(helpers)
    # What is left is as it was; the deleted object's mesh, its own data, is back to what it was too.
    expected = dict(before, objects={k: v for k, v in before["objects"].items() if k != deleted})
    expected["counts"] = (before["counts"][0] - 1,) + before["counts"][1:]
    _assert_same(expected, after, "bake, delete an object and free")


MIRRORED = {
    "scale-x-euler": dict(scale=(-1.0, 1.0, 1.0), rotation_mode='XYZ'),
    "scale-z-quaternion": dict(scale=(1.0, 1.0, -0.5), rotation_mode='QUATERNION'),
    "mirrored-parent": dict(scale=(1.0, 1.0, 1.0), rotation_mode='XYZ', parent_scale=(-1.0, 1.0, 1.0)),
}


@pytest.mark.parametrize("case", MIRRORED, ids=MIRRORED)
def test_a_mirrored_rigid_body_starts_where_it_was_and_stays_mirrored(blender, helpers, case):
    spec = MIRRORED[case]
    box = fs.box("Mirror", location=(0.5, -0.2, 2.0), collision_shape='BOX')
    box.rotation_mode = spec["rotation_mode"]
    if spec["rotation_mode"] == 'QUATERNION':
        box.rotation_quaternion = (0.9, 0.1, 0.3, 0.2)
    else:
        box.rotation_euler = (0.3, 0.2, 0.1)
    box.scale = spec["scale"]
    if "parent_scale" in spec:
        holder = fs.empty("Holder", location=(0.2, 0.1, 0.0))
        holder.scale = spec["parent_scale"]
        box.parent = holder
    fs.ground()
    fs.frames(1, 8)
    rest = np.array(box.matrix_world)
    assert np.linalg.det(rest[:3, :3]) < 0
    before = snap(helpers)

    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    baked_finite()
    scene = bpy.context.scene
    for frame in range(1, 9):
        scene.frame_set(frame)
        m = np.array(box.matrix_world)
        assert np.linalg.det(m[:3, :3]) < 0, f"frame {frame}: the body is no longer mirrored"
        if frame == 1:
            np.testing.assert_allclose(m, rest, atol=1e-5, err_msg="frame 1 is not where the body was")
    scene.frame_set(8)
    assert np.array(box.matrix_world)[2, 3] < rest[2, 3] - 0.05, "it did not fall"
    scene.frame_set(1)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    _assert_same(before, snap(helpers), "bake and free")


@pytest.mark.parametrize("parent_scale", [1.0, 0.5], ids=["parent", "scaled-parent"])
def test_a_body_with_a_parent_starts_where_it_was(blender, helpers, parent_scale):
    holder = fs.empty("Holder", location=(1.0, 2.0, 0.5))
    holder.rotation_euler = (0.0, 0.0, 0.7)
    holder.scale = (parent_scale,) * 3
    box = fs.box("Child", location=(0.3, 0.0, 3.0))
    box.rotation_euler = (0.2, 0.4, 0.0)
    box.parent = holder
    fs.ground()
    fs.frames(1, 8)
    rest = np.array(box.matrix_world)
    before = snap(helpers)
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    baked_finite()
    assert not fs.non_finite_poses(["Child"], range(1, 9))
    bpy.context.scene.frame_set(1)
    np.testing.assert_allclose(np.array(box.matrix_world), rest, atol=1e-5)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    _assert_same(before, snap(helpers), "bake and free")


CANCEL_SCENES = ["cloth-with-own-keys", "rigid-with-own-action", "cloth-and-rigid"]


@pytest.mark.parametrize("preview", [False, True], ids=["script", "preview"])
@pytest.mark.parametrize("kind", CANCEL_SCENES)
def test_a_cancelled_bake_leaves_the_scene_bit_identical(pinned_cloth, helpers, kind, preview):
    _scene(kind, pinned_cloth)
    scene = bpy.context.scene
    scene.frame_set(3)
    before = snap(helpers)
    job = BakeJob(scene.name, preview=preview, follow_frames=preview)
    job.start(bpy.context)
    for _ in range(3):
        assert job.step()
    if preview:  # the previews are drawn, not objects in the file
        assert previews.geometry() and not preview_objects() and scene.frame_current == 4
    job.cancel()
    assert not preview_objects()
    _assert_same(before, snap(helpers), "a cancelled bake")


@pytest.mark.parametrize("kind, name", [("cloth", "Flag"), ("rigid", "Box")])
def test_a_cancelled_preview_bake_after_renaming_an_object_between_steps_restores_it(pinned_cloth, helpers,
                                                                                     kind, name):
    _scene(kind, pinned_cloth)
    scene = bpy.context.scene
    scene.frame_set(2)
    before = snap(helpers)
    job = BakeJob(scene.name, preview=True, follow_frames=True)
    job.start(bpy.context)
    assert job.step() and job.step()
    obj = bpy.data.objects[name]
    assert obj.hide_get()
    obj.name = "Renamed"
    assert job.step() and job.step()
    job.cancel()
    assert not preview_objects(), f"previews left: {preview_objects()}"
    assert not obj.hide_get(), "the renamed object was left hidden"
    assert (scene.frame_current, scene.frame_subframe) == before["frame"]
    obj.name = name
    _assert_same(before, snap(helpers), "a cancelled bake")


class SolverBug(RuntimeError):
    """A test double for a bug: an exception that is not a JakobsenError, raised by a step."""


@pytest.fixture
def solver_bug(monkeypatch):
    """Solver.step_frame raises ``SolverBug`` on its third call (the bake's third frame)."""
    calls = [0]
    real = Solver.step_frame

    def step_frame(self, state, pinned_positions=None):
        calls[0] += 1
        if calls[0] == 3:
            raise SolverBug("a bug in the solver (test double)")
        return real(self, state, pinned_positions=pinned_positions)

    monkeypatch.setattr(Solver, "step_frame", step_frame)
    return calls


@pytest.mark.parametrize("preview", [False, True], ids=["script", "preview"])
def test_a_bug_in_a_step_of_a_job_leaves_the_scene_as_it_was(pinned_cloth, helpers, solver_bug, preview):
    _scene("cloth-and-rigid", pinned_cloth)
    before = snap(helpers)
    job = BakeJob(bpy.context.scene.name, preview=preview, follow_frames=preview)
    with pytest.raises(SolverBug):
        job.run(bpy.context)
    assert solver_bug[0] == 3
    assert not preview_objects()
    _assert_same(before, snap(helpers), "a bake that failed")


def test_a_bug_in_a_step_is_reported_by_the_operator_and_changes_nothing(pinned_cloth, helpers, solver_bug):
    _scene("cloth-and-rigid", pinned_cloth)
    before = snap(helpers)
    with pytest.raises(RuntimeError) as info:
        bpy.ops.jakobsen.bake()
    message = str(info.value)
    _assert_reported(message, internal_error_allowed=True)
    assert "a bug in the solver (test double)" in message, message
    assert solver_bug[0] == 3
    _assert_same(before, snap(helpers), "a bake that failed")


# -- the command line ---------------------------------------------------------------------------------

def _files(root) -> dict[str, int]:
    out = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = -1 if os.path.isdir(path) else os.path.getsize(path)
    return out


@pytest.fixture
def cli_scene(pinned_cloth, tmp_path):
    """tmp_path holding scene.blend (the pinned cloth and a box, frames 1-20) and the fakes the
    cases point at: a text file, a .blend that is not one, a file 'a_file', directories 'folder',
    'folder.blend' and 'outdir.blend'."""
    pinned_cloth(frames=(1, 20))
    fs.box("Crate", location=(2.0, 0.0, 1.0), size=0.4)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    (tmp_path / "scene.txt").write_text("not a blend file")
    (tmp_path / "garbage.blend").write_bytes(b"BLENDER? no: just some bytes " * 40)
    (tmp_path / "a_file").write_text("a regular file")
    for name in ("folder", "folder.blend", "outdir.blend"):
        (tmp_path / name).mkdir()
    return tmp_path


# (arguments, what the message must say); {tmp} is the directory the cli_scene fixture made.
CLI_CASES = {
    "scene-is-a-directory": (["{tmp}/folder"], ["{tmp}/folder", "is a directory"]),
    "scene-is-a-directory-named-blend": (["{tmp}/folder.blend"], ["{tmp}/folder.blend", "is a directory"]),
    "missing-scene": (["{tmp}/missing.blend"], ["{tmp}/missing.blend", "no such file"]),
    "scene-not-blend": (["{tmp}/scene.txt"], ["{tmp}/scene.txt", "not a .blend file"]),
    "scene-not-a-blend-inside": (["{tmp}/garbage.blend"], ["{tmp}/garbage.blend"]),
    "out-under-a-regular-file": (["{tmp}/scene.blend", "-o", "{tmp}/a_file/out.blend"], ["{tmp}/a_file"]),
    "out-is-a-directory": (["{tmp}/scene.blend", "-o", "{tmp}/outdir.blend"], ["{tmp}/outdir.blend", "directory"]),
    "out-not-writable": (["{tmp}/scene.blend", "-o", "{tmp}/locked/out.blend"], ["{tmp}/locked"]),
    "out-not-blend": (["{tmp}/scene.blend", "-o", "{tmp}/out.png"], ["{tmp}/out.png"]),
    "unknown-scene": (["{tmp}/scene.blend", "--scene", "Nope"], ["'Nope'", "{tmp}/scene.blend"]),
    "frames-backwards": (["{tmp}/scene.blend", "--frames", "5-3"], ["--frames"]),
    "frames-one-frame": (["{tmp}/scene.blend", "--frames", "4-4"], ["--frames"]),
    "frames-words": (["{tmp}/scene.blend", "--frames", "one-ten"], ["--frames"]),
    "frames-negative": (["{tmp}/scene.blend", "--frames=-3-5"], ["--frames"]),
    "frames-empty": (["{tmp}/scene.blend", "--frames", ""], ["--frames"]),
    "every-zero": (["{tmp}/scene.blend", "--every", "0"], ["--every"]),
}


@pytest.mark.parametrize("case", CLI_CASES, ids=CLI_CASES)
def test_the_bake_command_refuses_bad_arguments_before_baking(cli_scene, helpers, capsys, case):
    args, says = CLI_CASES[case]
    tmp = str(cli_scene)
    if case == "out-not-writable":
        locked = cli_scene / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        if os.access(locked, os.W_OK):
            locked.chmod(0o700)
            pytest.skip("permissions are not enforced here (running as root)")
    argv = ["bake", *(a.replace("{tmp}", tmp) for a in args)]
    if case != "every-zero":
        argv += ["--every", "1"]  # a progress line for every frame baked: none may appear
    try:
        files = _files(tmp)
        before = snap(helpers)
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
    finally:
        if (cli_scene / "locked").exists():
            (cli_scene / "locked").chmod(0o700)
    assert code == 1, f"exit status {code}\n{out}\n{err}"
    assert err.startswith("jakobsen bake: error: "), err
    for text in says:
        assert text.replace("{tmp}", tmp) in err, f"the message does not say {text.replace('{tmp}', tmp)!r}: {err!r}"
    assert not re.search(r"^\s+frame \d+ ", out, re.MULTILINE), f"it baked before refusing:\n{out}"
    assert _files(tmp) == files, "a file was left behind (or removed)"
    _assert_same(before, snap(helpers), "a refused command")


def test_the_bake_command_refuses_a_bad_scene_naming_the_object_and_writes_nothing(cli_scene, capsys):
    tmp = str(cli_scene)
    lump = BAD_MESHES["nan-vertex"]("Lump", (3.0, 0.0, 2.0))
    fs.enable(lump, 'RIGID_BODY')
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(tmp, "bad.blend"))
    files = _files(tmp)
    with pytest.raises(BakeCommandError, match=r"bad\.blend: .*'Lump'"):
        bake_file(os.path.join(tmp, "bad.blend"), log=lambda text: None)
    capsys.readouterr()
    assert main(["bake", os.path.join(tmp, "bad.blend")]) == 1
    out, err = capsys.readouterr()
    assert "'Lump'" in err and not re.search(r"^\s+frame \d+ ", out, re.MULTILINE)
    assert _files(tmp) == files


def test_a_bug_in_a_step_of_the_bake_command_is_reported_and_writes_nothing(cli_scene, capsys, solver_bug):
    tmp = str(cli_scene)
    files = _files(tmp)
    capsys.readouterr()
    code = main(["bake", os.path.join(tmp, "scene.blend"), "--every", "1"])
    out, err = capsys.readouterr()
    assert code == 1, f"exit status {code}"
    assert err.startswith("jakobsen bake: error: ") and "scene.blend" in err, err
    assert "a bug in the solver (test double)" in err, err
    assert _files(tmp) == files, "a file was left behind"


def test_a_pin_group_chosen_empty_then_painted_and_renamed_is_still_followed(pinned_cloth, helpers):
    """The Pin Group set to a new, empty group, which is then painted and renamed (as in the
    interface: add a group, pick it, paint, rename): its weights when chosen say nothing, so the
    rename is followed as Blender's Cloth follows it."""
    from jakobsen_physics import renames

    cloth = pinned_cloth(frames=(1, 6))
    group = cloth.vertex_groups.new(name="Group")
    cloth.jakobsen.cloth.pin_group = "Group"  # (empty now)
    group.add([v.index for v in cloth.data.vertices if v.co.y > 0.49], 1.0, 'REPLACE')
    group.name = "shoulders"
    renames.follow_renamed_pin_groups()
    assert cloth.jakobsen.cloth.pin_group == "shoulders"
