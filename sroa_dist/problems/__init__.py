"""What is decomposed: planted nearly SOD instances (:mod:`.instances`), random noise models
(:mod:`.noise`), perturbation families (:mod:`.perturbations`) and matrix-free structured tensors
(:mod:`.structured`). The public names are exported by :mod:`sroa_dist`."""
