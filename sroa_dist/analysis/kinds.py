"""What analysis does for each sweep kind: its report section and its figures, found through
the kind registry from the kind the cube records (``sroa_kind``), never from its variables.

A kind names its hooks in its ``analysis`` member (:class:`~sroa_dist.sweep.kinds.SweepKind`):
a :class:`KindAnalysis`, or the import path ``"package.module:NAME"`` of one. The built-in kinds
use a path because they live below analysis (layers import downwards); a kind defined outside
the package may hold its :class:`KindAnalysis` directly. A kind that names none, and a cube that
names no kind, are analysed as SROA's per-step results (:data:`DEFAULT`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._registry import import_entry
from ..errors import InputError
from ..sweep import ATTR_KIND
from ..sweep.kinds import kind_of

__all__ = ["DEFAULT", "KindAnalysis", "analysis_of"]


@dataclass(frozen=True)
class KindAnalysis:
    """A sweep kind's analysis hooks.

    Attributes
    ----------
    instances
        Whether :func:`~sroa_dist.analysis.write_report` gives the cube the section of SROA's
        per-step results ("Instances": certified steps, success, bound violations, error
        growth, thresholds in ε).
    report_section
        ``report_section(doc, ds, fig_dir, *, n_boot, rng) -> list[Path]``: writes the kind's
        own section of the report into ``doc`` (after the instances section, where there is
        one) and returns the figure files it drew into ``fig_dir``; ``None``: no section.
        ``doc`` has ``heading(text, level=2)``, ``para(text)``, ``bullets(items)`` and
        ``table(header, rows)``.
    figures
        ``figures(ds) -> list[str]``: the names (from :data:`~sroa_dist.analysis.FIGURES`) of
        the figures the kind's cube has the data for; ``None``: those of SROA's per-step
        results that the cube has the variables for.
    drawings
        The kind's own figures, name -> ``draw(ds, *, status) -> matplotlib Figure``: drawn by
        :func:`~sroa_dist.analysis.plot_cube` (``sroa-dist plot``) after those of ``figures``,
        so a kind brings a figure of its own without a name in
        :data:`~sroa_dist.analysis.FIGURES` (a name there is refused: it would be ambiguous).
    """

    instances: bool = True
    report_section: Callable[..., list[Path]] | None = None
    figures: Callable[[Any], Sequence[str]] | None = None
    drawings: Mapping[str, Callable[..., Any]] = field(default_factory=dict)


#: The analysis of a kind that names no hooks: SROA's per-step results.
DEFAULT = KindAnalysis()


def analysis_of(ds: Any) -> KindAnalysis:
    """The analysis hooks of the cube's kind (:func:`~sroa_dist.sweep.kinds.kind_of` ``ds``).

    A cube that names no kind (built by hand, or its attrs dropped) is analysed as SROA's
    per-step results (:data:`DEFAULT`): its variables are not searched for a kind. Raises
    ``ValueError`` for a kind that is not registered, or whose ``analysis`` is not a
    :class:`KindAnalysis` (or the import path of one).
    """
    if ATTR_KIND not in getattr(ds, "attrs", {}):
        return DEFAULT
    kind = kind_of(ds)
    hooks = getattr(kind, "analysis", None)
    if hooks is None:
        return DEFAULT
    if isinstance(hooks, str):
        hooks = import_entry(
            hooks,
            f"sweep kind {kind.name!r}: analysis",
            "analysis hooks",
            "a KindAnalysis",
            accept=(KindAnalysis,),
        )
    if not isinstance(hooks, KindAnalysis):
        raise InputError(
            f"sweep kind {kind.name!r}: analysis: expected a KindAnalysis or the import path "
            f"of one; received {type(hooks).__name__}",
            "build the kind's hooks with sroa_dist.analysis.KindAnalysis(...)",
        )
    return hooks
