#!/usr/bin/env bash
# SLURM through a real slurmctld, end to end, from nothing on a Debian 12 machine (root, no
# systemd): a private single-node cluster (munged, slurmctld, slurmd started here by PID, with
# their own configuration, state and ports under the work directory), then the README's
# deployment commands, checked for real.
#
#   deploy/test/slurm-e2e.sh            # run from anywhere; prints `N passed, N failed` last
#
# 1. install slurm-wlm and munge when missing; bring the cluster up (SLURM_CONF exported for
#    every client: sbatch, squeue, scancel, sinfo, and the jobs they start);
# 2. an oversized worker job (the defaults --cores 8 --memory 16GB on a 2-CPU node) is a one-line
#    error before anything is queued;
# 3. the README's path in a fresh clone: venv + `pip install ".[slurm]"`, the `--dry-run`, then
#    `sbatch deploy/slurm/sroa-sweep.sbatch` with a 1-minute driver walltime: the driver is killed
#    by SLURM mid-sweep, and its worker jobs (one running, one pending) are cancelled with it;
#    the same sbatch again resumes and finishes, and the cube equals a local `sroa-dist run` bit
#    for bit (timing variables aside);
# 4. `python deploy/slurm/sroa_slurm.py` from the login node (here: the host) with a 1-minute
#    worker walltime: the first worker job retires before its walltime, a replacement job
#    continues the sweep, and the cube is again bit-identical;
# 5. one study (issue 34: every study a sweep): the smallest threshold smoke study,
#    sweeps/studies/smoke/tilt-p6.toml, through sroa_slurm.py on two worker jobs, then
#    `sroa-dist check` on its store.
# Every daemon is stopped by the PID recorded when it was started.
#
# Variables: SROA_E2E_REPLICATES (instances of the certified smoke sweep; default: as many as
# keep one worker busy for about 150 s on this machine, measured first, so that a 1-minute driver
# cannot finish the sweep and a worker job's 20 s lifetime ends mid-sweep, also when CI runs the
# compose script beside this one), SROA_E2E_WORK
# (default /var/tmp/sroa-e2e-slurm),
# SROA_E2E_SLURM_PORTS ("ctld slurmd", default "16817 16818"), SROA_VENV (host venv of the local
# reference run, default REPO/.venv, made by dev.py when missing).
set -euo pipefail
E2E_NAME=slurm-e2e
REPO=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=deploy/test/lib.sh
. "$REPO/deploy/test/lib.sh"

WORK=${SROA_E2E_WORK:-/var/tmp/sroa-e2e-slurm}
REPLICATES=${SROA_E2E_REPLICATES:-}
read -r CTLD_PORT SLURMD_PORT <<<"${SROA_E2E_SLURM_PORTS:-16817 16818}"
SPEC=sweeps/smoke/certified.toml
# The study of step 5: the cheapest threshold smoke study (two matrix-free p = 6 searches).
STUDY=sweeps/studies/smoke/tilt-p6.toml
SWEEP_ARGS=() # set once REPLICATES is known (local_reference)
BLOCKS=
CLONE=$WORK/clone
NODE=$(hostname -s)
export SLURM_CONF=$WORK/slurm/slurm.conf
mkdir -p "$WORK"
cd "$REPO"

# ---------------------------------------------------------------------------------------------
# 1. A single-node SLURM by hand

install() {
    need_packages munged munge
    need_packages slurmctld slurm-wlm
    command -v slurmd >/dev/null || die "slurm-wlm installed but slurmd is missing"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_config() {
    local mem
    # Half the machine's memory: a node reporting less than its configured RealMemory is drained.
    mem=$(($(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
    cat >"$SLURM_CONF" <<EOF
# Written by deploy/test/slurm-e2e.sh: one node, root daemons, no systemd and no cgroups.
ClusterName=sroa-e2e
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=30
MinJobAge=600
StateSaveLocation=$WORK/slurm/state
SlurmdSpoolDir=$WORK/slurm/spool
SlurmctldPidFile=$WORK/slurm/slurmctld.pid
SlurmdPidFile=$WORK/slurm/slurmd.pid
SlurmctldLogFile=$WORK/slurm/slurmctld.log
SlurmdLogFile=$WORK/slurm/slurmd.log
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=2 RealMemory=$mem State=UNKNOWN
PartitionName=e2e Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

cancel_all_jobs() {
    local ids
    ids=$(squeue --noheader --format=%i 2>/dev/null) || return 0
    [ -z "$ids" ] || scancel --quiet $ids
}

node_idle() { [ "$(sinfo --noheader --format=%T 2>/dev/null)" = idle ]; }

cluster_up() {
    local p
    for p in "$CTLD_PORT" "$SLURMD_PORT"; do
        port_free "$p" || die "port $p is taken (another SLURM?): set SROA_E2E_SLURM_PORTS"
    done
    rm -rf "$WORK/slurm" "$WORK/munge"
    mkdir -p "$WORK/slurm/state" "$WORK/slurm/spool" "$WORK/munge"
    chmod 0700 "$WORK/munge"
    head -c 1024 /dev/urandom >"$WORK/munge/munge.key"
    chmod 0400 "$WORK/munge/munge.key"
    write_config

    munged --foreground --force --key-file="$WORK/munge/munge.key" \
        --socket="$WORK/munge/munge.socket" --pid-file="$WORK/munge/munged.pid" \
        --seed-file="$WORK/munge/munge.seed" --log-file="$WORK/munge/munged.log" \
        >"$WORK/munge/munged.out" 2>&1 &
    MUNGED_PID=$!
    on_exit stop_pid "$MUNGED_PID" munged
    wait_until 20 test -S "$WORK/munge/munge.socket" ||
        die "munged did not start: $(tail -n 2 "$WORK/munge/munged.log" "$WORK/munge/munged.out" 2>/dev/null | tr '\n' ' ')"

    slurmctld -D -c >"$WORK/slurm/slurmctld.out" 2>&1 &
    CTLD_PID=$!
    on_exit stop_pid "$CTLD_PID" slurmctld
    slurmd -D >"$WORK/slurm/slurmd.out" 2>&1 &
    SLURMD_PID=$!
    on_exit stop_pid "$SLURMD_PID" slurmd
    # Jobs first, then the daemons (registered later, so they run earlier): nothing of ours is
    # left queued in a slurmctld state directory.
    on_exit cancel_all_jobs
    wait_until 60 node_idle ||
        die "the node did not become idle in 60 s: $(sinfo --noheader 2>&1 | head -n 1); $(tail -n 2 "$WORK/slurm/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
    log "SLURM up: slurmctld $CTLD_PID, slurmd $SLURMD_PID, munged $MUNGED_PID; $(sinfo --noheader --Node --format='%N %c CPUs %m MB %P')"
}

# ---------------------------------------------------------------------------------------------
# 2. Checks

PY=
local_reference() {
    PY=$(host_python)
    if [ -z "$REPLICATES" ]; then
        REPLICATES=$(calibrate_replicates "$SPEC" 150 64 8000) || die "calibration run failed"
    fi
    # Eight instances per block: still hundreds of blocks to kill something in the middle of, and
    # few enough chunks for the cube comparisons to read (3000 instances in blocks of 2 took
    # 107 s to compare beside the compose script). No lower cap than 8000: on an idle machine
    # 150 s of one worker is about 3000 instances, and a capped sweep was 92 % done when its
    # 1-minute driver was killed.
    REPLICATES=$(((REPLICATES + 7) / 8 * 8))
    BLOCKS=$((REPLICATES / 8))
    SWEEP_ARGS=(--set "replicates=$REPLICATES" --block-size 8)
    log "sweep: $SPEC ${SWEEP_ARGS[*]}"
    rm -rf "$WORK/local.zarr"
    "$(dirname "$PY")/sroa-dist" run "$SPEC" --store "$WORK/local.zarr" --workers 2 \
        --dashboard-address 127.0.0.1:0 "${SWEEP_ARGS[@]}" >"$WORK/local.log" 2>&1 ||
        die "local reference run failed: $(tail -n 3 "$WORK/local.log" | tr '\n' ' ')"
}

queue_empty() { [ -z "$(squeue --noheader --format=%i)" ]; }

oversized_job_refused() {
    local out rc=0
    out=$("$PY" deploy/slurm/sroa_slurm.py "$SPEC" --store "$WORK/never.zarr" --no-tls 2>&1) || rc=$?
    [ "$rc" -eq 2 ] || die "expected exit 2 for --cores 8 --memory 16GB on a 2-CPU node, got $rc: $out"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || die "expected one line, got: $out"
    case "$out" in *"cannot fit a worker job"*) ;; *) die "unexpected message: $out" ;; esac
    queue_empty || die "a job was queued: $(squeue --noheader)"
    [ ! -e "$WORK/never.zarr" ] || die "a store was created"
    log "refused: $out"
}

fresh_clone() {
    # The repository files are always a fresh clone; the venv of a previous run (if any) is put
    # back, so that a second run's `pip install ".[slurm]"` finds the dependencies installed
    # (it still builds and installs the project from the clone). A first run pays the full cost.
    rm -rf "$WORK/venv-kept"
    if [ -x "$CLONE/.venv/bin/python" ]; then mv "$CLONE/.venv" "$WORK/venv-kept"; fi
    rm -rf "$CLONE"
    git clone --quiet "$REPO" "$CLONE"
    if [ -d "$WORK/venv-kept" ]; then mv "$WORK/venv-kept" "$CLONE/.venv"; fi
    [ "$(git -C "$CLONE" rev-parse HEAD)" = "$(git -C "$REPO" rev-parse HEAD)" ]
    [ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] ||
        log "note: $REPO has uncommitted changes; the clone tests HEAD"
}

# The README's install and dry-run lines, verbatim (from the clone's root).
readme_install() {
    (
        cd "$CLONE"
        python3 -m venv .venv && .venv/bin/pip install -q ".[slurm]"
        .venv/bin/python deploy/slurm/sroa_slurm.py sweeps/figure2.toml --walltime 02:00:00 --dry-run
    ) >"$WORK/readme-install.log" 2>&1 ||
        die "README install/dry-run failed: $(tail -n 3 "$WORK/readme-install.log" | tr '\n' ' ')"
    grep -q -- '--lifetime' "$WORK/readme-install.log" || die "the dry run printed no worker job script"
}

# The README's sbatch line with this test's sweep (environment variables, extra options).
submit_driver() {
    (
        cd "$CLONE"
        SROA_VENV=$CLONE/.venv SROA_SPEC=$SPEC SROA_STORE=$WORK/sbatch.zarr \
            SROA_JOBS=2 SROA_CORES=1 SROA_MEMORY=1GB SROA_WALLTIME=00:30:00 \
            SROA_SHARED_TMP=$WORK/dask-tmp \
            sbatch --parsable "$@" deploy/slurm/sroa-sweep.sbatch "${SWEEP_ARGS[@]}"
    )
}
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
job_gone_or_done() { case "$(job_state "$1")" in PENDING | RUNNING | COMPLETING | CONFIGURING) return 1 ;; esac; }
worker_jobs() { squeue --noheader --name=sroa-worker --format='%i %t'; }
pending_worker() { worker_jobs | grep -q ' PD$'; }
no_worker_jobs() { [ -z "$(worker_jobs)" ]; }
done_count() { "$PY" deploy/test/cube_check.py done "$1" | cut -d' ' -f1; }

DRIVER1=
driver_walltime() {
    rm -rf "$WORK/sbatch.zarr" # a store left by an earlier run would be resumed or extended
    DRIVER1=$(submit_driver --time=00:01:00)
    log "driver job $DRIVER1 (1-minute walltime), 2 worker jobs of 1 core on a 2-CPU node"
    wait_until 180 pending_worker || die "no pending worker job behind the driver: $(squeue --noheader)"
    log "queue: $(squeue --noheader --format='%i %j %t' | tr '\n' ';')"
    wait_until 300 job_gone_or_done "$DRIVER1" || die "driver $DRIVER1 outlived its walltime"
    [ "$(job_state "$DRIVER1")" = TIMEOUT ] || die "driver $DRIVER1 ended $(job_state "$DRIVER1"), expected TIMEOUT"
    [ -s "$CLONE/logs/sroa-driver-$DRIVER1.out" ] || die "no driver log in $CLONE/logs"
}

workers_cancelled() {
    wait_until 60 no_worker_jobs ||
        die "worker jobs survived the driver: $(worker_jobs | tr '\n' ';')"
    local done
    done=$(done_count "$WORK/sbatch.zarr")
    [ "$done" -ge 1 ] && [ "$done" -lt "$BLOCKS" ] ||
        die "expected a partial sweep after the walltime kill, $done of $BLOCKS blocks done"
    log "after the walltime kill: $done of $BLOCKS blocks done, no worker job left"
}

driver_resumes() {
    local before id log
    before=$(done_count "$WORK/sbatch.zarr")
    id=$(submit_driver)
    log "driver job $id resubmitted"
    wait_until 900 job_gone_or_done "$id" || die "driver $id still running after 900 s"
    log=$CLONE/logs/sroa-driver-$id.out
    [ "$(job_state "$id")" = COMPLETED ] || die "driver $id ended $(job_state "$id"): $(tail -n 3 "$log" | tr '\n' ' ')"
    grep -Eq "blocks: $BLOCKS total, $before already done" "$log" ||
        die "the resubmitted driver did not resume from $before blocks: $(grep 'blocks:' "$log")"
    log "the resubmitted driver found $before of $BLOCKS blocks done"
    "$PY" deploy/test/cube_check.py equal "$WORK/sbatch.zarr" "$WORK/local.zarr"
}

# sroa_slurm.py on the login node (no driver job: both CPUs run worker jobs) with 1-minute
# worker jobs: lifetime = 60 - 35 - 5 = 20 s, so the first jobs retire mid-sweep.
retirement() {
    local store=$WORK/retire.zarr first seen now at_retire=-1 driver
    rm -rf "$store" "$WORK/retire-logs"
    (
        cd "$CLONE"
        exec .venv/bin/python deploy/slurm/sroa_slurm.py "$SPEC" --store "$store" \
            "${SWEEP_ARGS[@]}" --jobs 2 --cores 1 --memory 1GB --walltime 00:01:00 \
            --lifetime-margin 35 --lifetime-stagger 5 --scheduler-host 127.0.0.1 \
            --dashboard-address 127.0.0.1:0 --log-directory "$WORK/retire-logs" \
            --prologue "source $CLONE/.venv/bin/activate" --shared-temp-dir "$WORK/dask-tmp"
    ) >"$WORK/retire.log" 2>&1 &
    driver=$!
    on_exit "kill -0 $driver 2>/dev/null && kill -TERM $driver 2>/dev/null || true"  # gone already: nothing to stop
    first=
    while kill -0 "$driver" 2>/dev/null; do
        now=$(worker_jobs | awk 'NR == 1 {print $1}')
        if [ -z "$first" ] && [ -n "$now" ]; then first=$now; fi
        if [ -n "$first" ] && [ "$at_retire" -lt 0 ] && ! worker_jobs | grep -q "^$first "; then
            at_retire=$(done_count "$store")
            log "worker job $first left the queue with $at_retire of $BLOCKS blocks done"
        fi
        sleep 1
    done
    wait "$driver" || die "sroa_slurm.py failed: $(tail -n 3 "$WORK/retire.log" | tr '\n' ' ')"
    [ -n "$first" ] || die "no worker job was seen"
    [ "$at_retire" -ge 0 ] && [ "$at_retire" -lt "$BLOCKS" ] ||
        die "worker job $first did not leave before the sweep ended (blocks done then: $at_retire)"
    seen=$(ls "$WORK/retire-logs" | sed -n 's/^sroa-worker-\([0-9]*\)\.err$/\1/p' | sort -u | wc -l)
    [ "$seen" -ge 2 ] || die "expected a replacement worker job, saw $seen job logs"
    grep -q 'worker-lifetime-reached' "$WORK/retire-logs/sroa-worker-$first.err" ||
        die "worker job $first did not retire on its lifetime: $(tail -n 3 "$WORK/retire-logs/sroa-worker-$first.err" | tr '\n' ' ')"
    if grep -q 'DUE TO TIME LIMIT' "$WORK/retire-logs/sroa-worker-$first.err"; then
        die "worker job $first was killed by its walltime instead of retiring"
    fi
    "$PY" deploy/test/cube_check.py equal "$store" "$WORK/local.zarr"
}

# A study spec runs on SLURM as any sweep: sroa_slurm.py with two worker jobs, then
# `sroa-dist check` (every block's digests, the store's metadata) passes on the result.
study() {
    local store=$WORK/study.zarr
    rm -rf "$store" "$WORK/study-logs"
    (
        cd "$CLONE"
        exec .venv/bin/python deploy/slurm/sroa_slurm.py "$STUDY" --store "$store" \
            --jobs 2 --cores 1 --memory 1GB --walltime 00:30:00 --scheduler-host 127.0.0.1 \
            --dashboard-address 127.0.0.1:0 --log-directory "$WORK/study-logs" \
            --prologue "source $CLONE/.venv/bin/activate" --shared-temp-dir "$WORK/dask-tmp"
    ) >"$WORK/study.log" 2>&1 ||
        die "study $STUDY on SLURM failed: $(tail -n 3 "$WORK/study.log" | tr '\n' ' ')"
    "$CLONE/.venv/bin/sroa-dist" check "$store" >"$WORK/study-check.log" 2>&1 ||
        die "sroa-dist check $store failed: $(tail -n 3 "$WORK/study-check.log" | tr '\n' ' ')"
    log "study $STUDY: $(grep -E 'blocks: ' "$WORK/study.log" | tail -n 1 || true)"
}

# One compound command, parsed whole before it runs: editing this file during a run cannot
# change what the run does next.
main() {
    step "install slurm-wlm + munge" install
    step "single-node SLURM up (munged, slurmctld, slurmd)" cluster_up
    step "local reference: sroa-dist run on the host" local_reference
    step "oversized worker job: one-line error, nothing queued" oversized_job_refused
    step "fresh clone of HEAD" fresh_clone
    step "README: venv + pip install .[slurm] + --dry-run" readme_install
    step "README sbatch, driver killed at its 1-min walltime" driver_walltime
    step "driver's worker jobs (running + pending) cancelled" workers_cancelled
    step "README sbatch again: resumes, cube bit-identical" driver_resumes
    step "sroa_slurm.py: worker job retires, replacement finishes, bit-identical" retirement
    step "a study on SLURM: $STUDY, then sroa-dist check" study
}
main "$@"; exit
