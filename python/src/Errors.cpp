//===- python/src/Errors.cpp - kiln::Error as kiln.Error subclasses -------===//
//
// The translator asks kiln.errors.from_native for the exception object, so
// the class hierarchy lives in Python (where users read and subclass it).
//
//===----------------------------------------------------------------------===//
#include "Errors.h"

namespace py = pybind11;

namespace kiln::python {

void raise(const Error& e) { throw KilnException{e}; }

void registerErrors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const KilnException& k) {
      const Error& e = k.error;
      py::object make = py::module_::import("kiln.errors").attr("from_native");
      py::object exc = make(int(e.code()), errorCodeName(e.code()), e.message(), e.nodeName(), e.opType(), e.str());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
}

}  // namespace kiln::python
