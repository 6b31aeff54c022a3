#!/usr/bin/env bash
# The compose stack under a real Docker engine, end to end, from nothing on a Debian 12 machine
# (root, no systemd): what the README's deployment section promises, checked for real.
#
#   deploy/test/compose-e2e.sh          # run from anywhere; prints `N passed, N failed` last
#
# 1. engine: install docker.io if dockerd is missing; start dockerd if no engine answers (its PID
#    is recorded and only that process is stopped at the end); install the compose v2 plugin from
#    the next Debian release's docker-compose package when `docker compose` is missing;
# 2. base image: no image registry is assumed reachable, so the image the Dockerfile builds FROM
#    is made locally (debootstrap --variant=minbase from the mirror of the machine's apt sources,
#    Python 3.11 in a venv on PATH, the host's extra CA certificates so pip works), then
#    `docker import`ed;
# 3. the README's commands: `docker compose up --build -d` with the commit recorded, 2 workers,
#    a certified sweep, the cube copied out and compared bit for bit with `sroa-dist run` on the
#    host (timing variables aside); a worker container killed mid-sweep; the runner killed
#    mid-sweep and resumed; one study (issue 34: every study a sweep), the smallest threshold
#    smoke study sweeps/studies/smoke/tilt-p6.toml, run by the runner on the same workers and
#    then `sroa-dist check`ed in a one-off runner container; the dashboard's /health on a
#    chosen host port; `down -v`.
#
# Variables: SROA_E2E_DASHBOARD_PORT (host port of the dashboard, default 18787),
# SROA_E2E_REPLICATES (instances of the certified smoke sweep per run; default: as many as keep
# one worker busy for about 30 s on this machine, measured first, so there is time to kill
# something mid-sweep),
# SROA_E2E_WORK (scratch directory, default /var/tmp/sroa-e2e-compose), SROA_VENV (host venv of
# the local reference run, default REPO/.venv, made by dev.py when missing).
set -euo pipefail
E2E_NAME=compose-e2e
REPO=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=deploy/test/lib.sh
. "$REPO/deploy/test/lib.sh"

WORK=${SROA_E2E_WORK:-/var/tmp/sroa-e2e-compose}
PORT=${SROA_E2E_DASHBOARD_PORT:-18787}
REPLICATES=${SROA_E2E_REPLICATES:-}
SPEC=sweeps/smoke/certified.toml
# The study of the `study` step: the cheapest threshold smoke study (two matrix-free p = 6
# searches), as the image ships it (sweeps/ is in the build context).
STUDY=sweeps/studies/smoke/tilt-p6.toml
RUN_ARGS= # set once REPLICATES is known (local_reference)
CODENAME=$(. /etc/os-release && echo "$VERSION_CODENAME")
BASE_IMAGE=sroa-dist-base:$CODENAME
export COMPOSE_PROJECT_NAME=sroa-e2e
export SROA_DASHBOARD_PORT=$PORT
export SROA_BASE_IMAGE=$BASE_IMAGE
export SROA_WORKERS=2
export SROA_SPEC=$SPEC
SROA_GIT_COMMIT=$(git -C "$REPO" rev-parse HEAD)
export SROA_GIT_COMMIT
mkdir -p "$WORK"
cd "$REPO"

# ---------------------------------------------------------------------------------------------
# 1. Engine and compose plugin

DOCKERD_PID=
engine_up() {
    docker info >/dev/null 2>&1 && return 0
    need_packages dockerd docker.io
    command -v docker >/dev/null 2>&1 || die "docker.io installed but no docker command on PATH"
    log "no engine answers: starting dockerd (log $WORK/dockerd.log)"
    dockerd >"$WORK/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    on_exit stop_pid "$DOCKERD_PID" dockerd
    wait_until 60 docker info >/dev/null ||
        die "dockerd did not come up in 60 s: $(tail -n 3 "$WORK/dockerd.log" | tr '\n' ' ')"
    log "dockerd pid $DOCKERD_PID: $(docker info --format '{{.ServerVersion}} {{.Driver}}')"
}

# Debian 12 ships only compose v1; the v2 plugin is a static Go binary in the next release's
# docker-compose package. apt fetches (and verifies) that .deb through a private sources list and
# state directory, so the machine's own apt configuration is left as it was.
compose_plugin() {
    docker compose version >/dev/null 2>&1 && return 0
    local next mirror apt_dir plugin_dir=/usr/local/lib/docker/cli-plugins
    case "$CODENAME" in
        bookworm) next=trixie ;;
        *) die "no compose v2 plugin and no known next release after $CODENAME to take it from" ;;
    esac
    mirror=$(debian_mirror) || die "cannot read the Debian mirror from the apt sources"
    apt_dir="$WORK/apt-$next"
    rm -rf "$apt_dir" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/deb"
    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
        "$mirror" "$next" /usr/share/keyrings/debian-archive-keyring.gpg >"$apt_dir/next.sources"
    local opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir"
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
        -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=root")
    log "fetching docker-compose from $next"
    apt-get "${opts[@]}" update -q >/dev/null || die "apt-get update of $next failed"
    (cd "$apt_dir/deb" && apt-get "${opts[@]}" download docker-compose >/dev/null) ||
        die "apt-get download docker-compose ($next) failed"
    dpkg-deb -x "$apt_dir"/deb/docker-compose_*.deb "$apt_dir/root"
    install -D -m 0755 "$apt_dir/root/usr/libexec/docker/cli-plugins/docker-compose" \
        "$plugin_dir/docker-compose"
    docker compose version >/dev/null || die "docker compose does not run after installing the plugin"
}

engine() {
    engine_up
    compose_plugin
    log "$(docker compose version)"
}

# ---------------------------------------------------------------------------------------------
# 2. Local base image (what the Dockerfile's FROM names; SROA_BASE_IMAGE points it here)

base_image() {
    if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        log "$BASE_IMAGE exists (delete it to rebuild)"
        return 0
    fi
    need_packages debootstrap debootstrap
    local mirror rootfs="$WORK/rootfs"
    mirror=$(debian_mirror) || die "cannot read the Debian mirror from the apt sources"
    rm -rf "$rootfs"
    log "debootstrap $CODENAME from the apt sources' mirror"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        "$CODENAME" "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
        die "debootstrap failed: $(tail -n 2 "$WORK/debootstrap.log" | tr '\n' ' ')"
    # pip inside the image must trust what the host trusts (e.g. an egress proxy's CA).
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
    fi
    chroot "$rootfs" update-ca-certificates >/dev/null
    # `python` and `pip` on PATH (as in the python:3.11-slim image) without touching Debian's
    # externally managed system Python.
    chroot "$rootfs" python3 -m venv /opt/python
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" -c . | docker import \
        --change 'ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
        --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
        --change 'CMD ["python"]' - "$BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
    docker run --rm "$BASE_IMAGE" python -c 'import sys; assert sys.version_info[:2] == (3, 11)'
}

# ---------------------------------------------------------------------------------------------
# 3. The stack

dc() { docker compose "$@"; }
volume_dir() { docker volume inspect -f '{{.Mountpoint}}' "${COMPOSE_PROJECT_NAME}_results"; }
runner_id() { dc ps -aq runner; }
# Exit code of the runner container once it has stopped (waits for it).
runner_wait() { docker wait "$(runner_id)"; }
done_blocks() { "$PY" deploy/test/cube_check.py done "$(volume_dir)/$1" | cut -d' ' -f1; }
# The moment to kill something: the first block of STORE is done. Polled by counting the done
# mask's chunk files (one per finished block), which is instant where starting Python to read
# the mask takes seconds; what counts afterwards is read through zarr (done_blocks).
first_block_done() { [ -n "$(ls -A "$(volume_dir)/$1/done/c" 2>/dev/null)" ]; }
# After a kill: the sweep must not have been complete, or the kill proved nothing.
check_mid_sweep() {
    local n
    n=$(done_blocks "$1")
    [ "$n" -lt "$REPLICATES" ] ||
        die "$1: all $n blocks were done before the kill; make the sweep longer (SROA_E2E_REPLICATES)"
    echo "$n"
}

PY=
local_reference() {
    PY=$(host_python)
    if [ -z "$REPLICATES" ]; then
        REPLICATES=$(calibrate_replicates "$SPEC" 30 24 600) || die "calibration run failed"
    fi
    # One instance per block so a sweep has many blocks to kill something in the middle of; a
    # short writer-lease timeout so a runner killed with SIGKILL can be resumed seconds later (a
    # new container is another host, so the lease cannot tell that the old holder is gone).
    RUN_ARGS="--set replicates=$REPLICATES --block-size 1 --lease-timeout 10"
    export SROA_RUN_ARGS=$RUN_ARGS
    log "sweep: $SPEC $RUN_ARGS"
    rm -rf "$WORK/local.zarr"
    "$(dirname "$PY")/sroa-dist" run "$SPEC" --store "$WORK/local.zarr" --workers 2 \
        --dashboard-address 127.0.0.1:0 $RUN_ARGS >"$WORK/local.log" 2>&1 ||
        die "local reference run failed: $(tail -n 3 "$WORK/local.log" | tr '\n' ' ')"
}

up() {
    dc down -v --remove-orphans >/dev/null 2>&1 || true # leftovers of an interrupted run
    on_exit 'docker compose down -v --remove-orphans >/dev/null 2>&1'
    SROA_STORE=/results/certified.zarr dc up --build -d
    [ "$(dc ps -q worker | wc -l)" -eq 2 ] || die "expected 2 worker containers"
    [ "$(runner_wait)" -eq 0 ] || die "runner failed: $(dc logs --tail 5 runner | tr '\n' ' ')"
    dc logs runner >"$WORK/runner-1.log"
}

image_commit() {
    local got
    got=$(docker image inspect -f '{{range .Config.Env}}{{println .}}{{end}}' sroa-dist:latest |
        sed -n 's/^SROA_GIT_COMMIT=//p')
    [ "$got" = "$SROA_GIT_COMMIT" ] || die "image records commit '$got', HEAD is $SROA_GIT_COMMIT"
}

first_cube() {
    rm -rf "$WORK/certified.zarr"
    dc cp runner:/results/certified.zarr "$WORK/certified.zarr"
    "$PY" deploy/test/cube_check.py equal "$WORK/certified.zarr" "$WORK/local.zarr"
    local commit
    commit=$("$PY" deploy/test/cube_check.py attr "$WORK/certified.zarr" git_commit)
    [ "${commit%-dirty}" = "$SROA_GIT_COMMIT" ] || die "cube records commit '$commit'"
    # Scaling survives `run`: a one-off command must leave both workers in place.
    dc run --rm runner sroa-dist status /results/certified.zarr >/dev/null
    [ "$(dc ps -q worker | wc -l)" -eq 2 ] || die "docker compose run scaled the workers down"
}

kill_worker() {
    local store=kill-worker.zarr worker
    SROA_STORE=/results/$store dc up -d runner
    # sed reads every line: `head -n 1` may close the pipe while compose still writes, and
    # under pipefail compose's EPIPE (exit 255) ended the step.
    worker=$(dc ps -q worker | sed -n 1p)
    wait_until 300 first_block_done "$store" || die "$store: no block done in 300 s"
    docker kill "$worker" >/dev/null
    log "killed worker $(docker inspect -f '{{.Name}}' "$worker") with $(check_mid_sweep "$store") of $REPLICATES blocks done"
    [ "$(runner_wait)" -eq 0 ] || die "runner failed after the worker kill"
    "$PY" deploy/test/cube_check.py equal "$(volume_dir)/$store" "$WORK/local.zarr"
    dc up -d worker # back to 2 workers (a killed container is not restarted by its policy)
}

kill_runner() {
    local store=kill-runner.zarr before resumed
    SROA_STORE=/results/$store dc up -d runner
    wait_until 300 first_block_done "$store" || die "$store: no block done in 300 s"
    docker kill "$(runner_id)" >/dev/null
    before=$(check_mid_sweep "$store")
    log "runner killed with $before of $REPLICATES blocks done; waiting out the 10 s lease"
    sleep 11
    SROA_STORE=/results/$store dc up -d runner
    [ "$(runner_wait)" -eq 0 ] || die "resumed runner failed: $(dc logs --tail 5 runner | tr '\n' ' ')"
    dc logs runner >"$WORK/runner-resume.log"
    # Blocks already running when the runner died may still finish and count as done.
    resumed=$(sed -n "s/.*blocks: $REPLICATES total, \([0-9]*\) already done.*/\1/p" "$WORK/runner-resume.log")
    [ -n "$resumed" ] && [ "$resumed" -ge "$before" ] && [ "$resumed" -ge 1 ] ||
        die "the rerun did not resume (>= $before blocks done): $(grep 'blocks:' "$WORK/runner-resume.log")"
    log "the rerun found $resumed of $REPLICATES blocks done"
    "$PY" deploy/test/cube_check.py equal "$(volume_dir)/$store" "$WORK/local.zarr"
}

# A study spec runs on the stack as any sweep: the runner with SROA_SPEC pointing at it (no run
# arguments: the smoke study as shipped), then `sroa-dist check` in a one-off runner container.
study() {
    local store=/results/study.zarr
    SROA_SPEC=$STUDY SROA_RUN_ARGS= SROA_STORE=$store dc up -d runner
    [ "$(runner_wait)" -eq 0 ] || die "runner failed on $STUDY: $(dc logs --tail 5 runner | tr '\n' ' ')"
    dc logs runner >"$WORK/runner-study.log"
    dc run --rm runner sroa-dist check "$store" >"$WORK/study-check.log" 2>&1 ||
        die "sroa-dist check $store failed: $(tail -n 3 "$WORK/study-check.log" | tr '\n' ' ')"
    log "study $STUDY: $(grep -E 'blocks: ' "$WORK/runner-study.log" | tail -n 1 || true)"
}

dashboard() {
    local body
    body=$(curl -fsS --max-time 10 "http://127.0.0.1:$PORT/health") ||
        die "no dashboard /health on 127.0.0.1:$PORT"
    [ "$body" = ok ] || die "/health answered '$body'"
}

down() {
    local vol=${COMPOSE_PROJECT_NAME}_results
    dc down -v
    if docker volume inspect "$vol" >/dev/null 2>&1; then die "volume $vol survived down -v"; fi
    [ -z "$(dc ps -aq)" ] || die "containers survived down -v"
}

# One compound command, parsed whole before it runs: editing this file during a run cannot
# change what the run does next.
main() {
    step "engine + compose v2 plugin" engine
    step "local base image $BASE_IMAGE" base_image
    step "local reference: sroa-dist run on the host" local_reference
    step "up --build -d: 2 workers, runner exits 0" up
    step "image records the commit" image_commit
    step "cube bit-identical to the local run; run keeps 2 workers" first_cube
    step "docker kill a worker mid-sweep: cube bit-identical" kill_worker
    step "docker kill the runner mid-sweep, rerun resumes: bit-identical" kill_runner
    step "a study on the stack: $STUDY, then sroa-dist check" study
    step "dashboard /health on host port $PORT" dashboard
    step "down -v" down
}
main "$@"; exit
