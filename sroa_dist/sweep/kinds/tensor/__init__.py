"""The tensor kind (the default): a planted nearly SOD tensor plus a perturbation. Its grammar
and seeds (:mod:`.spec`), cost, layout and kind object (:mod:`.kind`), block kernel
(:mod:`.block`)."""

from .kind import TENSOR

__all__ = [
    "TENSOR",
]
