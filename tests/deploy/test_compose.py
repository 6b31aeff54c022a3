"""Deployment descriptors read as data: compose files, Dockerfile, .dockerignore, Kubernetes
manifests and the SLURM script. Fast, no processes started (except openssl / kubectl, if present).

The process tests (test_deploy_*.py) run the compose commands themselves; these tests pin what
they cannot see: defaults a user gets from ``docker compose up``, the ports published, the image
layout the path mapping relies on, and that the other deployment targets run the same commands.
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.deploy_helpers import (
    IMAGE_PATHS,
    ROOT,
    compose_service,
    dockerfile_instructions,
    exec_form,
    interpolate,
    load_compose,
)

S3_SECRET = {"SROA_S3_SECRET_KEY": "not-a-secret"}
VOLUMES = {"results": Path("/host/results")}
FILE_SETS = [
    ("base",),
    ("base", "tls"),
    ("base", "s3"),
    ("base", "tls", "s3"),
    ("base", "gpu"),
    ("base", "tls", "s3", "gpu"),
]


def defaults(files=("base",), service="runner"):
    """A service as ``docker compose config`` shows it with no variables set (paths unmapped)."""
    svc = load_compose(*files)["services"][service]
    env = {k: interpolate(str(v), S3_SECRET) for k, v in (svc.get("environment") or {}).items()}
    return [interpolate(str(a), S3_SECRET) for a in svc["command"]], env


# --------------------------------------------------------------------------------------------
# Compose


def test_interpolation_follows_compose():
    v = {"A": "x", "E": ""}
    assert interpolate("$$A ${A} $A ${B:-d} ${E:-d} ${E-d} ${B-d}", v) == "$A x x d d  d"
    with pytest.raises(ValueError, match="need it"):
        interpolate("${B:?need it}", v)
    with pytest.raises(KeyError):
        interpolate("${B}", v)
    with pytest.raises(ValueError):
        interpolate("$(date)", v)


@pytest.mark.parametrize("files", FILE_SETS, ids="+".join)
def test_every_service_resolves(files):
    doc = load_compose(*files)
    ours = [n for n, s in doc["services"].items() if s["image"].startswith("${SROA_IMAGE:-")]
    assert {"scheduler", "worker", "runner"} <= set(ours)
    for service in ours:
        cmd = compose_service(service, files, S3_SECRET, VOLUMES)
        assert cmd.argv, service


def test_default_commands():
    sched, _ = defaults(service="scheduler")
    assert sched[:2] == ["dask", "scheduler"]
    assert sched[sched.index("--host") + 1] == "0.0.0.0"
    port = sched[sched.index("--port") + 1]
    assert port == "8786"
    assert sched[sched.index("--dashboard-address") + 1] == ":8787"

    worker, _ = defaults(service="worker")
    assert worker[:3] == ["dask", "worker", f"scheduler:{port}"]  # the scheduler service
    assert worker[worker.index("--nthreads") + 1] == "1"

    runner, env = defaults(service="runner")
    assert runner[:2] == ["sh", "-c"] and runner[2].startswith("exec sroa-dist run ")
    assert '--scheduler "$DASK_SCHEDULER_ADDRESS"' in runner[2]
    assert env["DASK_SCHEDULER_ADDRESS"] == f"scheduler:{port}"
    assert env["SROA_STORE"].startswith("/results/")
    assert (ROOT / env["SROA_SPEC"]).is_file()  # relative to the image's WORKDIR = repo root


def test_one_image_for_every_service():
    doc = load_compose("base")
    images = {interpolate(s["image"], {}) for s in doc["services"].values()}
    assert images == {"sroa-dist:latest"}
    assert all(s["build"]["context"] == "." for s in doc["services"].values())


@pytest.mark.parametrize("files", FILE_SETS, ids="+".join)
def test_published_ports_are_loopback_only(files):
    doc = load_compose(*files)
    published = []
    for name, svc in doc["services"].items():
        for spec in svc.get("ports", []):
            parts = interpolate(str(spec), S3_SECRET).split(":")
            assert len(parts) == 3, f"{name}: {spec} publishes on every interface"
            host_ip, _, container = parts
            assert host_ip == "127.0.0.1", f"{name}: {spec}"
            assert container != "8786", f"{name}: the scheduler comm port must not be published"
            published.append((name, container))
    assert ("scheduler", "8787") in published  # the dashboard


def test_results_volume_shared_by_workers_and_runner():
    doc = load_compose("base")
    for service in ("worker", "runner"):
        assert "results:/results" in doc["services"][service]["volumes"], service
    assert "results" in doc["volumes"]


@pytest.mark.parametrize("extra", ["tls", "s3"])
def test_overrides_do_not_change_dask_commands(extra):
    """TLS and S3 are switched by configuration: same scheduler/worker/runner argv."""
    for service in ("scheduler", "worker", "runner"):
        assert defaults(("base",), service)[0] == defaults(("base", extra), service)[0], service


def test_gpu_override_adds_workers_that_advertise_the_gpu_resource():
    """docker-compose.gpu.yml: a worker service like the CPU workers, plus the GPU resource
    the sweep's GPU blocks ask for, one NVIDIA GPU each, and an image with the gpu extra; the
    base services are unchanged."""
    import tomllib

    from sroa_dist.sweep.run.cluster import GPU_RESOURCE

    doc = load_compose("base", "gpu")
    gpu = doc["services"]["gpu-worker"]
    argv = [interpolate(str(a), {}) for a in gpu["command"]]
    worker, _ = defaults(service="worker")
    assert argv == [*worker, "--resources", f"{GPU_RESOURCE}=1"]
    (device,) = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device == {"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}
    assert interpolate(str(gpu["deploy"]["replicas"]), {}) == "1"
    extras = gpu["build"]["args"]["SROA_EXTRAS"].split(",")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "gpu" in extras and set(extras) <= set(project["optional-dependencies"])
    assert gpu["build"]["context"] == "."
    base_worker = doc["services"]["worker"]
    assert gpu["volumes"] == base_worker["volumes"]
    assert gpu["environment"] == base_worker["environment"]
    assert gpu["depends_on"] == base_worker["depends_on"]
    for service in ("scheduler", "worker", "runner"):
        assert defaults(("base",), service)[0] == defaults(("base", "gpu"), service)[0]


def test_tls_override_requires_encryption_everywhere():
    for service, role in [("scheduler", "SCHEDULER"), ("worker", "WORKER"), ("runner", "CLIENT")]:
        _, env = defaults(("base", "tls"), service)
        assert env["DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION"] == "true"
        assert env["DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME"] == "tls"
        assert env["DASK_DISTRIBUTED__COMM__TLS__CA_FILE"] == "/tls/ca.pem"
        cert = env[f"DASK_DISTRIBUTED__COMM__TLS__{role}__CERT"]
        key = env[f"DASK_DISTRIBUTED__COMM__TLS__{role}__KEY"]
        assert cert == f"/tls/{role.lower()}.pem" and key == f"/tls/{role.lower()}-key.pem"
        vols = load_compose("base", "tls")["services"][service]["volumes"]
        assert any(str(v).endswith(":/tls:ro") for v in vols), service  # read-only certs


def test_s3_override_points_workers_and_runner_at_the_store():
    for service in ("worker", "runner", "s3-bucket"):
        _, env = defaults(("base", "s3"), service)
        assert env["AWS_ENDPOINT_URL"] == "http://s3:8333"
        assert env["AWS_SECRET_ACCESS_KEY"] == S3_SECRET["SROA_S3_SECRET_KEY"]
    _, env = defaults(("base", "s3"), "runner")
    bucket_cmd, _ = defaults(("base", "s3"), "s3-bucket")
    assert env["SROA_STORE"].startswith("s3://")
    assert bucket_cmd[-1] == env["SROA_STORE"]  # the bucket made is the store's
    deps = load_compose("base", "s3")["services"]["runner"]["depends_on"]
    assert deps["s3-bucket"]["condition"] == "service_completed_successfully"


# --------------------------------------------------------------------------------------------
# Dockerfile and build context


def _dockerignore():
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def _in_context(rel: str) -> bool:
    """Docker's .dockerignore semantics for our patterns: last match wins, '!' re-includes."""
    included = True
    for pat in _dockerignore():
        neg = pat.startswith("!")
        p = pat[1:] if neg else pat
        p = p.rstrip("/")
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if p.startswith("**/"):
            hit = any(fnmatch.fnmatch(x, p[3:]) for x in parts)
        else:
            hit = any(fnmatch.fnmatch(x, p) for x in prefixes)
        if hit:
            included = neg
    return included


def test_dockerfile_base_user_healthcheck():
    instr = dockerfile_instructions()
    # The base is a build argument (a locally built image where no registry is reachable),
    # python:3.11-slim by default, and compose passes it through.
    assert instr[0] == ("ARG", "SROA_BASE_IMAGE=python:3.11-slim")
    assert instr[1] == ("FROM", "${SROA_BASE_IMAGE}")
    args = load_compose("base")["services"]["scheduler"]["build"]["args"]
    assert interpolate(args["SROA_BASE_IMAGE"], {}) == "python:3.11-slim"
    users = [a for i, a in instr if i == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    runs = " ".join(a for i, a in instr if i == "RUN")
    # the project with s3fs; the GPU workers' image adds the gpu extra (docker-compose.gpu.yml)
    assert ("ARG", "SROA_EXTRAS=s3") in instr
    assert 'pip install ".[${SROA_EXTRAS}]"' in runs
    (health,) = [a for i, a in instr if i == "HEALTHCHECK"]
    probe = exec_form(health)
    assert probe[0] == "python"
    assert probe[1].startswith("/usr/local/lib/sroa/")
    (cmd,) = [a for i, a in instr if i == "CMD"]
    assert exec_form(cmd)[:2] == ["dask", "scheduler"]  # so the HEALTHCHECK fits the default


def test_dockerfile_fetches_no_frontend_image():
    """A `# syntax=` directive makes BuildKit pull a frontend image from a registry first,
    which fails offline (and the build then never starts)."""
    first = (ROOT / "Dockerfile").read_text().lstrip().splitlines()[0]
    assert not first.replace(" ", "").lower().startswith("#syntax="), first


def test_compose_build_records_the_commit():
    """`docker compose up --build` passes SROA_GIT_COMMIT to the build, and the Dockerfile turns
    it into the environment variable the cube's `git_commit` attr is read from."""
    doc = load_compose("base")
    for name in ("scheduler", "worker", "runner"):
        args = doc["services"][name]["build"]["args"]
        assert interpolate(args["SROA_GIT_COMMIT"], {"SROA_GIT_COMMIT": "abc123"}) == "abc123"
    instr = dockerfile_instructions()
    assert ("ARG", "SROA_GIT_COMMIT=unknown") in instr
    assert ("ENV", "SROA_GIT_COMMIT=${SROA_GIT_COMMIT}") in instr


def test_worker_count_is_in_the_file():
    """The worker count is deploy.replicas (SROA_WORKERS): `docker compose run` and later `up`s
    keep it, where an `up --scale worker=N` is undone by the next `run`."""
    worker = load_compose("base")["services"]["worker"]
    assert interpolate(str(worker["deploy"]["replicas"]), {}) == "2"
    assert interpolate(str(worker["deploy"]["replicas"]), {"SROA_WORKERS": "5"}) == "5"


def test_dashboard_host_port_is_a_variable():
    (spec,) = load_compose("base")["services"]["scheduler"]["ports"]
    assert interpolate(spec, {}) == "127.0.0.1:8787:8787"
    assert interpolate(spec, {"SROA_DASHBOARD_PORT": "18787"}) == "127.0.0.1:18787:8787"


def test_image_layout_matches_the_test_path_mapping():
    """deploy_helpers.IMAGE_PATHS maps image paths to repository paths: check it against the
    Dockerfile, and that every COPY source exists and is in the build context."""
    instr = dockerfile_instructions()
    (workdir,) = {a for i, a in instr if i == "WORKDIR"}
    assert IMAGE_PATHS[workdir] == ROOT
    for i, args in instr:
        if i != "COPY":
            continue
        *sources, dest = args.split()
        dest_abs = dest if dest.startswith("/") else f"{workdir}/{dest.removeprefix('./')}"
        for src in sources:
            assert (ROOT / src).exists(), f"COPY {src}: missing from the repository"
            assert _in_context(src), f"COPY {src}: excluded by .dockerignore"
            if dest_abs.endswith("/"):  # a directory, as Docker reads a trailing slash
                target = dest_abs + Path(src).name
            else:
                target = dest_abs
            mapped = next(
                (
                    IMAGE_PATHS[t] / target[len(t) :].lstrip("/")
                    for t in IMAGE_PATHS
                    if target == t or target.startswith(t.rstrip("/") + "/")
                ),
                None,
            )
            assert mapped is not None and mapped.resolve() == (ROOT / src).resolve(), src


def test_build_context_keeps_secrets_and_results_out():
    for rel in [
        "deploy/tls/certs/ca-key.pem",
        ".git/config",
        "results/x.zarr",
        ".venv/bin/x",
        "tests/deploy/test_compose.py",
        "sroa_dist/__pycache__/x.pyc",
    ]:
        assert not _in_context(rel), rel
    for rel in [
        "pyproject.toml",
        "sroa_dist/cli.py",
        "sweeps/smoke/figure2.toml",
        "deploy/docker/healthcheck.py",
    ]:
        assert _in_context(rel), rel


# --------------------------------------------------------------------------------------------
# Kubernetes (dask-kubernetes operator)

K8S = ROOT / "deploy" / "kubernetes"


def _k8s_docs():
    docs = []
    for path in sorted(K8S.rglob("*.yaml")):
        docs += [(path, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _containers(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "containers":
                yield from v
            else:
                yield from _containers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _containers(v)


def test_k8s_manifests():
    kinds = {d["kind"] for _, d in _k8s_docs()}
    assert {"DaskCluster", "DaskJob", "NetworkPolicy", "Kustomization"} <= kinds
    runner, _ = defaults(service="runner")
    compose_worker, _ = defaults(service="worker")
    for path, doc in _k8s_docs():
        if doc["kind"] not in ("DaskCluster", "DaskJob"):
            continue
        assert doc["apiVersion"] == "kubernetes.dask.org/v1", path
        for c in _containers(doc):
            assert c["image"] == "sroa-dist:latest", path  # replaced by the kustomizations
            args = c["args"]
            if c["name"] == "job":
                assert args == runner, "the DaskJob must run the compose runner's command"
            elif c["name"] == "worker":
                assert args[:2] == ["dask", "worker"]
                assert (
                    args[args.index("--nthreads") + 1]
                    == compose_worker[compose_worker.index("--nthreads") + 1]
                )
            else:
                assert args[:2] == ["dask", "scheduler"]
                assert c["readinessProbe"]["httpGet"]["path"] == "/health"
        spec = doc["spec"] if doc["kind"] == "DaskCluster" else doc["spec"]["cluster"]["spec"]
        assert spec["scheduler"]["service"]["type"] == "ClusterIP", path
        name = doc["metadata"]["name"]
        assert spec["scheduler"]["service"]["selector"]["dask.org/cluster-name"] == name


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize("overlay", ["job", "cluster"])
def test_k8s_kustomize_renders(overlay):
    out = subprocess.run(
        ["kubectl", "kustomize", str(K8S / overlay)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    images = {c["image"] for d in docs for c in _containers(d)}
    assert images and all(not i.startswith("sroa-dist:") for i in images), images


# --------------------------------------------------------------------------------------------
# SLURM (dask-jobqueue)


def _slurm_module():
    import importlib.util

    path = ROOT / "deploy" / "slurm" / "sroa_slurm.py"
    spec = importlib.util.spec_from_file_location("sroa_slurm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_slurm_lifetime_leaves_the_walltime_margin():
    m = _slurm_module()
    assert m.walltime_seconds("02:00:00") == 7200
    assert m.walltime_seconds("1-00:30:00") == 88200
    assert m.walltime_seconds("90") == 5400
    args = m.lifetime_args("02:00:00", margin_s=600, stagger_s=300)
    life = int(args[args.index("--lifetime") + 1].rstrip("s"))
    stagger = int(args[args.index("--lifetime-stagger") + 1].rstrip("s"))
    assert life + stagger + 600 == 7200  # the latest retirement still has 10 min to close
    assert "--no-lifetime-restart" in args  # a restart would be killed by the walltime
    assert "--lifetime-restart" in m.lifetime_args("02:00:00", restart=True)
    with pytest.raises(ValueError, match="walltime"):
        m.lifetime_args("00:10:00")


def test_slurm_job_script(tmp_path):
    pytest.importorskip("dask_jobqueue")
    if shutil.which("openssl") is None:
        pytest.skip("make-certs.sh needs the openssl command")
    m = _slurm_module()
    certs = tmp_path / "certs"
    subprocess.run(
        ["bash", str(ROOT / "deploy" / "tls" / "make-certs.sh"), str(certs)],
        check=True,
        capture_output=True,
    )
    args = m.build_parser().parse_args(
        ["sweeps/smoke/figure2.toml", "--partition", "normal", "--account", "proj",
         "--walltime", "01:00:00", "--lifetime-margin", "300", "--lifetime-stagger", "120",
         "--scheduler-host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0",
         "--tls-dir", str(certs), "--log-directory", str(tmp_path / "logs"),
         "--prologue", "source /opt/venv/bin/activate"]
    )  # fmt: skip
    with m.make_cluster(args) as cluster:
        script = cluster.job_script()
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
    assert "#SBATCH -t 01:00:00" in script and "#SBATCH -p normal" in script
    assert "--lifetime 3180s --lifetime-stagger 120s --no-lifetime-restart" in script
    assert f"--tls-ca-file {certs / 'ca.pem'}" in script
    assert f"--tls-cert {certs / 'worker.pem'}" in script
    assert "--nthreads 1" in script and "--no-dashboard" in script
    assert "source /opt/venv/bin/activate" in script


def test_slurm_gpu_worker_job_asks_for_a_gpu_and_advertises_it(tmp_path):
    """--gpu-jobs: the GPU worker job is the cluster's worker job on a GPU node (--gres) with
    one worker process that advertises the GPU resource."""
    pytest.importorskip("dask_jobqueue")
    from sroa_dist.sweep.run.cluster import GPU_RESOURCE

    m = _slurm_module()
    assert m.GPU_RESOURCE == GPU_RESOURCE
    args = m.build_parser().parse_args(
        ["sweeps/smoke/figure2.toml", "--partition", "normal", "--gpu-partition", "gpu",
         "--gpu-jobs", "2", "--gpu-cores", "4", "--gpu-memory", "40GB",
         "--walltime", "01:00:00", "--lifetime-margin", "300", "--lifetime-stagger", "120",
         "--scheduler-host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0", "--no-tls",
         "--log-directory", str(tmp_path / "logs"), "--prologue", "source /opt/venv/bin/activate"]
    )  # fmt: skip
    with m.make_cluster(args) as cluster:
        cpu = cluster.job_script()
        gpu = m.gpu_job_script(cluster, args)
        address = cluster.scheduler_address
    assert "#SBATCH --gres=gpu:1" in gpu and "#SBATCH -p gpu" in gpu
    assert f"--resources {GPU_RESOURCE}=1" in gpu and "--nthreads 4" in gpu
    assert "--nworkers" not in gpu  # one worker process holds the GPU
    assert address in gpu and "--lifetime 3180s" in gpu and "source /opt/venv/bin/activate" in gpu
    assert "--gres" not in cpu and "--resources" not in cpu
    assert "#SBATCH -J sroa-gpu-worker" in gpu
    assert subprocess.run(["bash", "-n"], input=gpu.encode(), capture_output=True).returncode == 0


def test_slurm_sbatch_example_calls_the_script():
    text = (ROOT / "deploy" / "slurm" / "sroa-sweep.sbatch").read_text()
    assert "deploy/slurm/sroa_slurm.py" in text
    # SLURM opens --output before the job starts: its directory must exist in every clone (a
    # tracked file keeps it), else the job ends as a launch failure with no log at all.
    lines = text.splitlines()
    (output,) = [ln.split("=", 1)[1] for ln in lines if ln.startswith("#SBATCH --output=")]
    log_dir = ROOT / Path(output).parent
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", str(log_dir / ".gitignore")],
        cwd=ROOT,
        capture_output=True,
    )
    assert tracked.returncode == 0, f"{log_dir} is not kept in git"
    assert (
        subprocess.run(["bash", "-n", str(ROOT / "deploy/slurm/sroa-sweep.sbatch")]).returncode == 0
    )


def test_helper_scripts_in_image_are_executable_python():
    scripts = sorted((ROOT / "deploy" / "docker").glob("*.py"))
    # The Dockerfile copies these two by name: an empty glob must fail, not pass vacuously.
    assert [s.name for s in scripts] == ["healthcheck.py", "s3_bucket.py"]
    for script in scripts:
        compile(script.read_text(), str(script), "exec")


@pytest.mark.parametrize("name", ["compose-e2e.sh", "slurm-e2e.sh", "lib.sh"])
def test_e2e_scripts_parse_and_name_no_registry_host(name):
    """The real-engine scripts read their mirror from the machine's apt sources: no package or
    image registry host is written in them."""
    path = ROOT / "deploy" / "test" / name
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    text = path.read_text()
    for host in ("debian.org", "docker.io/", "docker.com", "pypi.org", "ghcr.io", "quay.io"):
        assert host not in text, f"{name} names {host}"
