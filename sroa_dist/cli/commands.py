"""Bodies of the ``sroa-dist`` subcommands: each takes the parsed arguments, prints its
answer and returns the exit status (expected failures are raised for :func:`.main` to explain).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from .errors import CLIError


def _load_spec(args: argparse.Namespace):
    """``load_spec`` with unreadable files (not UTF-8, a directory, no permission) explained."""
    from ..sweep.kinds import load_spec

    path = Path(args.spec)
    if path.is_dir():
        examples = sorted(p.name for p in path.glob("*.toml"))[:3]
        raise CLIError(
            f"spec {args.spec}: expected a TOML file; received a directory",
            "give one spec file"
            + (f", e.g. {path / examples[0]}" if examples else ", e.g. sweeps/figure2.toml"),
        )
    try:
        return load_spec(args.spec, args.set or ())
    except UnicodeDecodeError as exc:
        raise CLIError(
            f"spec {args.spec}: expected UTF-8 TOML text; received a byte that is not UTF-8 "
            f"(0x{exc.object[exc.start]:02x} at byte {exc.start})",
            "save the spec as UTF-8 (most editors: 'Save with encoding')",
        ) from None
    except PermissionError:
        raise CLIError(
            f"spec {args.spec}: expected a readable file; received one you may not read",
            "check the file's permissions",
        ) from None


def _cmd_run(args: argparse.Namespace) -> int:
    import errno

    from ..sweep.run import disk_full, run_sweep

    spec = _load_spec(args)
    store = args.store or spec.default_store
    args.store_url = store
    history = "sroa-dist " + " ".join(shlex.quote(a) for a in args.argv)
    try:
        res = run_sweep(
            spec,
            store,
            scheduler=args.scheduler,
            scheduler_file=args.scheduler_file,
            workers=args.workers,
            block_size=args.block_size,
            overwrite=args.overwrite,
            dashboard_address=args.dashboard_address,
            connect_timeout=args.connect_timeout,
            lease_timeout=args.lease_timeout,
            retries=args.retries,
            task_timeout=args.task_timeout,
            progress=sys.stderr,
            history=history,
        )
    except OSError as exc:  # the store's disk filled up in this process (not in a task)
        if exc.errno == errno.ENOSPC and type(exc).__name__ != "DiskFullError":
            raise disk_full(str(store), exc) from None
        raise
    print(
        f"store: {res.store} ({res.action})\n"
        f"blocks: {res.n_blocks} total, {res.blocks_done_before} already done, "
        f"{res.blocks_reused} reused, {res.blocks_computed} computed, {len(res.failed)} failed\n"
        f"instances: {res.n_instances} total, {res.instances_computed} computed\n"
        f"wall time: {res.wall_time:.1f} s (tasks {res.task_time:.1f} s, "
        f"of which numerical core {res.kernel_time:.1f} s)"
    )
    if res.failed:  # one line per cause would flood the terminal: the count and the first
        b, msg = min(res.failed.items())
        more = f" (and {len(res.failed) - 1} more; `sroa-dist status` lists them)"
        print(
            f"failed block {b}: {msg.splitlines()[0] if msg else ''}"
            + (more if len(res.failed) > 1 else ""),
            file=sys.stderr,
        )
    return 0 if res.complete else 1


def _estimate_line(spec, layout, workers: int | None) -> str:
    """The cost model's one line for ``spec`` on ``workers`` (default: the CPUs available,
    as ``run``'s embedded cluster): the line ``run`` prints before its blocks start."""
    from ..sweep import estimate_line
    from ..sweep.kinds import estimate
    from ..sweep.run import default_workers

    return estimate_line(estimate(spec, layout, workers or default_workers()), loaded=True)


def _cmd_validate(args: argparse.Namespace) -> int:
    from ..sweep.kinds import advice, kind_of, make_layout

    spec = _load_spec(args)
    layout = make_layout(spec, block_size=args.block_size)
    dims = ", ".join(f"{d}={s}" for d, s in zip(layout.dims, layout.shape, strict=True))
    # What `step` counts is the kind's to say (SROA steps; a threshold search's evaluations).
    steps = getattr(kind_of(spec), "step_meaning", "SROA steps")
    print(
        f"{args.spec}: valid sweep '{spec.name}'\n"
        f"dims: {dims}, step={layout.n_steps} ({steps})\n"
        f"instances: {layout.n_instances} in {layout.n_blocks} blocks of shape {layout.chunks}"
    )
    for line in advice(spec):  # the same notes `run` warns with, before any work
        print(f"warning: {line}")
    # A kind may draw its user code once (tensor sweeps: user families) and state its cost.
    trial = getattr(kind_of(spec), "trial_draws", None)
    if trial is not None:
        for line in trial(spec):
            print(line)
    print(_estimate_line(spec, layout, args.workers))
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from ..sweep.store import describe_journal, store_status

    st = store_status(args.store)
    print(
        f"{args.store}: {st.done_fraction:.1%} done "
        f"({st.n_instances_done}/{st.n_instances} instances, {st.n_done}/{st.n_blocks} blocks)"
    )
    print(f"failed blocks: {len(st.failed)}")
    for b, msg in sorted(st.failed.items()):
        print(f"  block {b}: {msg}")
    for line in describe_journal(st.journal):  # what a resumed run will replay
        print(f"resuming: {line}")
    return 0 if st.n_done == st.n_blocks else 1


def _cmd_info(args: argparse.Namespace) -> int:
    """``info``: dims, variables and provenance; damaged blocks are listed (exit 1)."""
    from ..sweep import DAMAGED, DAMAGED_BLOCKS
    from ..sweep.store import open_results

    ds = open_results(args.store, damaged="mask")
    print(f"store: {args.store}")
    print("dims: " + ", ".join(f"{d}={n}" for d, n in ds.sizes.items()))
    for name in ds.coords:
        vals = ds[name].values
        shown = ", ".join(map(str, vals[:6])) + (", ..." if len(vals) > 6 else "")
        print(f"  coord {name}: [{shown}]")
    print("variables:")
    for name, var in ds.data_vars.items():
        print(f"  {name}{tuple(var.dims)}: {var.attrs.get('long_name', '')}")
    print("provenance:")
    for key, val in ds.attrs.items():
        if key == DAMAGED_BLOCKS:
            continue  # said below
        text = str(val)
        if key == "spec" and not args.full:
            text = json.dumps(json.loads(text), sort_keys=True)
        if not args.full and len(text) > 160:
            text = text[:157] + "..."
        print(f"  {key}: {text}")
    return _print_damage(args.store, ds.attrs.get(DAMAGED_BLOCKS), int(ds[DAMAGED].sum()))


def _print_damage(store: str, damaged: str | None, n: int) -> int:
    """Name each damaged (masked) block of a read on stderr; 1 if there is any, else 0."""
    if not n:
        return 0
    lines = [f"{store}: {n} damaged block(s) masked on read (read as missing):"]
    items = sorted(json.loads(damaged or "{}").items(), key=lambda kv: int(kv[0]))
    lines += [f"  block {b}: {'; '.join(p)}"[:200] for b, p in items[:10]]
    if len(items) > 10:
        lines.append(f"  ... and {len(items) - 10} more (`sroa-dist check {store}` lists them)")
    lines.append("rerun the same `sroa-dist run` command to recompute them bit for bit")
    print("\n".join(lines), file=sys.stderr)
    return 1


def _cmd_verify(args: argparse.Namespace) -> int:
    """``verify``: re-check every stored certificate against the instances' rebuilt tensors,
    and the stored ``lam_hat``, ``upper_bound`` and ``certified`` against the certificates."""
    from ..sweep.store import require_store, verify_store

    require_store(args.store)  # the same one-line answer as status/info for a non-store
    rep = verify_store(args.store)
    if rep.nothing_checked:
        raise CLIError(
            f"{args.store}: no certificates stored; nothing verified"
            + (f" ({len(rep.stale_files)} stale files of another spec)" if rep.stale_files else ""),
            "certificates are stored by sweeps with [output] certificates = true and a "
            "certified method",
        )
    failed = rep.failed
    for c in failed:
        where = "" if c.step < 0 else f"{json.dumps(c.coords)} step {c.step + 1}: "
        print(f"FAIL {where}{c.reason} ({c.file})")
    for b, problems in sorted(rep.damaged.items()):
        print(f"DAMAGED block {b} (its stored values were not compared): {'; '.join(problems)}")
    for text in rep.missing[:20]:
        print(f"MISSING certificate for finished instance {text}")
    if len(rep.missing) > 20:
        print(f"... and {len(rep.missing) - 20} more finished instances without certificates")
    print(
        f"{args.store}: checked {len(rep.checks)} certified steps of {rep.instances} instances "
        f"in {rep.files} certificate files: each certificate re-verified against the rebuilt "
        "tensor; stored lam_hat equal to the certified value and within the verified bound; "
        "stored upper_bound equal to the certificate's U; stored certified consistent with "
        "the gap"
    )
    print(
        f"{args.store}: {len(rep.checks)} certificates checked, {len(failed)} failed, "
        f"{len(rep.missing)} missing, {len(rep.damaged)} damaged blocks, "
        f"{len(rep.stale_files)} stale files "
        f"ignored, {rep.steps_without} steps without a certificate (no relaxation ran)"
    )
    return 0 if rep.ok else 1


def _cmd_recheck(args: argparse.Namespace) -> int:
    """``recheck``: :func:`sroa_dist.recheck_worst_case` on a saved worst case; exit 0 where
    its claim stands on certified or exact numbers, 1 where it does not."""
    from ..studies import recheck_worst_case

    out = recheck_worst_case(args.file, args.c)
    norm = out.norm_kind if out.norm_certified else "not certified"
    if out.steps_kind == "certified":
        steps = "all certified" if out.steps_certified else "not all certified"
    else:
        steps = f"{'all' if out.steps_certified else 'not all'} global ({out.steps_kind})"
    print(
        f"{args.file}: error {out.error:.10g}; ||E|| in [{out.norm_lower:.10g}, "
        f"{out.norm_upper:.10g}] ({norm}); SROA steps {steps}"
    )
    verdict = "STANDS" if out.stands else "DOES NOT STAND"
    print(
        f"{args.file}: ratio error/upper(||E||) = {out.ratio:.10g} (claimed "
        f"{out.claimed_ratio:.10g}), c = {out.c:g}: the claim {verdict} ({out.reason})"
    )
    return 0 if out.stands else 1


# ---- analysis (sroa_dist.analysis) -----------------------------------------------------------
def _cmd_plot(args: argparse.Namespace) -> int:
    """``plot``: the figures the cube supports, via ``sroa_dist.analysis.plot_cube``."""
    from .. import analysis

    return _write_outputs(analysis.plot_cube, args)


def _cmd_report(args: argparse.Namespace) -> int:
    """``report``: Markdown/HTML report of a cube, via ``sroa_dist.analysis.write_report``."""
    from .. import analysis

    return _write_outputs(analysis.write_report, args)


def _write_outputs(writer, args: argparse.Namespace) -> int:
    """Open the store, call ``writer(ds, out, formats)`` and list the files it wrote.

    The cube's completeness is printed first (loudly on stderr when blocks are missing or
    failed; only blocks that passed their integrity check count as done). A damaged store is
    refused (error, exit 2), or with ``--damaged mask`` read with its damaged blocks masked,
    its outputs written, and exit 1; with ``--strict`` an incomplete cube exits 1 after
    writing the outputs.
    """
    import warnings

    from ..analysis import IncompleteCubeWarning, completeness
    from ..sweep import DAMAGED_BLOCKS
    from ..sweep.store import open_results

    fmts = _formats(args.formats)
    if fmts is not None and args.command == "plot":
        _check_plot_formats(fmts)
    if fmts is not None and args.command == "report":
        from ..analysis import check_report_formats

        try:
            check_report_formats(fmts)
        except ValueError as exc:
            raise CLIError(f"--format {args.formats}: {exc}", "e.g. --format md,html") from None
    ds = open_results(args.store, damaged=args.damaged)
    status = completeness(ds)
    damage = _print_damage(args.store, ds.attrs.get(DAMAGED_BLOCKS), status.blocks_damaged)
    if status.complete:
        print(f"{args.store}: {status.describe()}", file=sys.stderr)
    else:
        bar = "!" * 78
        lines = [bar, f"WARNING: {args.store}: {status.describe()}"]
        lines += [
            f"  block {b}: {msg.splitlines()[0] if msg else ''}"[:160]
            for b, msg in sorted(status.failures.items())[:10]
        ]
        if len(status.failures) > 10:
            lines.append(f"  ... and {len(status.failures) - 10} more failed blocks")
        lines.append(
            "the outputs cover only the instances with results; run the same `sroa-dist run` "
            "command to finish the sweep (failed blocks are retried)"
            + (" (--strict: exit 1)" if args.strict else "")
        )
        print("\n".join([*lines, bar]), file=sys.stderr)
    with warnings.catch_warnings():  # stated above, once
        warnings.simplefilter("ignore", IncompleteCubeWarning)
        paths = writer(
            ds,
            args.out,
            *([fmts] if fmts else []),
            status=status,
            criterion=args.criterion,
            c=args.c,
            radius=args.radius,
        )
    print("\n".join(map(str, paths)))
    return 1 if damage or (args.strict and not status.complete) else 0


def _formats(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    fmts = tuple(f.strip() for f in text.split(",") if f.strip())
    if not fmts:
        raise CLIError(
            f"--format: expected a comma-separated list; received {text!r}",
            "e.g. --format png,svg (plot) or --format md,html (report)",
        )
    return fmts


def _check_plot_formats(fmts: tuple[str, ...]) -> None:
    from matplotlib.backend_bases import FigureCanvasBase

    known = FigureCanvasBase.get_supported_filetypes()
    unknown = [f for f in fmts if f.lower() not in known]
    if unknown:
        raise CLIError(
            f"--format: expected figure formats matplotlib can write; received {unknown}",
            f"use one or more of {', '.join(sorted(known))}, e.g. --format png,svg",
        )
