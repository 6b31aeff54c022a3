"""Studies built on SROA: first-crossing threshold searches (:mod:`.threshold`,
:mod:`.first_crossing`), success criteria (:mod:`.criteria`) and worst-case perturbation
searches (:mod:`.worst_case`, :mod:`.worst_case_search`, the norm they rescale by
:mod:`.search_norm`, and saved claims re-checked by :mod:`.recheck`). The public names are
exported by :mod:`sroa_dist`."""
