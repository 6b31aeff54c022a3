"""The cube in an S3-compatible object store: docker-compose.yml + docker-compose.s3.yml as real
processes, moto's S3 server on loopback standing in for the compose file's S3 service.

The compose S3 override gives workers and runner only standard AWS variables (endpoint,
credentials, region) and an ``s3://`` store URL; the bucket comes from the compose ``s3-bucket``
one-shot command. The cube is written by the workers, read back from the server, and equals the
embedded run except the timing variables (and the per-block bookkeeping: larger blocks here).
"""

from __future__ import annotations

import logging
import uuid

import pytest
from deploy_helpers import (
    Processes,
    assert_cubes_equal,
    compose_service,
    free_port,
    reference_store,
    start_cluster,
    summary_counts,
)

BUCKET = "sroa-results"
RUN_ARGS = "--set replicates=24 --block-size 12"


@pytest.fixture(scope="module")
def s3_server():
    """moto's S3 server on 127.0.0.1 (a thread of this process); yields its endpoint URL."""
    pytest.importorskip("flask", reason="moto's server mode needs moto[server]")
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def s3_variables(s3_server):
    """What a user would export for docker-compose.s3.yml, pointed at the local server."""
    return {
        "SROA_S3_ENDPOINT": s3_server,
        "SROA_S3_ACCESS_KEY": "sroa-test",
        "SROA_S3_SECRET_KEY": uuid.uuid4().hex,
        "SROA_S3_STORE": f"s3://{BUCKET}/smoke-figure2-{uuid.uuid4().hex[:8]}.zarr",
    }


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    return reference_store(tmp_path_factory)


def storage_options(v: dict) -> dict:
    return {
        "endpoint_url": v["SROA_S3_ENDPOINT"],
        "key": v["SROA_S3_ACCESS_KEY"],
        "secret": v["SROA_S3_SECRET_KEY"],
        "client_kwargs": {"region_name": "us-east-1"},
    }


def test_secret_is_required():
    """docker-compose.s3.yml refuses to start without a secret key instead of using a default."""
    with pytest.raises(ValueError, match="SROA_S3_SECRET_KEY"):
        compose_service("runner", ("base", "s3"), {}, {"results": "/tmp"})


def test_sweep_writes_to_and_reads_back_from_s3(s3_variables, embedded, tmp_path):
    import s3fs

    opts = storage_options(s3_variables)
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **opts)
    with Processes(tmp_path / "logs") as procs:
        bucket = procs.start(
            "s3-bucket", compose_service("s3-bucket", ("base", "s3"), s3_variables), {}
        )
        assert bucket.wait(60) == 0, bucket.output()
        assert fs.exists(BUCKET)

        cluster = start_cluster(
            procs, tmp_path, n_workers=2, files=("base", "s3"), variables=s3_variables
        )
        # Blocks of 12 instances: every block is a few dozen small S3 requests, and moto's
        # server answers them slowly; results do not depend on the blocking.
        runner, store = cluster.runner(procs, variables={"SROA_RUN_ARGS": RUN_ARGS})
        code = runner.wait(240)
        out = runner.output()
    assert code == 0, out
    assert store == s3_variables["SROA_S3_STORE"]
    assert summary_counts(out)["computed"] == 6
    # Written to the server (not to a local path) ...
    key = store.removeprefix("s3://")
    assert fs.exists(f"{key}/zarr.json")
    assert fs.ls(f"{key}/lam_hat")
    assert not any((tmp_path / "results").iterdir())
    # ... and read back from it.
    assert_cubes_equal(store, embedded, got_options=opts, same_blocks=False)
    # The bucket command is idempotent (the compose one-shot may run again).
    with Processes(tmp_path / "logs2") as procs:
        again = procs.start(
            "s3-bucket", compose_service("s3-bucket", ("base", "s3"), s3_variables), {}
        )
        assert again.wait(60) == 0, again.output()
        assert "exists" in again.output()
