"""Studies built on SROA: first-crossing threshold searches (:mod:`.threshold`,
:mod:`.first_crossing`), success criteria (:mod:`.criteria`) and worst-case perturbation
searches (:mod:`.worst_case`, :mod:`.worst_case_search`, the norm they rescale by
:mod:`.search_norm`, worst cases stored by an exact-norm form :mod:`.worst_case_form` and
evaluated as such by :mod:`.worst_case_family`, and saved claims re-checked by :mod:`.recheck`).
The public names are exported by :mod:`sroa_dist`."""
