# Shared by deploy/test/compose-e2e.sh and deploy/test/slurm-e2e.sh (sourced, not run).
#
# Steps: `step NAME CMD...` runs one check, prints its time and PASS/FAIL, and stops the script
# at the first failure (later steps build on earlier ones, so running them would only add noise).
# Whatever happens, the EXIT trap runs the registered cleanups (in reverse order) and prints the
# closing line `N passed, N failed`; the exit status is 0 only if every step passed.
#
# Daemons are started only when none is running, and their PIDs are recorded: cleanup stops
# exactly those PIDs, never anything found by name.

E2E_PASSED=0
E2E_FAILED=0
E2E_CLEANUPS=()
E2E_T0=$(date +%s)
E2E_STEP=
E2E_STEP_T0=
# `set -e` also inside $(...), so a failing command there fails the step.
shopt -s inherit_errexit

log() { printf '%s [%s] %s\n' "$(date -u +%H:%M:%S)" "$E2E_NAME" "$*" >&2; }

# The reason of a failure, on one line of stderr; the step fails (the trap counts it).
die() {
    log "FAIL: $*"
    exit 1
}

# A step runs in this shell under `set -e` (not behind `||`, which would switch `set -e` off
# inside it): its first failing command ends the script, and the EXIT trap counts the step as
# failed. Steps share variables, and the cleanups they register.
step() {
    E2E_STEP=$1
    shift
    E2E_STEP_T0=$(date +%s)
    log "step: $E2E_STEP"
    "$@"
    E2E_PASSED=$((E2E_PASSED + 1))
    log "PASS $E2E_STEP ($(($(date +%s) - E2E_STEP_T0)) s)"
    E2E_STEP=
}

on_exit() { E2E_CLEANUPS+=("$*"); }

_e2e_finish() {
    local rc=$?
    set +e
    if [ "$rc" -ne 0 ]; then
        E2E_FAILED=$((E2E_FAILED + 1))
        if [ -n "$E2E_STEP" ]; then
            log "FAIL $E2E_STEP ($(($(date +%s) - E2E_STEP_T0)) s, exit $rc)"
        else
            log "FAIL: exit $rc outside a step"
        fi
    fi
    local i
    for ((i = ${#E2E_CLEANUPS[@]} - 1; i >= 0; i--)); do
        eval "${E2E_CLEANUPS[$i]}" || log "cleanup failed: ${E2E_CLEANUPS[$i]}"
    done
    log "total $(($(date +%s) - E2E_T0)) s"
    echo "$E2E_PASSED passed, $E2E_FAILED failed"
    [ "$E2E_FAILED" -eq 0 ] && exit 0
    exit 1
}
trap _e2e_finish EXIT
trap 'exit 130' INT TERM

# Wait until CMD succeeds, polling every second, at most TIMEOUT seconds: wait_until 60 cmd ...
wait_until() {
    local timeout=$1 t=0
    shift
    until "$@" 2>/dev/null; do
        t=$((t + 1))
        [ "$t" -ge "$timeout" ] && return 1
        sleep 1
    done
}

# Stop a daemon this script started: SIGTERM, wait up to 20 s, then SIGKILL. By PID only.
stop_pid() {
    local pid=$1 what=$2 i
    kill -0 "$pid" 2>/dev/null || return 0
    log "stopping $what (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 20); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# Install Debian packages when a command they provide is missing: need_packages CMD PKG...
need_packages() {
    local cmd=$1
    shift
    command -v "$cmd" >/dev/null 2>&1 && return 0
    [ "$(id -u)" -eq 0 ] || die "$cmd is missing and installing $* needs root"
    command -v apt-get >/dev/null 2>&1 || die "$cmd is missing and there is no apt-get to install $*"
    log "installing $* (for $cmd)"
    export DEBIAN_FRONTEND=noninteractive
    # One installer at a time: CI runs the deployment scripts side by side, and two apt-gets
    # would fight over dpkg's lock.
    (
        flock 9
        apt-get update -q >/dev/null || die "apt-get update failed (needed to install $*)"
        apt-get install -y -q --no-install-recommends "$@" >/dev/null ||
            die "apt-get install $* failed"
    ) 9>/var/lock/sroa-e2e-apt.lock || exit 1
}

# The Debian archive URI of the machine's apt sources (deb822 *.sources or one-line *.list) that
# serves this release's main suite: the mirror the machine is configured for, never a host
# written in this repository.
debian_mirror() {
    local codename
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    python3 - "$codename" /etc/apt/sources.list /etc/apt/sources.list.d/* <<'EOF'
import sys
from pathlib import Path

codename, files = sys.argv[1], sys.argv[2:]
for f in files:
    p = Path(f)
    if not p.is_file():
        continue
    text = p.read_text(errors="replace")
    if p.suffix == ".sources":
        for para in text.split("\n\n"):
            fields = {}
            for line in para.splitlines():
                if ":" in line and not line.lstrip().startswith("#"):
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.strip()
            if "deb" in fields.get("types", "").split() and codename in fields.get(
                "suites", ""
            ).split():
                print(fields["uris"].split()[0].rstrip("/"))
                sys.exit(0)
    elif p.suffix == ".list" or p.name == "sources.list":
        for line in text.splitlines():
            parts = line.split("#", 1)[0].split()
            if parts and parts[0] == "deb":
                parts = [x for x in parts[1:] if not x.startswith("[")]
                if len(parts) >= 2 and parts[1] == codename:
                    print(parts[0].rstrip("/"))
                    sys.exit(0)
sys.exit(f"no apt source for suite {codename!r} in {' '.join(files)}")
EOF
}

# The Python that runs the host-side checks: the CI virtualenv (SROA_VENV) with the project and
# its test extras installed, made with dev.py when missing.
host_python() {
    local venv=${SROA_VENV:-$REPO/.venv}
    if [ ! -x "$venv/bin/sroa-dist" ] || [ ! -f "$venv/.installed-test" ]; then
        log "installing the project with test extras into $venv"
        (cd "$REPO" && SROA_VENV=$venv python3 dev.py test --version >/dev/null) ||
            die "could not install the project into $venv"
    fi
    echo "$venv/bin/python"
}

# Instances of SPEC that keep one worker busy for about TARGET seconds on this machine now:
# the kill and walltime checks need sweeps that outlast a kill or a walltime whatever the
# machine's speed, and no longer than that. Timed with a short `sroa-dist run` (one worker, two
# instances per block) by the spread of its blocks' completion times, which leaves out the
# start-up and the first block's warm-up (imports, first solver call): a total task time
# counts them, overstating the time per instance about 2.5-fold, and a sweep sized by it once
# finished inside a SLURM worker's lifetime. The result is clamped to [MIN, MAX]. Prints the count.
calibrate_replicates() {
    local spec=$1 target=$2 min=$3 max=$4 n=16 pace
    "$(dirname "$PY")/sroa-dist" run "$spec" --store "$WORK/calibrate.zarr" --overwrite \
        --workers 1 --set "replicates=$n" --block-size 2 --dashboard-address 127.0.0.1:0 \
        >"$WORK/calibrate.log" 2>&1 || return 1
    pace=$("$PY" "$REPO/deploy/test/cube_check.py" pace "$WORK/calibrate.zarr") || return 1
    rm -rf "$WORK/calibrate.zarr"
    python3 -c "import math, sys; t, tgt, lo, hi = map(float, sys.argv[1:]); \
print(int(min(hi, max(lo, math.ceil(tgt / max(t, 1e-4))))))" "$pace" "$target" "$min" "$max"
}
