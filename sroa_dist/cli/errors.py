"""Expected failures of the ``sroa-dist`` CLI and the one line (and hint) that answers each."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ERRORS", "CLIError", "explain"]


class CLIError(Exception):
    """A user-facing error: ``message`` (what and why) and ``hint``."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def _hinted(exc: BaseException) -> tuple[str, str | None]:
    return str(exc), getattr(exc, "hint", None)


def _plain(exc: BaseException) -> tuple[str, str | None]:
    return str(exc), None


def _permission(exc: BaseException) -> tuple[str, str | None]:
    where = getattr(exc, "filename", None) or ""
    return (
        f"permission denied: {where or exc}",
        "the store (and its folder) must be writable by you: choose another --store or fix "
        "the permissions",
    )


def _os_error(exc: BaseException) -> tuple[str, str | None]:
    import errno

    if getattr(exc, "errno", None) == errno.EROFS:
        return (
            f"read-only file system: {getattr(exc, 'filename', '') or exc}",
            "write the store to a writable disk (--store PATH)",
        )
    if isinstance(exc, (ConnectionError, TimeoutError)) or "comm" in type(exc).__module__:
        return (
            f"{type(exc).__name__}: {exc}",
            "check the scheduler address, that the scheduler runs, and the TLS settings "
            "(DASK_DISTRIBUTED__COMM__TLS__*)",
        )
    where = getattr(exc, "filename", None)
    return f"{exc.strerror or exc}" + (f": {where}" if where else ""), None


def _value(exc: BaseException) -> tuple[str, str | None]:
    text = str(exc)
    if text.startswith("Protocol not known"):
        proto = text.rsplit(":", 1)[-1].strip()
        import fsspec

        return (
            f"store URL: unknown protocol {proto!r}",
            "give a local path or an fsspec URL such as s3://bucket/name.zarr (known: "
            + ", ".join(sorted(p for p in fsspec.available_protocols() if len(p) <= 5)[:12])
            + ", ...)",
        )
    return text, None


def _import(exc: BaseException) -> tuple[str, str | None]:
    return f"missing package: {exc}", "install it into this environment (pip install NAME)"


def _credentials(exc: BaseException) -> tuple[str, str | None]:
    return (
        f"object store: no credentials ({exc})",
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and "
        "AWS_ENDPOINT_URL for a non-AWS server",
    )


def _error_types() -> list[tuple[tuple[type[BaseException], ...], Callable]]:
    """Expected failures, most specific first: (exception types, explain)."""
    from ..sweep.execute import ClusterConnectError, DiskFullError
    from ..sweep.integrity import DamagedStoreError
    from ..sweep.lease import LeaseLostError, StoreLockedError
    from ..sweep.spec import SpecError
    from ..sweep.storage import StaleLayoutError, StoreIncompatibleError

    table: list[tuple[tuple[type[BaseException], ...], Callable]] = [
        ((CLIError, ClusterConnectError, StoreLockedError, DiskFullError), _hinted),
        ((DamagedStoreError,), _hinted),
        ((SpecError, StoreIncompatibleError, LeaseLostError, StaleLayoutError), _hinted),
        ((FileNotFoundError,), _plain),
        ((PermissionError,), _permission),
    ]
    try:
        from botocore.exceptions import BotoCoreError, NoCredentialsError

        table.append(((NoCredentialsError,), _credentials))
        table.append(((BotoCoreError,), _plain))
    except ImportError:  # no S3 support installed
        pass
    table += [((OSError,), _os_error), ((ValueError,), _value), ((ImportError,), _import)]
    return table


#: How ``main`` answers each expected failure (built on first use; see :func:`_error_types`).
ERRORS: list[tuple[tuple[type[BaseException], ...], Callable]] = []


def explain(exc: BaseException) -> tuple[str, str | None] | None:
    if not ERRORS:
        ERRORS.extend(_error_types())
    for types, explain in ERRORS:
        if isinstance(exc, types):
            return explain(exc)
    return None
