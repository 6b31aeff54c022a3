#!/usr/bin/env bash
# The GPU benchmark on a machine with an NVIDIA GPU and no network: install the wheels carried
# in .whl/ (what `import sroa_dist.relaxation` needs beyond numpy and scipy: scs), print the
# versions, check the CuPy path (bench_gpu_driver.py --smoke), then run the benchmark.
#
#   bash benchmarks/gpu_run.sh [bench_gpu_driver.py options, e.g. --sizes 3:32,3:64]
#
# Run from the repository root. Output goes to $OUT (default benchmarks/out): smoke.log,
# bench.log and bench_gpu_driver.json (rewritten after every row, so a run cut short keeps
# what it measured). Each part has its own time limit (SMOKE_TIMEOUT, BENCH_TIMEOUT seconds)
# so the whole stays inside a 10-minute command. The benchmark runs even if a smoke check
# fails: its rows record errors one by one, and the smoke log says what to fix.
set -uo pipefail
export PYTHONUNBUFFERED=1
py="${PYTHON:-python3}"  # on the device machine: the python3 that has CuPy
if compgen -G ".whl/*.whl" > /dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || { echo "error: installing .whl/*.whl failed"; exit 2; }
fi
export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-benchmarks/out}"
mkdir -p "$out"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$py" - <<'EOF'
import os, platform
import numpy, scipy, scs
print(f"python {platform.python_version()}, numpy {numpy.__version__}, scipy {scipy.__version__}, "
      f"scs {scs.__version__}, cpus {os.cpu_count()}")
try:
    import cupy
    print(f"cupy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
          f"devices {cupy.cuda.runtime.getDeviceCount()}")
except Exception as exc:
    print(f"cupy: unavailable ({type(exc).__name__}: {exc})")
EOF

timeout "${SMOKE_TIMEOUT:-150}" "$py" benchmarks/bench_gpu_driver.py --smoke 2>&1 \
    | tee "$out/smoke.log"
smoke=${PIPESTATUS[0]}
echo "smoke exit status: $smoke"

timeout "${BENCH_TIMEOUT:-420}" "$py" benchmarks/bench_gpu_driver.py \
    --out "$out/bench_gpu_driver.json" "$@" 2>&1 | tee "$out/bench.log"
bench=${PIPESTATUS[0]}
echo "benchmark exit status: $bench (124: its time limit)"
exit $(( smoke != 0 || bench != 0 ))
