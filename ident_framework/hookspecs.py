"""The extension points: one collecting `register_*` hook and one `typing.Protocol` each.

A plugin implements a hook with `@hookimpl` and calls `register(name, factory, schema)` per
option: `schema` is the dataclass of its config keys, `factory(params)` builds the object.
Protocols are satisfied structurally; *optional* members have defaults in the protocol's
`...Defaults` class, and members with a trailing underscore are results, set by `fit` (or
`predict`). `EXTENSION_POINTS` ties each hook to its config groups, protocol and built-in
options (the registry and run config derive from it); `conform` checks a factory's object
once and gives it the optional members it lacks.

Rationale: docs/design.md#plugins-pluggy-and-hydra
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pluggy

from ident_framework.errors import UserError

if TYPE_CHECKING:
    from ident_framework.data.dataset import Dataset
    from ident_framework.model.robot import RobotModel

ENTRY_POINT_GROUP = "ident_framework"  # pluggy project name and entry-point group
DISTRIBUTION = "ident-framework"  # the distribution of the core and its built-in plugins

hookspec = pluggy.HookspecMarker(ENTRY_POINT_GROUP)
hookimpl = pluggy.HookimplMarker(ENTRY_POINT_GROUP)

Register = Callable[[str, Callable[[Any], Any], type], None]


# ---------------------------------------------------------------------------------- the hooks
@hookspec
def register_data_sources(register: Register) -> None:
    """Register data sources (`DataSource`): options of `source=` and `validation=`."""


@hookspec
def register_trajectory_generators(register: Register) -> None:
    """Register trajectory generators (`TrajectoryGenerator`): `trajectory=`."""


@hookspec
def register_friction_models(register: Register) -> None:
    """Register joint friction models (`FrictionModel`): `friction=`."""


@hookspec
def register_estimators(register: Register) -> None:
    """Register parameter estimators (`Estimator`): `estimator=`."""


@hookspec
def register_residual_learners(register: Register) -> None:
    """Register residual learners (`ResidualLearner`): `residual=`."""


# ------------------------------------------------------------------------------ the protocols


@runtime_checkable
class Trajectory(Protocol):
    """A joint-space reference motion q(t) for t in [0, duration] (s)."""

    duration: float

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q (rad), dq (rad/s), ddq (rad/s^2) at times t (s); each of shape (len(t), n)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Plain (YAML-safe) description from which the trajectory can be rebuilt."""
        ...


# cond(W_base) of a candidate motion sampled at (q, dq, ddq); lower is better.
ConditionObjective = Callable[[np.ndarray, np.ndarray, np.ndarray], float]


class TrajectoryGenerator(Protocol):
    """Designs a motion for the robot, e.g. an optimised excitation. Optional (defaults in
    `TrajectoryGeneratorDefaults`): `rebuild(description)`, the trajectory of a `describe()`,
    and `slow_motion(robot, amplitude_rad, period_s)`, a slow periodic motion about a home
    pose (the RTDE emulator's default)."""

    def generate(
        self, robot: RobotModel, objective: ConditionObjective | None, seed: int
    ) -> Trajectory: ...


class TrajectoryGeneratorDefaults:
    """The optional members of `TrajectoryGenerator`, with their defaults."""

    def rebuild(self, description: dict[str, Any]) -> Trajectory:
        """Not available: the generator cannot read back its trajectories."""
        raise UserError(
            f"The trajectory generator {description.get('generator')!r} cannot rebuild a "
            "described trajectory; give a CSV of samples instead."
        )

    def slow_motion(self, robot: RobotModel, amplitude_rad: float, period_s: float) -> Trajectory:
        """Not available: the generator has no slow motion."""
        raise UserError(
            "This trajectory generator has no slow motion; give the motion as a file instead."
        )


class DataSource(Protocol):
    """Produces a `Dataset`: by moving a (simulated or real) robot along a trajectory, or by
    reading a recording. `moves_robot` tells the engine whether it must design a trajectory."""

    moves_robot: bool

    def acquire(self, robot: RobotModel, trajectory: Trajectory | None, role: str) -> Dataset:
        """role: "identification", "validation" or "identification_<k>" (the closed loop's
        k-th recording, k >= 2; a simulated robot seeds its noise from the role)."""
        ...


class FrictionModel(Protocol):
    """Joint friction linear in its parameters: tau_f[j] = sum_k basis[:, j, k] * p[j, k],
    the same form on every joint. A model with non-empty `nonlinear_names` implements
    `NonlinearFrictionModel` too.

    Optional (defaults in `FrictionModelDefaults`): `parameter_units` (name -> unit for the
    summary; None: `reports/parameters.PARAMETER_UNITS`), `nonlinear_names` (()),
    `sequential` (False) and `tuning_variants()` (none)."""

    parameter_names: tuple[str, ...]  # per joint, e.g. ("fv", "fc")
    parameter_units: Mapping[str, str] | None  # optional
    nonlinear_names: tuple[str, ...]  # optional: () is a linear model
    sequential: bool  # optional: the basis depends on the sample order (an internal state)

    def basis(self, dq: np.ndarray) -> np.ndarray:
        """(N, n, k) friction torque (Nm) of joint j per unit of its k-th parameter, at joint
        velocities dq (N, n) in rad/s."""
        ...

    def tuning_variants(self) -> list[dict[str, Any]]:
        """Optional: settings (config key -> value) that `tuning=cv` compares as whole models,
        simplest first, e.g. [{"stribeck": "off"}, {"stribeck": "on"}]."""
        ...


class FrictionModelDefaults:
    """The optional members of `FrictionModel`, with their defaults."""

    parameter_units: Mapping[str, str] | None = None
    nonlinear_names: tuple[str, ...] = ()
    sequential: bool = False

    def tuning_variants(self) -> list[dict[str, Any]]:
        """None: the model as configured is the only one tuned."""
        return []


@runtime_checkable
class NonlinearFrictionModel(FrictionModel, Protocol):
    """Friction with per-joint parameters it is not linear in (a Stribeck velocity, LuGre's
    bristle stiffness): tau_f[j] = sum_k basis(dq, nonlinear[j])[:, j, k] * p[j, k].

    The engine fits them by variable projection within `nonlinear_bounds` from
    `initial_nonlinear`, then identifies and predicts with the basis at the fitted values
    (saved in parameters.yaml). `sequential` models integrate a state along the recording:
    evaluated on whole recordings only, stepped by a simulator with `stepper`.
    `physical_parameters` / `from_physical` translate between fitted and physical values
    (e.g. LuGre's fs = fs_ratio·fc); fc and fv mean Coulomb and viscous friction in every
    model."""

    nonlinear_names: tuple[str, ...]  # per joint, e.g. ("v_s",)
    sequential: bool  # the basis depends on the sample order (an internal state)

    def nonlinear_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper), each (m,): bounds of the nonlinear parameters (the plugin's config)."""
        ...

    def initial_nonlinear(self, viscous: np.ndarray, coulomb: np.ndarray) -> np.ndarray:
        """(s, n, m) starting points of the fit, s >= 1 (the engine keeps, per joint, the one
        with the lowest cost), given the Coulomb-viscous solution per joint (Nm·s/rad, Nm)."""
        ...

    def basis_along(
        self, t: np.ndarray | None, dq: np.ndarray, nonlinear: np.ndarray
    ) -> np.ndarray:
        """(N, c, k) basis at velocities dq (N, c) rad/s, column i with nonlinear values
        nonlinear[i] (c, m), c any number of columns. t (N,) s: the sample times in order (a
        sequential model integrates from the steady state at the first); None: no time
        series (a sequential model gives its steady state)."""
        ...

    def physical_parameters(
        self, linear: np.ndarray, nonlinear: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Per-joint values (n,) by physical name of linear (n, k) and nonlinear (n, m) values."""
        ...

    def from_physical(
        self, physical: dict[str, np.ndarray], n: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """(linear (n, k), nonlinear (n, m)) of n joints from physical values (n,) by name;
        the model fills names that are missing (documented defaults)."""
        ...

    def stepper(self, nonlinear: np.ndarray, dt: float) -> Callable[[np.ndarray], np.ndarray]:
        """Sequential models: a function dq (n,) rad/s -> basis (n, k) at that step; the state
        then advances by dt s at that velocity (a simulator calls it once per step)."""
        ...


@dataclass
class StandardModel:
    """The standard (physical) parameters behind the base parameters, for estimators that
    work on physical parameters.

    names: in regressor column order (`m_1`, `mx_1`, ..., `fv_1`, `Ia_1`, ...); kinds:
    "inertial", "friction", "armature" or "offset"; joints: 0-based joint of each. The first
    10·n_links are the links' [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (joint frame).
    nominal: the robot model's values (friction and offsets 0). r_factors[j]: (p+1, p+1) R_j
    with R_jᵀ R_j = [Y_j | tau_j]ᵀ [Y_j | tau_j]. beta = combination @ theta,
    W_base = W @ basis.
    """

    names: list[str]
    kinds: list[str]
    joints: list[int]
    n_links: int
    nominal: np.ndarray
    r_factors: list[np.ndarray]
    basis: np.ndarray
    combination: np.ndarray


@dataclass
class LinearProblem:
    """Least-squares problem min ||W beta - tau|| in the base parameters beta.

    W (N*n x r) is never held in memory: `r_factors[j]` (r+1, r+1) is the R of the QR of
    [W_j | tau_j] (joint j's rows). `chunks()` re-streams the rows in time order as
    (t (m,) s, W (m, n, r), tau (m, n) Nm) blocks. `standard`: the physical parameters.
    """

    r_factors: list[np.ndarray]
    n_samples: int
    parameter_names: list[str]
    chunks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]]
    standard: StandardModel | None = None
    kept_rows: Any = (
        None  # the engine's own: rows kept for prediction (identify.linear_problem.KeptRows)
    )

    @property
    def n_parameters(self) -> int:
        return len(self.parameter_names)

    @property
    def n_joints(self) -> int:
        return len(self.r_factors)


class Estimator(Protocol):
    """scikit-learn style: `fit` returns self and sets `coef_` (base parameters) and
    `coef_std_` (their standard deviations, or None).

    Optional (defaults in `EstimatorDefaults`): `standard_coef_` (standard parameters the
    engine predicts with; None: mapped from `coef_`) and `write_outputs(folder)` (extra
    files and plots for the run directory)."""

    coef_: np.ndarray
    coef_std_: np.ndarray | None
    standard_coef_: np.ndarray | None  # optional

    def fit(self, problem: LinearProblem) -> Estimator: ...

    def write_outputs(self, folder: Path) -> None:
        """Optional: write extra files into the run directory `folder`."""
        ...


class EstimatorDefaults:
    """The optional members of `Estimator`, with their defaults."""

    standard_coef_: np.ndarray | None = None
    coef_cov_: np.ndarray | None = None  # (r, r) covariance of coef_, when the estimator has it
    fit_report_: dict | None = None  # what the fit cost and did (metrics.json `estimator`)

    def write_outputs(self, folder: Path) -> None:
        """Nothing to add to the run directory."""


@dataclass(frozen=True)
class ResidualInputs:
    """What a residual learner may use per sample, each (N, n) in time order: q (rad), dq
    (rad/s), ddq (rad/s²) and the physical model's torque (Nm): `tau_physical` (all of it),
    `tau_gravity` (Y(q, 0, 0) θ, with the offset), `tau_friction` and `tau_inertial` (the
    rest: M(q) ddq, Coriolis, centrifugal). Torque parts not computed are None."""

    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    tau_physical: np.ndarray | None = None
    tau_gravity: np.ndarray | None = None
    tau_inertial: np.ndarray | None = None
    tau_friction: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return int(np.shape(self.q)[0])

    def select(self, rows: slice | np.ndarray) -> ResidualInputs:
        """The same inputs at the given rows only."""
        return ResidualInputs(
            *(None if getattr(self, name) is None else getattr(self, name)[rows]
              for name in RESIDUAL_INPUT_FIELDS)
        )  # fmt: skip


RESIDUAL_INPUT_FIELDS = (
    "q", "dq", "ddq", "tau_physical", "tau_gravity", "tau_inertial", "tau_friction"
)  # fmt: skip


class ResidualLearner(Protocol):
    """Learns tau_meas - tau_physical (Nm) from `ResidualInputs`. `active` is False for the
    built-in `none` (no fusion stage, nothing else called).

    `fit(recordings, residuals)`: lists of `ResidualInputs` and their residuals ((N_r, n) Nm).
    `save(folder)` / `load(folder)`: the run directory's `residual/` (`load` may be a
    classmethod). Optional (defaults in `ResidualLearnerDefaults`): `write_outputs(folder)`
    (with `plots=true`); after `predict`, a range guard's `out_of_range_fraction_` (share of
    samples with a joint outside the training range) and `out_of_range_per_joint_`;
    `report_` (after `fit`, JSON-safe, metrics.json `residual`) and `prediction_report_`
    (after `predict`, merged into the `fusion` metrics); None when absent."""

    active: bool
    out_of_range_fraction_: float | None  # optional
    out_of_range_per_joint_: list[float] | None  # optional
    report_: dict[str, Any] | None  # optional
    prediction_report_: dict[str, Any] | None  # optional

    def fit(self, recordings: list[ResidualInputs], residuals: list[np.ndarray]) -> Any: ...

    def predict(self, inputs: ResidualInputs) -> np.ndarray:
        """(N, n) predicted residual torque (Nm)."""
        ...

    def save(self, folder: Path) -> None: ...

    def load(self, folder: Path) -> ResidualLearner: ...

    def write_outputs(self, folder: Path) -> None:
        """Optional: write extra files into the run directory `folder`."""
        ...


class ResidualLearnerDefaults:
    """The optional members of `ResidualLearner`, with their defaults."""

    out_of_range_fraction_: float | None = None
    out_of_range_per_joint_: list[float] | None = None
    report_: dict[str, Any] | None = None
    prediction_report_: dict[str, Any] | None = None

    def write_outputs(self, folder: Path) -> None:
        """Nothing to add to the run directory."""


# ---------------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class ExtensionPoint:
    """One extension point. `spec`: its hook; `groups`: the config groups it provides (the
    first is the run's own); `builtins`: modules registering one built-in option each, named
    as the module (`estimator=rls` is `ident_framework.estimators.rls`), in registration
    order; `defaults`: the class of the protocol's optional members."""

    kind: str
    spec: Callable[[Register], None]  # the hook specification (a function above)
    groups: tuple[str, ...]
    protocol: type
    label: str
    builtins: tuple[str, ...]
    defaults: type | None = None

    @property
    def hook(self) -> str:
        """The hook's name, as pluggy knows it (`register_...`)."""
        return self.spec.__name__

    @property
    def group(self) -> str:
        return self.groups[0]

    def builtin_options(self) -> dict[str, str]:
        """Built-in option name -> the module that registers it, in registration order."""
        return {module.rpartition(".")[2]: module for module in self.builtins}

    def optional_members(self) -> dict[str, Any]:
        """Optional member name -> default (a plain function for a method)."""
        if self.defaults is None:
            return {}
        return {name: vars(self.defaults)[name] for name in _own_names(self.defaults)}

    def required_members(self) -> tuple[str, ...]:
        """Members every object must have (result attributes `..._` once fitted)."""
        optional = self.optional_members()
        own = [k for k in self.protocol.__mro__ if k.__module__ == __name__ and k is not Protocol]
        names = _own_names(*own)
        return tuple(sorted(name for name in names if name not in optional))


def _own_names(*classes: type) -> set[str]:
    """Public attributes, annotated or defined, of `classes` (their own, not inherited)."""
    names: set[str] = set()
    for klass in classes:
        names |= {n for n in vars(klass).get("__annotations__", {}) if not n.startswith("_")}
        names |= {n for n in vars(klass) if not n.startswith("_")}
    return names


EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint(
        "data_source",
        register_data_sources,
        ("source", "validation"),
        DataSource,
        "data source",
        (
            "ident_framework.sources.mujoco",
            "ident_framework.sources.csv",
            "ident_framework.sources.rtde",
            "ident_framework.sources.rosbag",
        ),
    ),
    ExtensionPoint(
        "trajectory",
        register_trajectory_generators,
        ("trajectory", "validation.trajectory"),
        TrajectoryGenerator,
        "trajectory",
        ("ident_framework.trajectories.fourier", "ident_framework.trajectories.point_to_point"),
        TrajectoryGeneratorDefaults,
    ),
    ExtensionPoint(
        "friction",
        register_friction_models,
        ("friction",),
        FrictionModel,
        "friction",
        ("ident_framework.friction.none", "ident_framework.friction.coulomb_viscous"),
        FrictionModelDefaults,
    ),
    ExtensionPoint(
        "estimator",
        register_estimators,
        ("estimator",),
        Estimator,
        "estimator",
        (
            "ident_framework.estimators.geometric",
            "ident_framework.estimators.ls",
            "ident_framework.estimators.wls",
            "ident_framework.estimators.consistent",
            "ident_framework.estimators.rls",
        ),
        EstimatorDefaults,
    ),
    ExtensionPoint(
        "residual",
        register_residual_learners,
        ("residual",),
        ResidualLearner,
        "residual",
        ("ident_framework.residuals.none", "ident_framework.residuals.bpnn"),
        ResidualLearnerDefaults,
    ),
)

POINTS: dict[str, ExtensionPoint] = {point.kind: point for point in EXTENSION_POINTS}
# the run's own config group of each extension point -> its kind
PLUGIN_GROUPS: dict[str, str] = {point.group: point.kind for point in EXTENSION_POINTS}
# every built-in plugin module, in registration order: the one place the core names them
BUILTIN_PLUGINS: tuple[str, ...] = tuple(m for point in EXTENSION_POINTS for m in point.builtins)

NONLINEAR_FRICTION_MEMBERS = (
    "nonlinear_bounds",
    "initial_nonlinear",
    "basis_along",
    "physical_parameters",
    "from_physical",
)


def _friction_requirements(model: Any) -> tuple[str, ...]:
    """Methods a model with nonlinear parameters needs (`stepper` too when sequential)."""
    if not model.nonlinear_names:
        return ()
    return NONLINEAR_FRICTION_MEMBERS + (("stepper",) if model.sequential else ())


def conform(kind: str, obj: Any, name: str, distribution: str, fitted: bool = False) -> Any:
    """`obj` (from plugin `name` of `distribution`) given the optional members it lacks;
    UserError when it lacks a required one. `fitted`: check result attributes (`..._`) too."""
    point = POINTS[kind]
    for member, default in point.optional_members().items():
        if not hasattr(obj, member):
            value = default.__get__(obj) if callable(default) else default
            try:
                setattr(obj, member, value)
            except AttributeError:
                raise UserError(
                    f"The {point.label} plugin '{name}' from distribution '{distribution}' has "
                    f"no '{member}' and its objects take no new attributes: declare it (or "
                    f"inherit ident_framework.hookspecs.{point.defaults.__name__}), or "
                    "uninstall that distribution."
                ) from None
    required = [m for m in point.required_members() if fitted or not m.endswith("_")]
    missing = [m for m in required if not hasattr(obj, m)]
    if not missing and kind == "friction":
        missing = [m for m in _friction_requirements(obj) if not callable(getattr(obj, m, None))]
        if missing:
            raise UserError(
                f"The {point.label} plugin '{name}' from distribution '{distribution}' declares "
                f"nonlinear parameters {list(obj.nonlinear_names)} but does not implement "
                f"{missing} (see ident_framework.hookspecs.NonlinearFrictionModel). Fix or "
                "uninstall that distribution."
            )
    if missing:
        raise UserError(
            f"The {point.label} plugin '{name}' from distribution '{distribution}' does not "
            f"implement {missing} (see ident_framework.hookspecs.{point.protocol.__name__}). "
            "Fix or uninstall that distribution."
        )
    return obj
