"""kiln.passes: the pass-selection module's view of a model.

    kiln.passes.classify("resnet50.onnx")
    # {"classes": ["RN"], "scores": [{"name": "RN", "score": 0.93, "reasons": [...]}, ...]}

The classes (RN residual CNN, MN mobile CNN, SSD detector, BR transformer)
choose the passes and orderings that ``pipeline="arch"`` runs;
docs/pass-selection.md describes them.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _kiln


def classify(path: Union[str, os.PathLike], shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Dict[str, Any]:
    """The model's architecture classes (those scoring at least 0.5, best first) and every class's score with its reasons."""
    from . import _shape_bindings  # kiln's own helper; the package has finished importing by now
    return _kiln.classify(os.fspath(path), _shape_bindings(shapes))
