"""The comparison workloads, each once: a NumPy reference, its inputs, and one version per peer.

``benchmarks/compare.py`` times them side by side and ``benchmarks/coverage.py`` reuses the
references and inputs. A peer's builder returns an :class:`Impl` for a workload, ``None``
where the peer cannot express it, and raises ``ImportError`` where the peer is not
installed. Peers are imported only when asked for; none of them is a dependency of autojit
(``pip install -e ".[bench]"`` installs them).

Peers: ``numpy`` (the reference itself), ``numexpr`` (``ne.evaluate``), ``numba``
(``@njit(parallel=True, fastmath=False)`` loops over ``prange``), ``jax`` (``jax.jit`` of the
``jax.numpy`` version, float64 enabled), ``torch`` (``torch.compile`` of the torch version on
``torch.from_numpy`` tensors) and ``autojit`` (``autoroute`` of the NumPy reference itself).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Fn = Callable[..., Any]
PEERS: tuple[str, ...] = ("numpy", "numexpr", "numba", "jax", "torch", "autojit")


# --- the NumPy references (the oracle) ------------------------------------------------------

def chain(x: np.ndarray) -> np.ndarray:
    """tanh(cos(exp(sin x))), elementwise."""
    return np.tanh(np.cos(np.exp(np.sin(x))))


def runmat_chain(x: np.ndarray) -> np.ndarray:
    """RunMat's elementwise chain: y0 = sin(x)·exp(−x/10); y1 = y0·cos(x/4) + 0.25·y0²; ..."""
    y0 = np.sin(x) * np.exp(-x / 10)
    y1 = y0 * np.cos(x / 4) + 0.25 * y0 ** 2
    return np.tanh(y1) + 0.1 * y1


def mean_of_squares(x: np.ndarray, y: np.ndarray) -> Any:
    """mean((x - y)²), one scalar."""
    return np.mean((x - y) ** 2)


def softmax(x: np.ndarray) -> np.ndarray:
    """exp(x - max) / sum over the last axis."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x: np.ndarray) -> np.ndarray:
    """(x - mean) / sqrt(var + 1e-5) over the last axis."""
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def image_normalise(img: np.ndarray) -> tuple[np.ndarray, Any]:
    """Per image (N, H, W): standardise over (H, W), ×1.0123 − 0.02, clamp at 0, power 1.8;
    return the stack and its mean squared error against the input."""
    mean = img.mean(axis=(1, 2), keepdims=True)
    std = img.std(axis=(1, 2), keepdims=True)
    out = np.maximum((img - mean) / std * 1.0123 - 0.02, 0.0) ** 1.8
    return out, np.mean((out - img) ** 2)


def dense_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """relu(x @ w + b)."""
    return np.maximum(x @ w + b, 0)


def add_one(x: np.ndarray) -> np.ndarray:
    """x + 1.0 (the per-call overhead row)."""
    return x + 1.0


# --- workloads ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Impl:
    """One peer's version of a workload.

    ``prepare`` turns the NumPy inputs into the peer's (outside the timing), ``call`` runs
    it to completion (asynchronous peers block until ready), ``to_numpy`` converts its
    result for the check against NumPy, ``note`` says after the timing how the calls ran
    (the loops section's autojit: compiled, or plain Python and why).
    """

    call: Fn
    prepare: Callable[[tuple[Any, ...]], tuple[Any, ...]] = lambda args: args
    to_numpy: Callable[[Any], Any] = lambda result: result
    note: Callable[[], str | None] = lambda: None


@dataclass(frozen=True)
class Workload:
    """A row: the NumPy reference, an input builder taking a size ``scale``, tolerances."""

    name: str
    label: str
    reference: Fn
    make_inputs: Callable[[float], tuple[np.ndarray, ...]]
    rtol: float
    atol: float
    unit: str = "ms"
    batch: int = 1  # calls per timed sample; the sample's time is divided by it


def _n(count: int, scale: float) -> int:
    """Return ``count`` scaled, at least 1."""
    return max(1, round(count * scale))


def _uniform(n: int, seed: int) -> np.ndarray:
    """``n`` float64 values in [-3, 3), the same for the same seed."""
    return np.random.default_rng(seed).uniform(-3.0, 3.0, n)


def _normal32(shape: tuple[int, ...], seed: int, sigma: float = 1.0) -> np.ndarray:
    """Normal float32 values with standard deviation ``sigma``, the same for the same seed."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(sigma))


WORKLOADS: tuple[Workload, ...] = (
    Workload("chain", "tanh(cos(exp(sin x))), 10M f64", chain,
             lambda s: (_uniform(_n(10_000_000, s), 0),), rtol=1e-9, atol=1e-12),
    Workload("runmat", "RunMat chain, 5M f32", runmat_chain,
             lambda s: (np.linspace(0, 4 * np.pi, _n(5_000_000, s), dtype=np.float32),),
             rtol=1e-4, atol=1e-5),
    Workload("mse", "mean((x-y)²), 10M f64", mean_of_squares,
             lambda s: (_uniform(_n(10_000_000, s), 1), _uniform(_n(10_000_000, s), 2)),
             rtol=1e-9, atol=1e-12),
    Workload("softmax", "softmax last axis, (256,128,128) f32", softmax,
             lambda s: (_normal32((_n(256, s), 128, 128), 3),), rtol=1e-4, atol=1e-6),
    Workload("layernorm", "layer norm, (16384,1024) f32", layer_norm,
             lambda s: (_normal32((_n(16384, s), 1024), 4, 2.0) + np.float32(1.0),),
             rtol=1e-4, atol=1e-4),
    Workload("imgnorm", "image normalisation, (2,2160,3840) f32", image_normalise,
             lambda s: (np.random.default_rng(5).random((2, _n(2160, s), 3840),
                                                        dtype=np.float32),),
             rtol=1e-4, atol=1e-5),
    Workload("dense", "relu(x@w+b), (4096,1024)@(1024,1024) f32", dense_relu,
             lambda s: (_normal32((_n(4096, s), 1024), 6), _normal32((1024, 1024), 7, 1 / 32),
                        _normal32((1024,), 8)), rtol=1e-4, atol=1e-4),
    Workload("add100", "x + 1.0 on 100 elements", add_one,
             lambda s: (_uniform(100, 9),), rtol=0.0, atol=0.0, unit="µs", batch=2000),
)

BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}


# --- the peers ------------------------------------------------------------------------------

def build_numpy(work: Workload) -> Impl | None:
    """NumPy itself: the reference function."""
    return Impl(work.reference)


def build_autojit(work: Workload, cache_dir: str | None = None) -> Impl | None:
    """``autoroute(reference)``, compiling into ``cache_dir`` (by default a fresh folder for
    this process, so the first call measures a real compile)."""
    from autojit import autoroute
    return Impl(autoroute(work.reference, cache_dir=cache_dir or _cache_dir()))


_CACHE: list[tempfile.TemporaryDirectory[str]] = []


def _cache_dir() -> str:
    """A fresh folder for this process's compile caches, removed at exit."""
    if not _CACHE:
        _CACHE.append(tempfile.TemporaryDirectory(prefix="autojit-compare-"))
    return _CACHE[0].name


def build_numexpr(work: Workload) -> Impl | None:
    """``ne.evaluate`` for elementwise chains and the mean of squares (a numexpr sum)."""
    import numexpr as ne

    def ev(expr: str, **names: Any) -> Any:
        return ne.evaluate(expr, local_dict=names)

    # numexpr makes ``0.25 * x`` float64 for a float32 x: pass the constants in x's dtype.
    def runmat(x: np.ndarray) -> np.ndarray:
        c = {"ten": x.dtype.type(10), "four": x.dtype.type(4), "quarter": x.dtype.type(0.25),
             "tenth": x.dtype.type(0.1)}
        y0 = ev("sin(x) * exp(-x / ten)", x=x, **c)
        y1 = ev("y0 * cos(x / four) + quarter * y0 ** 2", x=x, y0=y0, **c)
        return ev("tanh(y1) + tenth * y1", y1=y1, **c)

    table: dict[str, Fn] = {
        "chain": lambda x: ev("tanh(cos(exp(sin(x))))", x=x),
        "runmat": runmat,
        "mse": lambda x, y: ev("sum((x - y) ** 2)", x=x, y=y)[()] / x.size,
        "add100": lambda x: ev("x + 1.0", x=x),
    }
    fn = table.get(work.name)
    return None if fn is None else Impl(fn)


def build_jax(work: Workload) -> Impl | None:
    """``jax.jit`` of the ``jax.numpy`` version (x64 enabled, so float64 stays float64)."""
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    def runmat(x: Any) -> Any:
        y0 = jnp.sin(x) * jnp.exp(-x / 10)
        y1 = y0 * jnp.cos(x / 4) + 0.25 * y0 ** 2
        return jnp.tanh(y1) + 0.1 * y1

    def softmax_j(x: Any) -> Any:
        e = jnp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def layer_norm_j(x: Any) -> Any:
        mean = x.mean(axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)

    def image_j(img: Any) -> Any:
        mean = img.mean(axis=(1, 2), keepdims=True)
        std = img.std(axis=(1, 2), keepdims=True)
        out = jnp.maximum((img - mean) / std * 1.0123 - 0.02, 0.0) ** 1.8
        return out, jnp.mean((out - img) ** 2)

    table: dict[str, Fn] = {
        "chain": lambda x: jnp.tanh(jnp.cos(jnp.exp(jnp.sin(x)))),
        "runmat": runmat,
        "mse": lambda x, y: jnp.mean((x - y) ** 2),
        "softmax": softmax_j,
        "layernorm": layer_norm_j,
        "imgnorm": image_j,
        "dense": lambda x, w, b: jnp.maximum(x @ w + b, 0),
        "add100": lambda x: x + 1.0,
    }
    fn = table.get(work.name)
    if fn is None:
        return None
    jitted = jax.jit(fn)
    return Impl(lambda *a: jax.block_until_ready(jitted(*a)),
                prepare=lambda args: tuple(jnp.asarray(a) for a in args),
                to_numpy=lambda r: jax.tree_util.tree_map(np.asarray, r))


def build_torch(work: Workload) -> Impl | None:
    """``torch.compile`` of the torch version, on ``torch.from_numpy`` tensors (inductor's
    on-disk cache in this process's fresh folder, unless ``TORCHINDUCTOR_CACHE_DIR`` is set,
    so first calls compile as autojit's do)."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(_cache_dir(), "inductor"))
    import torch

    def runmat(x: Any) -> Any:
        y0 = torch.sin(x) * torch.exp(-x / 10)
        y1 = y0 * torch.cos(x / 4) + 0.25 * y0 ** 2
        return torch.tanh(y1) + 0.1 * y1

    def softmax_t(x: Any) -> Any:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    def layer_norm_t(x: Any) -> Any:
        mean = x.mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True, correction=0) + 1e-5)

    def image_t(img: Any) -> Any:
        mean = img.mean(dim=(1, 2), keepdim=True)
        std = img.std(dim=(1, 2), keepdim=True, correction=0)
        out = torch.clamp((img - mean) / std * 1.0123 - 0.02, min=0.0) ** 1.8
        return out, torch.mean((out - img) ** 2)

    table: dict[str, Fn] = {
        "chain": lambda x: torch.tanh(torch.cos(torch.exp(torch.sin(x)))),
        "runmat": runmat,
        "mse": lambda x, y: torch.mean((x - y) ** 2),
        "softmax": softmax_t,
        "layernorm": layer_norm_t,
        "imgnorm": image_t,
        "dense": lambda x, w, b: torch.relu(x @ w + b),
        "add100": lambda x: x + 1.0,
    }
    fn = table.get(work.name)
    if fn is None:
        return None
    compiled = torch.compile(fn)

    def call(*args: Any) -> Any:
        with torch.inference_mode():
            return compiled(*args)

    def to_numpy(result: Any) -> Any:
        if isinstance(result, tuple):
            return tuple(r.numpy() for r in result)
        return result.numpy()

    return Impl(call, prepare=lambda args: tuple(torch.from_numpy(a) for a in args),
                to_numpy=to_numpy)


def build_numba(work: Workload) -> Impl | None:
    """``@njit(parallel=True, fastmath=False)`` loops over ``prange`` (NumPy's BLAS call for
    the product). float32 rows compute in float32; sums accumulate in float64."""
    table = _numba_kernels()
    fn = table.get(work.name)
    return None if fn is None else Impl(fn)


_NUMBA: dict[str, Fn] = {}


def _numba_kernels() -> dict[str, Fn]:
    """Compile nothing yet (numba compiles on first call); return the kernels by workload."""
    if _NUMBA:
        return _NUMBA
    from numba import njit, prange

    jit = njit(parallel=True, fastmath=False, cache=False)
    f32 = np.float32
    c10, c4, c025, c01 = f32(10), f32(4), f32(0.25), f32(0.1)
    k1, k2, k0, gamma, eps = f32(1.0123), f32(0.02), f32(0.0), f32(1.8), f32(1e-5)

    @jit
    def chain_nb(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        for i in prange(x.size):
            out[i] = math.tanh(math.cos(math.exp(math.sin(x[i]))))
        return out

    @jit
    def runmat_nb(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        for i in prange(x.size):
            v = x[i]
            y0 = np.sin(v) * np.exp(-v / c10)
            y1 = y0 * np.cos(v / c4) + c025 * y0 * y0
            out[i] = np.tanh(y1) + c01 * y1
        return out

    @jit
    def mse_nb(x: np.ndarray, y: np.ndarray) -> float:
        total = 0.0
        for i in prange(x.size):
            d = x[i] - y[i]
            total += d * d
        return total / x.size

    @jit
    def softmax_nb(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        for r in prange(x.shape[0]):
            top = x[r, 0]
            for j in range(1, x.shape[1]):
                top = max(top, x[r, j])
            total = 0.0
            for j in range(x.shape[1]):
                e = np.exp(x[r, j] - top)
                out[r, j] = e
                total += e
            inv = f32(total)
            for j in range(x.shape[1]):
                out[r, j] = out[r, j] / inv
        return out

    @jit
    def layer_norm_nb(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        n = x.shape[1]
        for r in prange(x.shape[0]):
            total = 0.0
            for j in range(n):
                total += x[r, j]
            mean = total / n
            sq = 0.0
            for j in range(n):
                d = x[r, j] - mean
                sq += d * d
            m32 = f32(mean)
            den = np.sqrt(f32(sq / n) + eps)
            for j in range(n):
                out[r, j] = (x[r, j] - m32) / den
        return out

    @jit
    def image_nb(img: np.ndarray) -> tuple[np.ndarray, np.float32]:
        out = np.empty_like(img)
        images, rows, cols = img.shape
        err = 0.0
        for k in range(images):
            total = 0.0
            for i in prange(rows):
                for j in range(cols):
                    total += img[k, i, j]
            mean = total / (rows * cols)
            sq = 0.0
            for i in prange(rows):
                for j in range(cols):
                    d = img[k, i, j] - mean
                    sq += d * d
            m32, s32 = f32(mean), f32(math.sqrt(sq / (rows * cols)))
            for i in prange(rows):
                for j in range(cols):
                    v = max((img[k, i, j] - m32) / s32 * k1 - k2, k0) ** gamma
                    out[k, i, j] = v
                    e = v - img[k, i, j]
                    err += e * e
        return out, f32(err / img.size)

    @jit
    def dense_nb(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        y = np.dot(x, w)
        for i in prange(y.shape[0]):
            for j in range(y.shape[1]):
                y[i, j] = max(y[i, j] + b[j], f32(0))
        return y

    @jit
    def add_nb(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        for i in prange(x.size):
            out[i] = x[i] + 1.0
        return out

    def rows_of(kernel: Fn) -> Fn:
        """Run a 2-D row kernel over the last axis of any C-contiguous array."""
        return lambda x: kernel(x.reshape(-1, x.shape[-1])).reshape(x.shape)

    def image(img: np.ndarray) -> tuple[np.ndarray, np.float32]:
        out, err = image_nb(img)  # numba returns a float32 scalar as a Python float
        return out, np.float32(err)

    _NUMBA.update(chain=chain_nb, runmat=runmat_nb, mse=mse_nb, softmax=rows_of(softmax_nb),
                  layernorm=rows_of(layer_norm_nb), imgnorm=image, dense=dense_nb,
                  add100=add_nb)
    return _NUMBA


BUILDERS: dict[str, Callable[[Workload], Impl | None]] = {
    "numpy": build_numpy, "numexpr": build_numexpr, "numba": build_numba, "jax": build_jax,
    "torch": build_torch, "autojit": build_autojit,
}
