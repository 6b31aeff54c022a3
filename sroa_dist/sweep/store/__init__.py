"""The result store: one zarr group per sweep, its writer lease and its certificate files.

:class:`ResultStore` (:mod:`.result_store`) is the door; behind it: where a store may live
(:mod:`.target`), its template (:mod:`.template`), preparing, resuming and extending it
(:mod:`.prepare`), block writes (:mod:`.block_write`), the lease (:mod:`.lease`), integrity
digests (:mod:`.integrity`), certificate files (:mod:`.certificate_files`), verified reads
(:mod:`.read`), ``verify`` (:mod:`.verify`) and metadata repair (:mod:`.repair`). The only
part of the package that imports zarr.
"""

from .result_store import ResultStore, StoredInstance, instance_of

__all__ = ["ResultStore", "StoredInstance", "instance_of"]
