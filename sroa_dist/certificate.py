"""Auditable SOS certificates of ``max_{||x||=1} sign * T x^p``: plain arrays, checked in numpy.

A certificate is the polynomial identity (one per sign it covers)::

    U - sign * T x^p  =  m(x)^T Q m(x)  +  h(x) (||x||^2 - 1)  +  R(x),

with ``m`` a list of distinct monomials (exponent rows), ``Q`` symmetric, ``h`` a polynomial
(exponent rows and coefficients) and ``U`` the claimed bound; ``R`` is whatever the arrays leave
over. On the unit sphere every monomial satisfies ``|x^a| <= 1`` and ``||m(x)||^2`` is at most
the number of distinct degrees among the rows of ``m`` (the degree-``k`` rows satisfy
``sum x^{2a} <= (sum_i x_i^2)^k = 1``), so for every unit ``x``::

    sign * T x^p  <=  U + ||R||_1 + max(0, -lambda_min(Q)) * (number of degrees of m).

:meth:`Certificate.verify` recomputes ``R`` from ``T`` by exact-term polynomial arithmetic on
sorted index tuples (every term's coefficient is an input number, so only the summation rounds,
and that error is bounded explicitly), bounds ``lambda_min(Q)`` from below by a floating-point
Cholesky factorisation with a proven backward-error shift, and returns the resulting rigorous
upper bound. It uses numpy only and shares with the relaxation that produced the arrays
nothing but :func:`sroa_dist.monomials.exponent_tuples` (exponent row -> sorted index tuple,
tested on its own): a referee can re-implement it from this docstring.

For even ``p`` the quantity of interest is ``max |T x^p|``; a certificate then holds two pieces
(``sign = +1`` and ``-1``) and :meth:`Certificate.verify` returns the larger bound.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InputError
from .monomials import exponent_tuples
from .threads import single_blas

__all__ = ["Certificate"]

_U = float(np.finfo(float).eps) / 2  # unit roundoff


def _gamma(k: np.ndarray | float) -> np.ndarray | float:
    """``gamma_k = k u / (1 - k u)``: relative error bound of a k-term floating-point sum."""
    return k * _U / (1.0 - k * _U)


@dataclass(frozen=True, eq=False)
class Certificate:
    """SOS certificate(s) of an upper bound of ``sign * T x^p`` on the unit sphere.

    Attributes
    ----------
    n, p : int
        Dimension and order of the tensor it certifies.
    signs : (s,) int ndarray
        ``+1`` / ``-1``, one per piece (even ``p``: both, covering ``max |T x^p|``).
    bounds : (s,) float ndarray
        Claimed bound ``U`` of each piece.
    exponents : (k, n) int ndarray
        Distinct monomials ``m`` (all of degree ``<= ceil(p/2)`` for the relaxation's exports).
    gram : (s, k, k) float ndarray
        Symmetric Gram matrices ``Q``.
    h_exponents : (l, n) int ndarray
        Monomials of the multiplier ``h``.
    h_coefs : (s, l) float ndarray
        Coefficients of ``h`` per piece.
    """

    n: int
    p: int
    signs: np.ndarray
    bounds: np.ndarray
    exponents: np.ndarray
    gram: np.ndarray
    h_exponents: np.ndarray
    h_coefs: np.ndarray

    def __post_init__(self) -> None:
        s, (k, n) = len(self.signs), np.shape(self.exponents)
        shapes = {
            "bounds": ((s,), np.shape(self.bounds)),
            "gram": ((s, k, k), np.shape(self.gram)),
            "h_coefs": ((s, len(self.h_exponents)), np.shape(self.h_coefs)),
            "h_exponents": ((len(self.h_exponents), self.n), np.shape(self.h_exponents)),
        }
        for name, (want, got) in shapes.items():
            if want != got:
                raise InputError(
                    f"Certificate.{name}: expected shape {want}, received {got}",
                    "load the certificate's arrays as saved (Certificate.load)",
                )
        if n != self.n or not set(np.asarray(self.signs).tolist()) <= {1, -1}:
            raise InputError(
                f"Certificate: expected exponents with n = {self.n} columns and signs in "
                f"{{+1, -1}}, received {n} columns and signs {list(self.signs)}",
                "a certificate's exponents have n columns and its signs are +1 or -1; load it "
                "as saved",
            )

    # ---- serialisation ------------------------------------------------------------------------

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays (the npz layout): ``n, p, signs, bounds, exponents, gram, h_*``."""
        return {
            "n": np.asarray(self.n),
            "p": np.asarray(self.p),
            "signs": np.asarray(self.signs, dtype=np.int64),
            "bounds": np.asarray(self.bounds, dtype=float),
            "exponents": np.asarray(self.exponents, dtype=np.int64),
            "gram": np.asarray(self.gram, dtype=float),
            "h_exponents": np.asarray(self.h_exponents, dtype=np.int64),
            "h_coefs": np.asarray(self.h_coefs, dtype=float),
        }

    @classmethod
    def from_arrays(cls, arrays: Any, prefix: str = "") -> Certificate:
        """Inverse of :meth:`to_arrays` (any mapping, e.g. an open npz; keys may be prefixed)."""
        a = {k: np.asarray(arrays[prefix + k]) for k in cls.__dataclass_fields__}
        return cls(
            n=int(a["n"]),
            p=int(a["p"]),
            signs=a["signs"].astype(np.int64),
            bounds=a["bounds"].astype(float),
            exponents=a["exponents"].astype(np.int64),
            gram=a["gram"].astype(float),
            h_exponents=a["h_exponents"].astype(np.int64),
            h_coefs=a["h_coefs"].astype(float),
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the arrays to an ``.npz`` file."""
        np.savez_compressed(path, **self.to_arrays())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Certificate:
        """Read a certificate written by :meth:`save`."""
        with np.load(path) as z:
            return cls.from_arrays(z)

    @classmethod
    def combine(cls, *certs: Certificate) -> Certificate:
        """One certificate with the pieces of several (same ``n``, ``p`` and monomials ``m``)."""
        c0 = certs[0]
        for c in certs[1:]:
            if (c.n, c.p) != (c0.n, c0.p) or not np.array_equal(c.exponents, c0.exponents):
                raise InputError(
                    "Certificate.combine: expected the same n, p and monomials",
                    "combine only certificates of one relaxation (same n, p and monomials)",
                )
        hx = np.unique(np.vstack([c.h_exponents for c in certs]), axis=0)
        coefs = []
        for c in certs:
            pos = {tuple(r): i for i, r in enumerate(hx.tolist())}
            where = np.array([pos[tuple(r)] for r in c.h_exponents.tolist()], dtype=np.int64)
            hc = np.zeros((len(c.signs), len(hx)))
            hc[:, where] = c.h_coefs
            coefs.append(hc)
        return cls(
            c0.n,
            c0.p,
            np.concatenate([c.signs for c in certs]),
            np.concatenate([c.bounds for c in certs]),
            c0.exponents,
            np.concatenate([c.gram for c in certs]),
            hx,
            np.vstack(coefs),
        )

    def scaled(self, exponent: int) -> Certificate:
        """The certificate of ``2^exponent · T`` given this one of ``T``.

        The identity is linear in ``(U, Q, h)``, and scaling by a power of two is exact unless
        it under- or overflows, so the front door can solve ``T / 2^k`` and hand back a
        certificate for ``T`` itself.
        """
        if exponent == 0:
            return self
        with np.errstate(over="ignore", under="ignore"):
            return dataclasses.replace(
                self,
                bounds=np.ldexp(self.bounds, exponent),
                gram=np.ldexp(self.gram, exponent),
                h_coefs=np.ldexp(self.h_coefs, exponent),
            )

    @property
    def bound(self) -> float:
        """The claimed bound: the largest ``U`` of the pieces."""
        return float(np.max(self.bounds))

    # ---- verification -------------------------------------------------------------------------

    @single_blas
    def verify(self, T: Any) -> float:
        """Rigorous upper bound of ``max_{||x||=1} sign * T x^p`` over the pieces' signs.

        With both signs (even ``p``) this bounds ``max |T x^p|``. The value is
        ``U + ||R||_1 + max(0, -lambda_min(Q)) * K`` per piece (see the module docstring), with
        the rounding of every floating-point step bounded explicitly, maximised over pieces.
        ``T`` need not be symmetric: the form ``T x^p`` is summed over all its entries.
        """
        return float(np.max(self.verify_pieces(T)))

    def verify_pieces(self, T: Any) -> np.ndarray:
        """The bound of :meth:`verify` for each piece separately, shape ``(s,)``."""
        T = np.asarray(T, dtype=float)
        n, p = self.n, self.p
        if T.shape != (n,) * p or not np.all(np.isfinite(T)):
            raise InputError(
                f"T: expected a finite tensor of shape {(n,) * p} for this certificate, "
                f"received shape {T.shape}",
                "verify a certificate against the tensor it was made for (same n and p)",
            )
        # Squares of entries beyond ~2^500 overflow (and below ~2^-500 underflow) in the norms
        # the check takes, so tensor and certificate are first brought to unit scale by a power
        # of two. Scaling up is exact; scaling down may round entries that become subnormal, by
        # at most 2^-1075 each, which `pad` covers: every such change moves the residual, the
        # Gram term (||m||^2 <= K) or the claimed bound by at most that per coefficient.
        parts = (T, self.gram, self.h_coefs, self.bounds)
        big = max(float(np.max(np.abs(a), initial=0.0)) for a in parts)
        k = int(np.frexp(big)[1]) if big > 2.0**400 or 0.0 < big < 2.0**-400 else 0
        if k == 0:
            return self._pieces(T)
        scaled = self.scaled(-k)
        K = len(np.unique(np.asarray(self.exponents).sum(axis=1)))
        pad = (T.size + self.gram[0].size * (1 + K) + self.h_coefs.shape[1] * (n + 2) + 2) * (
            2.0**-1074 if k > 0 else 0.0
        )
        with np.errstate(over="ignore"):
            return np.ldexp(scaled._pieces(np.ldexp(T, -k)) + pad, k)

    def _pieces(self, T: np.ndarray) -> np.ndarray:
        """:meth:`verify_pieces` on a tensor and certificate of moderate scale."""
        n, p = self.n, self.p
        E = np.asarray(self.exponents, dtype=np.int64)
        if len(np.unique(E, axis=0)) != len(E) or np.any(E < 0):
            raise InputError(
                "Certificate.exponents: expected distinct nonnegative rows",
                "a certificate's exponents are distinct nonnegative rows; load it as saved",
            )
        Hx = np.asarray(self.h_exponents, dtype=np.int64)
        deg_m = E.sum(axis=1)
        width = max(p, 2 * int(deg_m.max(initial=0)), int(Hx.sum(axis=1).max(initial=-2)) + 2)
        # Monomials of every term of R (sorted index tuples; pad n sorts last).
        k = len(E)
        tm = exponent_tuples(E, width, n)
        tq = np.sort(np.concatenate([np.repeat(tm, k, 0), np.tile(tm, (k, 1))], 1), 1)[:, :width]
        tf = np.sort(np.indices((n,) * p).reshape(p, -1).T, axis=1).astype(np.int32)
        tf = np.concatenate([tf, np.full((len(tf), width - p), n, np.int32)], axis=1)
        th = exponent_tuples(Hx, width, n)
        sq = np.repeat(np.arange(n, dtype=np.int32), 2).reshape(n, 2)  # x_i^2
        thx = np.concatenate([np.repeat(th, n, 0), np.tile(sq, (len(th), 1))], axis=1)
        thx = np.sort(thx, axis=1)[:, :width]
        const = np.full((1, width), n, np.int32)
        keys, inv = np.unique(np.concatenate([const, tf, tq, thx, th]), axis=0, return_inverse=True)
        inv = inv.ravel()
        n_terms = np.bincount(inv, minlength=len(keys))
        Qsym = [0.5 * (Q + Q.T) for Q in np.asarray(self.gram, dtype=float)]
        out = []
        for s, U, Q, Qs, hc in zip(
            self.signs, self.bounds, self.gram, Qsym, self.h_coefs, strict=True
        ):
            # R = U - s T x^p - m^T Q m - h (sum_i x_i^2) + h: every term's coefficient exact.
            coef = np.concatenate(
                [[U], -s * T.ravel(), -np.asarray(Q).ravel(), -np.repeat(hc, n), hc]
            )
            R = np.bincount(inv, weights=coef, minlength=len(keys))
            S = np.bincount(inv, weights=np.abs(coef), minlength=len(keys))
            res = np.abs(R) + _gamma(n_terms) * S  # |exact R_a| <= this, per monomial
            res_l1 = float(res.sum()) * (1 + _gamma(len(res) + 1))
            mu = _psd_shift(Qs, 2 * _U * float(np.linalg.norm(Qs)))  # Qs rounds (Q + Q^T) / 2 once
            K = len(np.unique(deg_m))
            total = float(U) + res_l1 + mu * K
            out.append(total + 4 * _U * (abs(float(U)) + res_l1 + mu * K) + 1e-300)
        return np.array(out)


def _psd_shift(Qs: np.ndarray, sym_err: float) -> float:
    """A proven ``mu >= max(0, -lambda_min(Q_exact))``, ``||Q_exact - Qs||_2 <= sym_err``.

    If the floating-point Cholesky factorisation of a symmetric ``X`` (size ``k``) runs to
    completion, ``X + dX = G G^T`` with ``|dX| <= gamma_{k+1} |G| |G^T|`` (Demmel 1989), so
    ``lambda_min(X) >= -gamma_{k+1} trace(X) / (1 - gamma_{k+1})``. We try ``X = Qs + t I`` for a
    growing shift ``t`` starting just above ``-lambda_min`` estimated by ``eigvalsh``.
    """
    k = Qs.shape[0]
    if k == 0:
        return 0.0
    fro = float(np.linalg.norm(Qs))
    lam = float(np.linalg.eigvalsh(Qs)[0])
    t = max(0.0, -lam) + (k + 2) * _U * fro
    g = 2 * _gamma(k + 1)
    for _ in range(30):
        X = Qs + t * np.eye(k)
        try:
            np.linalg.cholesky(X)
        except np.linalg.LinAlgError:
            t = 2 * t + (k + 2) * _U * fro + 1e-300
            continue
        diag = np.abs(np.diag(X))
        # rounding of the diagonal of X: at most u |X_ii|
        return t + g * float(diag.sum()) / (1 - g) + _U * float(diag.max()) + sym_err
    return fro * (1 + 4 * _U) + sym_err  # ||Q||_2 <= ||Q||_F always holds
