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

from tests.support.deploy_helpers import (
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_lease_and_extension_on_s3(s3_server, client, tmp_path):
    """The writer lease and the extension swap on an object store: a live holder refuses a
    second run (naming it), the extension's entry-by-entry copy keeps the lease in place, and
    the extended cube equals a local clean run bit for bit."""
    import s3fs

    from sroa_dist.sweep import open_results, run_sweep
    from sroa_dist.sweep.store.lease import LEASE_GROUP, StoreLease, StoreLockedError
    from tests.support.helpers import SMOKE, assert_same_bits

    opts = {
        "endpoint_url": s3_server,
        "key": "sroa-test",
        "secret": uuid.uuid4().hex,
        "client_kwargs": {"region_name": "us-east-1"},
    }
    bucket = "sroa-lease-run"
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **opts)
    if not fs.exists(bucket):
        fs.call_s3("create_bucket", Bucket=bucket)
    url = f"s3://{bucket}/{uuid.uuid4().hex[:8]}.zarr"
    spec = SMOKE / "figure2.toml"
    kw = {"client": client, "storage_options": opts, "block_size": 12}
    with StoreLease(url, opts, command="other run"):
        with pytest.raises(StoreLockedError, match="other run"):
            run_sweep(spec, url, replicates=2, **kw)
    first = run_sweep(spec, url, replicates=2, **kw)
    assert first.action == "created" and first.complete
    ext = run_sweep(spec, url, replicates=4, **kw)
    assert ext.action == "extended" and ext.complete and ext.blocks_reused >= 1
    assert not fs.exists(f"{url}.next")
    assert not fs.exists(f"{url}/{LEASE_GROUP}/zarr.json")  # released
    ref = run_sweep(spec, tmp_path / "ref.zarr", client=client, replicates=4)
    assert ref.complete

    def values(store, so=None):
        ds = open_results(store, so).load()
        skip = {"done", "done_time", "failed", "damaged", "solve_time"}
        return {k: ds[k].values for k in ds.data_vars if k not in skip}

    got = values(url, opts)
    want = values(tmp_path / "ref.zarr")
    assert_same_bits(got, want)
