"""A car built from the engine's API, for the vehicle tests: a box chassis on four cylinder wheels
held by Wheel Suspension connectors (X along the axle, Z up), on a ground plane, driving along +Y."""

from __future__ import annotations

import math

import numpy as np

import jakobsen_engine as engine
from jakobsen_engine.geometry import quaternions as quat

from .rigid_scenes import box_mesh

G = 9.81


def cylinder_mesh(radius, width, centre, segments=32):
    """A closed cylinder whose axis is world X (an axle across a car driving along Y)."""
    a = np.linspace(0.0, 2 * math.pi, segments, endpoint=False)
    ring = np.stack([np.zeros(segments), np.cos(a) * radius, np.sin(a) * radius], axis=1)
    verts = np.concatenate([ring + [-width / 2, 0, 0], ring + [width / 2, 0, 0]]) + np.asarray(centre, float)
    faces = [[k, (k + 1) % segments, segments + (k + 1) % segments, segments + k] for k in range(segments)]
    faces += [list(range(segments))[::-1], list(range(segments, 2 * segments))]
    return verts, faces


# The axle along world X: the shape frame's Z (a cylinder's axis) is X.
AXLE_FRAME = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]).T


def car(*, wheelbase=2.8, track=1.6, radius=0.33, width=0.22, chassis_mass=1200.0, wheel_mass=20.0,
        wheel_friction=1.0, ground_friction=1.0, travel=0.2, settings=None, ground=True, heading=0.0,
        position=(0.0, 0.0), builder=None, name="car", **vehicle):
    """(builder, vehicle index, chassis handle, wheel handles). The car faces +Y rotated by
    ``heading`` rad about Z, its wheels' lowest points on z = 0. Suspension from the masses as the
    add-on's Create Vehicle sets it: sag a quarter of the travel, damping ratio 0.4."""
    b = builder or engine.ModelBuilder()
    rot = np.array([[math.cos(heading), -math.sin(heading), 0], [math.sin(heading), math.cos(heading), 0],
                    [0, 0, 1.0]])
    origin = np.array([position[0], position[1], 0.0])
    hub_z = radius
    chassis_size = (track - width - 0.05, wheelbase + 1.2, 0.5)
    chassis_centre = origin + rot @ [0.0, 0.0, hub_z + 0.2]
    chassis = b.add_rigid_body(*box_mesh(chassis_size, chassis_centre, rot), name=f"{name} chassis",
                               mass=chassis_mass, shape="box", shape_frame=rot, friction=0.5)
    wheels, joints = [], []
    for side, x in (("L", -track / 2), ("R", track / 2)):
        for end, y in (("front", wheelbase / 2), ("rear", -wheelbase / 2)):
            hub = origin + rot @ [x, y, hub_z]
            verts, faces = cylinder_mesh(radius, width, (0, 0, 0))
            verts = verts @ rot.T + hub
            wheel = b.add_rigid_body(verts, faces, name=f"{name} wheel {end} {side}", mass=wheel_mass,
                                     shape="cylinder", shape_frame=rot @ AXLE_FRAME, friction=wheel_friction)
            frame = rot @ np.array([[-1.0, 0, 0], [0, -1.0, 0], [0, 0, 1.0]])  # X to the car's left, Z up
            joints.append(b.add_joint("wheel_suspension", chassis, wheel, hub, frame=frame,
                                      name=f"{name} suspension {end} {side}", suspension_limits=(0.0, travel)))
            wheels.append(wheel)
    if ground:
        b.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0, 0, 1), friction=ground_friction))
    n = len(wheels)
    stiffness = chassis_mass * G / n / (travel / 4)
    damping = 2 * 0.4 * math.sqrt(stiffness * chassis_mass / n)
    axle = dict(rest=0.0, travel=travel, stiffness=stiffness, damping=damping)
    vehicle.setdefault("suspension", {"front": axle, "rear": axle})
    vehicle.setdefault("motor_torque", (chassis_mass + n * wheel_mass) * G * 0.3 * radius)
    vehicle.setdefault("brake_torque", 2 * (chassis_mass + n * wheel_mass) * G * radius / n)
    index = b.add_vehicle(chassis, joints, name=name, forward=rot @ [0.0, 1.0, 0.0], **vehicle)
    return b, index, chassis, wheels


def run(builder, seconds, settings=None, record=None):
    """Step the model for ``seconds``; returns (solver, state, samples) with samples a list of
    record(solver, state) per frame."""
    settings = settings or engine.SolverSettings()
    solver = engine.Solver(builder.finalize(settings), settings)
    state = solver.make_state()
    samples = []
    for _ in range(int(round(seconds * settings.frame_rate))):
        solver.step_frame(state)
        if record is not None:
            samples.append(record(solver, state))
    return solver, state, samples


def forward_speed(state, chassis, heading=0.0):
    f = np.array([-math.sin(heading), math.cos(heading), 0.0])
    return float(state.bodies.velocity[chassis.index] @ f)


def chassis_position(state, chassis):
    return np.array(state.bodies.position[chassis.index])


def yaw(state, chassis, rest_orientation):
    rel = quat.multiply(state.bodies.orientation[chassis.index:chassis.index + 1],
                        quat.conjugate(rest_orientation[None]))
    fwd = quat.rotate(rel, np.array([[0.0, 1.0, 0.0]]))[0]
    return math.atan2(-fwd[0], fwd[1])
