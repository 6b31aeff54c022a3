"""The writer lease (sweep/store/lease.py) on a real local filesystem and on moto's S3 server:
exclusive acquisition (also between processes racing), refusal naming the holder, heartbeat,
stale takeover (timeout, dead holder), loss detection and release."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import socket
import time
import uuid
from dataclasses import replace

import pytest

from sroa_dist.sweep.store.lease import (
    DEFAULT_LEASE_TIMEOUT,
    LEASE_GROUP,
    LeaseLostError,
    StoreLease,
    StoreLockedError,
    _encode,
    read_lease,
)


def test_acquire_refuse_release(tmp_path):
    url = str(tmp_path / "new.zarr")  # does not exist yet: acquiring creates the folder
    with StoreLease(url, command="sroa-dist run a.toml") as lease:
        assert (tmp_path / "new.zarr" / LEASE_GROUP / "zarr.json").exists()
        info = read_lease(url)
        assert info.token == lease.info.token and info.pid == os.getpid()
        assert info.host == socket.gethostname()
        with pytest.raises(StoreLockedError) as err:
            StoreLease(url).acquire()
        msg = str(err.value)
        assert f"pid {os.getpid()}" in msg and socket.gethostname() in msg and "since" in msg
        assert "sroa-dist run a.toml" in msg and "--lease-timeout" in err.value.hint
    assert read_lease(url) is None
    assert not (tmp_path / "new.zarr").exists()  # nothing but the lease was written: no litter


def test_release_keeps_a_store_folder_that_existed(tmp_path):
    (tmp_path / "s").mkdir()
    with StoreLease(str(tmp_path / "s")):
        pass
    assert (tmp_path / "s").is_dir() and not list((tmp_path / "s").iterdir())


def test_lease_group_is_valid_zarr_and_ignored_by_xarray(tmp_path):
    import zarr

    with StoreLease(str(tmp_path / "s")) as lease:
        lease.renew(layout_token="abc")
        g = zarr.open_group(str(tmp_path / "s" / LEASE_GROUP), mode="r")
        assert g.attrs["sroa_lease"]["layout_token"] == "abc"
        assert g.attrs["sroa_lease"]["heartbeat"] >= g.attrs["sroa_lease"]["acquired"]


def test_heartbeat_renews(tmp_path):
    url = str(tmp_path / "s")
    with StoreLease(url, timeout=0.6) as lease:
        first = read_lease(url).heartbeat
        lease.start_heartbeat()  # every 0.1 s
        deadline = time.time() + 10
        while time.time() < deadline and read_lease(url).heartbeat == first:
            time.sleep(0.02)
        assert read_lease(url).heartbeat > first
        lease.check()


def _plant(url: str, **fields) -> None:
    """Write a lease as another (possibly dead or silent) run left it."""
    now = time.time()
    info = StoreLease(url).info
    info = replace(info, **{"token": uuid.uuid4().hex, "acquired": now, "heartbeat": now, **fields})
    path = os.path.join(url, LEASE_GROUP)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "zarr.json"), "wb") as f:
        f.write(_encode(info))


def test_live_holder_on_another_host_is_refused(tmp_path):
    url = str(tmp_path / "s")
    _plant(url, host="other-host", pid=1)
    path = os.path.join(url, LEASE_GROUP, "zarr.json")
    with open(path) as f:
        doc = json.load(f)
    doc["attributes"]["sroa_lease"]["written_by_a_newer_version"] = True
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(StoreLockedError, match="other-host"):  # still a live holder
        StoreLease(url, timeout=30).acquire()


def test_stale_lease_is_taken_over_after_the_timeout(tmp_path):
    url = str(tmp_path / "s")
    _plant(url, host="other-host", pid=1, heartbeat=time.time() - 31)
    lease = StoreLease(url, timeout=30).acquire()
    assert lease.took_over.host == "other-host"
    assert read_lease(url).token == lease.info.token
    lease.release()


def test_dead_holder_on_this_host_is_taken_over_at_once(tmp_path):
    """A run killed with kill -9 leaves its lease behind; the next run need not wait."""
    proc = mp.get_context("spawn").Process(target=time.sleep, args=(0,))
    proc.start()
    proc.join()
    url = str(tmp_path / "s")
    _plant(url, pid=proc.pid)  # this host, fresh heartbeat, but the process is gone
    with StoreLease(url, timeout=DEFAULT_LEASE_TIMEOUT) as lease:
        assert lease.took_over.pid == proc.pid


def test_a_taken_over_lease_is_lost_and_not_released(tmp_path):
    url = str(tmp_path / "s")
    a = StoreLease(url, timeout=30).acquire()
    _plant(url, host="other-host", pid=1)  # someone replaced it (as after a stale takeover)
    with pytest.raises(LeaseLostError, match="other-host"):
        a.renew()
    with pytest.raises(LeaseLostError):
        a.check()
    a.release()
    assert read_lease(url).host == "other-host"  # the new holder's lease survives


def _race(url: str, start: float, out, stop) -> None:
    while time.time() < start:
        pass
    try:
        lease = StoreLease(url, timeout=30).acquire()
    except StoreLockedError:
        out.put("refused")
        return
    out.put("won")
    stop.wait(60)  # hold it until every contender has tried
    lease.release()


@pytest.mark.slow
def test_processes_racing_for_a_new_store_one_wins(tmp_path):
    ctx = mp.get_context("spawn")
    out, stop = ctx.Queue(), ctx.Event()
    url = str(tmp_path / "race.zarr")
    start = time.time() + 3.0  # after every process has started
    procs = [ctx.Process(target=_race, args=(url, start, out, stop)) for _ in range(4)]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=60) for _ in procs)
    stop.set()
    for p in procs:
        p.join(60)
    assert results == ["refused", "refused", "refused", "won"]
    assert read_lease(url) is None


# ---- S3 (moto server) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server on loopback and a bucket; yields (storage_options, bucket)."""
    pytest.importorskip("flask", reason="moto's server mode needs moto[server]")
    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    opts = {
        "endpoint_url": f"http://127.0.0.1:{port}",
        "key": "sroa-test",
        "secret": uuid.uuid4().hex,
        "client_kwargs": {"region_name": "us-east-1"},
    }
    bucket = "sroa-lease-test"
    s3fs.S3FileSystem(skip_instance_cache=True, **opts).call_s3("create_bucket", Bucket=bucket)
    try:
        yield opts, bucket
    finally:
        server.stop()


@pytest.mark.slow
def test_s3_conditional_acquire_takeover_release(s3):
    import s3fs

    opts, bucket = s3
    url = f"s3://{bucket}/{uuid.uuid4().hex[:8]}.zarr"
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **opts)
    a = StoreLease(url, opts, timeout=30).acquire()
    assert fs.exists(f"{url}/{LEASE_GROUP}/zarr.json")
    with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}"):
        StoreLease(url, opts, timeout=30).acquire()
    a.renew(layout_token="t1")  # If-Match on the ETag read
    assert read_lease(url, opts).layout_token == "t1"
    # A silent holder elsewhere: taken over by a conditional put on its ETag.
    doc = json.loads(fs.cat_file(f"{url}/{LEASE_GROUP}/zarr.json"))
    doc["attributes"]["sroa_lease"].update(host="other-host", heartbeat=time.time() - 100)
    fs.pipe_file(f"{url}/{LEASE_GROUP}/zarr.json", json.dumps(doc).encode())
    b = StoreLease(url, opts, timeout=30).acquire()
    assert b.took_over.host == "other-host"
    with pytest.raises(LeaseLostError):
        a.renew()  # the If-Match of the old holder fails
    a.release()  # must not delete b's lease
    assert read_lease(url, opts).token == b.info.token
    b.release()
    assert read_lease(url, opts) is None
