//===- python/src/Arrays.cpp - numpy arrays in, numpy arrays out ----------===//
//
// A viewed input keeps its array alive through the tensor's buffer owner;
// the owner drops its reference with the GIL held, whichever thread frees
// the last tensor. An output array's base is a capsule holding the tensor.
//
//===----------------------------------------------------------------------===//
#include "Arrays.h"

#include <cstdint>

#include "Errors.h"
#include "kiln/support/StringPool.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

constexpr uintptr_t kAlignment = 64;

Error inputError(const TensorInfo& info, const std::string& what) {
  return Error(ErrorCode::ExecInput, "input '" + info.name + "' " + what);
}

/// The strings of a numpy str, bytes or object array, in C order.
std::vector<std::string> arrayStrings(const py::array& a, const TensorInfo& info) {
  const char kind = a.dtype().kind();
  if (kind != 'U' && kind != 'S' && kind != 'O') raise(inputError(info, "is a string input; it was given " + std::string(py::str(a.dtype()))));
  std::vector<std::string> out;
  for (py::handle item : a.attr("ravel")().attr("tolist")()) {
    if (py::isinstance<py::bytes>(item)) out.push_back(item.cast<std::string>());
    else if (py::isinstance<py::str>(item)) out.push_back(item.cast<std::string>());
    else raise(inputError(info, "holds a " + std::string(py::str(item.get_type().attr("__name__"))) + ", not a str"));
  }
  return out;
}

Dims arrayDims(const py::array& a) { return Dims(a.shape(), a.shape() + a.ndim()); }

/// Memory of `a` that stays valid while the returned owner lives.
std::shared_ptr<const void> keepAlive(const py::array& a) {
  auto* ref = new py::object(a);
  return std::shared_ptr<const void>(a.data(), [ref](const void*) {
    py::gil_scoped_acquire gil;
    delete ref;
  });
}

}  // namespace

std::string numpyName(DType dtype) {
  switch (dtype) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::F16: return "float16";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::U8: return "uint8";
    case DType::U16: return "uint16";
    case DType::U32: return "uint32";
    case DType::U64: return "uint64";
    case DType::Bool: return "bool";
    default: return "";
  }
}

Tensor inputTensor(py::handle value, const TensorInfo& info) {
  py::module_ np = py::module_::import("numpy");
  py::object object = py::reinterpret_borrow<py::object>(value);
  if (!py::isinstance<py::array>(object) && py::hasattr(object, "__dlpack__")) object = np.attr("from_dlpack")(object);
  py::array a = np.attr("asarray")(object);
  if (info.strings) return take(stringTensor(arrayDims(a), arrayStrings(a, info)));
  const std::string want = numpyName(info.dtype);
  if (want.empty()) raise(inputError(info, std::string("is ") + dtypeName(info.dtype) + ", which numpy has no dtype for"));
  const std::string given = py::str(a.dtype().attr("name"));
  if (given != want)
    raise(inputError(info, "is " + want + "; it was given " + given + " (convert it with .astype(numpy." + want + "))"));
  if (!(a.flags() & py::array::c_style)) a = np.attr("ascontiguousarray")(a);
  const size_t bytes = size_t(a.nbytes());
  if (bytes && reinterpret_cast<uintptr_t>(a.data()) % kAlignment == 0)
    return Tensor(info.dtype, arrayDims(a), Buffer::view(keepAlive(a), a.data(), bytes));
  return Tensor(info.dtype, arrayDims(a), Buffer::copyOf(a.data(), bytes));
}

py::object outputArray(Tensor tensor, const TensorInfo& info) {
  py::module_ np = py::module_::import("numpy");
  if (info.strings) {
    py::list items;
    for (const std::string& s : take(tensorStrings(tensor))) items.append(py::str(s));
    return np.attr("array")(items, py::arg("dtype") = "object").attr("reshape")(py::tuple(py::cast(tensor.dims())));
  }
  const std::string name = numpyName(tensor.dtype());
  if (name.empty())
    raise(Error(ErrorCode::ExecFailure, "output '" + info.name + "' is " + dtypeName(tensor.dtype()) + ", which numpy has no dtype for"));
  const bool writable = tensor.buffer() && tensor.buffer()->isMutable();
  auto* kept = new Tensor(std::move(tensor));
  py::capsule base(kept, [](void* p) { delete static_cast<Tensor*>(p); });
  py::array out(py::dtype(name), std::vector<py::ssize_t>(kept->dims().begin(), kept->dims().end()), {}, kept->rawData(), base);
  if (!writable) out.attr("setflags")(py::arg("write") = false);
  return out;
}

}  // namespace kiln::python
