"""n-scaling of first-crossing thresholds ε*(n): coherent tilt, tilt + Gaussian, Gaussian, and
the power method against SROA with SS-HOPM steps (issue 17, items 3, 5 and 8).

Usage::

    python benchmarks/nscaling_study.py run STUDY [STUDY ...] [--reps 4] [--until 12:50]
    python benchmarks/nscaling_study.py fit            # fits and a table, writes fits.json
                                                       # (straight-line fits over the sizes
                                                       # given, kept for the record: the
                                                       # rate comparison is dev.py results')
    python benchmarks/nscaling_study.py list           # the studies and their grids
    python benchmarks/nscaling_study.py rerun          # the published studies again, with the
                                                       # global check (docs/data/nscaling-global)

``--data DIR`` (run, fit) reads and writes another results directory than
docs/data/nscaling; ``rerun`` writes next to the published files and never touches them.

Every threshold is one ``sroa_dist.find_threshold`` call (value criterion, c = 0.5 unless the
study says otherwise) whose seed is a pure function of (master seed, study, n, p, family,
method, replicate), so a replicate differs from another by its random basis V and its solver
starts, and any entry can be recomputed alone. Results are appended to
``docs/data/nscaling/STUDY.json`` after every threshold (a killed run resumes where it
stopped: entries already stored are skipped), each with its wall time, so the cost of a study
is part of its result. Runs are ordered cheapest first (n ascending, replicates inside), and
``--until HH:MM`` (UTC) stops starting new thresholds after that time. The coherent tilt runs
matrix-free when its dense tensor exceeds ``sroa_dist.studies.threshold.DENSE_BYTES_CAP``.

One BLAS thread per process (set before numpy loads): on a shared 2-core machine parallel
studies are separate processes.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402

import sroa_dist  # noqa: E402
from sroa_dist.analysis.threshold import fit_rate  # noqa: E402
from sroa_dist.studies.threshold import uses_matrix_free  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "nscaling"
FIGURES = ROOT / "docs" / "figures"
MASTER_SEED = 20261126


@dataclasses.dataclass(frozen=True)
class Study:
    """One family × order × method over a list of n (value criterion at level ``c``)."""

    name: str
    p: int
    family: str
    method: str
    ns: tuple[int, ...]
    eps_range: tuple[float, float] = (0.05, 1.5)
    c: float = 0.5
    rtol: float = 0.02
    criterion: str = "value"
    #: ``find_threshold(matrix_free=...)``: None lets it choose by the dense-size cap; True
    #: for the tilt at p >= 4, where a dense SS-HOPM step costs O(n^p) (6.5 s at p = 4,
    #: n = 64 here, so one SROA 7 min) and the factored one O(n²).
    matrix_free: bool | None = None
    #: Name of the study this one adds sizes to: its results live in their own file (its own
    #: process can run beside the other's) and are fitted together with that study's.
    extends: str | None = None
    #: The theorem criterion's vector bound (``c`` is then its value bound); None otherwise.
    radius: float | None = None


STUDIES = {
    s.name: s
    for s in [
        Study("tilt-p3", 3, "coherent-tilt", "sshopm", (8, 16, 32, 64, 128)),
        Study("tiltg-p3", 3, "coherent-tilt+gaussian", "sshopm", (8, 16, 32, 64, 128)),
        Study("gauss-p3", 3, "gaussian", "sshopm", (8, 16, 32, 64)),
        Study(
            "tilt-p4",
            4,
            "coherent-tilt",
            "sshopm",
            (8, 16, 32, 48, 64, 96, 128, 192, 256),
            (0.1, 1.5),
            matrix_free=True,
        ),
        Study("tiltg-p4", 4, "coherent-tilt+gaussian", "sshopm", (8, 16, 32, 48, 64)),
        Study("gauss-p4", 4, "gaussian", "sshopm", (8, 16, 32)),
        Study("tilt-p5", 5, "coherent-tilt", "sshopm", (32, 64, 128), (0.3, 1.2), matrix_free=True),
        # The largest sizes on their own (own process and file): same seeds as tilt-p5 would use.
        Study(
            "tilt-p5-big",
            5,
            "coherent-tilt",
            "sshopm",
            (192, 256, 384, 512),
            (0.3, 1.2),
            matrix_free=True,
            extends="tilt-p5",
        ),
        Study("power-tilt-p3", 3, "coherent-tilt", "power", (8, 16, 32, 64, 128)),
        Study("power-gauss-p3", 3, "gaussian", "power", (8, 16, 32, 64)),
        Study(
            "power-tilt-p4",
            4,
            "coherent-tilt",
            "power",
            (8, 16, 32, 48, 64, 96, 128, 192, 256),
            (0.1, 1.5),
            matrix_free=True,
        ),
        Study("power-gauss-p4", 4, "gaussian", "power", (8, 16, 32)),
        # Gaussian noise fails the value criterion at every ε (its first-order term
        # max_i |E v_i^{⊗p}| exceeds c·‖E‖ already at small ε): a recovery radius instead.
        Study(
            "gauss-p3-rec",
            3,
            "gaussian",
            "sshopm",
            (8, 16, 32, 64),
            (0.1, 2.0),
            0.3,
            criterion="recovery",
        ),
        Study(
            "power-gauss-p3-rec",
            3,
            "gaussian",
            "power",
            (8, 16, 32, 64),
            (0.1, 2.0),
            0.3,
            criterion="recovery",
        ),
        Study("cert-tilt-p3", 3, "coherent-tilt", "certified", (8, 12, 16)),
        Study("cert-gauss-p3", 3, "gaussian", "certified", (8, 12, 16)),
        # Value and vector together (issue 25): the theorem criterion at the study levels
        # c = 0.5, radius = 0.3 beside the value studies of p = 3.
        Study(
            "tilt-p3-theorem",
            3,
            "coherent-tilt",
            "sshopm",
            (8, 16, 32, 64, 128),
            criterion="theorem",
            radius=0.3,
        ),
        Study(
            "tiltg-p3-theorem",
            3,
            "coherent-tilt+gaussian",
            "sshopm",
            (8, 16, 32, 64, 128),
            criterion="theorem",
            radius=0.3,
        ),
    ]
}
#: The published studies' results (docs/results/thresholds.md), and where ``rerun`` writes
#: them again.
PUBLISHED = DATA
RERUN = ROOT / "docs" / "data" / "nscaling-global"
#: Studies ``rerun`` adds after the published ones: the theorem criterion beside value.
COMPANIONS = ("tilt-p3-theorem", "tiltg-p3-theorem")


def seed_of(study: Study, n: int, rep: int) -> np.random.SeedSequence:
    """The search's seed: a pure function of (master seed, n, p, family, method, replicate).

    crc32 of the strings (stable across processes and Python versions, unlike ``hash``). A
    theorem companion draws the instance of the value study it stands beside.
    """
    if study.radius is not None:
        study = dataclasses.replace(study, criterion="value", radius=None)
    key = (
        n,
        study.p,
        zlib.crc32(study.family.encode()),
        zlib.crc32(study.method.encode()),
        zlib.crc32(study.criterion.encode()),
        int(round(study.c * 1000)),
        rep,
    )
    return np.random.SeedSequence(MASTER_SEED, spawn_key=key)


def _path(name: str, data: pathlib.Path | None = None) -> pathlib.Path:
    return (data or DATA) / f"{name}.json"


def load(name: str, data: pathlib.Path | None = None) -> list[dict]:
    path = _path(name, data)
    if not path.exists():
        return []
    try:
        return json.loads(path.read_text())["results"]
    except (json.JSONDecodeError, KeyError) as exc:
        raise SystemExit(f"{path}: not a study result file ({exc})") from None


def _save(study: Study, results: list[dict], data: pathlib.Path | None = None) -> None:
    (data or DATA).mkdir(parents=True, exist_ok=True)
    tmp = _path(study.name, data).with_suffix(".tmp")
    doc = {
        "study": dataclasses.asdict(study),
        "master_seed": MASTER_SEED,
        "code": _code_facts(),
        "results": results,
    }
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(_path(study.name, data))  # atomic: a kill never leaves half a file


def _code_facts() -> dict:
    """The revisions the results were computed with (sshopm, power, the search)."""
    from sroa_dist.studies.threshold import SEARCH_REVISION

    return {
        "method_revisions": {m: int(r.revision) for m, r in sroa_dist.METHODS.items()},
        "search_revision": SEARCH_REVISION,
    }


#: The trace's fields in each stored evaluation (sroa_dist.studies.first_crossing.Evaluation).
TRACE_FIELDS = (
    "eps",
    "metric",
    "passed",
    "global_gap",
    "non_global",
    "redone",
    "lam_err",
    "vec_err",
)


def run_one(study: Study, n: int, rep: int, certify_max_n: int = 0) -> dict:
    """One threshold of ``study`` at size n, replicate ``rep``; ``certify_ends`` where ``n`` is
    at most ``certify_max_n`` and within find_threshold's own budget."""
    from sroa_dist.studies.criteria import RUN_CRITERIA, STUDY_THEOREM
    from sroa_dist.studies.threshold import CERTIFY_ENDS_MAX_N

    matrix_free = study.matrix_free
    if matrix_free is None:  # find_threshold's own rule, recorded with the result
        matrix_free = uses_matrix_free(n, study.p, study.family)
    certify = not matrix_free and n <= min(certify_max_n, CERTIFY_ENDS_MAX_N.get(study.p, 0))
    t0 = time.perf_counter()
    res = sroa_dist.find_threshold(
        n,
        study.p,
        family=study.family,
        criterion=study.criterion,
        c=study.c,
        radius=study.radius,
        method=study.method,
        eps_range=study.eps_range,
        rtol=study.rtol,
        rng=seed_of(study, n, rep),
        matrix_free=study.matrix_free,
        certify_ends=certify,
    )
    # Value and vector together beside every evaluation: the theorem criterion at the study
    # levels, judged from each evaluation's largest errors.
    theorem = res.judged(RUN_CRITERIA["theorem"], **STUDY_THEOREM)
    return {
        "n": n,
        "replicate": rep,
        "eps_star": res.eps_star,
        "lo": res.bracket[0],
        "hi": res.bracket[1],
        "reached": res.reached,
        "n_evals": res.n_evals,
        "non_monotone": res.non_monotone,
        "artefacts": res.artefacts,
        "scan_resolution": res.scan_resolution,
        "certified_ends": res.certified_ends,
        "certified_fraction": res.certified_fraction,
        "evals_with_redone_steps": sum(e.redone > 0 for e in res.trace),
        "evals_non_global": sum(bool(e.non_global) for e in res.trace),
        # Value passes at or below the bracket whose vector fails the theorem's radius.
        "theorem_fails_below_bracket": sum(
            e.passed and e.eps <= res.bracket[0] and not ok
            for e, ok in zip(res.trace, theorem, strict=True)
        ),
        "matrix_free": matrix_free,
        "seconds": time.perf_counter() - t0,
        "trace_fields": list(TRACE_FIELDS),
        "trace": [[getattr(e, f) for f in TRACE_FIELDS] for e in res.trace],
        "theorem_trace": theorem,
    }


def _deadline(until: str | None) -> dt.datetime | None:
    if not until:
        return None
    h, m = (int(x) for x in until.split(":"))
    return dt.datetime.now(dt.UTC).replace(hour=h, minute=m, second=0, microsecond=0)


def _run_pairs(
    study: Study,
    pairs: list[tuple[int, int]],
    data: pathlib.Path | None,
    stop: dt.datetime | None,
    certify_max_n: int = 0,
) -> bool:
    """Run the (n, replicate) ``pairs`` of ``study`` missing from its file in ``data``, saving
    after each threshold; False when the deadline stopped it."""
    results = load(study.name, data)
    done = {(r["n"], r["replicate"]) for r in results}
    for n, rep in pairs:
        if (n, rep) in done:
            continue
        if stop and dt.datetime.now(dt.UTC) >= stop:
            print(f"{study.name}: deadline reached, stopping", flush=True)
            return False
        r = run_one(study, n, rep, certify_max_n)
        results.append(r)
        _save(study, results, data)
        print(
            f"{study.name} n={n:4d} rep={rep} eps*={r['eps_star']:.4f} "
            f"({r['lo']:.4f}, {r['hi']:.4f}] evals={r['n_evals']} nonmono={r['non_monotone']} "
            f"artefacts={r.get('artefacts')} redone-evals={r.get('evals_with_redone_steps')} "
            f"mf={r['matrix_free']} {r['seconds']:.1f}s",
            flush=True,
        )
    return True


def run(
    names: list[str],
    reps: int,
    until: str | None,
    ns: list[int] | None,
    data: pathlib.Path | None = None,
) -> None:
    stop = _deadline(until)
    for name in names:
        study = STUDIES[name]
        pairs = [(n, rep) for n in study.ns if not ns or n in ns for rep in range(reps)]
        if not _run_pairs(study, pairs, data, stop):
            return


def rerun_plan(
    old: pathlib.Path, max_n: int | None = None, studies: list[str] | None = None
) -> list[tuple[Study, list[tuple[int, int]]]]:
    """The published studies (those with a results file in ``old``), each with the (n,
    replicate) pairs it published, cheapest study first (by its published seconds), then the
    theorem companions (:data:`COMPANIONS`) with the pairs of the study they stand beside.
    ``max_n`` drops larger sizes (a smoke test); ``studies`` keeps only those named."""
    plan = []
    for name, study in STUDIES.items():
        published = load(name, old)
        if not published or (studies and name not in studies):
            continue
        pairs = sorted({(r["n"], r["replicate"]) for r in published})
        cost = sum(r["seconds"] for r in published)
        plan.append((cost, name, study, pairs))
    plan.sort(key=lambda t: (t[0], t[1]))
    out = [(study, pairs) for _, _, study, pairs in plan]
    for name in COMPANIONS:
        if studies and name not in studies:
            continue
        base = load(name.removesuffix("-theorem"), old)
        pairs = sorted({(r["n"], r["replicate"]) for r in base})
        if pairs:
            out.append((STUDIES[name], pairs))
    if max_n is not None:
        out = [(s, [(n, r) for n, r in pairs if n <= max_n]) for s, pairs in out]
    return [(s, pairs) for s, pairs in out if pairs]


def rerun(
    out: pathlib.Path,
    old: pathlib.Path = PUBLISHED,
    max_n: int | None = None,
    studies: list[str] | None = None,
    until: str | None = None,
    certify_max_n: int = 16,
) -> None:
    """Every published threshold again with the current code (the global check, redo and two
    scan phases on: search revision 2), into ``out`` (one file per study, saved after every
    threshold, resumable); the published files in ``old`` are only read."""
    if out.resolve() == old.resolve():
        raise SystemExit(f"--out {out}: the rerun must not overwrite the published results")
    stop = _deadline(until)
    plan = rerun_plan(old, max_n, studies)
    for study, pairs in plan:
        print(f"{study.name}: {len(pairs)} thresholds", flush=True)
    for study, pairs in plan:
        if not _run_pairs(study, pairs, out, stop, certify_max_n):
            return
        print(f"{study.name}: done -> {_path(study.name, out)}", flush=True)


def fit_all(
    n_ranges: dict[str, tuple[int, int]] | None = None, data: pathlib.Path | None = None
) -> list[dict]:
    """fit_rate per study (one family, p, method, criterion) over its fitted n range."""
    out = []
    for name, study in STUDIES.items():
        if study.extends:
            continue  # fitted with the study it extends
        res = load(name, data) + [
            r for s in STUDIES.values() if s.extends == name for r in load(s.name, data)
        ]
        if not res:
            continue
        n = np.array([r["n"] for r in res])
        lo = np.array([r["lo"] for r in res])
        hi = np.array([r["hi"] for r in res])
        rng_ = (n_ranges or {}).get(name)
        row = {
            "study": name,
            "p": study.p,
            "family": study.family,
            "method": study.method,
            "c": study.c,
            "sizes": sorted({int(x) for x in n}),
            "replicates": {int(s): int(np.sum(n == s)) for s in np.unique(n)},
            "seconds": float(sum(r["seconds"] for r in res)),
            "evals": int(sum(r["n_evals"] for r in res)),
            "non_monotone": int(sum(r["non_monotone"] for r in res)),
            "median_eps_star": {
                int(s): float(np.median(np.sqrt(lo[n == s] * hi[n == s]))) for s in np.unique(n)
            },
        }
        try:
            f = fit_rate(n, lo, hi, p=study.p, n_range=rng_)
        except ValueError as exc:
            row["fit_error"] = str(exc)
            out.append(row)
            continue
        row.update(
            exponent=f.exponent,
            exponent_lo=f.exponent_lo,
            exponent_hi=f.exponent_hi,
            prefactor=f.prefactor,
            reference=f.reference,
            n_range=list(f.n_range),
            onset_n=f.onset_n,
            n_censored=f.n_censored,
            normalised={int(s): float(v) for s, v in zip(f.sizes, f.normalised, strict=True)},
        )
        out.append(row)
    return out


def print_table(rows: list[dict]) -> None:
    print(
        f"{'study':16s} {'p':>2s} {'method':9s} {'n range':>9s} {'exponent [95%]':>26s} "
        f"{'ref':>6s} {'onset':>6s} {'cost':>8s}"
    )
    for r in rows:
        if "exponent" not in r:
            print(f"{r['study']:16s} {r['p']:2d} {r['method']:9s}  no fit: {r['fit_error']}")
            continue
        onset = "-" if math.isnan(r["onset_n"]) else f"{r['onset_n']:.0f}"
        print(
            f"{r['study']:16s} {r['p']:2d} {r['method']:9s} "
            f"{r['n_range'][0]:4d}-{r['n_range'][1]:<4d}"
            f" {r['exponent']:8.3f} [{r['exponent_lo']:7.3f}, {r['exponent_hi']:7.3f}]"
            f" {r['reference']:6.3f} {onset:>6s} {r['seconds'] / 60:7.1f}m"
        )


def _ranges(specs: list[str]) -> dict[str, tuple[int, int]]:
    out = {}
    for spec in specs:
        name, a, b = spec.split(":")
        out[name] = (int(a), int(b))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("studies", nargs="+", choices=sorted(STUDIES))
    r.add_argument("--reps", type=int, default=4)
    r.add_argument("--until", help="UTC HH:MM after which no new threshold starts")
    r.add_argument("--ns", type=int, nargs="*", help="only these n (default: the study's)")
    f = sub.add_parser("fit")
    f.add_argument(
        "--range",
        nargs="*",
        default=[],
        help="STUDY:NMIN:NMAX fit ranges (default: every size of the study)",
    )
    for parser in (r, f):
        parser.add_argument("--data", type=pathlib.Path, help=f"results directory ({DATA})")
    sub.add_parser("list")
    rr = sub.add_parser("rerun", help="the published studies again, with the global check")
    rr.add_argument("--out", type=pathlib.Path, default=RERUN, help=f"default {RERUN}")
    rr.add_argument("--old", type=pathlib.Path, default=PUBLISHED, help=f"default {PUBLISHED}")
    rr.add_argument("--max-n", type=int, help="only sizes up to this n (a smoke run)")
    rr.add_argument("--studies", nargs="*", help="only these studies")
    rr.add_argument("--until", help="UTC HH:MM after which no new threshold starts")
    rr.add_argument(
        "--certify-max-n",
        type=int,
        default=16,
        help="certify the bracket ends up to this n (within find_threshold's budget)",
    )
    args = ap.parse_args(argv)
    if args.cmd == "list":
        for s in STUDIES.values():
            print(s)
        return 0
    if args.cmd == "run":
        run(args.studies, args.reps, args.until, args.ns, args.data)
        return 0
    if args.cmd == "rerun":
        rerun(args.out, args.old, args.max_n, args.studies, args.until, args.certify_max_n)
        return 0
    if args.cmd == "fit":
        rows = fit_all(_ranges(args.range), args.data)
        print_table(rows)
        ((args.data or DATA) / "fits.json").write_text(json.dumps(rows, indent=1))
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
