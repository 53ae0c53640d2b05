"""The vectorised joint torque regressor (`model/rigid_body_regressor.py`) is Pinocchio's.

Every case compares with `pin.computeJointTorqueRegressor` called sample by sample (or with
`pin.bodyRegressor` / `pin.rnea`), never with the batch form itself; each runs with the C
kernel and with the numba fallback (`kernel_engine`, tests/conftest.py), and the two agree
bit for bit.
"""

from __future__ import annotations

import copy
import ctypes
import multiprocessing
import pickle
import threading
from pathlib import Path

import numba
import numpy as np
import pinocchio as pin
import pytest

from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.rigid_body_kernel import _BODY_BASIS
from ident_framework.model.rigid_body_regressor import (
    _PARALLEL_FROM,
    BLOCK,
    BatchRegressor,
    c_kernel,
    supported,
)
from ident_framework.model.robot import JointLimits, RobotModel, load_robot
from ident_framework.parallel_work import forked_map, worker_limit

DATASETS = Path("/work/shared/datasets")
URDFS = {
    "kuka_lwr4": DATASETS / "kuka_lwr4/kuka_lwr4.urdf",
    "panda": DATASETS / "panda_gaz2019/panda_arm.urdf",
    "staubli_tx40": DATASETS / "staubli_tx40/tx40_mdh_modified.urdf",
}
# (velocity rad/s, acceleration rad/s²) scales of the random states: moderate, then large
MOTIONS = [(1.0, 5.0), (30.0, 300.0)]
RTOL = 1e-12


@pytest.fixture(autouse=True)
def engine(kernel_engine: str) -> str:
    """Every test with the C kernel, then with the numba one."""
    return kernel_engine


def pinocchio_regressor(model: pin.Model, q, dq, ddq) -> np.ndarray:
    """(N, nv, 10 nj) by one `pin.computeJointTorqueRegressor` call per sample."""
    data = model.createData()
    return np.array(
        [
            pin.computeJointTorqueRegressor(model, data, *state).copy()
            for state in zip(q, dq, ddq, strict=True)
        ]
    )


def random_states(model: pin.Model, n: int, speed: float, accel: float, seed: int = 0):
    """q (N, nq) uniform in [-pi, pi] (rad, or m for a prismatic joint), dq (N, nv) and
    ddq (N, nv) normal with standard deviations `speed` and `accel`."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, (n, model.nq))
    return q, rng.normal(0.0, speed, (n, model.nv)), rng.normal(0.0, accel, (n, model.nv))


def assert_matches(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal within rtol 1e-12 and atol 1e-12 × the array's scale (its largest entry)."""
    assert got.shape == expected.shape
    scale = float(np.abs(expected).max())
    assert scale > 0.0
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * scale)


def assert_outside_subtree_zero(model: pin.Model, got: np.ndarray) -> None:
    """A joint's row is exactly zero on the columns of links outside its subtree."""
    for j in range(1, model.njoints):
        for i in range(1, model.njoints):
            ancestor = i
            while ancestor not in (0, j):
                ancestor = model.parents[ancestor]
            if ancestor != j:
                row, block = model.joints[j].idx_v, slice(10 * (i - 1), 10 * i)
                assert np.all(got[:, row, block] == 0.0), (j, i)


def check_model(model: pin.Model, n: int = 150, seed: int = 0) -> None:
    assert supported(model)
    batch = BatchRegressor(model)
    for speed, accel in MOTIONS:
        q, dq, ddq = random_states(model, n, speed, accel, seed)
        got = batch(q, dq, ddq)
        assert_matches(got, pinocchio_regressor(model, q, dq, ddq))
        assert_outside_subtree_zero(model, got)


@pytest.mark.parametrize("name", ["ur10e", "ur5e", "ur12e"])
def test_built_in_arms_match_pinocchio(name):
    check_model(load_robot(name).pin_model)


@pytest.mark.parametrize("name", sorted(URDFS))
def test_urdf_arms_match_pinocchio(name):
    path = URDFS[name]
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    check_model(load_robot("urdf", str(path)).pin_model)


def test_kuka_has_unaligned_revolute_joints():
    """The LWR4 exercises `JointModelRevoluteUnaligned` (its MJCF gives axis (0, -1, 0))."""
    path = URDFS["kuka_lwr4"]
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    kinds = {j.shortname() for j in load_robot("urdf", str(path)).pin_model.joints}
    assert "JointModelRevoluteUnaligned" in kinds


def _placement(rng: np.random.Generator) -> pin.SE3:
    return pin.SE3(pin.rpy.rpyToMatrix(rng.uniform(-np.pi, np.pi, 3)), rng.normal(0, 0.3, 3))


def _inertia(rng: np.random.Generator) -> pin.Inertia:
    root = rng.normal(0.0, 0.2, (3, 3))
    return pin.Inertia(
        rng.uniform(0.5, 5.0), rng.normal(0, 0.1, 3), root @ root.T + 0.01 * np.eye(3)
    )


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x / np.linalg.norm(x)


def hand_built_model(extra: pin.JointModel | None = None) -> pin.Model:
    """A tree of every supported joint kind (a branch at joint 2, so link 7's rows are not
    contiguous), random placements and inertias, and a non-default gravity (with an angular
    part, which Pinocchio's a_gf[0] = -gravity carries too). `extra`: one more joint on the
    tip (to make an unsupported model)."""
    rng = np.random.default_rng(7)
    model = pin.Model()
    joints = [
        (0, pin.JointModelRZ()),
        (1, pin.JointModelRevoluteUnaligned(_unit([1.0, -2.0, 0.5]))),
        (2, pin.JointModelPrismaticUnaligned(_unit([0.3, 0.4, -1.0]))),
        (3, pin.JointModelPX()),
        (4, pin.JointModelRX()),
        (5, pin.JointModelPY()),
        (2, pin.JointModelRY()),  # a second branch from joint 2
        (7, pin.JointModelPZ()),
        (8, pin.JointModelRevoluteUnaligned(_unit([0.0, 0.0, -1.0]))),
    ]
    if extra is not None:
        joints.append((len(joints), extra))
    for k, (parent, joint) in enumerate(joints, start=1):
        index = model.addJoint(parent, joint, _placement(rng), f"joint{k}")
        model.appendBodyToJoint(index, _inertia(rng), pin.SE3.Identity())
    model.gravity = pin.Motion(np.array([1.5, -2.0, -9.3, 0.2, -0.1, 0.3]))
    return model


def test_hand_built_tree_matches_pinocchio():
    model = hand_built_model()
    kinds = {j.shortname() for j in list(model.joints)[1:]}
    assert {"JointModelRevoluteUnaligned", "JointModelPrismaticUnaligned", "JointModelPX"} <= kinds
    check_model(model)


def test_torque_is_rnea():
    """Y theta with the model's own inertias is Pinocchio's inverse dynamics (no armature)."""
    model = hand_built_model()
    theta = np.concatenate(
        [model.inertias[i].toDynamicParameters() for i in range(1, model.njoints)]
    )
    q, dq, ddq = random_states(model, 50, 3.0, 20.0, seed=3)
    data = model.createData()
    tau = np.array([pin.rnea(model, data, *state) for state in zip(q, dq, ddq, strict=True)])
    assert_matches(BatchRegressor(model)(q, dq, ddq) @ theta, tau)


def test_body_regressor_is_pinocchios():
    """The constant map of `_body_regressor` gives `pin.bodyRegressor`."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        v, a = rng.normal(0, 5, 6), rng.normal(0, 50, 6)
        w = v[3:]
        acc = a[:3] + np.cross(w, v[:3])
        products = np.array(
            [w[0] ** 2, w[1] ** 2, w[2] ** 2, w[0] * w[1], w[0] * w[2], w[1] * w[2]]
        )
        features = np.concatenate([acc, a[3:], products])
        expected = pin.bodyRegressor(pin.Motion(v), pin.Motion(a))
        assert_matches((features @ _BODY_BASIS).reshape(6, 10), expected)


def test_gravity_is_read_at_call_time():
    model = load_robot("ur5e").pin_model.copy()
    batch = BatchRegressor(model)
    model.gravity = pin.Motion(np.array([0.0, 9.81, 0.0, 0.0, 0.0, 0.0]))  # arm on a wall
    q, dq, ddq = random_states(model, 40, 1.0, 5.0)
    assert_matches(batch(q, dq, ddq), pinocchio_regressor(model, q, dq, ddq))


def test_a_pickled_or_copied_regressor_computes_the_same():
    """The C kernel's view of the constants (pointers) is made again for the copy's arrays."""
    model = hand_built_model()
    batch = BatchRegressor(model)
    q, dq, ddq = random_states(model, 30, 3.0, 30.0, seed=9)
    expected = batch(q, dq, ddq)
    for other in (pickle.loads(pickle.dumps(batch)), copy.deepcopy(batch), copy.copy(batch)):
        np.testing.assert_array_equal(other(q, dq, ddq), expected)


def test_sample_counts_and_strided_input():
    model = load_robot("ur10e").pin_model
    batch = BatchRegressor(model)
    q, dq, ddq = random_states(model, 40, 2.0, 10.0)
    assert batch(q[:0], dq[:0], ddq[:0]).shape == (0, 6, 60)
    assert_matches(
        batch(q[:1], dq[:1], ddq[:1]), pinocchio_regressor(model, q[:1], dq[:1], ddq[:1])
    )
    strided = (np.asfortranarray(q)[::3], dq[::3], ddq[::3])
    assert_matches(batch(*strided), pinocchio_regressor(model, *strided))
    with pytest.raises(ValueError, match="shapes"):
        batch(q, dq[:, :5], ddq)


def _robot_of(model: pin.Model) -> RobotModel:
    n = model.njoints - 1
    limits = JointLimits(
        np.tile([-np.pi, np.pi], (n, 1)),
        np.full(n, np.pi),
        np.full(n, 4 * np.pi),
        np.full(n, 100.0),
    )
    return RobotModel("hand-built", "", tuple(model.names[1:]), limits, model)


def _builder(model: pin.Model) -> RegressorBuilder:
    return RegressorBuilder(_robot_of(model), CoulombViscousFriction(CoulombViscousParams()))


@pytest.mark.parametrize(
    "extra", [pin.JointModelRUBZ(), pin.JointModelHZ(0.05)], ids=["RUBZ", "helical"]
)
def test_unsupported_model_falls_back_to_pinocchio(extra):
    """A continuous joint (nq = 2) or a helical one (nq = nv = 1, another type) is not
    supported: the builder keeps Pinocchio's per-sample loop, and still matches it."""
    model = hand_built_model(extra)
    assert not supported(model)
    with pytest.raises(ValueError, match="1-DoF"):
        BatchRegressor(model)
    builder = _builder(model)
    assert builder._batch is None
    rng = np.random.default_rng(5)
    q = np.array(
        [pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq)) for _ in range(30)]
    )
    dq, ddq = rng.normal(0, 10, (30, model.nv)), rng.normal(0, 100, (30, model.nv))
    assert_matches(builder.rigid_body(q, dq, ddq), pinocchio_regressor(model, q, dq, ddq))


def test_builder_output_unchanged_for_ur10e():
    """`RegressorBuilder.rigid_body` (vectorised) and the full regressor equal the loop's."""
    robot = load_robot("ur10e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    assert builder._batch is not None
    q, dq, ddq = random_states(robot.pin_model, 300, 3.0, 30.0, seed=11)
    loop = builder.rigid_body_pinocchio(q, dq, ddq)
    assert_matches(loop, pinocchio_regressor(robot.pin_model, q, dq, ddq))
    assert_matches(builder.rigid_body(q, dq, ddq), loop)
    looping = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    looping._batch = None
    assert_matches(builder.compute(q, dq, ddq), looping.compute(q, dq, ddq))


def test_parallel_path_matches_pinocchio():
    """A call of more than `_PARALLEL_FROM` samples runs the blocks of samples in parallel
    (the last block partial); the tree with every joint kind still matches."""
    model = hand_built_model()
    q, dq, ddq = random_states(model, _PARALLEL_FROM + 77, 30.0, 300.0, seed=4)
    assert_matches(BatchRegressor(model)(q, dq, ddq), pinocchio_regressor(model, q, dq, ddq))


@pytest.mark.parametrize("name", ["hand-built", "ur10e", *sorted(URDFS)])
def test_c_and_numba_kernels_agree_bit_for_bit(name, engine, monkeypatch):
    """The C kernel does the numba kernel's floating-point operations in the same order (no
    FMA contraction, no fast-math): the same bits, serial and in parallel, so an
    identification's results do not depend on whether a C compiler was found."""
    if engine == "numba":
        pytest.skip("compares both engines (runs once, as C)")
    if name == "hand-built":
        model = hand_built_model()
    elif name == "ur10e":
        model = load_robot("ur10e").pin_model
    elif URDFS[name].is_file():
        model = load_robot("urdf", str(URDFS[name])).pin_model
    else:
        pytest.skip(f"{URDFS[name]} is not available")
    batch = BatchRegressor(model)
    for n in (100, _PARALLEL_FROM + 5):
        q, dq, ddq = random_states(model, n, 30.0, 300.0, seed=n)
        c = batch(q, dq, ddq)
        monkeypatch.setenv("IDENT_FRAMEWORK_NATIVE", "0")
        np.testing.assert_array_equal(c, batch(q, dq, ddq))
        monkeypatch.delenv("IDENT_FRAMEWORK_NATIVE")


def test_c_result_does_not_depend_on_the_thread_count(engine):
    """The C kernel's parallel form (threads take blocks of samples as they come) on 1-5
    threads and its serial form give the same bits."""
    if engine == "numba":
        pytest.skip("the C kernel's threads")
    model = hand_built_model()
    batch = BatchRegressor(model)
    q, dq, ddq = random_states(model, 10 * BLOCK + 3, 30.0, 300.0, seed=8)
    g = -np.array(model.gravity.vector)
    arrays = (q.ctypes.data, dq.ctypes.data, ddq.ctypes.data, g.ctypes.data)
    expected = batch(q, dq, ddq)
    library = c_kernel()
    for threads in range(1, 6):
        out = np.full(expected.shape, np.nan)
        status = library.rigid_body_samples_parallel(
            ctypes.byref(batch._c_constants), len(q), *arrays, out.ctypes.data, threads, BLOCK
        )
        assert status == 0
        np.testing.assert_array_equal(out, expected)


_FORKED: dict = {}  # what the forked workers of the next test inherit


def _in_forked_worker(size: int) -> np.ndarray:
    batch, states = _FORKED["batch"], _FORKED["states"]
    return batch(*(a[:size] for a in states))


def test_forked_workers_match_the_parent(engine):
    """The kernel runs in workers forked after the parent ran it (in parallel): numba's GNU
    OpenMP layer would abort them, the module asks for the fork-safe one (the C kernel's
    threads live only during a call). In a plain forked pool the workers run it in parallel
    themselves; in `parallel_work`'s workers serially (one thread each). Both give the
    parent's result exactly."""
    model = load_robot("ur10e").pin_model
    batch = BatchRegressor(model)
    q, dq, ddq = random_states(model, 4 * _PARALLEL_FROM, 30.0, 300.0, seed=2)
    parent = batch(q, dq, ddq)  # in parallel (more than _PARALLEL_FROM samples, 2+ cores)
    if engine == "numba" and worker_limit() > 1:  # a parallel region ran: its layer is known
        assert numba.threading_layer() != "omp"
    assert_matches(parent, pinocchio_regressor(model, q, dq, ddq))
    sizes = [len(q), 100, len(q), 100]  # parallel and serial calls in the workers
    _FORKED.update(batch=batch, states=(q, dq, ddq))
    try:
        pool = multiprocessing.get_context("fork").Pool(2)
        try:
            pooled = pool.map_async(_in_forked_worker, sizes).get(timeout=120)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
        mapped = forked_map(_in_forked_worker, sizes)
    finally:
        _FORKED.clear()
    for size, got in zip(sizes * 2, pooled + mapped, strict=True):
        np.testing.assert_array_equal(got, parent[:size])


def test_concurrent_threads():
    """Calls from several Python threads at once (the online mode's threads): the C kernel's
    calls are independent (each its own threads; ctypes releases the GIL); numba's workqueue
    layer aborts the process on concurrent parallel regions, so one call runs in parallel and
    the others serially meanwhile. All give the same result."""
    model = load_robot("ur10e").pin_model
    batch = BatchRegressor(model)
    states = random_states(model, 2 * _PARALLEL_FROM, 3.0, 30.0, seed=6)
    expected = batch(*states)
    results: list[bool] = []

    def run() -> None:
        results.extend(np.array_equal(batch(*states), expected) for _ in range(10))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 30
