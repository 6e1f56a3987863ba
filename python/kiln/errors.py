"""kiln's errors as exceptions.

Every failure of the native core raises a subclass of :class:`Error`, chosen by
the family of its KE code (docs/user-guide.md lists the codes). Each carries
the code (``1003``), its name (``"unsupported-op"``), the node and op type it
concerns (empty when none) and the message; ``str(e)`` is the CLI's line::

    try:
        kiln.compile("model.onnx")
    except kiln.ModelError as e:
        print(e.code, e.node, e.message)
"""
from __future__ import annotations


class Error(Exception):
    """A kiln error: ``code`` (int, KE number), ``name``, ``node``, ``op_type``, ``message``."""

    def __init__(self, code: int, name: str, message: str, node: str = "", op_type: str = "", text: str = ""):
        super().__init__(text or f"error KE{code} ({name}): {message}")
        self.code = code
        self.name = name
        self.message = message
        self.node = node
        self.op_type = op_type


class ModelError(Error):
    """KE1xxx: the ONNX model cannot be imported (malformed, unsupported op or opset, bad shapes)."""


class IRError(Error):
    """KE2xxx: kiln IR text or an evolve patch does not parse or verify."""


class InputError(Error, ValueError):
    """KE3001: a run's inputs are missing, extra, or of the wrong dtype or shape."""


class ExecutionError(Error):
    """KE3002-KE3003: a run failed inside the model (an index out of range, an unsupported dtype)."""


class FileError(Error, OSError):
    """KE4001-KE4002: a file cannot be read or written, or does not parse."""


class ArgumentError(Error, ValueError):
    """KE4003: an argument is invalid (an unknown target, pass or option)."""


class CompileError(Error):
    """KE5001-KE5002: no kernel template lowers a part of the graph, or a fusion plan does not fit."""


class ArtifactError(Error):
    """KE5003-KE5004: a .kiln artifact is corrupt or from another format version, target or CPU."""


class DeviceError(Error):
    """KE5005-KE5007: no usable GPU, a CUDA call failed, or the model does not fit in device memory."""


class InternalError(Error):
    """KE9001: a bug in kiln; please report it with the model."""


def _family(code: int) -> type:
    if 1000 <= code < 2000:
        return ModelError
    if 2000 <= code < 3000:
        return IRError
    if code == 3001:
        return InputError
    if 3000 <= code < 4000:
        return ExecutionError
    if code in (4001, 4002):
        return FileError
    if code == 4003:
        return ArgumentError
    if code in (5001, 5002):
        return CompileError
    if code in (5003, 5004):
        return ArtifactError
    if 5005 <= code < 6000:
        return DeviceError
    return InternalError


def from_native(code: int, name: str, message: str, node: str, op_type: str, text: str) -> Error:
    """The exception for an error of the native core (called by the extension)."""
    return _family(code)(code, name, message, node, op_type, text)
