"""The numerical core stays free of Dask, xarray and zarr (imports: numerics <- sweep <- CLI)."""

import subprocess
import sys


def test_core_import_pulls_in_no_orchestration_or_storage():
    code = (
        "import sys, sroa_dist, sroa_dist.relaxation;"
        "top = {m.split('.')[0] for m in sys.modules};"
        "bad = sorted(top & {'dask', 'distributed', 'zarr', 'xarray'});"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
