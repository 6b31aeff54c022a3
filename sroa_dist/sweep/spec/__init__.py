"""What every sweep spec shares: typed fields and axes (:mod:`.fields`), the spec base class
and the ``[solver]`` / ``[output]`` sections (:mod:`.base`), and reading a TOML file with its
``--set`` overrides (:mod:`.load`). A kind's own grammar is in its module
(:mod:`sroa_dist.sweep.kinds`), which chooses the kind and validates (``load_spec``)."""
