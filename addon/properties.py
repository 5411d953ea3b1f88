"""Settings: ``Scene.jakobsen`` (solver and bake) and ``Object.jakobsen`` (what the object is in
the simulation, and its settings).

One PointerProperty per ID type; inside ``Object.jakobsen`` each role has its own group
(``rigid_body``, ``cloth``, ``soft_body``, ``collider``, ``connector``, ``spring``, ``motor``; a
soft body's surface uses the ``cloth`` group, what makes it a soft body is in ``soft_body``), so scripts read
``obj.jakobsen.cloth.pin_group`` and a setting never means two things.

Units: SI throughout (m, kg, s, N). Values with a Blender unit (length, mass, angle, velocity,
acceleration) use it, so they follow the scene's unit system; forces and stiffnesses have no
Blender unit and say theirs in the tooltip.
"""

# No "from __future__ import annotations": Blender reads the property definitions from the class
# annotations, which must stay objects, not strings.

from typing import cast

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from bpy.types import PropertyGroup
from jakobsen_engine.builder import SOFT_BODY_EDGES

# -- what an object can be ------------------------------------------------------------------------

MESH_TYPES = ("RIGID_BODY", "CLOTH", "SOFT_BODY", "COLLIDER")
EMPTY_TYPES = ("CONNECTOR", "SPRING", "MOTOR")

TYPE_ITEMS = (
    ("RIGID_BODY", "Rigid Body", "A solid body that moves and collides as a whole", 'RIGID_BODY', 0),
    ("CLOTH", "Cloth", "A deforming sheet: every vertex moves, edges keep their length", 'MOD_CLOTH', 1),
    ("SOFT_BODY", "Soft Body", "A closed mesh that keeps its shape and volume but squashes and jiggles "
                               "(jelly, a rubber ball)", 'MOD_SOFT', 2),
    ("COLLIDER", "Collider", "A fixed or animated obstacle that other objects bounce off", 'MOD_PHYSICS', 3),
    ("CONNECTOR", "Connector", "A joint between Object A and Object B (hinge, slider, ...)", 'CONSTRAINT', 4),
    ("SPRING", "Spring", "A spring between Object A and Object B", 'FORCE_HARMONIC', 5),
    ("MOTOR", "Motor", "Drives Object A relative to Object B, or the world (speed, force or target)",
     'FORCE_TURBULENCE', 6),
)


CONNECTOR_TYPE_ITEMS = (
    ('FIXED', "Fixed", "Glues the two objects together"),
    ('HINGE', "Hinge", "Rotation about the Empty's Z axis"),
    ('BALL_SOCKET', "Ball and Socket", "Free rotation about the Empty's origin"),
    ('CARDAN', "Cardan", "Rotation about two axes (a universal joint)"),
    ('RAGDOLL', "Ragdoll", "Rotation within a cone, with a twist limit"),
    ('SLIDER', "Slider", "Sliding along the Empty's Z axis, no rotation"),
    ('TWIST_SLIDER', "Twist Slider", "Sliding along and rotating about the Empty's Z axis"),
    ('PLANAR', "Planar", "Motion within the Empty's XY plane"),
    ('BOX', "Box", "Sliding within a box, no rotation"),
    ('WHEEL_SUSPENSION', "Wheel Suspension", "A wheel: spins about X, springs along Z, steers about Z"),
)

MOTOR_TYPE_ITEMS = (
    ('ANGULAR', "Angular", "Turns about the Empty's Z axis"),
    ('LINEAR', "Linear", "Pushes along the Empty's Z axis"),
)


def types_for(obj) -> tuple[str, ...]:
    """The roles an object of this Blender type can take."""
    if obj is None:
        return ()
    if obj.type == 'MESH':
        return MESH_TYPES
    if obj.type == 'EMPTY':
        return EMPTY_TYPES
    return ()


def _enabled_update(self, context):
    # Enabling an Empty that still carries the mesh default becomes a connector, and the other
    # way round, so that the type shown always suits the object.
    obj = self.id_data
    allowed = types_for(obj)
    if self.enabled and allowed and self.type not in allowed:
        self.type = allowed[0]


def _is_mesh(_self, obj) -> bool:
    return obj.type == 'MESH'


# -- object roles ---------------------------------------------------------------------------------

class JakobsenRigidBodySettings(PropertyGroup):
    """A solid body (Cinema 4D's Body tag)."""

    dynamic: EnumProperty(
        name="Dynamic",
        description="How the body takes part in the simulation",
        items=(
            ('ON', "On", "Moved by gravity and collisions"),
            ('OFF', "Off", "Does not move by itself; follows its animation and pushes others without being pushed"),
            ('GHOST', "Ghost", "Moved by gravity like a dynamic body, but collides with nothing"),
        ),
        default='ON',
    )
    use_density: BoolProperty(
        name="Use Density",
        description="Compute the mass from the volume of the collision shape and a density",
        default=False,
    )
    mass: FloatProperty(
        name="Mass", description="Mass of the whole body",
        subtype='NONE', unit='MASS', default=1.0, min=0.001, soft_max=10000.0,
    )
    density: FloatProperty(
        name="Density", description="Mass per volume in kg/m³ (water is 1000, wood about 600)",
        default=1000.0, min=0.001, soft_max=20000.0,
    )
    friction: FloatProperty(
        name="Friction", description="Coulomb friction coefficient against other surfaces",
        default=0.5, min=0.0, soft_max=2.0,
    )
    bounce: FloatProperty(
        name="Bounce", description="Restitution: 0 stops dead on impact, 1 bounces back at full speed",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    collision_shape: EnumProperty(
        name="Shape",
        description="The shape used for collisions",
        items=(
            ('AUTOMATIC', "Automatic", "The convex hull of the vertices; a flat mesh with Dynamic Off "
                                       "collides with its faces"),
            ('BOX', "Box", "The mesh's bounding box along the object's axes"),
            ('SPHERE', "Sphere", "A sphere around the bounding box centre"),
            ('CAPSULE', "Capsule", "A capsule along the local Z axis"),
            ('CYLINDER', "Cylinder", "A cylinder along the local Z axis"),
            ('CONVEX_HULL', "Convex Hull", "The convex hull of the vertices"),
            ('STATIC_MESH', "Static Mesh", "The mesh's faces, for bodies with Dynamic Off (a moving body "
                                           "uses its convex hull)"),
        ),
        default='AUTOMATIC',
    )
    linear_damping: FloatProperty(
        name="Linear Damping", description="Fraction of linear velocity lost per second",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    angular_damping: FloatProperty(
        name="Angular Damping", description="Fraction of angular velocity lost per second",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    drag: FloatProperty(
        name="Drag",
        description="Quadratic air drag in kg/m (force = Drag × speed² against the air): what Wind force "
                    "fields and the scene's Wind push the body with. About 0.6 × the body's cross-section "
                    "in m² (0: the air does not touch it)",
        default=0.0, min=0.0, soft_max=10.0, precision=3,
    )
    field_weight: FloatProperty(
        name="Field Weight",
        description="How strongly Blender's force fields (Wind, Force, Vortex, Turbulence, Harmonic, Drag) act on "
                    "this object, as Blender's Effector Weights > All: 1 fully, 0 not at all",
        default=1.0, min=0.0, soft_max=1.0,
    )
    follow_position: FloatProperty(
        name="Follow Position",
        description="How hard the body is pulled towards its animated position (0: off; 1: the strongest, "
                    "a critically damped pull at 20 per second, closing most of a gap in about 0.1 s)",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    follow_rotation: FloatProperty(
        name="Follow Rotation",
        description="How hard the body is turned towards its animated rotation (0: off; 1: the strongest, "
                    "a critically damped pull at 20 per second, closing most of a gap in about 0.1 s)",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    use_initial_velocity: BoolProperty(
        name="Initial Velocity",
        description="Start the bake with the velocities below instead of at rest (Cinema 4D's Custom "
                    "Initial Velocity)",
        default=False,
    )
    initial_velocity: FloatVectorProperty(
        name="Linear", description="Velocity of the body's centre on the bake's first frame, in world axes",
        subtype='VELOCITY', unit='VELOCITY', size=3, default=(0.0, 0.0, 0.0),
    )
    initial_angular_velocity: FloatVectorProperty(
        name="Angular", description="Spin on the bake's first frame about world X, Y and Z, per second",
        subtype='EULER', unit='ROTATION', size=3, default=(0.0, 0.0, 0.0),
    )


# A path property that takes "//" (relative to the .blend): Blender 5.x warns when such a path is
# set on one that does not say so. Blender 4.5 knows the option; 4.2 refuses it.
_RELATIVE_PATH: set = {'PATH_SUPPORTS_BLEND_RELATIVE'} if bpy.app.version >= (4, 5, 0) else set()


def _pin_group_set(self, _context) -> None:
    from .blender_io.reads import GROUP_NAMES_SEPARATOR, group_print

    obj = self.id_data
    is_object = isinstance(obj, bpy.types.Object)
    names = GROUP_NAMES_SEPARATOR.join(g.name for g in obj.vertex_groups) if is_object else ""
    if self.pin_group_names != names:
        self.pin_group_names = names
    weights = group_print(obj, self.pin_group) if is_object else ""
    if self.pin_group_print != weights:
        self.pin_group_print = weights


class JakobsenClothSettings(PropertyGroup):
    """A deforming mesh: cloth, and the surface of soft bodies (which use the same surface model,
    with ``JakobsenSoftBodySettings`` on top)."""

    use_vertex_mass: BoolProperty(
        name="Use Vertex Mass",
        description="Give the mass per vertex instead of per area",
        default=False,
    )
    density: FloatProperty(
        name="Density",
        description="Mass per area in kg/m² (cotton about 0.15, denim about 0.4)",
        default=0.2, min=1e-5, soft_max=5.0, precision=3,
    )
    vertex_mass: FloatProperty(
        name="Vertex Mass",
        description="Mass of each vertex (the total mass is spread over the surface by area)",
        unit='MASS', default=0.01, min=1e-6, soft_max=10.0, precision=4,
    )
    use_rigid_stretch: BoolProperty(
        name="Rigid Stretch",
        description="Edges do not stretch at all (the fastest and most cloth-like setting)",
        default=True,
    )
    stretch_stiffness: FloatProperty(
        name="Stretch",
        description="Resistance of the edges to stretching, in newtons per unit strain",
        default=1000.0, min=1e-6, soft_max=100000.0,
    )
    use_rigid_shear: BoolProperty(
        name="Rigid Shear",
        description="Face diagonals do not stretch at all",
        default=True,
    )
    shear_stiffness: FloatProperty(
        name="Shear",
        description="Resistance of the face diagonals to stretching, in newtons per unit strain",
        default=1000.0, min=1e-6, soft_max=100000.0,
    )
    bend_stiffness: FloatProperty(
        name="Bending",
        description="Resistance to folding: the moment, in millinewton metres, that bends a strip of "
                    "the cloth 1 m wide to a curve of 1 m radius (silk 0.005, cotton 0.05, denim 1, "
                    "leather 10 to 20)",
        default=0.05, min=1e-6, soft_max=1000.0, precision=3,
    )
    pin_group: StringProperty(
        name="Pin Group",
        description="Vertex group whose weights pin vertices: 1 holds a vertex to the object, "
                    "less pulls it with Pin Stiffness times the weight",
        default="", update=_pin_group_set,
    )
    # The object's vertex group names when the Pin Group was set, in order: a group renamed
    # since is found by its place (``blender_io.reads.pin_group``), as Blender's Cloth follows a
    # renamed group.
    pin_group_names: StringProperty(
        name="Vertex Groups When Pinned",
        description="The object's vertex group names when the Pin Group was set (kept to follow a renamed group)",
        default="", options={'HIDDEN'},
    )
    # And its weights in short (``blender_io.reads.group_print``): a group deleted and another
    # added in its place is not a rename.
    pin_group_print: StringProperty(
        name="Pin Group Weights When Pinned",
        description="How many vertices the Pin Group held and their weights' sum when it was set",
        default="", options={'HIDDEN'},
    )
    pin_stiffness: FloatProperty(
        name="Pin Stiffness",
        description="Strength of partly pinned vertices (weight below 1), in newtons per metre",
        default=1000.0, min=1e-6, soft_max=100000.0,
    )
    thickness: FloatProperty(
        name="Thickness",
        description="Distance the cloth keeps from colliders",
        subtype='DISTANCE', default=0.005, min=0.0, soft_max=0.1, precision=4,
    )
    friction: FloatProperty(
        name="Friction", description="Coulomb friction coefficient against colliders",
        default=0.5, min=0.0, soft_max=2.0,
    )
    air_drag: FloatProperty(
        name="Air Drag",
        description="Quadratic air drag per area in kg/m³ (force = Air Drag × area × speed² against the air; "
                    "0.6 is air on cloth, 0 none): slows the cloth in still air and lets Wind force fields and "
                    "the scene's Wind blow it",
        # On by default: with 0 a Wind field leaves a new cloth hanging still (issue 13).
        default=0.6, min=0.0, soft_max=10.0,
    )
    field_weight: FloatProperty(
        name="Field Weight",
        description="How strongly Blender's force fields (Wind, Force, Vortex, Turbulence, Harmonic, Drag) act on "
                    "this object, as Blender's Effector Weights > All: 1 fully, 0 not at all",
        default=1.0, min=0.0, soft_max=1.0,
    )
    use_self_collision: BoolProperty(
        name="Self Collision",
        description="Keep the cloth from passing through itself where it folds (slower: every part is tested "
                    "against every other part nearby)",
        default=False,
    )
    self_distance: FloatProperty(
        name="Self Distance",
        description="Distance the cloth keeps between its own non-neighbouring parts when it folds onto itself "
                    "(about twice the Thickness)",
        subtype='DISTANCE', default=0.01, min=1e-4, soft_max=0.1, precision=4,
    )
    use_pressure: BoolProperty(
        name="Pressure",
        description="Air inside a closed cloth keeps a volume (a balloon, a cushion, an airbag); the mesh must "
                    "be closed",
        default=False,
    )
    pressure_volume: FloatProperty(
        name="Target Volume",
        description="The volume the closed cloth keeps, as a ratio of the volume it encloses as modelled "
                    "(1: as modelled; 1.2: blown up by a fifth; 0.5: half deflated)",
        default=1.0, min=0.01, max=1000.0, soft_min=0.1, soft_max=3.0,
    )
    pressure_stiffness: FloatProperty(
        name="Pressure Stiffness",
        description="How hard the air holds the volume, in N/m² (pascals) of pressure per unit of volume "
                    "strain: a volume 1% off the target pushes with 1% of this on every square metre "
                    "(air in a sealed bag about 100000; a soft cushion 1000)",
        default=10000.0, min=1e-3, soft_max=1e6,
    )
    use_plasticity: BoolProperty(
        name="Plasticity",
        description="Stretched or bent beyond the Limit, the cloth (or soft body) takes its new shape as its "
                    "rest shape: creases and dents that stay",
        default=False,
    )
    plastic_limit: FloatProperty(
        name="Plastic Limit",
        description="Strain beyond which the rest shape changes, in percent of the rest length (below it the "
                    "cloth springs back)",
        subtype='PERCENTAGE', default=10.0, min=0.01, soft_max=100.0, precision=1,
    )
    plastic_rate: FloatProperty(
        name="Plastic Rate",
        description="How fast the rest shape follows beyond the Limit, per second: the fraction of the excess "
                    "strain taken up each second (high: at once)",
        default=10.0, min=1e-3, soft_max=1000.0,
    )
    use_tearing: BoolProperty(
        name="Tearing",
        description="Edges stretched beyond the Tear Factor break and the cloth tears along them",
        default=False,
    )
    tear_factor: FloatProperty(
        name="Tear Factor",
        description="An edge breaks when it is stretched to this many times its rest length (1.5: at 50% "
                    "stretch); with Rigid Stretch only a hard pull (pins, collisions) stretches it",
        default=1.5, min=1.001, soft_max=10.0, precision=3,
    )


class JakobsenSoftBodySettings(PropertyGroup):
    """What makes a closed mesh a soft body (jelly, a rubber ball, a tyre) on top of the surface
    settings it shares with cloth (``Object.jakobsen.cloth``: mass, edges, pins, collisions,
    self collision, plasticity): it springs back to its shape (shape matching) and keeps its
    volume (pressure at the volume it encloses)."""

    jiggle_frequency: FloatProperty(
        name="Jiggle Frequency",
        description="How stiffly the body springs back to its shape, as the frequency it jiggles at in hertz "
                    "(jelly about 2, a rubber ball about 10; 0: it keeps no shape of its own, like a bag). "
                    "Every vertex is pulled towards the rest shape matched to the body with (2π × this)² "
                    "N/m per kg",
        # (No unit='FREQUENCY': Blender 4.2 has none; the panel's label says Hz.)
        default=4.0, min=0.0, soft_max=50.0,
    )
    jiggle_damping: FloatProperty(
        name="Jiggle Damping",
        description="How fast the jiggle dies, as a fraction of critical damping (0: only what the substeps take; "
                    "1: it springs back without overshooting). Only the wobble is damped, not the body's fall or spin",
        default=0.1, min=0.0, max=1.0, subtype='FACTOR',
    )
    use_volume: BoolProperty(
        name="Volume",
        description="Keep the volume the mesh encloses (squashed, it bulges out at the sides); the mesh must "
                    "be closed",
        default=True,
    )
    volume_stiffness: FloatProperty(
        name="Volume Stiffness",
        description="How hard the volume is kept, in N/m² (pascals) of pressure per unit of volume strain "
                    "(a bulk modulus: the load a body rests on, per area of its footprint, over this is "
                    "about the fraction of volume it loses; lower it for a body that gives way when squashed)",
        default=10000.0, min=1e-3, soft_max=1e6,
    )
    edges_made_soft: BoolProperty(
        name="Edges Made Soft",
        description="Whether this object's edges were made stretchy when it first became a soft body",
        default=False, options={'HIDDEN'},
    )


# What the edges of an object get when it first becomes a soft body (SOFT_BODY_EDGES, N per unit
# strain, stretch and shear: the engine's default for a soft body too): a soft body with the cloth's
# rigid edges is a shell that dents like a can and stays dented (an edge-isometric buckle), not
# jelly that squashes and springs back (Blender's Soft Body edges are springy too). Its shape
# (Jiggle) and its volume hold it; edges of 20 N already act nearly rigid within a substep on a
# light surface and a 0.5 m cube dropped 0.6 m squashes 2 %, at 1 N it squashes 14 % and is back
# in its shape within 4 % of its size.


def _type_changed(self, context) -> None:
    """On first becoming a soft body, an object's edges become stretchy (its cloth settings as
    they were otherwise: a user's own choice made afterwards stays)."""
    if self.type == 'SOFT_BODY' and not self.soft_body.edges_made_soft:
        c = self.cloth
        c.use_rigid_stretch = c.use_rigid_shear = False
        c.stretch_stiffness = c.shear_stiffness = SOFT_BODY_EDGES
        self.soft_body.edges_made_soft = True


class JakobsenColliderSettings(PropertyGroup):
    """A fixed or animated obstacle."""

    shape: EnumProperty(
        name="Shape",
        description="The collision shape fitted to the object",
        items=(
            ('AUTOMATIC', "Automatic", "A flat mesh is a plane, a round one a sphere, anything else a box"),
            ('PLANE', "Plane", "An infinite plane through the object's centre, solid below its local Z axis"),
            ('BOX', "Box", "The object's bounding box"),
            ('SPHERE', "Sphere", "A sphere around the bounding box centre"),
            ('CAPSULE', "Capsule", "A capsule along the object's local Z axis"),
            ('MESH', "Mesh", "The mesh's faces as they are (bumpy terrain, ramps, bowls, anything with holes)"),
        ),
        default='AUTOMATIC',
    )
    friction: FloatProperty(
        name="Friction", description="Coulomb friction coefficient (combined with the other object's)",
        default=0.5, min=0.0, soft_max=2.0,
    )
    bounce: FloatProperty(
        name="Bounce", description="Restitution (combined with the other object's): 0 no bounce, 1 full",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )


class JakobsenConnectorSettings(PropertyGroup):
    """A joint placed at the Empty, between Object A and Object B (Cinema 4D's Connector)."""

    connector_type: EnumProperty(
        name="Type",
        description="What motion the joint allows between Object A and Object B",
        items=CONNECTOR_TYPE_ITEMS,
        default='HINGE',
    )
    object_a: PointerProperty(
        name="Object A", type=bpy.types.Object, poll=_is_mesh,
        description="First body (empty: the world)",
    )
    object_b: PointerProperty(
        name="Object B", type=bpy.types.Object, poll=_is_mesh,
        description="Second body (empty: the world)",
    )
    ignore_collisions: BoolProperty(
        name="Ignore Collisions", description="Object A and Object B do not collide with each other",
        default=True,
    )
    use_angular_limit: BoolProperty(
        name="Angular Limit", description="Hinge, Twist Slider: limit the rotation about the Empty's Z axis",
        default=False,
    )
    angle_min: FloatProperty(
        name="Angle Min", description="Lowest angle about the Empty's Z axis, from the pose on the first frame",
        subtype='ANGLE', default=-0.785398, min=-3.141593, max=3.141593,
    )
    angle_max: FloatProperty(
        name="Angle Max", description="Highest angle about the Empty's Z axis, from the pose on the first frame",
        subtype='ANGLE', default=0.785398, min=-3.141593, max=3.141593,
    )
    use_cone_limit: BoolProperty(
        name="Cone Limit", description="Cardan: keep the two Z axes within the Cone Angle of each other",
        default=False,
    )
    cone_angle: FloatProperty(
        name="Cone Angle", description="Ragdoll, Cardan: largest angle between the joint axes "
                                       "(half the cone's opening)",
        subtype='ANGLE', default=0.785398, min=0.0, max=3.141593,
    )
    twist_angle: FloatProperty(
        name="Twist Angle", description="Ragdoll: largest twist about the joint axis, either way",
        subtype='ANGLE', default=0.523599, min=0.0, max=3.141593,
    )
    use_linear_limit: BoolProperty(
        name="Linear Limit", description="Slider, Twist Slider: limit the sliding along the Empty's Z axis",
        default=False,
    )
    distance_min: FloatProperty(
        name="Distance Min", description="Lowest position along the Empty's Z axis, from the pose on the "
                                         "first frame",
        subtype='DISTANCE', default=-0.5,
    )
    distance_max: FloatProperty(
        name="Distance Max", description="Highest position along the Empty's Z axis, from the pose on the "
                                         "first frame",
        subtype='DISTANCE', default=0.5,
    )
    box_lower: FloatVectorProperty(
        name="Lower", description="Box: lowest position along the Empty's X, Y and Z axes, from the pose "
                                  "on the first frame",
        subtype='XYZ_LENGTH', unit='LENGTH', size=3, default=(-0.5, -0.5, -0.5),
    )
    box_upper: FloatVectorProperty(
        name="Upper", description="Box: highest position along the Empty's X, Y and Z axes, from the pose "
                                  "on the first frame",
        subtype='XYZ_LENGTH', unit='LENGTH', size=3, default=(0.5, 0.5, 0.5),
    )
    limit_bounce: FloatProperty(
        name="Limit Bounce", description="Restitution when a limit is hit: 0 stops, 1 bounces back fully",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    use_breaking: BoolProperty(
        name="Breakable", description="The joint breaks when a force or torque exceeds its limit", default=False,
    )
    breaking_force: FloatProperty(
        name="Breaking Force", description="Force in newtons above which the joint breaks",
        default=1000.0, min=0.0, soft_max=1e6,
    )
    breaking_torque: FloatProperty(
        name="Breaking Torque", description="Torque in newton metres above which the joint breaks",
        default=1000.0, min=0.0, soft_max=1e6,
    )
    steering_angle: FloatProperty(
        name="Steering Angle", description="Wheel Suspension: how far the wheel is turned about the Z axis "
                                           "(animate it to steer; read on every frame of the bake)",
        subtype='ANGLE', default=0.0, min=-1.570796, max=1.570796,
    )
    suspension_rest: FloatProperty(
        name="Rest Position", description="Wheel Suspension: where the spring rests along the Z axis "
                                          "(negative: below the connector)",
        subtype='DISTANCE', default=-0.15,
    )
    suspension_stiffness: FloatProperty(
        name="Stiffness", description="Wheel Suspension: spring stiffness in newtons per metre",
        default=20000.0, min=0.0, soft_max=1e6, precision=0,  # (whole newtons: the unit fits the field)
    )
    suspension_damping: FloatProperty(
        name="Damping", description="Wheel Suspension: damping in newton seconds per metre",
        default=1000.0, min=0.0, soft_max=1e5, precision=0,
    )
    suspension_lower: FloatProperty(
        name="Lower Limit", description="Wheel Suspension: lowest position along the Z axis",
        subtype='DISTANCE', default=-0.3,
    )
    suspension_upper: FloatProperty(
        name="Upper Limit", description="Wheel Suspension: highest position along the Z axis",
        subtype='DISTANCE', default=0.0,
    )


class JakobsenSpringSettings(PropertyGroup):
    """A spring between the origins of Object A and Object B (an empty slot: the Empty's location)."""

    spring_type: EnumProperty(
        name="Type",
        description="What the spring resists",
        items=(
            ('LINEAR', "Linear", "Changes of distance"),
            ('ANGULAR', "Angular", "Changes of relative rotation"),
            ('BOTH', "Linear and Angular", "Both"),
        ),
        default='LINEAR',
    )
    object_a: PointerProperty(
        name="Object A", type=bpy.types.Object, poll=_is_mesh,
        description="First rigid body, held at its origin (empty: the world, at the Empty's location)",
    )
    object_b: PointerProperty(
        name="Object B", type=bpy.types.Object, poll=_is_mesh,
        description="Second rigid body, held at its origin (empty: the world, at the Empty's location)",
    )
    use_current_length: BoolProperty(
        name="Use Current Length",
        description="Rest at the distance between the two ends on the bake's first frame (off: at Rest Length)",
        default=True,
    )
    rest_length: FloatProperty(
        name="Rest Length", description="Length at which the spring pulls neither way",
        subtype='DISTANCE', default=1.0, min=0.0,
    )
    stiffness: FloatProperty(
        name="Stiffness", description="Linear stiffness in newtons per metre",
        default=100.0, min=0.0, soft_max=1e6,
    )
    damping: FloatProperty(
        name="Damping", description="Linear damping in newton seconds per metre",
        default=1.0, min=0.0, soft_max=1e4,
    )
    angular_stiffness: FloatProperty(
        name="Angular Stiffness", description="Angular stiffness in newton metres per radian",
        default=10.0, min=0.0, soft_max=1e5,
    )
    angular_damping: FloatProperty(
        name="Angular Damping", description="Angular damping in newton metre seconds: the torque for each radian a "
                                            "second of relative turn",
        default=0.1, min=0.0, soft_max=1e3,
    )
    use_plastic: BoolProperty(
        name="Plastic",
        description="Beyond its elastic limits the spring gives way: its rest length follows, and it stays "
                    "deformed",
        default=False,
    )
    elastic_compression: FloatProperty(
        name="Elastic Compression", description="How much shorter than its rest length the spring gets before "
                                                "it gives way",
        subtype='DISTANCE', default=0.2, min=0.0,
    )
    elastic_stretch: FloatProperty(
        name="Elastic Stretch", description="How much longer than its rest length the spring gets before it "
                                            "gives way",
        subtype='DISTANCE', default=0.2, min=0.0,
    )
    use_breaking: BoolProperty(
        name="Breakable", description="The spring breaks when stretched or compressed too far", default=False,
    )
    break_stretch: FloatProperty(
        name="Breaking Stretch", description="The spring breaks when longer than its original rest length "
                                             "plus this",
        subtype='DISTANCE', default=0.5, min=0.0,
    )
    break_compression: FloatProperty(
        name="Breaking Compression", description="The spring breaks when shorter than its original rest "
                                                 "length minus this",
        subtype='DISTANCE', default=0.5, min=0.0,
    )


class JakobsenMotorSettings(PropertyGroup):
    """A motor driving Object A about (or along) the Empty's Z axis, relative to Object B (or the world),
    which takes the reaction."""

    motor_type: EnumProperty(
        name="Type",
        description="Whether the motor turns or pushes",
        items=MOTOR_TYPE_ITEMS,
        default='ANGULAR',
    )
    mode: EnumProperty(
        name="Mode",
        description="What the motor controls",
        items=(
            ('REGULATE_SPEED', "Regulate Speed", "Reach the target speed, using at most the maximum torque or force"),
            ('APPLY_FORCE', "Apply Force", "Apply a constant torque or force"),
            ('SERVO', "Servo", "Reach a target angle or position, using at most the maximum torque or force"),
        ),
        default='REGULATE_SPEED',
    )
    object_a: PointerProperty(
        name="Object A", type=bpy.types.Object, poll=_is_mesh,
        description="The body the motor drives",
    )
    object_b: PointerProperty(
        name="Object B", type=bpy.types.Object, poll=_is_mesh,
        description="The body the motor pushes against, which takes the reaction (empty: the world)",
    )
    target_angular_speed: FloatProperty(
        name="Target Speed", description="Angular speed to reach, per second, about the Empty's Z axis "
                                         "(animatable: read on every frame of the bake)",
        subtype='ANGLE', default=6.283185,
    )
    target_linear_speed: FloatProperty(
        name="Target Speed", description="Linear speed to reach along the Empty's Z axis (animatable: read "
                                         "on every frame of the bake)",
        unit='VELOCITY', default=1.0,
    )
    target_angle: FloatProperty(
        name="Target Angle", description="Servo: angle to turn Object A to about the Empty's Z axis, "
                                         "relative to Object B, from the pose on the first frame (animatable)",
        subtype='ANGLE', default=0.0,
    )
    target_position: FloatProperty(
        name="Target Position", description="Servo: position along the Empty's Z axis to move Object A to, "
                                            "relative to Object B, from the pose on the first frame "
                                            "(animatable)",
        subtype='DISTANCE', default=0.0,
    )
    max_torque: FloatProperty(
        name="Torque", description="Largest torque the motor applies, in newton metres "
                                   "(Apply Force: the torque applied; animatable)",
        default=100.0, min=0.0, soft_max=1e5,
    )
    max_force: FloatProperty(
        name="Force", description="Largest force the motor applies, in newtons (Apply Force: the force applied; "
                                  "animatable)",
        default=100.0, min=0.0, soft_max=1e5,
    )
    use_motor: BoolProperty(
        name="On", description="The motor acts (animatable: key it off and the body coasts)",
        default=True,
    )


AXIS_ITEMS = (
    ('POS_X', "+X", "The chassis' local +X axis"),
    ('NEG_X', "-X", "The chassis' local -X axis"),
    ('POS_Y', "+Y", "The chassis' local +Y axis"),
    ('NEG_Y', "-Y", "The chassis' local -Y axis (Blender's front)"),
    ('POS_Z', "+Z", "The chassis' local +Z axis (glTF's front, in a model still Y-up under its parent)"),
    ('NEG_Z', "-Z", "The chassis' local -Z axis"),
)


def _is_curve(_self, obj) -> bool:
    return obj.type == 'CURVE'


# One axle's suspension settings (the vehicle has them per axle: front_..., rear_...).
def _suspension_rest(axle: str):
    return FloatProperty(name="Rest", description=f"{axle} axle: where the spring is free along the connector's Z "
                                                  "(0: at the wheel as modelled, so nothing starts compressed)",
                         subtype='DISTANCE', default=0.0)


def _suspension_travel(axle: str):
    return FloatProperty(name="Travel", description=f"{axle} axle: how far the wheel moves up from Rest before the "
                                                    "bump stop",
                         subtype='DISTANCE', default=0.2, min=0.001)


def _suspension_stiffness(axle: str):
    return FloatProperty(name="Stiffness", description=f"{axle} axle: spring stiffness of each wheel in newtons per "
                                                       "metre",
                         default=60000.0, min=0.0, soft_max=1e6)


def _suspension_damping(axle: str):
    return FloatProperty(name="Damping", description=f"{axle} axle: damping of each wheel in newton seconds per metre",
                         default=3400.0, min=0.0, soft_max=1e5)


def _anti_roll(axle: str):
    return FloatProperty(name="Anti-Roll", description=f"{axle} axle: anti-roll bar stiffness in newtons per metre of "
                                                       "difference between the left and right wheels' travel",
                         default=0.0, min=0.0, soft_max=1e6)


class JakobsenVehicleSettings(PropertyGroup):
    """A car (Houdini's RBD Car Rig): set on the chassis, a rigid body; its wheels are the rigid
    bodies held by the Wheel Suspension connectors whose Object A is the chassis. The vehicle
    drives, brakes and steers them (through those connectors) on every substep of the bake."""

    enabled: BoolProperty(
        name="Vehicle", description="This rigid body is the chassis of a vehicle: its Wheel Suspension "
                                    "connectors are its wheels, driven and steered from here",
        default=False,
    )
    forward_axis: EnumProperty(
        name="Forward", description="The chassis' local axis that points to its front (Create Vehicle sets "
                                    "it: the axis nearest the line from the rear to the front wheels)",
        items=AXIS_ITEMS, default='NEG_Y',
    )
    drive: EnumProperty(
        name="Drive", description="Which wheels the motor drives",
        items=(
            ('REAR', "Rear", "Rear-wheel drive"),
            ('FRONT', "Front", "Front-wheel drive"),
            ('ALL', "All", "All-wheel drive"),
            ('NONE', "None", "No motor: a trailer, or a car that only rolls"),
        ),
        default='REAR',
    )
    target_speed: FloatProperty(
        name="Target Speed", description="Forward speed the motor drives towards (negative: reverse; "
                                         "animatable)",
        unit='VELOCITY', default=5.0, soft_min=-30.0, soft_max=60.0,
    )
    throttle: FloatProperty(
        name="Throttle", description="How much of the Motor Torque is available (0: coasting; animatable)",
        subtype='FACTOR', default=1.0, min=0.0, max=1.0,
    )
    motor_torque: FloatProperty(
        name="Motor Torque", description="Largest total torque at the driven wheels, in newton metres "
                                         "(animatable)",
        default=2000.0, min=0.0, soft_max=1e5,
    )
    differential: EnumProperty(
        name="Differential", description="How a driven axle shares its torque between its wheels",
        items=(
            ('OPEN', "Open", "The wheels of an axle turn at their own speeds and share the torque (a road car)"),
            ('LOCKED', "Locked", "The wheels of an axle turn at one speed (a kart, a locked off-roader)"),
        ),
        default='OPEN',
    )
    steering_angle: FloatProperty(
        name="Steering", description="Steering angle of the front wheels (positive turns left; animatable; "
                                     "ignored while following a path)",
        subtype='ANGLE', default=0.0, min=-1.570796, max=1.570796,
    )
    max_steering_angle: FloatProperty(
        name="Max Steering", description="Largest steering angle (Steering and Follow Path are held to it)",
        subtype='ANGLE', default=0.610865, min=0.0, max=1.570796,
    )
    use_ackermann: BoolProperty(
        name="Ackermann", description="The inner front wheel turns more than the outer one, so both roll "
                                      "round one centre",
        default=True,
    )
    brake: FloatProperty(
        name="Brake", description="Brake on all wheels (1: the full Brake Torque; animatable)",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    handbrake: FloatProperty(
        name="Handbrake", description="Brake on the rear wheels (1: locks them; animatable)",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )
    brake_torque: FloatProperty(
        name="Brake Torque", description="Largest brake torque on each wheel, in newton metres",
        default=5000.0, min=0.0, soft_max=1e5,
    )
    wheel_friction: FloatProperty(
        name="Wheel Friction", description="Grip of the tyres (the wheels' friction coefficient)",
        default=1.0, min=0.0, soft_max=2.0,
    )
    rolling_resistance: FloatProperty(
        name="Rolling Resistance", description="Rolling resistance coefficient: the force that slows a "
                                               "coasting car, as a fraction of its weight (tyres on asphalt "
                                               "about 0.01)",
        default=0.01, min=0.0, soft_max=0.3, precision=3,
    )
    initial_speed: FloatProperty(
        name="Initial Speed", description="Forward speed of the car and its wheels on the bake's first frame",
        unit='VELOCITY', default=0.0,
    )
    front_suspension_rest: _suspension_rest("Front")
    front_suspension_travel: _suspension_travel("Front")
    front_suspension_stiffness: _suspension_stiffness("Front")
    front_suspension_damping: _suspension_damping("Front")
    front_anti_roll: _anti_roll("Front")
    rear_suspension_rest: _suspension_rest("Rear")
    rear_suspension_travel: _suspension_travel("Rear")
    rear_suspension_stiffness: _suspension_stiffness("Rear")
    rear_suspension_damping: _suspension_damping("Rear")
    rear_anti_roll: _anti_roll("Rear")
    follow_path: PointerProperty(
        name="Follow Path", type=bpy.types.Object, poll=_is_curve,
        description="A curve the car steers itself along at the Target Speed (empty: steer by the Steering "
                    "angle)",
    )
    use_path_speed: BoolProperty(
        name="Speed from Radius", description="The curve's point Radius scales the Target Speed along the "
                                              "path (Alt+S in Edit Mode): a speed profile",
        default=False,
    )
    look_ahead: FloatProperty(
        name="Look Ahead", description="How far ahead along the curve the car aims, in seconds of driving "
                                       "(longer: smoother, cuts corners more)",
        unit='TIME_ABSOLUTE', default=0.6, min=0.05, soft_max=3.0,
    )
    max_lateral_acceleration: FloatProperty(
        name="Max Lateral Acceleration", description="The car slows before turns so that it corners with "
                                                     "at most this sideways acceleration",
        unit='ACCELERATION', default=5.0, min=0.1, soft_max=20.0,
    )
    steering_response: FloatProperty(
        name="Steering Response", description="Time the steering takes to go from straight to full lock "
                                              "while following a path",
        unit='TIME_ABSOLUTE', default=0.3, min=0.0, soft_max=2.0,
    )
    drift: FloatProperty(
        name="Drift", description="How much the rear lets go in turns while following a path (0: full grip)",
        subtype='FACTOR', default=0.0, min=0.0, max=1.0,
    )


class JakobsenObjectSettings(PropertyGroup):
    """``Object.jakobsen``: whether and as what the object takes part, and the settings of each role."""

    enabled: BoolProperty(
        name="Jakobsen Physics",
        description="Take part in the Jakobsen Physics simulation",
        default=False,
        update=_enabled_update,
    )
    type: EnumProperty(
        name="Type",
        description="What the object is in the simulation (meshes: bodies, cloth, colliders; "
                    "Empties: connectors, springs, motors)",
        items=TYPE_ITEMS,
        default='RIGID_BODY',
        update=_type_changed,
    )
    rigid_body: PointerProperty(type=JakobsenRigidBodySettings, name="Rigid Body",
                                description="Settings used when the object is a rigid body")
    cloth: PointerProperty(type=JakobsenClothSettings, name="Cloth",
                           description="Settings used when the object is a cloth or soft body")
    soft_body: PointerProperty(type=JakobsenSoftBodySettings, name="Soft Body",
                               description="Settings used when the object is a soft body (with its Cloth "
                                           "settings for its surface)")
    collider: PointerProperty(type=JakobsenColliderSettings, name="Collider",
                              description="Settings used when the object is a collider")
    connector: PointerProperty(type=JakobsenConnectorSettings, name="Connector",
                               description="Settings used when the Empty is a connector")
    spring: PointerProperty(type=JakobsenSpringSettings, name="Spring",
                            description="Settings used when the Empty is a spring")
    motor: PointerProperty(type=JakobsenMotorSettings, name="Motor",
                           description="Settings used when the Empty is a motor")
    vehicle: PointerProperty(type=JakobsenVehicleSettings, name="Vehicle",
                             description="Settings used when the rigid body is a vehicle's chassis")

    def pair(self):
        """(Object A, Object B) of a connector, spring or motor; (None, None) for other types."""
        group = {'CONNECTOR': self.connector, 'SPRING': self.spring, 'MOTOR': self.motor}.get(self.type)
        return (group.object_a, group.object_b) if group else (None, None)


# -- scene ----------------------------------------------------------------------------------------

def _playback_toggled(settings, context) -> None:
    # Switched off: the cache is freed and what it drew goes; switched on: the first frame is read.
    from . import playback

    playback.toggled(settings.id_data)


class JakobsenSceneSettings(PropertyGroup):
    """``Scene.jakobsen``: how the solver steps and what a bake writes."""

    substeps: IntProperty(
        name="Substeps", description="Solver steps per frame (more: stiffer and more accurate, slower)",
        default=10, min=1, max=10000, soft_max=100,
    )
    iterations: IntProperty(
        name="Iterations", description="Constraint sweeps per substep (more substeps usually pay off better)",
        default=1, min=1, max=10000, soft_max=20,
    )
    use_auto_iterations: BoolProperty(
        name="Auto Iterations",
        description="Sweep the constraints until they converge (at most 32 sweeps a substep): soft cloth sags "
                    "the same at any substep count, at several times the cost",
        default=False,
    )
    use_scene_gravity: BoolProperty(
        name="Scene Gravity", description="Use the scene's gravity (Scene > Gravity)", default=True,
    )
    gravity: FloatVectorProperty(
        name="Gravity", description="Gravity for the Jakobsen solver when not using the scene's",
        subtype='ACCELERATION', unit='ACCELERATION', size=3, default=(0.0, 0.0, -9.81),
    )
    damping: FloatProperty(
        name="Damping",
        description="Velocity damping of every particle per second (1/s): after one second "
                    "a fraction exp(-damping) of the velocity is left",
        default=0.0, min=0.0, soft_max=10.0,
    )
    wind: FloatVectorProperty(
        name="Wind", description="Velocity of the air that cloth with Air Drag and rigid bodies with Drag "
                                 "move against (still air: 0), added to any Wind force fields; a flag "
                                 "streams along it",
        subtype='VELOCITY', unit='VELOCITY', size=3, default=(0.0, 0.0, 0.0),
    )
    use_deactivation: BoolProperty(
        name="Deactivation",
        description="Rigid bodies that have come to rest stop being simulated (they stay exactly where they "
                    "are) until something moving comes near them: a body, an animated object or cloth. Bodies "
                    "with motors, in a vehicle or following their animation never deactivate, nor does any body "
                    "in a scene with force fields or deforming colliders",
        default=True,
    )
    deactivate_speed: FloatProperty(
        name="Speed",
        description="A body whose every point moves slower than this (and stays within a tenth of this "
                    "speed times the Time of where it was) is at rest",
        unit='VELOCITY', default=0.01, min=0.0, max=10.0, soft_max=1.0, precision=3,
    )
    deactivate_time: FloatProperty(
        name="Time",
        description="How long a group of touching bodies must have been at rest before it deactivates",
        subtype='TIME_ABSOLUTE', unit='TIME_ABSOLUTE', default=0.5, min=0.001, max=1e6, soft_max=10.0,
    )
    use_scene_range: BoolProperty(
        name="Scene Frame Range", description="Bake the scene's frame range", default=True,
    )
    frame_start: IntProperty(
        name="Start", description="First frame of the bake (the objects rest as they are on this frame)",
        default=1, min=0, max=1048574,
    )
    frame_end: IntProperty(
        name="End", description="Last frame of the bake",
        default=250, min=1, max=1048574,
    )
    output: EnumProperty(
        name="Output",
        description="Where a bake writes deforming meshes (rigid bodies always get keyframes)",
        items=(
            ('SHAPE_KEYS', "Shape Keys", "One shape key per frame, keyed on for its frame; kept in the .blend"),
            ('PC2', "Point Cache (PC2)", "A .pc2 file per object read by a Mesh Cache modifier; for heavy meshes"),
        ),
        default='SHAPE_KEYS',
    )
    cache_directory: StringProperty(
        name="Cache Directory", description="Folder for the .pc2 files (// is the .blend file's folder)",
        # (relative to the .blend: see _RELATIVE_PATH)
        subtype='DIR_PATH', default="//jakobsen_cache/", options=_RELATIVE_PATH,
    )

    use_simulate_on_playback: BoolProperty(
        name="Simulate on Playback",
        description="Simulate each frame as the timeline plays or steps forward from the first frame, and keep "
                    "it in memory (the cache below); Bake from Cache then writes it without simulating again",
        default=False,
        update=_playback_toggled,
    )
    cache_memory_limit: IntProperty(
        name="Memory Limit",
        description="Most memory the playback cache may take (MB); playback stops simulating when it is full",
        default=1024, min=1, soft_max=16384, max=1048576,
    )

    def frame_range(self) -> tuple[int, int]:
        """(first, last) frame to bake."""
        scene = cast(bpy.types.Scene, self.id_data)  # (the settings hang off a Scene: Scene.jakobsen)
        if self.use_scene_range:
            return scene.frame_start, scene.frame_end
        return self.frame_start, self.frame_end


classes = (
    JakobsenRigidBodySettings,
    JakobsenClothSettings,
    JakobsenSoftBodySettings,
    JakobsenColliderSettings,
    JakobsenConnectorSettings,
    JakobsenSpringSettings,
    JakobsenMotorSettings,
    JakobsenVehicleSettings,
    JakobsenObjectSettings,
    JakobsenSceneSettings,
)

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Scene.jakobsen = PointerProperty(type=JakobsenSceneSettings, name="Jakobsen Physics",
                                               description="Jakobsen Physics solver and bake settings")
    bpy.types.Object.jakobsen = PointerProperty(type=JakobsenObjectSettings, name="Jakobsen Physics",
                                                description="Jakobsen Physics settings of this object")


def unregister():
    del bpy.types.Object.jakobsen
    del bpy.types.Scene.jakobsen
    _unregister_classes()
