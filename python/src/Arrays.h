//===- python/src/Arrays.h - numpy arrays in, numpy arrays out ------------===//
//
// Inputs: numpy arrays (or anything np.asarray / np.from_dlpack takes) become
// tensors that view the array's memory when it is C-contiguous, of the
// model's dtype and 64-byte aligned (the alignment kiln's buffers have), and
// copies otherwise. Outputs: numpy arrays that share the run's buffers.
// String tensors go both ways as arrays of str.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/pybind11.h>

#include "kiln/kiln.h"

namespace kiln::python {

/// numpy's name for a dtype ("float32", "int64", "bool"); empty where numpy has none (bf16).
std::string numpyName(DType dtype);

/// The tensor `value` gives input `info`; KE3001 for a wrong dtype or kind. With the GIL.
Tensor inputTensor(pybind11::handle value, const TensorInfo& info);

/// Output `info` of a run as a numpy array sharing the tensor's buffer
/// (read-only where the buffer is). With the GIL.
pybind11::object outputArray(Tensor tensor, const TensorInfo& info);

}  // namespace kiln::python
