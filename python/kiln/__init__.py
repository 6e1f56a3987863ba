"""kiln: compile ONNX models into generated CPU and CUDA kernels, and run them.

    import numpy as np, kiln

    model = kiln.compile("resnet50.onnx", target="cpu", shapes={"input": (1, 3, 224, 224)})
    model.save("resnet50.kiln")                  # later: kiln.load("resnet50.kiln")
    outputs = model.run({"input": np.zeros((1, 3, 224, 224), np.float32)})

Inputs are numpy arrays or anything ``numpy.asarray`` or ``numpy.from_dlpack``
takes (a CPU ``torch.Tensor``); an input that is C-contiguous, of the model's
dtype and 64-byte aligned is read in place, any other is copied once. Outputs
are numpy arrays over kiln's own buffers (no copy); ``torch.from_dlpack`` takes
them as they are. ``run`` releases the GIL, so threads run one model at once.
Failures raise :class:`kiln.Error` subclasses (:mod:`kiln.errors`). docs/python.md
is the guide.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _kiln, passes
from .errors import (ArgumentError, ArtifactError, CompileError, DeviceError, Error, ExecutionError, FileError,
                     InputError, InternalError, IRError, ModelError)

__version__: str = _kiln.__version__

__all__ = ["compile", "load", "inspect", "passes", "set_threads", "Model", "TensorSpec", "Error", "ModelError", "IRError", "InputError",
           "ExecutionError", "FileError", "ArgumentError", "CompileError", "ArtifactError", "DeviceError",
           "InternalError", "__version__"]

Shape = Tuple[Optional[int], ...]


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a compiled model.

    ``dtype`` is numpy's name (``"float32"``) or ``"str"`` for string tensors;
    ``shape`` has ``None`` at dims that depend on the data or on the run (None
    altogether when even the rank does). For a model compiled with shape
    ranges, ``min_shape`` / ``opt_shape`` / ``max_shape`` give each dim's range
    and the dims its kernels were tuned for; they are None otherwise.
    """
    name: str
    dtype: str
    shape: Optional[Shape]
    min_shape: Optional[Shape] = None
    opt_shape: Optional[Shape] = None
    max_shape: Optional[Shape] = None


class Model:
    """A compiled model, ready to run (from :func:`compile` or :func:`load`)."""

    def __init__(self, native: Any):
        self._native = native

    @property
    def inputs(self) -> Sequence[TensorSpec]:
        """The inputs, in the order ``run`` takes a list in."""
        return [TensorSpec(**s) for s in self._native.input_specs]

    @property
    def outputs(self) -> Sequence[TensorSpec]:
        """The outputs, in the order of the returned dict."""
        return [TensorSpec(**s) for s in self._native.output_specs]

    @property
    def target(self) -> str:
        """``"cpu"`` or ``"cuda"``."""
        return self._native.target

    @property
    def compiled_for(self) -> str:
        """The CPU the code was compiled for, or the CUDA architectures (``"sm_80,sm_90"``)."""
        return self._native.compiled_for

    @property
    def scratch_bytes(self) -> int:
        """The scratch memory one run takes (the memory plan's peak)."""
        return self._native.scratch_bytes

    def run(self, inputs: Union[Mapping[str, Any], Sequence[Any]],
            trace: Optional[Union[str, os.PathLike]] = None) -> Dict[str, np.ndarray]:
        """Runs once and returns ``{output name: numpy array}``.

        ``inputs`` is a dict by input name, or a list in the order of
        :attr:`inputs`. Each must have the input's dtype exactly (no silent
        casts; :class:`InputError` says which to convert) and its shape (a
        dynamic dim any value in its range). The GIL is released while the
        model runs; many threads may run one model at once. With ``trace``, the
        run's kernel launches, host steps and copies are timed and written to
        that path as a Chrome trace (opens in Perfetto; CPU models).
        """
        return self._native.run(inputs, os.fspath(trace) if trace else "")

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the model's .kiln artifact (``kiln run``, the C and C++ APIs and :func:`load` read it)."""
        self._native.save(os.fspath(path))

    def __repr__(self) -> str:
        def show(specs):
            return ", ".join(f"{s.name}: {s.dtype}{list(s.shape) if s.shape is not None else '[?]'}" for s in specs)
        return f"<kiln.Model {self.target} ({show(self.inputs)}) -> ({show(self.outputs)})>"


def compile(model: Union[str, os.PathLike, bytes], target: str = "cpu",
            shapes: Optional[Mapping[str, Sequence[int]]] = None, opt_level: int = 3, pipeline: Optional[str] = None,
            precision: str = "f32", tuning_db: Optional[Union[str, os.PathLike]] = None,
            fusion_plan: Optional[Union[str, os.PathLike]] = None, verbose: bool = False) -> Model:
    """Compiles an ONNX model (or a .kir text-IR file) for ``target``, as ``kiln compile`` does.

    ``model``: a path, or a serialized ONNX model's bytes. ``target``: ``"cpu"``
    (this machine's CPU) or ``"cuda"`` / ``"cuda:sm_80,sm_90"``. ``shapes``
    binds dynamic input dims (``{"input": (1, 3, 224, 224)}``). ``opt_level``
    0-3, or ``pipeline`` (a comma-separated pass list, or ``"arch"``) instead.
    ``precision``: ``"f32"``, ``"f16"``, ``"bf16"`` (mixed precision) or
    ``"tf32"`` (cuda). ``tuning_db``: a ``kiln tune`` database whose schedules
    apply. ``fusion_plan``: fusion decisions (``kiln compile --save-fusion-plan``'s form).
    ``verbose`` prints each phase on stderr.
    """
    if isinstance(model, (bytes, bytearray, memoryview)):
        with tempfile.TemporaryDirectory(prefix="kiln-") as tmp:
            path = os.path.join(tmp, "model.onnx")
            with open(path, "wb") as f:
                f.write(model)
            return compile(path, target, shapes, opt_level, pipeline, precision, tuning_db, fusion_plan, verbose)
    native = _kiln.compile(os.fspath(model), target, _shape_bindings(shapes), int(opt_level), pipeline or "", precision,
                           os.fspath(tuning_db) if tuning_db else "", os.fspath(fusion_plan) if fusion_plan else "",
                           not verbose)
    return Model(native)


def load(path: Union[str, os.PathLike]) -> Model:
    """Loads a .kiln artifact written by ``kiln compile`` or :meth:`Model.save`."""
    return Model(_kiln.load(os.fspath(path)))


def _shape_bindings(shapes: Optional[Mapping[str, Sequence[int]]]) -> list:
    return [f"{name}:{'x'.join(str(int(d)) for d in dims)}" for name, dims in (shapes or {}).items()]


def inspect(path: Union[str, os.PathLike], shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Dict[str, Any]:
    """What ``kiln inspect`` prints, as a dict.

    For a model (.onnx, .kir): ``model``, ``producer``, ``opsets``, ``inputs`` and
    ``outputs`` (``{"name", "type"}``), ``nodes``, ``parameters``,
    ``parameter_bytes``, ``ops`` (op type -> count) and ``structural_hash``.
    For a .kiln artifact: ``target``, ``compiled_for``, ``inputs`` and
    ``outputs`` (:class:`TensorSpec`) and ``scratch_bytes``.
    """
    path = os.fspath(path)
    if path.endswith(".kiln"):
        model = load(path)
        return {"artifact": path, "target": model.target, "compiled_for": model.compiled_for, "inputs": model.inputs,
                "outputs": model.outputs, "scratch_bytes": model.scratch_bytes}
    return _kiln.inspect(path, _shape_bindings(shapes))


def set_threads(threads: int) -> None:
    """Sets how many threads kernels use (process-wide; default: all cores)."""
    _kiln.set_threads(int(threads))
