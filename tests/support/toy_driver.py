"""A toy SDP driver, the whole of it in one module: it implements
:class:`sroa_dist.relaxation.driver.SdpDriver` and nothing else of the package changes for it
(tests/core/test_relaxation_driver.py names it by import path and registers it).

It yields one dual guess, the zero dual, and no primal moments: the relaxation never trusts a
driver, so its bound is still valid (looser than a real solver's), and the maximiser
candidates come from the tensor alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from sroa_dist.errors import InputError
from sroa_dist.relaxation.driver import Rule, Schedule, SdpIterate, SdpProblem


class ZeroDual:
    """The zero dual as an SDP driver (one iterate, no settings but ``label``)."""

    name = "zero-dual"
    setting_rules: Mapping[str, Rule | None] = {"label": None}

    def configure(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        unknown = set(settings) - set(self.setting_rules)
        if unknown:
            raise InputError(
                f"unknown option(s) {sorted(unknown)}; valid zero-dual settings: ['label']",
                "pass only the listed settings",
            )
        return dict(settings)

    def runs(
        self, problem: SdpProblem, c: np.ndarray, config: Any, schedule: Schedule
    ) -> Iterator[SdpIterate]:
        yield SdpIterate(
            z_zero=np.zeros(problem.n_zero),
            Z=np.zeros((problem.m, problem.m)),
            iterations=1,
            status=str(config.get("label", "zero")),
        )


#: The driver, as a spec or a ``relaxation`` table names it:
#: ``driver = "tests.support.toy_driver:ZERO_DUAL"``.
ZERO_DUAL = ZeroDual()
