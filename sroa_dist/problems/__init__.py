"""What is decomposed: planted nearly SOD instances (:mod:`.instances`), random noise models
(:mod:`.noise`), perturbation families (:mod:`.perturbations`; with exact norms at any n:
:mod:`.tilt_shrink`, :mod:`.subspace`) and matrix-free structured tensors (:mod:`.structured`).
The public names are exported by :mod:`sroa_dist`."""
