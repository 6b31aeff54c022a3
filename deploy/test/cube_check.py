"""Host-side checks of result cubes for the end-to-end deployment scripts (deploy/test/*.sh).

    python deploy/test/cube_check.py equal GOT WANT    # bit for bit, timing variables aside
    python deploy/test/cube_check.py done STORE        # "<done> <total>" blocks (0 0: no store)
    python deploy/test/cube_check.py attr STORE KEY    # one dataset attribute
    python deploy/test/cube_check.py pace STORE        # steady-state seconds per instance

The comparison is the deployment tests' own (tests/support/deploy_helpers.assert_cubes_equal), so
the processes-only tests and these real-engine tests hold deployments to the same standard.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.deploy_helpers import assert_cubes_equal, done_mask  # noqa: E402


def steady_pace(store: str) -> float:
    """Seconds per instance of a finished one-worker run, from the spread of its blocks'
    completion times: the first block (imports, first solver call) and the cluster's start-up
    are left out, which a total task time would count, making a calibrated sweep too short."""
    import numpy as np

    from sroa_dist.sweep import open_results

    ds = open_results(store)
    times = np.sort(np.asarray(ds["done_time"].values, dtype=float).ravel())
    if times.size < 3 or not np.isfinite(times).all():
        raise SystemExit(f"{store}: expected at least 3 finished blocks to time")
    instances_per_block = ds["solve_time"].size / times.size
    return float((times[-1] - times[0]) / (times.size - 1) / instances_per_block)


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "equal":
        try:
            assert_cubes_equal(argv[1], argv[2])
        except AssertionError as e:
            print(f"cubes differ: {argv[1]} vs {argv[2]}: {e}", file=sys.stderr)
            return 1
        print(f"bit-identical (timing variables aside): {argv[1]} == {argv[2]}")
        return 0
    if len(argv) == 2 and argv[0] == "done":
        mask = done_mask(argv[1])
        print(int(mask.sum()), mask.size)
        return 0
    if len(argv) == 2 and argv[0] == "pace":
        print(f"{steady_pace(argv[1]):.6f}")
        return 0
    if len(argv) == 3 and argv[0] == "attr":
        from sroa_dist.sweep import open_results

        print(open_results(argv[1]).attrs[argv[2]])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
