"""Expected failures of the ``sroa-dist`` CLI and the one line (and hint) that answers each."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InputError

__all__ = ["ERRORS", "FALLBACK_HINT", "CLIError", "explain"]

#: The hint of a failure no entry of :data:`ERRORS` has a better one for.
FALLBACK_HINT = (
    "run the command again with SROA_DEBUG=1 to see the traceback; if the input looks right, "
    "please report it"
)


class CLIError(InputError):
    """A user-facing error of the command line: ``message`` (what and why) and ``hint``."""


def _hinted(exc: BaseException) -> tuple[str, str | None]:
    return str(exc), getattr(exc, "hint", None) or FALLBACK_HINT


def _missing(exc: BaseException) -> tuple[str, str | None]:
    where = getattr(exc, "filename", None)
    text = getattr(exc, "strerror", None) or str(exc)
    return (
        f"{text}: {where}" if where else text,
        "check the path (a store is made by `sroa-dist run SPEC --store PATH`; specs are TOML "
        "files such as sweeps/figure2.toml)",
    )


def _remote(exc: BaseException) -> tuple[str, str | None]:
    return (
        str(exc),
        "check the object store's endpoint (AWS_ENDPOINT_URL), the bucket and your credentials",
    )


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
    return (
        f"{exc.strerror or exc}" + (f": {where}" if where else ""),
        "check the path, that its disk is mounted and has space, and its permissions",
    )


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
    return text, FALLBACK_HINT


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
    from ..sweep.run import ClusterConnectError, DiskFullError
    from ..sweep.spec import SpecError
    from ..sweep.store import (
        LeaseLostError,
        StaleLayoutError,
        StoreIncompatibleError,
        StoreLockedError,
    )

    table: list[tuple[tuple[type[BaseException], ...], Callable]] = [
        ((InputError, ClusterConnectError, StoreLockedError, DiskFullError), _hinted),
        ((SpecError, StoreIncompatibleError, LeaseLostError, StaleLayoutError), _hinted),
        ((FileNotFoundError,), _missing),
        ((PermissionError,), _permission),
    ]
    try:
        from botocore.exceptions import BotoCoreError, NoCredentialsError

        table.append(((NoCredentialsError,), _credentials))
        table.append(((BotoCoreError,), _remote))
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
