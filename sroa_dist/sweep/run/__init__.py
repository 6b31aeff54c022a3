"""Running a sweep on Dask: the cluster (:mod:`.cluster`), the run itself (:mod:`.execute`),
the block kernel's entry (:mod:`.worker`), per-worker set-up (:mod:`.plugin`), task deadlines
(:mod:`.watchdog`) and GPU routing (:mod:`.routing`)."""
