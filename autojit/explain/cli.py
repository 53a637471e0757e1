"""The ``autojit`` command line: ``inspect`` a function's stages, run the ``demo``, and
list, clear or summarise the on-disk compile ``cache``.

Exit codes: 0 success, 1 missing file/module/function or a failure while inspecting,
2 bad usage or argument spec, 3 the function cannot be traced (the reason is printed).

Example::

    autojit inspect examples/chain.py:chain --args "f64[1000]" --stage fused --stage llvm
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import importlib.util
import inspect as pyinspect
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: Stage names in pipeline order; ``all`` expands to every one of them.
STAGES: tuple[str, ...] = ("graph", "fused", "llvm", "llvm-opt", "asm", "cuda", "ptx",
                           "report", "route")

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_UNTRACEABLE = 0, 1, 2, 3


class CliError(Exception):
    """A failure to report as one line on stderr, with the exit code to return."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits on --help, --version and bad usage
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_usage(sys.stderr)
        print("autojit: error: choose a command: inspect, demo or cache", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(args)
    except CliError as err:
        print(f"autojit: error: {err}", file=sys.stderr)
        return err.code


def _build_parser() -> argparse.ArgumentParser:
    """Return the argument parser; each subcommand stores its handler in ``run``."""
    parser = argparse.ArgumentParser(
        prog="autojit", description="Inspect and demo autojit's NumPy JIT.")
    parser.add_argument("--version", action="version", version=f"autojit {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    ins = sub.add_parser(
        "inspect", help="show a function's graph, kernels, IR, assembly, CUDA and route",
        description="Trace FUNC on example arguments and print the chosen stages.")
    ins.add_argument("target", metavar="TARGET",
                     help="path/to/file.py:FUNC or package.module:FUNC")
    ins.add_argument("--args", dest="spec", default="", metavar="SPEC",
                     help='example arguments, e.g. "f64[1000], f32[n,3]:F, i64=50, f64=0.5, '
                          'n=100" (a scalar with no value is random)')
    ins.add_argument("--stage", action="append", choices=(*STAGES, "all"), metavar="STAGE",
                     help=f"stage to print (repeatable): {', '.join(STAGES)} or all "
                          "(default all)")
    ins.add_argument("--force", choices=("cpu", "gpu", "python"),
                     help="route to report, overriding the router")
    ins.add_argument("--seed", type=int, default=0, help="seed for the argument contents")
    ins.add_argument("-m", dest="verbosity", action="count", default=0,
                     help="escape/allocation report (Go's -gcflags=-m); -m -m adds reasons "
                          "and flow chains; alone it selects the report stage")
    ins.add_argument("--json", action="store_true", help="print the stages as one JSON object")
    ins.add_argument("--gpu-arch", default="sm_90", metavar="sm_XX",
                     help="GPU architecture for the ptx stage and register counts (sm_90)")
    ins.add_argument("--measure", action="store_true",
                     help="also run the function with plain NumPy under tracemalloc and "
                          "report its measured peak memory")
    ins.set_defaults(run=_run_inspect)

    demo = sub.add_parser("demo", help="time autojit against NumPy on built-in workloads")
    demo.add_argument("--size-scale", type=float, default=1.0, metavar="S",
                      help="multiply the workload sizes by S (default 1.0)")
    demo.set_defaults(run=_run_demo)

    cache = sub.add_parser(
        "cache", help="list (ls), clear or summarise (stats) the on-disk compile cache",
        description="The compile cache that lets a fresh process skip tracing and "
                    "compiling: AUTOJIT_CACHE_DIR, bounded by AUTOJIT_CACHE_MAX_MB.")
    cache.add_argument("action", choices=("ls", "clear", "stats"),
                       help="ls: one line per compiled version; clear: delete them all; "
                            "stats: counts and size")
    cache.add_argument("--cache-dir", metavar="DIR", default=None,
                       help="the cache folder (default: AUTOJIT_CACHE_DIR, else "
                            "~/.cache/autojit)")
    cache.set_defaults(run=_run_cache)
    return _add_calibrate_parser(sub, parser)


def _add_calibrate_parser(sub: argparse._SubParsersAction,
                          parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``autojit calibrate`` (re-measure the router's cost model); return ``parser``."""
    cal = sub.add_parser(
        "calibrate", help="measure this machine's CPU (and GPU) for the router's cost model",
        description="Run the calibration probes (about a second) and store the result in "
                    "AUTOJIT_CACHE_DIR/calibration, replacing the stored one.")
    cal.add_argument("--cache-dir", metavar="DIR", default=None,
                     help="the cache folder (default: AUTOJIT_CACHE_DIR, else ~/.cache/autojit)")
    cal.set_defaults(run=_run_calibrate)
    return parser


def _run_calibrate(args: argparse.Namespace) -> int:
    """Calibrate every usable device, store and print the parameters; return 0."""
    from autojit.config import current_settings
    from autojit.routing.calibration import recalibrate
    from autojit.routing.route import current_router

    settings = current_settings()
    params, source = recalibrate(current_router(), args.cache_dir or settings.cache_dir, settings)
    for name, p in params.items():
        transfer = "" if p.transfer == float("inf") else f", transfer {p.transfer / 1e9:.3g} GB/s"
        print(f"{name}: overhead {p.overhead_s * 1e6:.3g} us, launch {p.launch_s * 1e6:.3g} us, "
              f"bandwidth {p.bandwidth / 1e9:.3g} GB/s, {p.flop_rate / 1e9:.3g} GFLOP/s"
              f"{transfer}")
    if "gpu" not in params:
        print("no usable GPU: only the CPU was calibrated")
    print(source)
    return EXIT_OK


def _size(count: float) -> str:
    """Return a byte count for people: ``812 B``, ``14.2 KB``, ``3.1 MB``."""
    for unit in ("B", "KB", "MB"):
        if count < 1024 or unit == "MB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GB"


def _run_cache(args: argparse.Namespace) -> int:
    """Print the cache's versions (ls), delete them (clear) or its summary (stats)."""
    import time

    from autojit.cache import disk_cache
    from autojit.config import current_settings

    settings = current_settings()
    folder = args.cache_dir or settings.cache_dir
    if args.action == "clear":
        versions, freed = disk_cache.clear_cache(folder)
        print(f"removed {versions} compiled version(s), {_size(freed)}, from {folder}")
    elif args.action == "stats":
        summary = disk_cache.cache_summary(folder, settings.cache_max_mb)
        files = ", ".join(f"{n} {k}" for k, n in sorted(summary["files"].items())) or "none"
        print(f"cache dir: {folder}\nversions: {summary['versions']} (files: {files})\n"
              f"size: {_size(summary['bytes'])} of {_size(summary['max_bytes'])}")
    else:
        rows = disk_cache.list_entries(folder)
        for row in rows:
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["last_used"]))
            print(f"{row['key'][:12]} {row['variant']:<12} {','.join(row['kinds']):<14} "
                  f"{_size(row['bytes']):>9}  {used}  {row['function']}  {row['where']}")
        if not rows:
            print(f"(no cached versions in {folder})")
    return EXIT_OK


def _version() -> str:
    """Return the installed distribution's version without importing the compiler."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("autojit")
    except PackageNotFoundError:
        return "unknown"


def _run_demo(args: argparse.Namespace) -> int:
    """Run the demo tour; return 0 when every workload matched NumPy, else 1."""
    if not args.size_scale > 0:
        raise CliError(f"--size-scale must be positive, got {args.size_scale}", EXIT_USAGE)
    from autojit.demo import run_demo

    rows = run_demo(scale=args.size_scale, out=sys.stdout)
    return EXIT_OK if all(row["matches"] for row in rows) else EXIT_FAILURE


def _run_inspect(args: argparse.Namespace) -> int:
    """Inspect TARGET on the spec's arguments and print the chosen stages; return 0."""
    from autojit.explain.argspec import ArgSpecError, parse_args_spec, spec_size_names

    stages = (["report"] if args.verbosity and not args.stage
              else _resolve_stages(args.stage))
    if not re.fullmatch(r"sm_\d{2,3}[a-z]?", args.gpu_arch):
        raise CliError(f"--gpu-arch {args.gpu_arch!r} is not sm_XX (e.g. sm_90)", EXIT_USAGE)
    try:
        call_args = parse_args_spec(args.spec, seed=args.seed)
        size_names = spec_size_names(args.spec)
    except ArgSpecError as err:
        raise CliError(str(err), EXIT_USAGE) from None
    func, name = _load_target(args.target)
    _check_arity(func, name, call_args, args.spec)
    routed = _ensure_routed(func)
    with _declined_loops() as declined:
        inspection = _inspect(routed, name, call_args, args.force)
    reason = getattr(inspection, "fallback_reason", None)
    if reason and inspection.route == "python" and args.force != "python":
        raise CliError(f"cannot trace {name}: {reason}{_declines_text(declined)}",
                       EXIT_UNTRACEABLE)
    _configure(inspection, args, size_names)
    if args.measure:
        inspection.measure_numpy(routed, *call_args)
    if args.json:
        print(json.dumps(inspection.to_json(stages), indent=2, default=str))
        return EXIT_OK
    # -m alone prints the bare report, as Go's -gcflags=-m does
    bare = args.verbosity and not args.stage
    text = inspection.report() if bare else inspection.format(stages)
    print(text if text.endswith("\n") else text + "\n", end="")
    return EXIT_OK


@contextlib.contextmanager
def _declined_loops() -> Iterator[list[str]]:
    """Collect what ``tracer.regions`` says of each loop or branch it leaves to Python
    while the block traces (``the loop at f.py:7 runs as Python: why``): a function that
    falls back because of one says so, not only where the trace stopped after it."""
    import logging

    found: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found.append(record.getMessage())

    logger = logging.getLogger("autojit.regions")
    handler, level = Collect(logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield found
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _declines_text(declined: list[str]) -> str:
    """``; the loop at f.py:7 runs as Python: why`` (file names without their folders)."""
    texts = [re.sub(r"at \S*?([^/\\\s]+:\d+)", r"at \1", text) for text in dict.fromkeys(declined)]
    return "".join(f"; {text}" for text in texts[:3])


def _configure(inspection: Any, args: argparse.Namespace,
               size_names: list[tuple[str | None, ...] | None]) -> None:
    """Pass the report's options to ``inspection``: verbosity, GPU architecture, and the
    spec's size names (``f32[B,H,W]``) for the graph's size symbols."""
    inspection.verbosity = max(args.verbosity, 1)
    inspection.gpu_arch = args.gpu_arch
    graph = getattr(inspection, "graph", None)
    if graph is None:
        return
    for symbol, ref in graph.scalar_dims:   # np.empty((n, n)): the size is the argument n
        if isinstance(symbol, str) and ref < len(graph.params):
            inspection.size_names.setdefault(symbol, graph.params[ref].name)
    for symbol, sources in graph.dims:
        for arg, axis in sources:
            names = size_names[arg] if arg < len(size_names) else None
            if names and axis < len(names) and names[axis]:
                inspection.size_names[symbol] = names[axis]
                break


def _resolve_stages(chosen: list[str] | None) -> list[str]:
    """Return the chosen stages in pipeline order, once each; none or ``all`` means all."""
    if not chosen or "all" in chosen:
        return list(STAGES)
    return [stage for stage in STAGES if stage in chosen]


def _load_target(target: str) -> tuple[Callable[..., object], str]:
    """Return the function TARGET names and its name; raise CliError when it is missing."""
    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr:
        raise CliError(f"TARGET {target!r} must be path/to/file.py:FUNC or "
                       "package.module:FUNC", EXIT_USAGE)
    is_file = where.endswith(".py") or "/" in where or "\\" in where
    module = _load_file(Path(where)) if is_file else _import_module(where)
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CliError(f"{where} has no function {attr!r}{_suggest(part, obj)}",
                           EXIT_FAILURE)
        obj = getattr(obj, part)
    if not callable(obj):
        raise CliError(f"{where}:{attr} is a {type(obj).__name__}, not a function",
                       EXIT_FAILURE)
    return obj, attr


def _suggest(name: str, namespace: object) -> str:
    """Return ``"; did you mean 'x'?"`` for a close public callable name, else ``""``."""
    names = [n for n in dir(namespace)
             if not n.startswith("_") and callable(getattr(namespace, n, None))]
    close = difflib.get_close_matches(name, names, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _load_file(path: Path) -> ModuleType:
    """Execute the file at ``path`` as a fresh module and return it.

    The module is in ``sys.modules`` (and its folder on ``sys.path``) only while its body
    runs: dataclasses and sibling imports need that, later imports must not see it.
    """
    if not path.is_file():
        raise CliError(f"no such file: {path}", EXIT_FAILURE)
    name = f"_autojit_cli_target_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot load {path} as a Python module", EXIT_FAILURE)
    module = importlib.util.module_from_spec(spec)
    with _temporarily_importable(name, module, str(path.resolve().parent)):
        try:
            spec.loader.exec_module(module)
        except Exception as err:  # any error in user code: report it, do not crash
            raise CliError(f"loading {path} failed: {type(err).__name__}: {err}",
                           EXIT_FAILURE) from None
    return module


@contextlib.contextmanager
def _temporarily_importable(name: str, module: ModuleType, folder: str) -> Iterator[None]:
    """Register ``module`` under ``name`` and put ``folder`` first on sys.path, then undo."""
    sys.modules[name] = module
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.modules.pop(name, None)
        if folder in sys.path:
            sys.path.remove(folder)


def _import_module(dotted: str) -> ModuleType:
    """Import and return module ``dotted``; raise CliError when it is missing or fails."""
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as err:
        if err.name and dotted.startswith(err.name):
            raise CliError(f"no module named {dotted!r}", EXIT_FAILURE) from None
        raise CliError(f"importing {dotted} failed: {err}", EXIT_FAILURE) from None
    except Exception as err:  # any error in user code: report it, do not crash
        raise CliError(f"importing {dotted} failed: {type(err).__name__}: {err}",
                       EXIT_FAILURE) from None


def _ensure_routed(func: Callable[..., object]) -> object:
    """Return ``func`` when it is already ``@autoroute``-decorated, else wrap it."""
    if callable(getattr(func, "inspect", None)) and callable(getattr(func, "stats", None)):
        return func
    from autojit import autoroute

    return autoroute(func)


def _check_arity(func: Callable[..., object], name: str, args: list[object],
                 spec: str) -> None:
    """Raise CliError (usage) when ``func`` cannot take ``args`` positionally, saying what
    ``--args`` should hold: one entry per parameter."""
    try:
        signature = pyinspect.signature(func)
    except (TypeError, ValueError):  # builtins and odd callables: let the call decide
        return
    try:
        signature.bind(*args)
    except TypeError as err:
        hint = _ARGS_HINT
        if not spec.strip():
            required = [p.name for p in signature.parameters.values()
                        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                p.POSITIONAL_OR_KEYWORD)]
            raise CliError(f"{name}{signature} takes {len(required)} argument(s) "
                           f"({', '.join(required)}): give them with --args, {hint}",
                           EXIT_USAGE) from None
        raise CliError(f"{name}{signature} cannot take the {len(args)} argument(s) of "
                       f"--args {spec!r}: {err}; {hint}", EXIT_USAGE) from None


#: what an --args entry looks like, for the arity errors
_ARGS_HINT = ('one entry per argument, e.g. --args "f64[n,n], i64=1000, f64=0.5, bool=True" '
              "(arrays DTYPE[sizes], scalars DTYPE=VALUE; a size name like n is 16 unless "
              "n=VALUE)")


def _inspect(routed: object, name: str, args: list[object], force: str | None) -> object:
    """Return ``routed.inspect(*args)``; map trace and other failures to CliError."""
    from autojit import config
    from autojit.errors import AutojitError, FallbackWarning, TraceError

    overrides = {"force": force} if force else {}
    try:
        # The CLI reports a fallback itself, as one line and an exit code.
        with warnings.catch_warnings(), config(**overrides):
            warnings.simplefilter("ignore", FallbackWarning)
            return routed.inspect(*args)  # type: ignore[attr-defined]
    except TraceError as err:
        raise CliError(f"cannot trace {name}: {err}", EXIT_UNTRACEABLE) from None
    except AutojitError as err:
        first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CliError(f"inspecting {name} failed: {first_line}", EXIT_FAILURE) from None
    except Exception as err:  # the user's function raised on these arguments
        raise CliError(f"{name} raised {type(err).__name__} on these arguments: {err}",
                       EXIT_FAILURE) from None


if __name__ == "__main__":
    sys.exit(main())
