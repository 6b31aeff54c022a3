"""Mutual TLS: docker-compose.yml + docker-compose.tls.yml run as real processes on loopback.

Certificates come from deploy/tls/make-certs.sh (a CA and scheduler/worker/client certificates),
plus a second, unrelated CA to play the attacker. The authenticated runner completes the smoke
sweep (cube equal to the embedded run except the timing variables); a plain-TCP client, a client
with a certificate from the other CA and a TLS client without a certificate are all refused.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess

import pytest

from tests.support.deploy_helpers import (
    ROOT,
    Processes,
    assert_cubes_equal,
    compose_service,
    done_mask,
    reference_store,
    start_cluster,
    summary_counts,
    wait_for,
)

MAKE_CERTS = ROOT / "deploy" / "tls" / "make-certs.sh"
pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="make-certs.sh needs the openssl command"
)


def make_certs(out):
    subprocess.run(["bash", str(MAKE_CERTS), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def rogue_certs(tmp_path_factory):
    """A valid-looking certificate set from a different CA."""
    return make_certs(tmp_path_factory.mktemp("rogue-certs"))


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    return reference_store(tmp_path_factory)


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory, certs):
    tmp = tmp_path_factory.mktemp("tls-cluster")
    with Processes(tmp / "logs") as procs:
        yield start_cluster(
            procs, tmp, n_workers=2, files=("base", "tls"), variables={"SROA_TLS_DIR": str(certs)}
        )


def refused(cluster, reason: str) -> None:
    """The scheduler logged a failed TLS handshake for ``reason``."""
    wait_for(
        lambda: any(
            "TLS handshake failed" in line and reason in line
            for line in cluster.scheduler.output().splitlines()
        ),
        10,
        f"the scheduler to log a refused handshake ({reason})",
        [cluster.scheduler],
    )


def test_make_certs_chain(certs, rogue_certs):
    for name in ("scheduler", "worker", "client"):
        ok = subprocess.run(
            ["openssl", "verify", "-CAfile", str(certs / "ca.pem"), str(certs / f"{name}.pem")],
            capture_output=True,
        )
        assert ok.returncode == 0, ok.stderr
        bad = subprocess.run(
            [
                "openssl",
                "verify",
                "-CAfile",
                str(certs / "ca.pem"),
                str(rogue_certs / f"{name}.pem"),
            ],
            capture_output=True,
        )
        assert bad.returncode != 0
        assert (certs / f"{name}-key.pem").stat().st_mode & 0o077 == 0  # keys private


@pytest.mark.slow
def test_cluster_speaks_tls(tls_cluster):
    assert tls_cluster.address.startswith("tls://127.0.0.1:")
    assert not tls_cluster.hostport.startswith("tls://")  # compose addresses carry no scheme


@pytest.mark.slow
def test_authenticated_runner_completes(tls_cluster, embedded, tmp_path):
    with Processes(tmp_path / "logs") as procs:
        runner, store = tls_cluster.runner(procs, store="/results/tls.zarr")
        code = runner.wait(180)
        out = runner.output()
    assert code == 0, out
    assert summary_counts(out)["computed"] == 36
    assert_cubes_equal(store, embedded)


@pytest.mark.slow
def test_plain_client_refused(tls_cluster, tmp_path):
    """The runner of docker-compose.yml alone (no TLS settings) cannot use the TLS cluster."""
    with Processes(tmp_path / "logs") as procs:
        runner, store = tls_cluster.runner(
            procs,
            store="/results/plain-client.zarr",
            files=("base",),
            env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"},  # fail fast
        )
        code = runner.wait(120)
        out = runner.output()
    assert code != 0, out
    # the CLI turns the refused connection into a short error with a hint (exit status 2)
    assert code == 2 and "hint: check the scheduler address" in out, out
    assert "Traceback" not in out, out
    assert done_mask(store).sum() == 0  # nothing ran
    refused(tls_cluster, "WRONG_VERSION_NUMBER")  # plain bytes where a TLS hello belongs


def test_client_certificate_from_other_ca_refused(tls_cluster, certs, rogue_certs):
    """Trusts the right CA but presents a certificate the cluster's CA never signed."""
    from distributed import Client
    from distributed.security import Security

    sec = Security(
        tls_ca_file=str(certs / "ca.pem"),
        tls_client_cert=str(rogue_certs / "client.pem"),
        tls_client_key=str(rogue_certs / "client-key.pem"),
        require_encryption=True,
    )
    with pytest.raises((OSError, TimeoutError)):
        Client(tls_cluster.address, security=sec, timeout="5s")
    refused(tls_cluster, "CERTIFICATE_VERIFY_FAILED")


def test_client_from_other_ca_refused(tls_cluster, rogue_certs):
    """A complete certificate set of another CA: neither side accepts the other."""
    from distributed import Client
    from distributed.security import Security

    sec = Security(
        tls_ca_file=str(rogue_certs / "ca.pem"),
        tls_client_cert=str(rogue_certs / "client.pem"),
        tls_client_key=str(rogue_certs / "client-key.pem"),
        require_encryption=True,
    )
    with pytest.raises((OSError, TimeoutError)):
        Client(tls_cluster.address, security=sec, timeout="5s")
    refused(tls_cluster, "UNKNOWN_CA")  # the client rejected the scheduler's certificate


def test_tls_client_without_certificate_refused(tls_cluster, certs):
    """Raw TLS that trusts the CA but shows no certificate: the scheduler demands one."""
    host, port = tls_cluster.hostport.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    ctx.check_hostname = False
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with ctx.wrap_socket(raw) as tls:
                # TLS 1.3: the server's verdict on the (missing) client certificate arrives
                # after the client's side of the handshake, with the first read.
                tls.sendall(b"\0" * 8)
                if tls.recv(1) == b"":
                    raise ConnectionError("closed by the scheduler")
    refused(tls_cluster, "PEER_DID_NOT_RETURN_A_CERTIFICATE")


def test_tls_environment_is_dask_configuration():
    """Every DASK_* variable in the TLS override names a real distributed config key."""
    import dask
    import distributed  # noqa: F401  (registers distributed's defaults)

    for service in ("scheduler", "worker", "runner"):
        env = compose_service(service, ("base", "tls"), volumes={"results": "/tmp"}).environment
        keys = [k for k in env if k.startswith("DASK_") and k != "DASK_SCHEDULER_ADDRESS"]
        assert keys, service
        for key in keys:
            path = key[len("DASK_") :].lower().replace("__", ".").replace("_", "-")
            assert dask.config.get(path, default="MISSING") != "MISSING", key
