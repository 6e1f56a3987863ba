//===- examples/embed/embed.cpp - Running a compiled model from C++ -------===//
//
// The smallest useful embedding of kiln: load a .kiln artifact, describe its
// inputs and outputs, fill every input with x[i] = sin(i) / 2, run it once,
// then run it from four threads at once and check they agree, and print the
// first values of each output. A model compiled for shape ranges runs at its
// inputs' opt dims, then at their smallest and largest. Links kiln_runtime only.
//
//   embed_cpp model.kiln
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "kiln/kiln.h"

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
      std::vector<double> values(size_t(t.numElements()));
      for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(double(i)) / 2;
      inputs.push_back(kiln::Tensor::fromVector<double>(dims, values).castTo(in.dtype));
    }
    return inputs;
  };
  bool dynamic = false;
  for (const kiln::TensorInfo& in : (*model)->inputs()) {
    std::printf("input %s %s[%s]", in.name.c_str(), kiln::dtypeName(in.dtype), kiln::dimsToString(in.optDims).c_str());
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
    std::vector<double> v = (*outputs)[o].toDoubles();
    std::printf("output %s %s[%s]:", info.name.c_str(), kiln::dtypeName(info.dtype),
                kiln::dimsToString((*outputs)[o].dims()).c_str());  // actual: some shapes depend on the data
    for (size_t i = 0; i < v.size() && i < 8; ++i) std::printf(" %.9g", v[i]);
    std::printf("\n");
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
