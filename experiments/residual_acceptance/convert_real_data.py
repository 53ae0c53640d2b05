"""Convert the KUKA LWR4+ and Stäubli TX40 real logs in shared/datasets to the project's CSV
contract, exactly as benchmarks/peers does (same rows, same conversions):

    python experiments/residual_acceptance/convert_real_data.py OUT_DIR

writes OUT_DIR/kuka/kuka_measurements_{1,2,3}.csv and OUT_DIR/tx40/tx40_{ident,validation}.csv.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.peers import conversions, project_io  # noqa: E402
from benchmarks.peers.cases import DATASETS, TX40_IDENT_ROWS, TX40_VAL_ROWS  # noqa: E402


def main(out: Path) -> None:
    kuka = out / "kuka"
    kuka.mkdir(parents=True, exist_ok=True)
    for i in (1, 2, 3):
        path = kuka / f"kuka_measurements_{i}.csv"
        if not path.exists():
            npz = DATASETS / "kuka_lwr4" / f"measurements_{i}.npz"
            project_io.write_recording(conversions.kuka_recording(npz), path)
    tx40 = out / "tx40"
    tx40.mkdir(parents=True, exist_ok=True)
    q_motor, i_motor = conversions.read_tx40_motor_side(DATASETS / "staubli_tx40")
    for (start, stop), name in ((TX40_IDENT_ROWS, "ident"), (TX40_VAL_ROWS, "validation")):
        path = tx40 / f"tx40_{name}.csv"
        if not path.exists():
            recording = conversions.tx40_joint_side(q_motor[start:stop], i_motor[start:stop], start)
            project_io.write_recording(recording, path)
    print(f"written under {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
