"""Writer lease of a result store: at most one run writes into a store at a time.

The lease is a small zarr group ``sroa_lease`` in the store's root (so zarr and xarray see a
valid, ignorable member rather than a stray file); its ``zarr.json`` attributes name the holder
(owner, host, pid, a unique token), when it was acquired, its last heartbeat and the store's
layout token. Every change is a compare-and-swap:

* **local disks**: acquisition is an exclusive create (``os.link`` of a fully written temporary
  file, which fails if the lease exists); renewal, takeover and release compare the current
  bytes and replace them under a short-lived mutex file made with ``O_EXCL``;
* **S3** (s3fs): acquisition is a conditional put ``If-None-Match: *``; renewal, takeover and
  release are conditional on the ETag of the lease that was read (``If-Match``);
* other fsspec filesystems: the same calls where the filesystem supports them, otherwise a
  check-then-write that is not atomic (documented in docs/sweeps.md).

A lease is *stale* when its heartbeat is older than the timeout, or at once when its holder ran
on this host and that process no longer exists (so a run killed with ``kill -9`` can be resumed
right away). A stale lease is taken over by the same compare-and-swap, so of two runs taking
over only one wins.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import getpass
import hashlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from sroa_dist.errors import InputError

__all__ = [
    "DEFAULT_LEASE_TIMEOUT",
    "LEASE_GROUP",
    "LeaseInfo",
    "LeaseLostError",
    "StoreLease",
    "StoreLockedError",
    "read_lease",
]

#: Name of the lease's zarr group in the store root.
LEASE_GROUP = "sroa_lease"
#: Seconds without a heartbeat after which a lease may be taken over (``--lease-timeout``).
DEFAULT_LEASE_TIMEOUT = 60.0
#: Heartbeats per timeout: a holder renews every ``timeout / HEARTBEATS_PER_TIMEOUT`` seconds,
#: so a lease is taken over only after several renewals in a row were missed.
HEARTBEATS_PER_TIMEOUT = 6
_MUTEX_STALE = 10.0  # a local CAS mutex is held for microseconds; older means its holder died


@dataclass(frozen=True)
class LeaseInfo:
    """Who holds a store's writer lease."""

    owner: str
    host: str
    pid: int
    token: str
    acquired: float  # POSIX time
    heartbeat: float  # POSIX time of the last renewal
    layout_token: str = ""
    command: str = ""

    def describe(self, now: float | None = None) -> str:
        """``user@host (pid N) since <UTC time>, last heartbeat S s ago``."""
        now = time.time() if now is None else now
        since = _dt.datetime.fromtimestamp(self.acquired, _dt.UTC).isoformat(timespec="seconds")
        return (
            f"{self.owner}@{self.host} (pid {self.pid}) since {since}, last heartbeat "
            f"{max(0.0, now - self.heartbeat):.0f} s ago"
        )

    def is_stale(self, timeout: float, now: float | None = None) -> bool:
        """Heartbeat older than ``timeout``, or the holder was on this host and is gone."""
        now = time.time() if now is None else now
        if now - self.heartbeat > timeout:
            return True
        return self.host == socket.gethostname() and not _pid_alive(self.pid)


class StoreLockedError(RuntimeError):
    """Another run holds the store's writer lease."""

    def __init__(self, url: str, holder: LeaseInfo, timeout: float):
        self.url, self.holder, self.timeout = url, holder, timeout
        cmd = f" running `{holder.command}`" if holder.command else ""
        super().__init__(
            f"store {url}: expected no other writer; received a writer lease held by "
            f"{holder.describe()}{cmd}"
        )
        self.hint = (
            "wait for that run to finish (or stop it), then run the command again; a lease "
            f"whose holder stopped renewing it for {timeout:g} s is taken over automatically "
            "(--lease-timeout)"
        )


class LeaseLostError(RuntimeError):
    """This run's lease was taken over (its heartbeat stalled past the timeout) or removed."""

    hint = (
        "this run stalled longer than --lease-timeout and another run took the store over; "
        "let that run finish (or rerun the same command), and raise --lease-timeout on a busy "
        "machine"
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    except OSError:
        return True
    return True


def _encode(info: LeaseInfo) -> bytes:
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {"sroa_lease": asdict(info)}}
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def _decode(data: bytes) -> LeaseInfo | None:
    try:
        fields = json.loads(data)["attributes"]["sroa_lease"]
        known = {f.name for f in dataclasses.fields(LeaseInfo)}
        return LeaseInfo(**{k: v for k, v in fields.items() if k in known})  # newer writers
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # half-written or foreign: treated as absent by readers, stale by writers


# --------------------------------------------------------------------------------------------
# Backends: exclusive create and compare-and-swap on one small object


class _LocalBackend:
    """Lease on a local filesystem (POSIX link/rename semantics)."""

    def __init__(self, root: str):
        self.root = root
        self.created_root = False
        self.dir = os.path.join(root, LEASE_GROUP)
        self.path = os.path.join(self.dir, "zarr.json")
        self.mutex = os.path.join(self.dir, "mutex")

    @staticmethod
    def version_of(data: bytes) -> Any:
        return data

    def read(self) -> tuple[bytes | None, Any]:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None, None
        return data, data

    def create(self, data: bytes) -> bool:
        if not os.path.exists(self.root):
            with contextlib.suppress(FileExistsError):
                os.makedirs(self.root)
                self.created_root = True
        os.makedirs(self.dir, exist_ok=True)
        tmp = f"{self.path}.{uuid.uuid4().hex}.tmp"
        try:
            _write_file(tmp, data)
            os.link(tmp, self.path)  # atomic, fails if the lease exists
        except FileExistsError:
            return False
        finally:
            # Never leave a temporary file behind (a full disk fails the write half-way):
            # zarr would list it under the store and every later `status` would warn.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return True

    @contextlib.contextmanager
    def _locked(self):
        deadline = time.monotonic() + 2 * _MUTEX_STALE
        while True:
            try:
                fd = os.open(self.mutex, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                break
            except FileExistsError:
                with contextlib.suppress(FileNotFoundError):
                    if time.time() - os.stat(self.mutex).st_mtime > _MUTEX_STALE:
                        os.unlink(self.mutex)
                        continue
                if time.monotonic() > deadline:
                    raise TimeoutError(f"lease mutex {self.mutex} stays held") from None
                time.sleep(0.01)
        os.close(fd)
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.mutex)

    def replace(self, data: bytes, expected: Any) -> bool:
        with self._locked():
            current, _ = self.read()
            if current != expected:
                return False
            tmp = f"{self.path}.{uuid.uuid4().hex}.tmp"
            try:
                _write_file(tmp, data)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
        return True

    def delete(self, expected: Any) -> bool:
        with self._locked():
            current, _ = self.read()
            if current != expected:
                return False
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self.dir)  # only when empty
            if self.created_root:  # nothing was written after the lease: leave no empty folder
                os.rmdir(self.root)
        return True


class _FsspecBackend:
    """Lease on an fsspec filesystem; conditional requests on S3."""

    def __init__(self, fs: Any, root: str):
        self.fs = fs
        self.path = f"{root.rstrip('/')}/{LEASE_GROUP}/zarr.json"
        self.s3 = "s3" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))

    @staticmethod
    def version_of(data: bytes) -> Any:
        # A single-part PUT's ETag is the MD5 of its bytes: the version to compare against.
        return f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'

    def read(self) -> tuple[bytes | None, Any]:
        self.fs.invalidate_cache()
        try:
            data = self.fs.cat_file(self.path)
        except FileNotFoundError:
            return None, None
        return data, self.version_of(data)

    def create(self, data: bytes) -> bool:
        try:
            if self.s3:
                self.fs.pipe_file(self.path, data, mode="create")  # If-None-Match: *
            else:
                if self.fs.exists(self.path):  # not atomic: no conditional write available
                    return False
                self.fs.pipe_file(self.path, data)
        except FileExistsError:
            return False
        return True

    def replace(self, data: bytes, expected: Any) -> bool:
        if not self.s3:
            if self.read()[1] != expected:
                return False
            self.fs.pipe_file(self.path, data)
            return True
        try:
            self.fs.pipe_file(self.path, data, IfMatch=expected)
        except (FileNotFoundError, FileExistsError):
            return False
        except OSError as exc:
            if "pre-condition" in str(exc) or "Precondition" in str(exc):
                return False
            raise
        return True

    def delete(self, expected: Any) -> bool:
        if not self.s3:
            if self.read()[1] != expected:
                return False
            self.fs.rm_file(self.path)
            return True
        bucket, key, _ = self.fs.split_path(self.path)
        try:
            self.fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=expected)
        except FileNotFoundError:
            return False
        except OSError as exc:
            if "pre-condition" in str(exc) or "Precondition" in str(exc):
                return False
            raise
        self.fs.invalidate_cache()
        return True


def _backend(url: str, storage_options: Mapping[str, Any] | None):
    if "://" not in url or url.startswith("file://"):
        return _LocalBackend(os.path.abspath(url.removeprefix("file://")))
    import fsspec.core

    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    return _FsspecBackend(fs, path)


def read_lease(url: str, storage_options: Mapping[str, Any] | None = None) -> LeaseInfo | None:
    """The lease of a store, or ``None`` when nobody holds it."""
    data, _ = _backend(str(url), storage_options).read()
    return None if data is None else _decode(data)


# --------------------------------------------------------------------------------------------


class StoreLease:
    """The writer lease of one store, held by this process.

    Use as a context manager (acquire on enter, release on exit, exceptions and signals
    included); :meth:`start_heartbeat` renews it in a background thread until release.

    Parameters
    ----------
    url
        The store (local path or fsspec URL); it need not exist yet.
    storage_options
        fsspec options for remote stores.
    timeout
        Seconds without a heartbeat after which the lease counts as abandoned.
    command
        What the holder runs, shown to refused runs.
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        timeout: float = DEFAULT_LEASE_TIMEOUT,
        command: str = "",
    ):
        if not timeout > 0:
            raise InputError(
                f"lease timeout: expected seconds > 0; received {timeout!r}",
                "e.g. --lease-timeout 60",
            )
        self.url, self.timeout = str(url), float(timeout)
        self._backend = _backend(self.url, storage_options)
        now = time.time()
        try:
            owner = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry (containers)
            owner = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
        self.info = LeaseInfo(
            owner, socket.gethostname(), os.getpid(), uuid.uuid4().hex, now, now, "", command
        )
        self._version: Any = None
        self._held = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Why the lease was lost (set by the heartbeat), else None.
        self.lost: str | None = None
        #: The stale lease this one replaced, if any.
        self.took_over: LeaseInfo | None = None
        #: The last transient error of the heartbeat (it retries at the next beat).
        self.last_error: Exception | None = None

    @property
    def held(self) -> bool:
        """Acquired and not (known to be) lost or released."""
        return self._held and self.lost is None

    def check_free(self) -> None:
        """Raise :class:`StoreLockedError` if a live run holds the lease; reads only.

        A run calls this before it starts a cluster, so that a refused run costs nothing;
        :meth:`acquire` (after the cluster is up) is still the compare-and-swap that decides.
        """
        current, _ = self._backend.read()
        holder = None if current is None else _decode(current)
        if holder is not None and not holder.is_stale(self.timeout):
            raise StoreLockedError(self.url, holder, self.timeout)

    def acquire(self) -> StoreLease:
        """Take the lease, or raise :class:`StoreLockedError` naming its holder."""
        holder: LeaseInfo | None = None
        for _ in range(20):  # retries only when the lease changed under our feet
            data = _encode(self.info)
            if self._backend.create(data):
                self._version = self._backend.version_of(data)
                self._held = True
                return self
            current, version = self._backend.read()
            if current is None:
                continue  # released in between
            holder = _decode(current)
            if holder is not None and not holder.is_stale(self.timeout):
                raise StoreLockedError(self.url, holder, self.timeout)
            if self._backend.replace(data, version):  # take over the stale lease
                self._version = self._backend.version_of(data)
                self._held = True
                self.took_over = holder
                return self
        raise StoreLockedError(self.url, holder or self.info, self.timeout)  # pragma: no cover

    def renew(self, **changes: Any) -> None:
        """Write a new heartbeat (and ``changes``, e.g. ``layout_token``) by compare-and-swap.

        Raises :class:`LeaseLostError` when the lease is no longer ours.
        """
        with self._lock:
            if not self._held:
                raise LeaseLostError(f"store {self.url}: the writer lease is not held")
            new = replace(self.info, heartbeat=time.time(), **changes)
            data = _encode(new)
            if not self._backend.replace(data, self._version):
                current, _ = self._backend.read()
                holder = None if current is None else _decode(current)
                who = holder.describe() if holder else "nobody (removed)"
                self.lost = f"store {self.url}: the writer lease was taken over by {who}"
                raise LeaseLostError(self.lost)
            self.info, self._version = new, self._backend.version_of(data)

    def start_heartbeat(self, interval: float | None = None) -> None:
        """Renew the lease every ``interval`` seconds (default timeout / 6) until release."""
        interval = self.timeout / HEARTBEATS_PER_TIMEOUT if interval is None else interval

        def beat() -> None:
            while not self._stop.wait(interval):
                try:
                    self.renew()
                except LeaseLostError:
                    return
                except Exception as exc:  # a transient I/O error: try again next beat
                    self.last_error = exc

        self._thread = threading.Thread(target=beat, name="sroa-lease-heartbeat", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if the heartbeat found the lease taken over."""
        if self.lost is not None:
            raise LeaseLostError(self.lost)

    def release(self) -> None:
        """Stop the heartbeat and delete the lease if it is still ours."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        with self._lock:
            if self._held and self.lost is None:
                with contextlib.suppress(OSError, TimeoutError):
                    self._backend.delete(self._version)
            self._held = False

    def __enter__(self) -> StoreLease:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _write_file(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
