//===- lib/runtime/core/CApi.cpp - The C API over kiln::Model -------------===//
//
// Errors never cross the C boundary as exceptions: every entry point catches
// and turns failures into a code plus a thread-local message.
//
//===----------------------------------------------------------------------===//
#include "kiln/c_api.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "kiln/kiln.h"
#include "kiln/support/StringPool.h"

struct kiln_model {
  std::unique_ptr<kiln::Model> model;
};

struct kiln_outputs {
  std::vector<kiln::Tensor> tensors;
  /// Per output: a string output's C strings (kiln_outputs_data), else none.
  std::vector<std::optional<std::vector<const char*>>> strings;
};

namespace {

thread_local std::string lastError;

int fail(const kiln::Error& e) {
  lastError = e.str();
  return int(e.code());
}

const kiln::TensorInfo* info(const kiln_model* m, size_t i, bool input) {
  if (!m) return nullptr;
  const auto& list = input ? m->model->inputs() : m->model->outputs();
  return i < list.size() ? &list[i] : nullptr;
}

/// Bytes of one element as C sees it: a string is a const char*.
size_t elementBytes(const kiln::TensorInfo& t) { return t.strings ? sizeof(const char*) : kiln::dtypeSize(t.dtype); }

int dtypeCode(const kiln::TensorInfo* t) { return !t ? 0 : t->strings ? KILN_STRING : int(t->dtype); }

/// Bytes of a tensor of this type; 0 when a dim (-1) or the rank depends on the data.
size_t bytesOf(const kiln::TensorInfo* t) {
  if (!t || !t->rankKnown) return 0;
  size_t n = elementBytes(*t);
  for (int64_t d : t->dims) n *= d < 0 ? 0 : size_t(d);
  return n;
}

/// A string input's `n` C strings as a tensor of ids.
kiln::Expected<kiln::Tensor> stringInput(const kiln::TensorInfo& t, const kiln::Dims& dims, const char* const* data,
                                         size_t n) {
  std::vector<std::string> strings(n);
  for (size_t k = 0; k < n; ++k) {
    if (!data[k])
      return kiln::Error(kiln::ErrorCode::ExecInput, "element " + std::to_string(k) + " of string input " + t.name + " is null");
    strings[k] = data[k];
  }
  return kiln::stringTensor(dims, strings);
}

/// The model's inputs as tensors (copied from the caller's pointers), of
/// dims `dims[i]` when given, else each input's fixed dims.
kiln::Expected<std::vector<kiln::Tensor>> inputTensors(const kiln_model* m, const void* const* inputs,
                                                       const int64_t* const* dims = nullptr) {
  std::vector<kiln::Tensor> in;
  for (size_t i = 0; i < m->model->inputs().size(); ++i) {
    const kiln::TensorInfo& t = m->model->inputs()[i];
    if (!inputs[i]) return kiln::Error(kiln::ErrorCode::ExecInput, "input " + t.name + " is null");
    if (dims && !dims[i]) return kiln::Error(kiln::ErrorCode::ExecInput, "the dims of input " + t.name + " are null");
    if (!dims && t.hasDynamicDims())
      return kiln::Error(kiln::ErrorCode::ExecInput, "input " + t.name + " has dynamic dims (" + kiln::dimsToString(t.minDims) +
                                                         " to " + kiln::dimsToString(t.maxDims) +
                                                         "); give a run's dims with kiln_model_run_shaped");
    kiln::Dims d = dims ? kiln::Dims(dims[i], dims[i] + t.dims.size()) : t.dims;
    size_t n = 1;
    for (int64_t x : d) {
      if (x < 0) return kiln::Error(kiln::ErrorCode::ExecInput, "input " + t.name + " is given a negative dim");
      n *= size_t(x);
    }
    if (t.strings) {
      KILN_ASSIGN(kiln::Tensor ids, stringInput(t, d, static_cast<const char* const*>(inputs[i]), n));
      in.push_back(std::move(ids));
    } else {
      in.emplace_back(t.dtype, d, kiln::Buffer::copyOf(inputs[i], n * kiln::dtypeSize(t.dtype)));
    }
  }
  return in;
}

/// The C strings a string output's ids stand for (pointers into the pool).
kiln::Expected<std::vector<const char*>> stringOutput(const kiln::TensorInfo& t, const kiln::Tensor& ids) {
  std::vector<const char*> out(size_t(ids.numElements()));
  const int64_t* p = ids.data<int64_t>();
  for (size_t k = 0; k < out.size(); ++k)
    if (!(out[k] = kiln::pooledCString(p[k])))
      return kiln::Error(kiln::ErrorCode::ExecFailure, "element " + std::to_string(k) + " of string output " + t.name +
                                                           " is id " + std::to_string(p[k]) + ", which names no known string");
  return out;
}

using StringOutputs = std::vector<std::optional<std::vector<const char*>>>;

/// The C strings of every string output of a run; non-string outputs stay empty.
kiln::Expected<StringOutputs> stringOutputs(const kiln_model* m, const std::vector<kiln::Tensor>& out) {
  StringOutputs strings(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const kiln::TensorInfo& t = m->model->outputs()[i];
    if (!t.strings) continue;
    auto s = stringOutput(t, out[i]);
    if (!s) return s.error();
    strings[i] = std::move(*s);
  }
  return strings;
}

const int64_t* rangeDims(const kiln_model* m, size_t i, int which) {
  const kiln::TensorInfo* t = info(m, i, true);
  if (!t) return nullptr;
  return (which < 0 ? t->minDims : which > 0 ? t->maxDims : t->optDims).data();
}

const kiln::Tensor* outputAt(const kiln_outputs* o, size_t i) { return o && i < o->tensors.size() ? &o->tensors[i] : nullptr; }

}  // namespace

extern "C" {

int kiln_model_load(const char* path, kiln_model** model) {
  if (!path || !model) return fail(kiln::Error(kiln::ErrorCode::InvalidArgument, "kiln_model_load: null argument"));
  *model = nullptr;
  try {
    auto loaded = kiln::Model::load(path);
    if (!loaded) return fail(loaded.error());
    *model = new kiln_model{std::move(*loaded)};
    return 0;
  } catch (const std::exception& e) {
    return fail(kiln::Error(kiln::ErrorCode::Internal, std::string("kiln_model_load: ") + e.what()));
  }
}

void kiln_model_free(kiln_model* model) { delete model; }

size_t kiln_model_num_inputs(const kiln_model* m) { return m ? m->model->inputs().size() : 0; }
size_t kiln_model_num_outputs(const kiln_model* m) { return m ? m->model->outputs().size() : 0; }
const char* kiln_model_input_name(const kiln_model* m, size_t i) { auto* t = info(m, i, true); return t ? t->name.c_str() : nullptr; }
const char* kiln_model_output_name(const kiln_model* m, size_t i) { auto* t = info(m, i, false); return t ? t->name.c_str() : nullptr; }
int kiln_model_input_dtype(const kiln_model* m, size_t i) { return dtypeCode(info(m, i, true)); }
int kiln_model_output_dtype(const kiln_model* m, size_t i) { return dtypeCode(info(m, i, false)); }
size_t kiln_model_input_rank(const kiln_model* m, size_t i) { auto* t = info(m, i, true); return t ? t->dims.size() : 0; }
size_t kiln_model_output_rank(const kiln_model* m, size_t i) {
  auto* t = info(m, i, false);
  return !t ? 0 : t->rankKnown ? t->dims.size() : KILN_UNKNOWN_RANK;
}
const int64_t* kiln_model_input_dims(const kiln_model* m, size_t i) { auto* t = info(m, i, true); return t ? t->dims.data() : nullptr; }
const int64_t* kiln_model_output_dims(const kiln_model* m, size_t i) { auto* t = info(m, i, false); return t ? t->dims.data() : nullptr; }
size_t kiln_model_input_bytes(const kiln_model* m, size_t i) { return bytesOf(info(m, i, true)); }
size_t kiln_model_output_bytes(const kiln_model* m, size_t i) { return bytesOf(info(m, i, false)); }

const int64_t* kiln_model_input_min_dims(const kiln_model* m, size_t i) { return rangeDims(m, i, -1); }
const int64_t* kiln_model_input_opt_dims(const kiln_model* m, size_t i) { return rangeDims(m, i, 0); }
const int64_t* kiln_model_input_max_dims(const kiln_model* m, size_t i) { return rangeDims(m, i, 1); }

int kiln_model_run(const kiln_model* m, const void* const* inputs, void* const* outputs) {
  if (!m || (!inputs && kiln_model_num_inputs(m)) || (!outputs && kiln_model_num_outputs(m)))
    return fail(kiln::Error(kiln::ErrorCode::InvalidArgument, "kiln_model_run: null argument"));
  try {
    auto in = inputTensors(m, inputs);
    if (!in) return fail(in.error());
    for (const kiln::TensorInfo& t : m->model->outputs())
      if (!t.rankKnown || std::any_of(t.dims.begin(), t.dims.end(), [](int64_t d) { return d < 0; }))
        return fail(kiln::Error(kiln::ErrorCode::InvalidArgument,
                                "output " + t.name + " has a data-dependent shape; use kiln_model_run_outputs"));
    auto out = m->model->run(*in);
    if (!out) return fail(out.error());
    auto strings = stringOutputs(m, *out);
    if (!strings) return fail(strings.error());
    for (size_t i = 0; i < out->size(); ++i) {
      if (!outputs[i]) return fail(kiln::Error(kiln::ErrorCode::ExecInput, "output buffer " + std::to_string(i) + " is null"));
      const auto& s = (*strings)[i];
      if (s) std::memcpy(outputs[i], s->data(), s->size() * sizeof(const char*));
      else std::memcpy(outputs[i], (*out)[i].rawData(), (*out)[i].byteSize());
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(kiln::Error(kiln::ErrorCode::Internal, std::string("kiln_model_run: ") + e.what()));
  }
}

namespace {

/// Runs with the caller's inputs (of `dims` when given) into runtime-allocated outputs.
int runIntoOutputs(const char* entry, const kiln_model* m, const void* const* inputs, const int64_t* const* dims,
                   kiln_outputs** outputs) {
  if (!m || !outputs || (!inputs && kiln_model_num_inputs(m)))
    return fail(kiln::Error(kiln::ErrorCode::InvalidArgument, std::string(entry) + ": null argument"));
  *outputs = nullptr;
  try {
    auto in = inputTensors(m, inputs, dims);
    if (!in) return fail(in.error());
    auto out = m->model->run(*in);
    if (!out) return fail(out.error());
    auto strings = stringOutputs(m, *out);
    if (!strings) return fail(strings.error());
    *outputs = new kiln_outputs{std::move(*out), std::move(*strings)};
    return 0;
  } catch (const std::exception& e) {
    return fail(kiln::Error(kiln::ErrorCode::Internal, std::string(entry) + ": " + e.what()));
  }
}

}  // namespace

int kiln_model_run_outputs(const kiln_model* m, const void* const* inputs, kiln_outputs** outputs) {
  return runIntoOutputs("kiln_model_run_outputs", m, inputs, nullptr, outputs);
}

int kiln_model_run_shaped(const kiln_model* m, const void* const* inputs, const int64_t* const* input_dims,
                          kiln_outputs** outputs) {
  if (m && !input_dims && kiln_model_num_inputs(m))
    return fail(kiln::Error(kiln::ErrorCode::InvalidArgument, "kiln_model_run_shaped: null argument"));
  return runIntoOutputs("kiln_model_run_shaped", m, inputs, input_dims, outputs);
}

size_t kiln_outputs_rank(const kiln_outputs* o, size_t i) { auto* t = outputAt(o, i); return t ? t->dims().size() : 0; }
const int64_t* kiln_outputs_dims(const kiln_outputs* o, size_t i) { auto* t = outputAt(o, i); return t ? t->dims().data() : nullptr; }
size_t kiln_outputs_bytes(const kiln_outputs* o, size_t i) {
  const kiln::Tensor* t = outputAt(o, i);
  if (!t) return 0;
  return o->strings[i] ? o->strings[i]->size() * sizeof(const char*) : t->byteSize();
}
const void* kiln_outputs_data(const kiln_outputs* o, size_t i) {
  const kiln::Tensor* t = outputAt(o, i);
  if (!t) return nullptr;
  return o->strings[i] ? static_cast<const void*>(o->strings[i]->data()) : t->rawData();
}
void kiln_outputs_free(kiln_outputs* o) { delete o; }

void kiln_set_threads(int threads) { kiln::Model::setThreads(threads); }

const char* kiln_last_error(void) { return lastError.c_str(); }

}  // extern "C"
