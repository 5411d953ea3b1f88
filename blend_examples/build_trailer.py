"""Build ``trailer.blend``: a car tows a trailer round a left turn.

The car (``cars.car``, rigged by Create Vehicle) tows a box trailer on one axle whose two wheels
are its children, as modelled. *Hitch Trailer* (``bpy.ops.jakobsen.vehicle_hitch``, the car
active and the trailer selected) made the trailer a vehicle without a motor (Drive None) and
joined it to the car with a Ball and Socket connector between them. The car's Vehicle settings:
rear-wheel drive at a Target Speed of 4 m/s, and a keyed Steering angle: straight for a second,
then turning left past a row of cones, straightening up again after nearly a third of a turn.
The ground is a plane Collider. A camera looks down at the whole turn, a sun light is set up; it
bakes as it is:

    .venv-bpy42/bin/python blend_examples/build_trailer.py   # writes blend_examples/trailer.blend
    .venv/bin/jakobsen bake blend_examples/trailer.blend      # writes blend_examples/trailer_baked.blend
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cars  # noqa: E402
import common  # noqa: E402

FRAMES = (1, 144)
TARGET_SPEED = 4.0      # m/s
# The car's Steering (frame, degrees; positive turns left).
STEERING = ((1, 0.0), (20, 0.0), (36, 18.0), (100, 18.0), (116, 0.0))
TRAILER_BEHIND = 3.6    # m from the car's centre back to the trailer's centre (its drawbar 0.2 m behind the car)


def build(path: str) -> str:
    scene = common.new_file("Trailer", frames=FRAMES)
    scene.jakobsen.substeps = 10
    cars.ground_plane("Ground", colour=(0.60, 0.64, 0.55))

    chassis, _ = cars.car("Car", location=(0.0, 0.0, 0.0), heading=math.pi, paint=(0.20, 0.55, 0.30))
    trailer, _ = cars.trailer("Trailer", location=(0.0, -TRAILER_BEHIND, 0.0), heading=math.pi)
    cars.hitch(chassis, trailer)

    v = chassis.jakobsen.vehicle
    v.drive = 'REAR'
    v.target_speed = TARGET_SPEED
    for frame, degrees in STEERING:
        v.steering_angle = math.radians(degrees)
        v.keyframe_insert("steering_angle", frame=frame)

    # Cones inside the turn (only seen): round the centre of the car's turning circle.
    for k, degrees in enumerate(range(0, 150, 30)):
        a = math.radians(degrees)
        cars.cone(f"Cone {k + 1}", (-6.5 + 4.0 * math.cos(a), 1.5 + 4.0 * math.sin(a), 0.0))

    # The whole turn from above, from the side the car turns away from.
    common.camera("Camera", location=(-7.0, -14.0, 22.0), target=(-7.0, 1.5, 0.0), lens=35.0)
    common.sun("Sun")
    return common.finish(path, FRAMES[0])


if __name__ == "__main__":
    common.main(build, "trailer.blend")
