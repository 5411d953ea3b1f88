"""The shape kinds: one number each, shared by the shape table, the distance routines of both
backends and the add-on's list of shapes. Adding a kind means a number here, its parameters in
``shapes.py``, its distance routine (both backends) and its entry in the add-on's shape list."""

from enum import IntEnum

# Plain ints, so that compiled kernels read them as constants.
PLANE = 0  # z = 0 of its frame, solid below
SPHERE = 1  # params: radius
CAPSULE = 2  # params: radius, half height of the segment along z
BOX = 3  # params: half extents x, y, z
CYLINDER = 4  # params: radius, half height along z
HULL = 5  # a convex polytope, its face planes in the table's hull planes; params: a typical size
MESH = 6  # a triangle mesh (terrain, a static table); behind a face counts as inside within a margin
BOX_INTERIOR = 7  # the inside of a box (Jakobsen's cube world); params: half extents

# A point this near an edge of a box (relative to its smallest half extent) takes the plane of the
# face that faces its owner rather than the edge's rounded normal, which swings with every
# micrometre it moves.
EDGE_SNAP = 0.02
# A point inside a box (a body's feature) leaves through the face that faces its owner among the
# faces about as near as the nearest: within FACE_NEAR times the nearest's depth plus EDGE_SNAP of
# the smallest half extent, and never more than FACE_TIE of it deeper. (With FACE_TIE alone, a
# quarter, a tumbling brick's corner 0.3 mm under one face of another was taken out through the 22
# mm to the face towards its owner in one substep: energy from nothing, and the bake stopped, in 5
# of 50 walls of bricks knocked down at restitution 0.3-0.9; none since. At twice the depth, a
# chassis corner driven 2 cm into a crate's side near its top took the top: the crate went under
# the car example's chassis and lifted it.) A point within EDGE_SNAP of an edge (its two nearest
# faces about as near) keeps FACE_TIE: the corners of a box sunk into one it is aligned with lie
# on that one's vertical edges, and are taken out upwards.
FACE_TIE = 0.25
FACE_NEAR = 4.0
# A body's point inside a box, hull or cylinder that was beyond one of its face planes by more
# than ENTRY_SLACK of its size at the substep's start came in through one of those faces, and goes
# out through it (the nearest of them; those within ENTRY_TIE of the nearest go to the one that
# faces its owner): not through a face it never crossed that happens to be nearer (``entered``).
ENTRY_SLACK = 1e-6
ENTRY_TIE = 0.02


class ShapeKind(IntEnum):
    PLANE = PLANE
    SPHERE = SPHERE
    CAPSULE = CAPSULE
    BOX = BOX
    CYLINDER = CYLINDER
    CONVEX_HULL = HULL
    MESH = MESH
    BOX_INTERIOR = BOX_INTERIOR
