"""Build the optional native helpers: the fast-call entry (``autojit._native.fastcall``) and
the output pool's NumPy allocator (``autojit._native.pool``).

Everything else is declared in pyproject.toml. The extension is ``optional``: when it
cannot be compiled (no C compiler, no Python headers) the install still succeeds and
autojit serves every call through its Python path.
"""

from setuptools import Extension, setup


def _extensions() -> list[Extension]:
    try:
        import numpy
    except ImportError:   # no NumPy at build time: no fast path
        return []
    return [Extension(f"autojit._native.{name}", [f"autojit/_native/{name}.c"],
                      include_dirs=[numpy.get_include()], optional=True,
                      extra_compile_args=["-O2", "-std=c11"])
            for name in ("fastcall", "pool", "loops")]


setup(ext_modules=_extensions())
