"""Force fields: wind with turbulence, drag, attractors and repellers, and Blender's own force
fields (Force, Vortex, Turbulence, Harmonic, with Blender's falloff), acting on particles and rigid
bodies; and Follow Position / Follow Rotation for bodies (soft pulls to an animated pose).

Kinds (``ModelBuilder.add_force(kind, name=..., **settings)``), all scene-wide:

- ``"wind"``: an air velocity field. direction (3,) (normalised here), strength m/s (the mean air
  speed; a ``Track`` of signed speeds for a keyed wind), turbulence (RMS gust speed as a fraction
  of the strength, >= 0), turbulence_scale m (size of the gusts), turbulence_frequency Hz (how
  fast they change as they drift downwind), seed (whole number >= 0). Nothing is pushed by the
  wind itself: particles feel it through their drag (``Model.drag``) and bodies through theirs
  (``add_rigid_body(drag=...)``), both quadratic in the speed relative to the air. With the
  region settings below (axis defaults to the direction) the air speed is scaled by the falloff.
- ``"drag"``: Blender's Drag field, F = -(linear + quadratic |v|) v, linear in kg/s (N per m/s),
  quadratic in kg/m, on every particle and body (at its centre of mass; no torque), times the
  falloff of the region settings.
- ``"attractor"``: Cinema 4D's Attractor at ``position`` (3,) m: acceleration ``strength`` m/s^2
  at 1 m towards the point (negative pushes away), times the falloff ``"none"`` (1), ``"inverse"``
  (1/r) or ``"inverse_square"`` (1/r^2) of the distance r m, with r clamped to >= min_distance m
  (no singularity) and no effect beyond max_distance m.

Blender's fields, as Blender's effectors compute them (``effect.cc``: ``get_effector_data``,
``effector_falloff``, ``do_physical_effector``). Units: a field's strength S acts as a force of
S newtons on a 1 kg mass, that is an acceleration of S m/s^2 on any mass (as gravity does), and
a velocity term -c v is a rate c in 1/s. (Blender itself divides its fields' force by the frame
rate on cloth and rigid bodies and scales cloth forces by face area; here the numbers do not
depend on the frame rate, the mesh or the mass.) Each takes ``strength`` (number or ``Track``),
``noise`` and ``seed``, ``flow`` (1/s, not Harmonic), and the region settings.

- ``"force"``: S along the direction from the field to the point (positive pushes away, as
  Blender's); ``gravitation=True`` divides by the distance squared.
- ``"vortex"``: a swirl about the axis. ``shape="point"`` (Blender's old vortex): S d along
  axis x (point - position), d the distance, perpendicular to the radius. ``"plane"`` or
  ``"line"`` (Blender's default): with W = S times the falloff (rad/s) and r the point's offset
  from the axis, a = -W^2 r + W axis x r - v: the point is dragged (at a rate of 1/s) towards
  air turning rigidly at W about the axis, and held on its circle by the centripetal -W^2 r, so
  a free point settles on a circle turning counter-clockwise (seen from +axis) for S > 0.
- ``"turbulence"``: Blender's noise force: each component S (-1 + 2 T), T Blender's three-octave
  Perlin turbulence (its ``BLI_noise_generic_turbulence`` with improved Perlin noise) of the
  point's offset from the field plus the axis (``global_coordinates``: of the point itself),
  with gusts ``size`` m across; static in time (as Blender's), zero on average over space.
- ``"harmonic"``: a damped spring to the field: a = -S (d - rest_length) (unit offset)
  - 2 damping sqrt(|S|) v, so sqrt(S) rad/s is its angular frequency and damping its damping
  ratio (1: critically damped).

Region settings (all kinds but ``"attractor"``): position (3,) m and axis (3,) (the field
object's origin and Z axis; each may be a ``Track`` for a moving field), shape ``"point"`` (the
distance to the position), ``"plane"`` (to the plane through the position across the axis) or
``"line"`` (to the axis line), falloff_shape ``"sphere"``, ``"tube"`` or ``"cone"``, power,
min_distance and max_distance (None: off), radial_power, radial_min, radial_max (tube: metres
from the axis; cone: degrees from it), z_direction ``"both"``, ``"positive"`` or ``"negative"``
(only the points on that side of the plane across the axis). Blender's falloff of a distance d:
0 beyond the maximum, 1 within the minimum, else (1 + d - minimum)^-power. particle_weights (n,)
and body_weights (B,) >= 0 scale a field per particle or body (Blender's effector weights).
``noise`` N varies the strength by N sqrt(1/6) RMS (the RMS of Blender's random ``wind_func``),
here smoothly in space (about 1 m) and time (about 2 Hz), seeded by ``seed``.

Shapes: n particles, B bodies (body arrays have a row B for the static world).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field as dataclass_field

import numpy as np

from ..checks import FLOAT32_MAX, MAX_SPEED
from ..errors import JakobsenError
from ..geometry import quaternions as quat
from ..tracks import Track
from ..backend.numpy import fields as numpy_fields

FALLOFFS = ("none", "inverse", "inverse_square")
SHAPES = ("point", "line", "plane")
FALLOFF_SHAPES = ("sphere", "tube", "cone")
Z_DIRECTIONS = ("both", "positive", "negative")
# Blender's fields (and what of theirs the engine computes per point).
BLENDER_KINDS = ("force", "vortex", "turbulence", "harmonic")
# Random Fourier modes per turbulent wind: enough for gusts that do not look periodic, few enough
# that a 10k-vertex cloth pays (n, 16) cosines per substep.
WIND_MODES = 16
# Blender's noise adds wind_func(noise) to the strength at every evaluation: a random sign times
# u / f * noise with u uniform in [0, 1) and f in [1, 2), whose RMS is noise * sqrt(1/3 * 1/2).
NOISE_RMS = math.sqrt(1.0 / 6.0)
# The smooth stand-in for that noise: modes about this far apart and this fast.
NOISE_SCALE = 1.0
NOISE_FREQUENCY = 2.0

_REGION = dict(position=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), shape="point", falloff_shape="sphere", power=0.0,
               min_distance=None, max_distance=None, radial_power=0.0, radial_min=None, radial_max=None,
               z_direction="both", particle_weights=None, body_weights=None)
_BLENDER = dict(_REGION, strength=0.0, noise=0.0, seed=0, flow=0.0)

_DEFAULTS = {
    "wind": dict(_REGION, axis=None, direction=(1.0, 0.0, 0.0), strength=0.0, turbulence=0.0, turbulence_scale=1.0,
                 turbulence_frequency=1.0, seed=0),
    "drag": dict(_REGION, linear=0.0, quadratic=0.0),
    "attractor": dict(position=(0.0, 0.0, 0.0), strength=0.0, falloff="none", min_distance=0.0, max_distance=None),
    "force": dict(_BLENDER, gravitation=False),
    "vortex": dict(_BLENDER),
    "turbulence": dict(_BLENDER, size=1.0, global_coordinates=False),
    "harmonic": dict({k: v for k, v in _BLENDER.items() if k != "flow"}, damping=1.0, rest_length=0.0),
}
# Kinds that push bodies whatever their drag (for the energy guard: they feed energy in).
PUSHING_KINDS = ("attractor",) + BLENDER_KINDS


@dataclass(frozen=True)
class Forces:
    """The model's force fields, validated (a tuple of dicts from ``check_force``)."""

    fields: tuple = ()
    # What the substep's particle accelerations found, for its drag (same positions, same time).
    _scratch: dict = dataclass_field(default_factory=dict, compare=False, repr=False)

    @property
    def count(self) -> int:
        return len(self.fields)

    def of_kind(self, kind: str) -> list[dict]:
        return [f for f in self.fields if f["kind"] == kind]

    @property
    def pushes_bodies(self) -> bool:
        """Whether a field does work on bodies without their drag (attractors and Blender's Force,
        Vortex, Turbulence, Harmonic): an energy source for ``solver.energy``."""
        return any(f["kind"] in PUSHING_KINDS for f in self.fields)

    @property
    def drag_coefficients(self) -> tuple[float, float]:
        """(linear kg/s, quadratic kg/m) of all drag fields together, where each acts in full."""
        drags = self.of_kind("drag")
        return sum(f["linear"] for f in drags), sum(f["quadratic"] for f in drags)


def empty_forces() -> Forces:
    return Forces(())


# -- validation ---------------------------------------------------------------------------------


def _number(where, what, value, *, low=None, low_open=False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise JakobsenError(f"{where}: {what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
        raise JakobsenError(f"{where}: {what} must be finite (in single precision too), got {value}")
    if low is not None and (value <= low if low_open else value < low):
        raise JakobsenError(f"{where}: {what} must be {'>' if low_open else '>='} {low:g}, got {value:g}")
    return value


def _vector(where, what, value) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise JakobsenError(f"{where}: {what} must be 3 finite numbers, got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)) or not np.all(np.abs(v) <= FLOAT32_MAX):
        raise JakobsenError(f"{where}: {what} must be 3 finite numbers, got {value!r}")
    return v


def _track(where, what, value, shape=()) -> Track:
    values = np.asarray(value.values)
    if values.shape[1:] != shape or not np.all(np.abs(values) <= FLOAT32_MAX):
        raise JakobsenError(f"{where}: {what} track must hold {'numbers' if not shape else '3-vectors'} within "
                            f"single precision, got samples of shape {values.shape[1:]}")
    return value


def _strength(where, what, value, *, low=None):
    """A number, or a ``Track`` of numbers (a keyed strength)."""
    if isinstance(value, Track):
        return _track(where, what, value)
    if callable(value):
        raise JakobsenError(f"{where}: {what} must be a number or a Track (sample a function into "
                            "jakobsen_engine.tracks.Track)")
    return _number(where, what, value, low=low)


def _place(where, what, value):
    if isinstance(value, Track):
        return _track(where, what, value, (3,))
    return _vector(where, what, value)


def _choice(where, what, value, options):
    if value not in options:
        raise JakobsenError(f"{where}: {what} must be one of {', '.join(options)}, got {value!r}")
    return value


def _optional_distance(where, what, value):
    return None if value is None else _number(where, what, value, low=0.0)


def _weights(where, what, value):
    if value is None:
        return None
    try:
        w = np.array(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise JakobsenError(f"{where}: {what} must be numbers >= 0, one per item, got {value!r}") from None
    if not np.all(np.isfinite(w)) or np.any(w < 0.0) or np.any(w > FLOAT32_MAX):
        raise JakobsenError(f"{where}: {what} must be finite numbers >= 0")
    w.flags.writeable = False
    return w


def _seed(where, seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JakobsenError(f"{where}: seed must be a whole number >= 0, got {seed!r}")
    return int(seed)


def check_force(kind: str, name: str, **settings) -> dict:
    """Validate one force field's settings; raises JakobsenError naming the field.

    Returns the field as a dict (``kind``, ``name`` and its settings in SI units, plus what the
    solver precomputes: a wind's mean ``velocity`` and its gust modes, a field's noise modes).
    """
    where = f"force '{name}'"
    if kind not in _DEFAULTS:
        raise JakobsenError(f"{where}: kind must be one of {sorted(_DEFAULTS)}, got {kind!r}")
    unknown = sorted(set(settings) - set(_DEFAULTS[kind]))
    if unknown:
        raise JakobsenError(f"{where}: unknown setting(s) {', '.join(unknown)} for a {kind} field "
                            f"(known: {', '.join(sorted(_DEFAULTS[kind]))})")
    s = {**_DEFAULTS[kind], **settings}
    field = {"kind": kind, "name": name}
    if kind == "attractor":
        field.update(_check_attractor(where, s))
        return field
    if kind == "wind":
        if s["axis"] is None:
            s["axis"] = s["direction"]
        field.update(_check_wind(where, s))
    elif kind == "drag":
        field["linear"] = _number(where, "linear (kg/s)", s["linear"], low=0.0)
        field["quadratic"] = _number(where, "quadratic (kg/m)", s["quadratic"], low=0.0)
    else:
        field.update(_check_blender(where, kind, s))
    field.update(_check_region(where, s))
    return field


def _check_region(where, s) -> dict:
    axis = _place(where, "axis", s["axis"])
    if not isinstance(axis, Track) and np.linalg.norm(axis) < 1e-12:
        raise JakobsenError(f"{where}: axis must not be zero")
    out = dict(position=_place(where, "position", s["position"]), axis=axis,
               shape=_choice(where, "shape", s["shape"], SHAPES),
               falloff_shape=_choice(where, "falloff shape", s["falloff_shape"], FALLOFF_SHAPES),
               power=_number(where, "falloff power", s["power"], low=0.0),
               radial_power=_number(where, "radial falloff power", s["radial_power"], low=0.0),
               z_direction=_choice(where, "z direction", s["z_direction"], Z_DIRECTIONS),
               particle_weights=_weights(where, "particle weights", s["particle_weights"]),
               body_weights=_weights(where, "body weights", s["body_weights"]))
    for low, high, unit in (("min_distance", "max_distance", "m"), ("radial_min", "radial_max", "")):
        a = _optional_distance(where, low.replace("_", " "), s[low])
        b = _optional_distance(where, high.replace("_", " "), s[high])
        if a is not None and b is not None and b < a:
            raise JakobsenError(f"{where}: {high.replace('_', ' ')} ({b:g}{unit}) must not be less than "
                                f"{low.replace('_', ' ')} ({a:g}{unit})")
        out[low], out[high] = a, b
    return out


def _check_wind(where, s) -> dict:
    direction = _vector(where, "direction", s["direction"])
    length = float(np.linalg.norm(direction))
    if length < 1e-12:
        raise JakobsenError(f"{where}: direction must not be zero")
    strength = _strength(where, "strength (m/s)", s["strength"], low=0.0)
    peak = float(np.max(np.abs(strength.values))) if isinstance(strength, Track) else strength
    if peak > MAX_SPEED:
        raise JakobsenError(f"{where}: strength (m/s) is absurd, {peak:g} (at most {MAX_SPEED:g})")
    turbulence = _number(where, "turbulence", s["turbulence"], low=0.0)
    scale = _number(where, "turbulence scale (m)", s["turbulence_scale"], low=0.0, low_open=True)
    frequency = _number(where, "turbulence frequency (Hz)", s["turbulence_frequency"], low=0.0)
    seed = _seed(where, s["seed"])
    unit = direction / length
    # A keyed wind: the gusts drift with its strongest speed, and scale with its speed now.
    velocity = unit * peak
    out = dict(direction=unit, strength=strength, turbulence=turbulence, turbulence_scale=scale,
               turbulence_frequency=frequency, seed=seed, velocity=velocity, modes=None)
    if turbulence > 0.0 and peak > 0.0:
        out["modes"] = _gust_modes(seed, peak * turbulence, scale, frequency)
    return out


def _check_blender(where, kind, s) -> dict:
    out = dict(strength=_strength(where, "strength", s["strength"]),
               noise=_number(where, "noise", s["noise"], low=0.0), seed=_seed(where, s["seed"]),
               flow=_number(where, "flow (1/s)", s.get("flow", 0.0), low=0.0), noise_modes=None)
    if out["noise"] > 0.0:
        out["noise_modes"] = _noise_modes(out["seed"])
    if kind == "force":
        out["gravitation"] = bool(s["gravitation"])
    elif kind == "turbulence":
        out["size"] = _number(where, "size (m)", s["size"], low=0.0, low_open=True)
        out["global_coordinates"] = bool(s["global_coordinates"])
    elif kind == "harmonic":
        out["damping"] = _number(where, "damping", s["damping"], low=0.0)
        out["rest_length"] = _number(where, "rest length (m)", s["rest_length"], low=0.0)
    return out


def _gust_modes(seed: int, rms: float, scale: float, frequency: float):
    """Random Fourier modes of the gusts: wave vectors k (M, 3) 1/m, angular frequencies (M,)
    rad/s, phases (M,), amplitudes (M, 3) m/s.

    Each amplitude is perpendicular to its wave vector, so the gust field is divergence-free
    (air neither piles up nor vanishes); amplitudes sqrt(2/M) make the RMS gust speed ``rms``.
    Wavelengths and frequencies spread over a factor three around the settings so the sum does
    not repeat visibly.
    """
    rng = np.random.default_rng(seed)
    m = WIND_MODES
    k_dir = rng.normal(size=(m, 3))
    k_dir /= np.linalg.norm(k_dir, axis=1, keepdims=True)
    k = k_dir * (2.0 * np.pi / scale * rng.uniform(0.5, 1.5, m))[:, None]
    omega = 2.0 * np.pi * frequency * rng.uniform(0.5, 1.5, m)
    phase = rng.uniform(0.0, 2.0 * np.pi, m)
    a = rng.normal(size=(m, 3))
    a -= k_dir * np.einsum("ij,ij->i", a, k_dir)[:, None]
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    amp = a * (rms * math.sqrt(2.0 / m))
    for arr in (k, omega, phase, amp):
        arr.flags.writeable = False
    return k, omega, phase, amp


def _noise_modes(seed: int):
    """Modes of a smooth scalar noise of unit RMS: wave vectors (M, 3) 1/m, angular frequencies
    (M,) rad/s, phases (M,); each cosine has amplitude sqrt(2/M)."""
    rng = np.random.default_rng(seed + 7919)  # not the wind's gusts for the same seed
    m = WIND_MODES
    k = rng.normal(size=(m, 3))
    k *= (2.0 * np.pi / NOISE_SCALE * rng.uniform(0.5, 1.5, m) / np.linalg.norm(k, axis=1))[:, None]
    omega = 2.0 * np.pi * NOISE_FREQUENCY * rng.uniform(0.5, 1.5, m)
    phase = rng.uniform(0.0, 2.0 * np.pi, m)
    for arr in (k, omega, phase):
        arr.flags.writeable = False
    return k, omega, phase


def _check_attractor(where, s) -> dict:
    position = _vector(where, "position", s["position"])
    strength = _number(where, "strength (m/s^2)", s["strength"])
    falloff = s["falloff"]
    if falloff not in FALLOFFS:
        raise JakobsenError(f"{where}: falloff must be one of {', '.join(FALLOFFS)}, got {falloff!r}")
    min_d = _number(where, "min distance (m)", 0.0 if s["min_distance"] is None else s["min_distance"], low=0.0)
    max_d = s["max_distance"]
    if max_d is None:
        max_d = math.inf
    else:
        if isinstance(max_d, bool) or not isinstance(max_d, (int, float, np.integer, np.floating)) \
                or math.isnan(max_d) or max_d <= 0.0:
            raise JakobsenError(f"{where}: max distance must be a positive number of metres (or None), got {max_d!r}")
        max_d = float(max_d)
        if max_d <= min_d:
            raise JakobsenError(f"{where}: max distance ({max_d:g} m) must exceed min distance ({min_d:g} m)")
    return dict(position=position, strength=strength, falloff=falloff, min_distance=min_d, max_distance=max_d)


def finalize_forces(specs: list[dict]) -> Forces:
    return Forces(tuple(specs))


# -- the kernels' inputs ------------------------------------------------------------------------

# Per point, the fields are kernels (``backend/*/fields.py``: numba compiled, numpy the reference);
# here each field is packed into the flat arrays they take. Without a backend (the bodies' few
# points, direct calls) the numpy kernels run.
_EMPTY = np.zeros(0)
_EMPTY.flags.writeable = False
_NO_WAVES = (np.zeros((0, 3)), _EMPTY, np.zeros((0, 3)))
BLENDER_KIND_CODES = {kind: code for code, kind in enumerate(BLENDER_KINDS)}
ATTRACTOR_FALLOFF_CODES = {name: code for code, name in enumerate(FALLOFFS)}


def _kernels(backend):
    """The fields kernel module of ``backend`` (a ``Backend``, or its ``fields`` module itself;
    None: numpy's)."""
    if backend is None:
        return numpy_fields
    return getattr(backend, "fields", backend)


def _at(value, t: float):
    return value.at(t) if isinstance(value, Track) else value


def _pack_region(field: dict, t: float) -> np.ndarray:
    """A field's region at t as the kernels take it (``backend/numpy/fields.py``: ``region``)."""
    c = np.asarray(_at(field["position"], t), dtype=np.float64)
    axis = np.asarray(_at(field["axis"], t), dtype=np.float64)
    axis = axis / max(float(np.linalg.norm(axis)), 1e-300)
    shape = field["shape"]
    # A plane measures from the plane (the point's height above it); a line, and a vortex of either
    # shape, from the axis line.
    mode = 0 if shape == "point" else (1 if (shape == "line" or field["kind"] == "vortex") else 2)
    # A minimum that is off falls off as a minimum of 0 (no distance is below it); a maximum off is inf.
    def off(v, default):
        return default if v is None else v
    return np.array([c[0], c[1], c[2], axis[0], axis[1], axis[2], mode,
                     FALLOFF_SHAPES.index(field["falloff_shape"]), Z_DIRECTIONS.index(field["z_direction"]),
                     off(field["min_distance"], 0.0), off(field["max_distance"], math.inf), field["power"],
                     off(field["radial_min"], 0.0), off(field["radial_max"], math.inf), field["radial_power"]])


def _region(field: dict, t: float) -> np.ndarray:
    """``_pack_region``, kept in the field when it does not move."""
    packed = field.get("_region")
    if packed is not None:
        return packed
    packed = _pack_region(field, t)
    if not isinstance(field["position"], Track) and not isinstance(field["axis"], Track):
        packed.flags.writeable = False
        field["_region"] = packed
    return packed


def _regional(field: dict) -> bool:
    """Whether a field's falloff can be anything but 1 (a minimum distance alone changes nothing)."""
    return (field["z_direction"] != "both" or field["max_distance"] is not None
            or field["falloff_shape"] != "sphere" or field["power"] > 0.0)


def _weights_for(field: dict, key: str, count: int, rows=None):
    w = field[key]
    if w is None:
        return _EMPTY
    if rows is None:
        if len(w) != count:
            raise JakobsenError(f"force '{field['name']}': {key.replace('_', ' ')} has {len(w)} values for "
                                f"{count} {key.split('_')[0]}s")
        return w
    if len(w) < count:
        raise JakobsenError(f"force '{field['name']}': {key.replace('_', ' ')} has {len(w)} values for "
                            f"{count} {key.split('_')[0]}s")
    return np.ascontiguousarray(w[rows])


def _points(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def _noise_waves(field: dict, t: float):
    """(k, theta, amplitude) of a field's strength noise at t (no waves without noise)."""
    modes = field.get("noise_modes")
    if modes is None:
        return _NO_WAVES[0], _NO_WAVES[1], 0.0
    k, omega, phase = modes
    return k, phase - omega * t, NOISE_RMS * field["noise"] * math.sqrt(2.0 / len(omega))


def field_strength(field: dict, t: float, x: np.ndarray, backend=None) -> np.ndarray:
    """The strength (n,) at points x at time t: its (keyed) value plus the noise."""
    x = _points(x)
    out = np.empty(len(x))
    k, theta, amp = _noise_waves(field, t)
    _kernels(backend).strength(x, float(_at(field["strength"], t)), k, theta, amp, out)
    return out


def field_falloff(field: dict, t: float, x: np.ndarray, weights=None, backend=None) -> np.ndarray:
    """Blender's ``effector_falloff`` (n,) of a field at points x at t: z direction, then sphere
    (by the distance), tube (by the height along the axis and the distance from it) or cone (by
    the height and the angle from the axis in degrees), times the per-point weights."""
    x = _points(x)
    out = np.zeros(len(x))
    _kernels(backend).falloff(x, _region(field, t), _EMPTY if weights is None else weights, out)
    return out


# Improved Perlin noise (Perlin 2002) with a fixed shuffled table (Blender's has its own; the
# noise's statistics are the same) and its twelve edge gradients (four repeated).
PERLIN_PERMUTATION = np.tile(np.random.default_rng(1234).permutation(256), 2).astype(np.intp)
_GRAD = np.array([[1, 1, 0], [-1, 1, 0], [1, -1, 0], [-1, -1, 0], [1, 0, 1], [-1, 0, 1], [1, 0, -1], [-1, 0, -1],
                  [0, 1, 1], [0, -1, 1], [0, 1, -1], [0, -1, -1], [1, 1, 0], [0, -1, 1], [-1, 1, 0], [0, -1, -1]],
                 dtype=np.float64)
# Each gradient by its component (3, 256), indexed by the whole hash (0-255), so no "& 15" per corner.
PERLIN_GRADIENTS = np.ascontiguousarray(np.tile(_GRAD.T, 16))
for _table in (PERLIN_PERMUTATION, PERLIN_GRADIENTS):
    _table.flags.writeable = False


# -- the fields ---------------------------------------------------------------------------------


def _add_wind(kernels, field: dict, t: float, x: np.ndarray, weights, air) -> None:
    mean = field["velocity"]
    strength = field["strength"]
    if isinstance(strength, Track):
        now = float(strength.at(t))
        base = field["direction"] * now
        peak = float(np.linalg.norm(mean))
        # A keyed wind's gusts scale with its speed now.
        scale = abs(now) / peak if peak > 0.0 else 0.0
    else:
        base, scale = mean, 1.0
    if field["modes"] is None:
        k, theta, amp = _NO_WAVES
    else:
        # The gusts drift downwind with the mean wind (Taylor's frozen turbulence) while each mode
        # also changes in place at its own frequency: cos(k . (x - mean t) - omega t + phase).
        k, omega, phase, amp = field["modes"]
        theta = phase - omega * t - k @ (mean * t)
    regional = _regional(field)
    region = _region(field, t) if regional else _EMPTY
    kernels.wind_air(x, np.ascontiguousarray(base, dtype=np.float64), scale, k, theta, amp, region, regional,
                     weights, air)


def wind_velocity(field: dict, t: float, x: np.ndarray, weights=None, backend=None) -> np.ndarray:
    """Air velocity (n, 3) m/s of one wind at points x (n, 3) at time t (times its falloff and
    the points' weights). The gusts are smooth in space and time."""
    x = _points(x)
    air = np.zeros_like(x)
    _add_wind(_kernels(backend), field, t, x, _EMPTY if weights is None else weights, air)
    return air


def air_velocity(forces: Forces, t: float, x: np.ndarray, rows=None, backend=None):
    """Sum of the winds' air velocities (n, 3) m/s at x (n, 3), or None without winds; rows: the
    bodies x belongs to (None: x are all the particles)."""
    winds = forces.of_kind("wind")
    if not winds:
        return None
    x = _points(x)
    kernels = _kernels(backend)
    key = "particle_weights" if rows is None else "body_weights"
    air = np.zeros_like(x)
    for field in winds:
        _add_wind(kernels, field, t, x, _weights_for(field, key, len(x), rows), air)
    return air


def _add_attractors(kernels, forces: Forces, x: np.ndarray, accel):
    """accel (n, 3) or None += every attractor's pull; returns accel (None without attractors)."""
    for field in forces.of_kind("attractor"):
        if accel is None:
            accel = np.zeros_like(x)
        kernels.attractor(x, field["position"], field["strength"], ATTRACTOR_FALLOFF_CODES[field["falloff"]],
                          field["min_distance"], field["max_distance"], accel)
    return accel


def attractor_acceleration(field: dict, x: np.ndarray, backend=None) -> np.ndarray:
    """Acceleration (n, 3) m/s^2 of one attractor on points x (n, 3)."""
    x = _points(x)
    return _add_attractors(_kernels(backend), Forces((field,)), x, None)


def _add_blender(kernels, field: dict, t: float, x: np.ndarray, weights, accel, rate) -> None:
    kind = field["kind"]
    params = np.array([float(field.get("gravitation", False)), field.get("flow", 0.0), field.get("size", 1.0),
                       float(field.get("global_coordinates", False)), field.get("damping", 0.0),
                       field.get("rest_length", 0.0)])
    k, theta, amp = _noise_waves(field, t)
    kernels.blender_field(x, BLENDER_KIND_CODES[kind], _region(field, t), params, float(_at(field["strength"], t)),
                          k, theta, amp, weights, PERLIN_PERMUTATION, PERLIN_GRADIENTS, accel, rate)


def blender_field(field: dict, t: float, x: np.ndarray, weights=None, backend=None):
    """One of Blender's Force, Vortex, Turbulence, Harmonic fields at points x (n, 3) at t:
    (acceleration (n, 3) m/s^2 that does not depend on the velocity, damping rate (n,) 1/s: the
    velocity terms -rate v), as Blender's ``do_physical_effector`` with its location flag (the
    flow term included), zero where the falloff is zero (Blender skips the field there)."""
    x = _points(x)
    accel, rate = np.zeros_like(x), np.zeros(len(x))
    _add_blender(_kernels(backend), field, t, x, _EMPTY if weights is None else weights, accel, rate)
    return accel, rate


def _blender_terms(forces: Forces, t: float, x: np.ndarray, rows=None, backend=None, accel=None):
    """Blender fields together at x: (acceleration (n, 3) or None, damping rate (n,) or None);
    accel: an acceleration (n, 3) to add them to (returned), or None."""
    rate = None
    kernels = _kernels(backend)
    key = "particle_weights" if rows is None else "body_weights"
    for field in forces.fields:
        if field["kind"] not in BLENDER_KINDS:
            continue
        if rate is None:
            rate = np.zeros(len(x))
            if accel is None:
                accel = np.zeros_like(x)
        _add_blender(kernels, field, t, x, _weights_for(field, key, len(x), rows), accel, rate)
    return accel, rate


def _drag_terms(forces: Forces, t: float, x: np.ndarray, rows=None, backend=None):
    """The drag fields at x: (linear kg/s (n,), quadratic kg/m (n,)), or (0.0, 0.0) without any."""
    drags = forces.of_kind("drag")
    if not drags:
        return 0.0, 0.0
    kernels = _kernels(backend)
    key = "particle_weights" if rows is None else "body_weights"
    linear, quadratic = np.zeros(len(x)), np.zeros(len(x))
    for field in drags:
        regional = _regional(field)
        kernels.drag_terms(x, field["linear"], field["quadratic"], _region(field, t) if regional else _EMPTY,
                           regional, _weights_for(field, key, len(x), rows), linear, quadratic)
    return linear, quadratic


def acceleration(forces: Forces, x: np.ndarray, t: float = 0.0, rows=None, backend=None):
    """Sum of the attractors' and Blender fields' velocity-free accelerations (n, 3) m/s^2 at x
    (n, 3) at t, or None without such fields."""
    x = _points(x)
    a = _add_attractors(_kernels(backend), forces, x, None)
    a, _ = _blender_terms(forces, t, x, rows, backend, a)
    return a


def _damp(v: np.ndarray, inv_mass: np.ndarray, linear, quadratic, h: float, rate=0.0) -> np.ndarray:
    """v (n, 3) after one substep h of F = -(linear + quadratic |v|) v on masses 1/inv_mass (n,)
    and a = -rate v (rate 1/s, on any mass); linear, quadratic, rate scalars or (n,).

    Linear drag is integrated exactly (exp(-(c w + rate) h)); quadratic drag implicitly
    (v' = v / (1 + q w |v| h)) so that it can never reverse the motion, however strong. Pinned
    particles (w = 0) keep their velocity.
    """
    speed = np.sqrt(np.einsum("ij,ij->i", v, v))
    scale = np.exp(-(linear * inv_mass + rate * (inv_mass > 0.0)) * h) / (1.0 + quadratic * inv_mass * speed * h)
    return v * scale[:, None]


# -- particles ----------------------------------------------------------------------------------


def particle_air_and_acceleration(forces: Forces, t: float, x: np.ndarray, *, with_air: bool = True,
                                  backend=None):
    """(air velocity (n, 3) m/s or None, extra acceleration (n, 3) m/s^2 or None) for particles
    at x (n, 3) at time t; None where the fields add nothing. with_air=False skips the winds (no
    particle has drag, so the air cannot reach them). The Blender fields' velocity terms are kept
    for ``drag_particles`` in the same substep. backend: whose kernels (None: numpy's)."""
    kernels = _kernels(backend)
    points = _points(x)
    a = _add_attractors(kernels, forces, points, None)
    a, rate = _blender_terms(forces, t, points, None, kernels, a)
    forces._scratch.update(x=x, t=t, rate=rate)
    return (air_velocity(forces, t, points, None, kernels) if with_air else None), a


def drag_particles(forces: Forces, h: float, x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray,
                   backend=None) -> None:
    """The drag fields and the Blender fields' velocity terms over one substep h, in place: the
    Verlet velocity (x - x_prev) / h of each particle (inverse mass inv_mass (n,) 1/kg; pinned
    ones have 0 and keep theirs) is damped by moving x_prev (n, 3). The fields are evaluated at
    the time ``particle_air_and_acceleration`` was last called with (the substep's start)."""
    kernels = _kernels(backend)
    scratch = forces._scratch
    t = scratch.get("t", 0.0)
    points = _points(x)
    if scratch.get("x") is x:
        rate = scratch.get("rate")
    else:
        _, rate = _blender_terms(forces, t, points, None, kernels)
    linear, quadratic = _drag_terms(forces, t, points, None, kernels)
    if rate is None and not np.any(linear > 0.0) and not np.any(quadratic > 0.0):
        return
    n = len(points)
    def as_array(c):
        return c if isinstance(c, np.ndarray) else np.zeros(n)
    if x_prev.flags.c_contiguous and x_prev.dtype == np.float64 and points is x:
        kernels.damp_particles(points, x_prev, np.ascontiguousarray(inv_mass, dtype=np.float64), as_array(linear),
                               as_array(quadratic), as_array(rate), h)
    else:
        prev = np.ascontiguousarray(x_prev, dtype=np.float64)
        kernels.damp_particles(points, prev, np.ascontiguousarray(inv_mass, dtype=np.float64), as_array(linear),
                               as_array(quadratic), as_array(rate), h)
        x_prev[...] = prev


# -- bodies -------------------------------------------------------------------------------------


def apply_to_bodies(forces: Forces, bodies, t: float, h: float, x, q, v, w, inv_mass, inv_inertia,
                    air=None, accel=None, backend=None) -> None:
    """Change the velocities v, w (B+1, 3) of the bodies the solver moves in place by one
    substep h of the force fields and Follow Position/Rotation; t is the substep's end, x (B+1, 3)
    and q (B+1, 4) the poses at its start; air: (3,) m/s, the still air's velocity
    (``SolverSettings.air_velocity``) that the winds add to; accel: (B+1, 3) m/s^2 the integrator
    adds after this (gravity), which the follow pulls must hold against.

    Order: attractors and Blender's fields' velocity-free parts (explicit), air drag, drag fields
    and the fields' velocity terms (implicit, never reverse the motion), then the follow pulls
    (implicit), so a strong pull lands on its target whatever the rest did. Forces act at the
    centre of mass (no torque, as Blender's Rigid Body applies fields); accelerations are
    independent of the inertia, so inv_inertia is not needed.
    """
    count = bodies.count
    moving = np.flatnonzero(inv_mass[:count] > 0.0)
    if not len(moving):
        return
    t0 = t - h
    xm = _points(x[moving])
    im = inv_mass[moving]
    kernels = _kernels(backend)
    pull = _add_attractors(kernels, forces, xm, None)
    pull, rate = _blender_terms(forces, t0, xm, moving, kernels, pull)
    if pull is not None:
        v[moving] += pull * h
    drag = bodies.drag[moving]
    if np.any(drag > 0.0):
        wind = air_velocity(forces, t0, xm, moving, kernels)
        still = np.zeros(3) if air is None else np.asarray(air, dtype=np.float64)
        v_air = still + (0.0 if wind is None else wind)
        rel = v[moving] - v_air
        speed = np.sqrt(np.einsum("ij,ij->i", rel, rel))
        v[moving] = v_air + rel / (1.0 + drag * im * speed * h)[:, None]
    linear, quadratic = _drag_terms(forces, t0, xm, moving, kernels)
    if rate is not None or np.any(linear > 0.0) or np.any(quadratic > 0.0):
        v[moving] = _damp(v[moving], im, linear, quadratic, h, 0.0 if rate is None else rate)
    _follow(bodies, moving, t, h, x, q, v, w, accel)


def animated_poses(bodies, ks: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Poses (centres (k, 3) m, orientations (k, 4)) that bodies ``ks`` have at t by their tracks;
    their rest poses where they have none."""
    x = np.array(bodies.rest_position[ks], dtype=np.float64).reshape(-1, 3)
    q = np.array(bodies.rest_orientation[ks], dtype=np.float64).reshape(-1, 4)
    tracks = bodies.tracks
    with_track = np.array([tracks.has(int(k)) for k in ks], dtype=bool)
    if np.any(with_track):
        x[with_track], q[with_track] = tracks.poses(np.asarray(ks)[with_track], t)
    return x, q


def _follow(bodies, moving, t, h, x, q, v, w, accel=None) -> None:
    """Follow Position / Rotation: a = s^2 (target - x) - 2 s (v - v_target), critically damped,
    for the substep from t - h to t.

    Implicit Euler on the pose at the substep's end (x' = x + h v'):
    v' (1 + s h)^2 = v + h s^2 (x_target(t) - x) + 2 s h v_target. It is stable for any s h, a
    very strong pull lands on the target in one substep, and a target moving steadily is tracked
    with no lag. The integrator's own acceleration g (gravity) joins the implicit solve and is
    taken out again (the integrator adds it next), so a body hangs g / s^2 below its target as
    the spring would, not (1 + s h)^2 times that. Rotation is the same with the rotation vector of
    q_target q^-1 as the error.
    """
    sp, sr = bodies.follow_position[moving], bodies.follow_rotation[moving]
    active = (sp > 0.0) | (sr > 0.0)
    if not np.any(active):
        return
    ks = moving[active]
    sp, sr = sp[active], sr[active]
    x0, q0 = animated_poses(bodies, ks, t - h)
    x1, q1 = animated_poses(bodies, ks, t)
    v_target = (x1 - x0) / h
    w_target = quat.angular_velocity(q1, q0, h)
    error = quat.log_rotation(quat.multiply(q1, quat.conjugate(q[ks])))
    g_h = np.zeros((len(ks), 3)) if accel is None else accel[ks] * h
    pulled = sp > 0.0
    for s, vel, target_vel, gap, extra in ((sp, v, v_target, x1 - x[ks], g_h * pulled[:, None]),
                                           (sr, w, w_target, error, 0.0)):
        sh = s * h
        vel[ks] = (vel[ks] + extra + (s * sh)[:, None] * gap + (2.0 * sh)[:, None] * target_vel) \
            / ((1.0 + sh) ** 2)[:, None] - extra
