"""Write the golden stores of tests/test_golden_stores.py (run from the repository root).

The committed stores were written by the code at commit 57a4229, before the package was
reorganised into its wings; they are the evidence that stores made by earlier code still open,
resume and verify bit for bit. Running this again with later code writes new stores, which
prove nothing about old ones: do it only to add a store kind, and say in the commit which code
wrote it.

    .venv/bin/python tests/data/golden/make.py
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# The certified store's last bits depend on the OpenBLAS kernels SCS runs: record with the
# kernel set the test suite pins (tests/conftest.py), before any BLAS is loaded.
os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")

from distributed import Client, LocalCluster  # noqa: E402

from sroa_dist.sweep import run_sweep  # noqa: E402

HERE = Path(__file__).resolve().parent
#: store name -> instances per block (every store has at least two blocks, so that one can be
#: forgotten and recomputed while the others stay)
STORES = {"tensor": 2, "certified": 2, "threshold": None}

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            for name, block_size in STORES.items():
                store = HERE / f"{name}.zarr"
                shutil.rmtree(store, ignore_errors=True)
                shutil.rmtree(f"{store}.certificates", ignore_errors=True)
                res = run_sweep(HERE / f"{name}.toml", store, client=client, block_size=block_size)
                assert res.complete, name
                print(name, res)
