"""The result store: one zarr group per sweep, its writer lease and its certificate files.

:class:`ResultStore` (:mod:`.result_store`) is the door; behind it: where a store may live
(:mod:`.target`), its template (:mod:`.template`), preparing, resuming and extending it
(:mod:`.prepare`), block writes (:mod:`.block_write`), the lease (:mod:`.lease`), integrity
digests (:mod:`.integrity`), certificate files (:mod:`.certificate_files`), the evaluation
journal of unfinished searches (:mod:`.journal`), verified reads (:mod:`.read`), ``verify``
(:mod:`.verify`) and metadata repair (:mod:`.repair`). The only part of the package that
imports zarr.
"""

from .block_write import StaleLayoutError
from .integrity import scan_store
from .journal import EvaluationJournal, JournalCount, describe_journal, journal_counts
from .lease import DEFAULT_LEASE_TIMEOUT, LeaseLostError, StoreLease, StoreLockedError
from .migrate import migrate_store
from .prepare import (
    TAKEOVER_SETTLE_S,
    clear_failed,
    mark_failed,
    prepare_store,
    read_done,
    store_layout,
    store_status,
)
from .read import open_results
from .repair import repair_metadata
from .result_store import ResultStore, StoredInstance, instance_of
from .target import StoreIncompatibleError, check_store_target, require_store
from .verify import verify_store

__all__ = [
    "ResultStore",
    "StoredInstance",
    "instance_of",
    "DEFAULT_LEASE_TIMEOUT",
    "EvaluationJournal",
    "JournalCount",
    "LeaseLostError",
    "StaleLayoutError",
    "StoreIncompatibleError",
    "StoreLease",
    "StoreLockedError",
    "TAKEOVER_SETTLE_S",
    "check_store_target",
    "clear_failed",
    "describe_journal",
    "journal_counts",
    "mark_failed",
    "migrate_store",
    "open_results",
    "prepare_store",
    "read_done",
    "repair_metadata",
    "require_store",
    "scan_store",
    "store_layout",
    "store_status",
    "verify_store",
]
