"""Built-in data source `mujoco`: a simulated "real" robot moved along the trajectory.

The real robot is the nominal model perturbed from `seed` (`perturb_robot`), the MJCF file
`model_path` as it is, or a robot handed over in code (`real_robot=`, e.g. by `mode=rehearse`);
the controller knows only the nominal model. The same `seed` gives the same robot in every
role; only the measurement noise differs. The dataset carries the true parameters in
`metadata["truth"]` and the simulated robot's MJCF in `metadata["true_robot_mjcf"]`.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError, per_joint_values
from ident_framework.hookspecs import Trajectory, hookimpl
from ident_framework.launch_path import resolve_launch_path
from ident_framework.model.robot import RobotModel, urdf_to_mjcf
from ident_framework.params import Params, param
from ident_framework.simulation.perturbed_robot import (
    PerturbationParams,
    SimulatedTruth,
    perturb_robot,
    truth_from_robot,
)
from ident_framework.simulation.tracking import SimulationParams, simulate
from ident_framework.simulation.true_friction import (
    TrueFriction,
    TrueFrictionSpec,
    parse_true_friction,
)

CONFIG_PREFIX = {"identification": "source", "validation": "validation"}
_ROLE_CODES = {"identification": 0, "validation": 1}
_CACHE_SIZE = 8
_cache: dict[tuple, tuple[RobotModel, SimulatedTruth]] = {}


def _true_friction_spec(params: MujocoSourceParams) -> None:
    """`true_friction_spec`: the parsed `true_friction`."""
    params.true_friction_spec: TrueFrictionSpec | None = parse_true_friction(
        params.true_friction, "source.true_friction"
    )


@dataclass
class MujocoSourceParams(SimulationParams, PerturbationParams, Params):
    """model_path: MJCF (or URDF) of the real robot, simulated as it is (relative to the launch
    directory); None: perturb the nominal robot from `seed` (`PerturbationParams`, ignored
    with model_path). The simulation's keys: `SimulationParams`. true_friction: a friction
    plugin's torque as the true joint friction instead of the MJCF's damping and frictionloss
    ({"plugin": name, <its config>, "parameters": {...}}); None: the MJCF's own."""

    model_path: str | None = param(None, convert=lambda path: path if str(path).strip() else None)
    seed: int = param(0)
    true_friction: dict[str, Any] | None = None
    rules = (_true_friction_spec,)

    def perturbation(self) -> PerturbationParams:
        return PerturbationParams(
            **{f.name: getattr(self, f.name) for f in fields(PerturbationParams)}
        )

    def simulation(self) -> SimulationParams:
        return SimulationParams(**{f.name: getattr(self, f.name) for f in fields(SimulationParams)})


def noise_seed(seed: int, role: str) -> int:
    """Measurement-noise seed of one role: differs between roles, fixed per (seed, role)."""
    code = _ROLE_CODES.get(role, zlib.crc32(role.encode()))
    return int(np.random.SeedSequence([int(seed), code, 0x7A0]).generate_state(1)[0])


class MujocoSource:
    """Simulates the real robot (built once per process for the same parameters); real_robot:
    a robot model and its true parameters to simulate instead of `model_path` or a perturbation."""

    moves_robot = True

    def __init__(
        self,
        params: MujocoSourceParams,
        real_robot: tuple[RobotModel, SimulatedTruth] | None = None,
    ):
        self.params = params
        self.real_robot = real_robot

    def acquire(
        self, robot: RobotModel, trajectory: Trajectory | None, role: str = "identification"
    ) -> Dataset:
        """Simulate `robot`'s real counterpart along `trajectory`; `role` picks the noise seed
        and the config key named in messages."""
        prefix = CONFIG_PREFIX.get(role, "source")
        if trajectory is None:
            raise UserError(
                f"The mujoco data source ({prefix}) needs a trajectory to move the simulated "
                "robot along; configure a trajectory generator for it."
            )
        self._check_lengths(robot, prefix)
        true_robot, truth = self.true_robot(robot, prefix)
        friction = None
        if self.params.true_friction_spec is not None:
            true_robot, truth, friction = with_plugin_friction(
                true_robot, truth, self.params.true_friction_spec
            )
        dataset = simulate(
            true_robot,
            robot,
            trajectory,
            self.params.simulation(),
            noise_seed(self.params.seed, role),
            progress=True,
            truth=truth,
            friction=friction,
        )
        dataset.metadata.update(
            role=role,
            seed=self.params.seed,
            model_path=None if self.params.model_path is None else str(self._model_file()),
            trajectory=trajectory.describe(),
        )
        return dataset

    def true_robot(
        self, robot: RobotModel, prefix: str = "source"
    ) -> tuple[RobotModel, SimulatedTruth]:
        """The simulated real robot and its true parameters (cached per process)."""
        if self.real_robot is not None:
            given = self.real_robot[0]
            if tuple(given.joint_names) != tuple(robot.joint_names):
                raise UserError(
                    f"The robot to simulate ({given.name}, joints {list(given.joint_names)}) "
                    f"does not match the robot model {robot.name} (joints "
                    f"{list(robot.joint_names)}) ({prefix})."
                )
            return self.real_robot
        params = self.params
        file = self._model_file() if params.model_path is not None else None
        if file is not None and not file.is_file():
            raise UserError(
                f"The robot model file {file} ({prefix}.model_path) does not exist. Give the "
                "MJCF (or URDF) of the robot to simulate as the real one."
            )
        key = (
            hashlib.sha1(robot.mjcf.encode()).hexdigest(),
            tuple(robot.joint_names),
            repr(asdict(params.perturbation())) if file is None else "",
            params.seed if file is None else None,
            str(file),
            file.stat().st_mtime_ns if file is not None else None,
        )
        if key not in _cache:
            if len(_cache) >= _CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            if file is None:
                try:
                    _cache[key] = perturb_robot(robot, params.perturbation(), params.seed)
                except ValueError as error:
                    raise UserError(
                        f"Cannot build the simulated robot ({prefix}): {error}."
                    ) from None
            else:
                _cache[key] = self._load(robot, file, prefix)
        return _cache[key]

    # ------------------------------------------------------------------ helpers
    def _model_file(self) -> Path:
        return Path(resolve_launch_path(str(self.params.model_path)))

    @staticmethod
    def _load(robot: RobotModel, file: Path, prefix: str) -> tuple[RobotModel, SimulatedTruth]:
        try:
            text = urdf_to_mjcf(file) if file.suffix.lower() == ".urdf" else file.read_text()
        except OSError as error:
            raise UserError(f"Cannot read {file} ({prefix}.model_path): {error}.") from None
        true_robot = RobotModel.from_mjcf_text(
            file.stem,
            text,
            robot.limits,
            expected_joints=tuple(robot.joint_names),
            source=f"{file} ({prefix}.model_path)",
        )
        return true_robot, truth_from_robot(true_robot, origin=str(file))

    def _check_lengths(self, robot: RobotModel, prefix: str) -> None:
        n = robot.n_joints
        params = self.params
        checked = ["kp", "kd", "torque_noise_std", "cogging_periods", "cogging_phase_rad"]
        if params.model_path is None and self.real_robot is None:
            checked += ["viscous", "coulomb", "armature"]
        for name in checked:
            value = getattr(params, name)
            if value is None or np.ndim(value) == 0:
                continue
            per_joint_values(
                value,
                n,
                f"{prefix}.{name}",
                robot_name=robot.name,
                joint_names=robot.joint_names,
                fix="give one value per joint, or "
                + ("one for all joints" if name.startswith("cogging") else "null for the default"),
            )


def with_plugin_friction(
    true_robot: RobotModel, truth: SimulatedTruth, spec: TrueFrictionSpec
) -> tuple[RobotModel, SimulatedTruth, TrueFriction]:
    """The true robot without damping and frictionloss, its truth carrying the plugin's true
    friction instead, and that friction (fc, fv default to the robot's frictionloss, damping)."""
    friction = spec.resolve(truth.viscous, truth.coulomb)
    zero = np.zeros(true_robot.n_joints)
    robot = true_robot.with_dynamics(damping=zero, frictionloss=zero)
    truth = replace(truth, viscous=zero, coulomb=zero, friction=friction.to_dict())
    return robot, truth, friction


@hookimpl
def register_data_sources(register) -> None:
    register("mujoco", MujocoSource, MujocoSourceParams)
