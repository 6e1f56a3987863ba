//===- examples/embed/embed.cpp - Running a compiled model from C++ -------===//
//
// The smallest useful embedding of kiln: load a .kiln artifact, describe its
// inputs and outputs, fill every input with x[i] = sin(i) / 2 (a string
// input with words[i % 5], through the string pool), run it once,
// then run it from four threads at once and check they agree, and print the
// first values of each output. A model compiled for shape ranges runs at its
// inputs' opt dims, then at their smallest and largest. Links kiln_runtime only.
//
//   embed_cpp model.kiln
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/support/StringPool.h"

namespace {

/// String inputs: element i is kWords[i % 5].
const char* const kWords[] = {"Kiln", "compiles", "ONNX", "models", "Fast"};

/// The first values of an output, as printed: numbers, or quoted strings.
std::string firstValues(const kiln::TensorInfo& info, const kiln::Tensor& t) {
  std::string out;
  char buf[32];
  if (info.strings) {
    auto strings = kiln::tensorStrings(t);
    for (size_t i = 0; strings && i < strings->size() && i < 8; ++i) out += " \"" + (*strings)[i] + "\"";
    return strings ? out : " " + strings.error().str();
  }
  std::vector<double> v = t.toDoubles();
  for (size_t i = 0; i < v.size() && i < 8; ++i) {
    std::snprintf(buf, sizeof buf, " %.9g", v[i]);
    out += buf;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s model.kiln\n", argv[0]);
    return 2;
  }
  auto model = kiln::Model::load(argv[1]);
  if (!model) {
    std::fprintf(stderr, "%s\n", model.error().str().c_str());
    return 1;
  }
  // x[i] = sin(i) / 2 for every input, at its opt dims (the dims themselves where they are fixed), min or max.
  auto makeInputs = [&](const kiln::Dims kiln::TensorInfo::*which) {
    std::vector<kiln::Tensor> inputs;
    for (const kiln::TensorInfo& in : (*model)->inputs()) {
      const kiln::Dims& dims = in.*which;
      kiln::Tensor t = kiln::Tensor::zeros(in.dtype, dims);
      if (in.strings) {
        std::vector<std::string> words;
        for (int64_t i = 0; i < t.numElements(); ++i) words.emplace_back(kWords[i % 5]);
        inputs.push_back(*kiln::stringTensor(dims, words));  // distinct words: no id collision
        continue;
      }
      std::vector<double> values(size_t(t.numElements()));
      for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(double(i)) / 2;
      inputs.push_back(kiln::Tensor::fromVector<double>(dims, values).castTo(in.dtype));
    }
    return inputs;
  };
  bool dynamic = false;
  for (const kiln::TensorInfo& in : (*model)->inputs()) {
    std::printf("input %s %s[%s]", in.name.c_str(), in.strings ? "string" : kiln::dtypeName(in.dtype),
                kiln::dimsToString(in.optDims).c_str());
    if (in.hasDynamicDims())
      std::printf(" (dims from [%s] to [%s])", kiln::dimsToString(in.minDims).c_str(), kiln::dimsToString(in.maxDims).c_str());
    std::printf("\n");
    dynamic |= in.hasDynamicDims();
  }
  const std::vector<kiln::Tensor> inputs = makeInputs(&kiln::TensorInfo::optDims);
  auto outputs = (*model)->run(inputs);
  if (!outputs) {
    std::fprintf(stderr, "%s\n", outputs.error().str().c_str());
    return 1;
  }
  // Concurrent runs of one loaded model.
  std::vector<std::thread> threads;
  std::vector<int> agree(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) {
        auto again = (*model)->run(inputs);
        bool same = again.isOk();
        for (size_t o = 0; same && o < outputs->size(); ++o) same = (*again)[o].bitwiseEqual((*outputs)[o]);
        agree[size_t(t)] += same ? 1 : 0;
      }
    });
  for (auto& t : threads) t.join();
  for (int a : agree)
    if (a != 5) {
      std::fprintf(stderr, "concurrent runs disagree\n");
      return 1;
    }
  for (size_t o = 0; o < outputs->size(); ++o) {
    const kiln::TensorInfo& info = (*model)->outputs()[o];
    std::printf("output %s %s[%s]:%s\n", info.name.c_str(), info.strings ? "string" : kiln::dtypeName(info.dtype),
                kiln::dimsToString((*outputs)[o].dims()).c_str(),  // actual: some shapes depend on the data
                firstValues(info, (*outputs)[o]).c_str());
  }
  std::printf("concurrent runs agree\n");
  // One artifact, other shapes: its smallest and largest inputs.
  for (auto [label, which] : {std::pair{"min", &kiln::TensorInfo::minDims}, std::pair{"max", &kiln::TensorInfo::maxDims}}) {
    if (!dynamic) break;
    auto shaped = (*model)->run(makeInputs(which));
    if (!shaped) {
      std::fprintf(stderr, "%s\n", shaped.error().str().c_str());
      return 1;
    }
    for (size_t o = 0; o < shaped->size(); ++o)
      std::printf("at the %s dims: output %s [%s]\n", label, (*model)->outputs()[o].name.c_str(),
                  kiln::dimsToString((*shaped)[o].dims()).c_str());
  }
  return 0;
}
