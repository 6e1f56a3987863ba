//===- tests/unit/TemplateCases.h - Test graphs for the schedule templates ===//
//
// Shared by the CPU target's tests (CodegenTest.cpp) and the CUDA target's
// (CudaTest.cpp): small graphs that exercise every schedule template and
// epilogue kind (padded, strided, grouped and depthwise convs, Gemm with
// alpha/beta/bias, kiln::Dense (weights read transposed), batched matmul, pools, reductions with prologues, softmax,
// layernorm, attention (kiln::Attention with a broadcast mask, one of -inf over a row's first keys), an injective group of reshapes, slices, concat, pad, gather and
// where, a concat of five inputs (a balanced tree of picks; read by index and
// through a transpose), and one of broadcasts and a transpose over a last dim of 8; rows of
// 40 and 60 elements, which the GPU's warp-per-row schedules split unevenly, and of 129 and 200,
// longer than the CPU's widest vector), and the helpers that parse them and make deterministic inputs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <catch2/catch.hpp>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/ir/Parser.h"
#include "kiln/support/RuntimeValue.h"
#include "kiln/support/Tensor.h"

namespace kiln::testing {

inline std::unique_ptr<ir::Module> parse(const std::string& text) {
  auto m = ir::parseModule(text, "codegen.kir");
  INFO((m.isOk() ? std::string() : m.error().str()));
  REQUIRE(m.isOk());
  return std::move(m).value();
}

/// A tensor literal with deterministic pseudo-random values in [-1, 1).
inline std::string literal(const Dims& dims, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(-1, 1);
  int64_t n = 1;
  std::string shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    n *= dims[i];
    shape += (i ? "," : "") + std::to_string(dims[i]);
  }
  std::ostringstream os;
  os << "tensor<f32[" << shape << "]: [";
  for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << real(gen);
  os << "]>";
  return os.str();
}

inline std::vector<Tensor> randomInputs(const ir::Graph& g, uint64_t seed) {
  std::vector<Tensor> inputs;
  std::mt19937_64 gen(seed);
  for (const ir::Value* v : g.inputs()) {
    const auto& t = v->tensorType();
    std::vector<double> values(size_t(*t.numElements()));
    for (double& x : values)
      x = isFloat(t.dtype()) ? std::uniform_real_distribution<double>(-1, 1)(gen) : double(gen() % 4);
    inputs.push_back(Tensor::fromVector<double>(t.dims(), values).castTo(t.dtype()));
  }
  return inputs;
}

/// Every output has the reference's dims and values within `tolerance`,
/// relative to the reference's magnitude (absolute below 1).
inline void checkOutputsMatch(const std::vector<Tensor>& got, const std::vector<RuntimeValue>& want, double tolerance) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& w = want[i].tensor();
    INFO("output " << i << ": " << got[i].typeString() << " vs " << w.typeString());
    REQUIRE(got[i].dims() == w.dims());
    std::vector<double> a = got[i].toDoubles(), b = w.toDoubles();
    for (size_t j = 0; j < a.size(); ++j) CHECK(std::fabs(a[j] - b[j]) <= tolerance * std::max(1.0, std::fabs(b[j])));
  }
}

struct TemplateCase {
  std::string family;    ///< matmul, conv2d, rowwise (pool/reduce/softmax/layernorm), attention, injective
  std::string text;      ///< text IR module
  std::string anchorOp;  ///< the op anchoring the group under test ("injective": the first group)
  size_t limit;          ///< configurations to try at most (spread over the knob space)
};

/// The cases of one family ("" for all).
inline std::vector<TemplateCase> templateCases(const std::string& family = "") {
  std::vector<TemplateCase> all{
      {"matmul", R"(module @m {
  graph @main(%x: f32[2,5,12]) {
    %w = Constant() {value = )" + literal({12, 9}, 1) + R"(} : f32[12,9]
    %b = Constant() {value = )" + literal({9}, 2) + R"(} : f32[9]
    %m = MatMul(%x, %w) : f32[2,5,9]
    %a = Add(%m, %b) : f32[2,5,9]
    %r = Relu(%a) : f32[2,5,9]
    return %r
  }
})",
       "MatMul", 48},
      {"matmul", R"(module @m {
  graph @main(%x: f32[2,5,12]) {
    %w = Constant() {value = )" + literal({9, 12}, 7) + R"(} : f32[9,12]
    %b = Constant() {value = )" + literal({9}, 8) + R"(} : f32[9]
    %m = kiln::Dense(%x, %w) : f32[2,5,9]
    %a = Add(%m, %b) : f32[2,5,9]
    %r = Relu(%a) : f32[2,5,9]
    return %r
  }
})",
       "Dense", 48},
      {"matmul", R"(module @m {
  graph @main(%x: f32[3,16]) {
    %w = Constant() {value = )" + literal({20, 16}, 3) + R"(} : f32[20,16]
    %c = Constant() {value = )" + literal({20}, 4) + R"(} : f32[20]
    %g = Gemm(%x, %w, %c) {transB = 1, alpha = 0.5, beta = 2.0} : f32[3,20]
    return %g
  }
})",
       "Gemm", 48},
      {"matmul", R"(module @m {
  graph @main(%q: f32[2,3,8,4], %k: f32[2,3,4,8]) {
    %s = MatMul(%q, %k) : f32[2,3,8,8]
    return %s
  }
})",
       "MatMul", 48},
      {"conv2d", R"(module @m {
  graph @main(%x: f32[1,3,9,11]) {
    %w = Constant() {value = )" + literal({8, 3, 3, 3}, 5) + R"(} : f32[8,3,3,3]
    %b = Constant() {value = )" + literal({8}, 6) + R"(} : f32[8]
    %c = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]} : f32[1,8,9,11]
    %r = Relu(%c) : f32[1,8,9,11]
    return %r
  }
})",
       "Conv", 64},
      {"conv2d", R"(module @m {
  graph @main(%x: f32[2,4,10,10]) {
    %w = Constant() {value = )" + literal({4, 2, 3, 3}, 7) + R"(} : f32[4,2,3,3]
    %c = Conv(%x, %w) {group = 2, strides = [2, 2], pads = [1, 0, 1, 0], dilations = [1, 2]} : f32[2,4,5,3]
    return %c
  }
})",
       "Conv", 48},
      {"conv2d", R"(module @m {
  graph @main(%x: f32[1,6,7,7]) {
    %w = Constant() {value = )" + literal({6, 1, 3, 3}, 8) + R"(} : f32[6,1,3,3]
    %c = Conv(%x, %w) {group = 6, pads = [1, 1, 1, 1]} : f32[1,6,7,7]
    %k = Clip(%c) : f32[1,6,7,7]
    return %k
  }
})",
       "Conv", 48},
      {"conv2d", R"(module @m {
  graph @main(%x: f32[1,16,5,6], %y: f32[1,8,5,6]) {
    %w = Constant() {value = )" + literal({8, 16, 1, 1}, 9) + R"(} : f32[8,16,1,1]
    %c = Conv(%x, %w) : f32[1,8,5,6]
    %a = Add(%c, %y) : f32[1,8,5,6]
    return %a
  }
})",
       "Conv", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[1,3,9,9]) {
    %p = MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]} : f32[1,3,5,5]
    return %p
  }
})",
       "MaxPool", 48},
      // CPU pools read a copy bordered with -inf / 0: negative inputs (a -inf border, not 0),
      // ceil_mode's last window past the end padding, dilation, rows whose last vector of
      // output pixels is moved back (widths 6 and 11), average counts with and without pads.
      {"rowwise", R"(module @m {
  graph @main(%x: f32[1,2,12,12]) {
    %n = Neg(%x) : f32[1,2,12,12]
    %p = MaxPool(%n) {kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1} : f32[1,2,6,6]
    %h = Add(%p, %p) : f32[1,2,6,6]
    return %h
  }
})",
       "MaxPool", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[1,2,11,11]) {
    %p = AveragePool(%x) {kernel_shape = [9, 9], pads = [1, 1, 1, 1]} : f32[1,2,5,5]
    return %p
  }
})",
       "AveragePool", 48},  // 81 taps: more than the CPU kernel unrolls, so the checked loops
      {"rowwise", R"(module @m {
  graph @main(%x: f32[1,3,13,11]) {
    %n = Neg(%x) : f32[1,3,13,11]
    %p = MaxPool(%n) {kernel_shape = [3, 3], pads = [2, 2, 2, 2], dilations = [2, 2]} : f32[1,3,13,11]
    return %p
  }
})",
       "MaxPool", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[1,2,10,10]) {
    %p = AveragePool(%x) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1, count_include_pad = 1} : f32[1,2,6,6]
    return %p
  }
})",
       "AveragePool", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[1,3,9,9]) {
    %p = AveragePool(%x) {kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1} : f32[1,3,5,5]
    return %p
  }
})",
       "AveragePool", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[2,3,8,8]) {
    %p = AveragePool(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], count_include_pad = 0} : f32[2,3,8,8]
    %g = GlobalAveragePool(%p) : f32[2,3,1,1]
    return %g
  }
})",
       "GlobalAveragePool", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[2,5,7]) {
    %e = Exp(%x) : f32[2,5,7]
    %s = ReduceMean(%e) {axes = [0, 2], keepdims = 1} : f32[1,5,1]
    %q = Sqrt(%s) : f32[1,5,1]
    return %q
  }
})",
       "ReduceMean", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[2,5,7]) {
    %s = ReduceMax(%x) {axes = [1], keepdims = 0} : f32[2,7]
    return %s
  }
})",
       "ReduceMax", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[3,4,6]) {
    %s = Softmax(%x) {axis = 1} : f32[3,4,6]
    return %s
  }
})",
       "Softmax", 48},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[2,3,16]) {
    %g = Constant() {value = )" + literal({16}, 10) + R"(} : f32[16]
    %b = Constant() {value = )" + literal({16}, 11) + R"(} : f32[16]
    %n = LayerNormalization(%x, %g, %b) {axis = -1} : f32[2,3,16]
    return %n
  }
})",
       "LayerNormalization", 48},
      // Graph values named like softmax's kernel-local rows (rowmax, exps) get parameter names of their own.
      {"rowwise", R"(module @m {
  graph @main(%rowmax: f32[5,40]) {
    %s = Softmax(%rowmax) {axis = -1} : f32[5,40]
    %t = Constant() {value = tensor<f32[]: [3.0]>} : f32[]
    %m = Mul(%s, %t) : f32[5,40]
    return %m
  }
})",
       "Softmax", 48},
      // Along a strided axis, and under BERT's attention mask (the masked
      // scores' exp underflows to 0, through no subnormal step).
      {"rowwise", R"(module @m {
  graph @main(%x: f32[2,32,3]) {
    %s = LogSoftmax(%x) {axis = 1} : f32[2,32,3]
    return %s
  }
})",
       "LogSoftmax", 16},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[3,32]) {
    %k = Constant() {value = tensor<f32[32]: [0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0, 0.0, 0.0, -10000.0]>} : f32[32]
    %a = Add(%x, %k) : f32[3,32]
    %exps = Softmax(%a) {axis = -1} : f32[3,32]
    return %exps
  }
})",
       "Softmax", 16},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[4,24]) {
    %s = kiln::FastSoftmax(%x) {axis = -1} : f32[4,24]
    return %s
  }
})",
       "FastSoftmax", 16},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[3,3,20]) {
    %g = Constant() {value = )" + literal({3, 20}, 12) + R"(} : f32[3,20]
    %n = LayerNormalization(%x, %g) {axis = 1} : f32[3,3,20]
    %r = Relu(%n) : f32[3,3,20]
    return %r
  }
})",
       "LayerNormalization", 48},
      // Rows longer than the CPU's widest vector (64 lanes): the store pass
      // loops over 64-lane vectors, then one lane (129) or an 8-lane vector (200).
      {"rowwise", R"(module @m {
  graph @main(%x: f32[2,129]) {
    %g = Constant() {value = )" + literal({129}, 13) + R"(} : f32[129]
    %n = LayerNormalization(%x, %g) {axis = -1} : f32[2,129]
    return %n
  }
})",
       "LayerNormalization", 16},
      {"rowwise", R"(module @m {
  graph @main(%x: f32[2,200]) {
    %s = Softmax(%x) {axis = -1} : f32[2,200]
    %t = Constant() {value = tensor<f32[]: [2.0]>} : f32[]
    %m = Mul(%s, %t) : f32[2,200]
    return %m
  }
})",
       "Softmax", 16},
      // kiln::Attention: batch dims, a mask broadcast over the batch and an epilogue; rows and keys
      // that no tile size divides (the last tiles moved back); rows of 40 keys, split unevenly
      // by the GPU's lanes; a mask of -inf over a row's first keys (the online softmax's
      // running maximum stays -inf until the first unmasked key).
      {"attention", R"(module @m {
  graph @main(%q: f32[2,5,7], %k: f32[2,7,13], %v: f32[2,13,6], %mask: f32[5,13]) {
    %o = kiln::Attention(%q, %k, %v, %mask) {scale = 0.37} : f32[2,5,6]
    %r = Relu(%o) : f32[2,5,6]
    return %r
  }
})",
       "Attention", 48},
      {"attention", R"(module @m {
  graph @main(%q: f32[1,2,40,16], %k: f32[1,2,16,40], %v: f32[1,2,40,24]) {
    %o = kiln::Attention(%q, %k, %v) {scale = 0.25} : f32[1,2,40,24]
    return %o
  }
})",
       "Attention", 48},
      {"attention", R"(module @m {
  graph @main(%q: f32[3,4,8], %k: f32[3,8,6], %v: f32[3,6,5]) {
    %mask = Constant() {value = tensor<f32[4,6]: [-inf, -inf, -inf, 0, 0, 0, -inf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -inf, -inf, -inf, -inf, -inf, 0, -inf]>} : f32[4,6]
    %o = kiln::Attention(%q, %k, %v, %mask) {scale = 1.0} : f32[3,4,5]
    return %o
  }
})",
       "Attention", 48},
      {"injective", R"(module @m {
  graph @main(%x: f32[2,3,4], %y: f32[4], %i: i64[2,2]) {
    %a = Add(%x, %y) : f32[2,3,4]
    %t = Transpose(%a) {perm = [2, 0, 1]} : f32[4,2,3]
    %shape = Constant() {value = tensor<i64[2]: [8, 3]>} : i64[2]
    %r = Reshape(%t, %shape) : f32[8,3]
    %st = Constant() {value = tensor<i64[1]: [1]>} : i64[1]
    %en = Constant() {value = tensor<i64[1]: [7]>} : i64[1]
    %ax = Constant() {value = tensor<i64[1]: [0]>} : i64[1]
    %s = Slice(%r, %st, %en, %ax) : f32[6,3]
    %c = Concat(%s, %r) {axis = 0} : f32[14,3]
    %p0 = Constant() {value = tensor<i64[4]: [1, 0, 0, 2]>} : i64[4]
    %pd = Pad(%c, %p0) : f32[15,5]
    %g = Gather(%pd, %i) {axis = 0} : f32[2,2,5]
    %z = Constant() {value = tensor<f32[]: [0.0]>} : f32[]
    %cond = Greater(%g, %z) : bool[2,2,5]
    %e = Exp(%g) : f32[2,2,5]
    %w = Where(%cond, %g, %e) : f32[2,2,5]
    return %w, %c
  }
})",
       "injective", 48},
      {"injective", R"(module @m {
  graph @main(%a: f32[1,2,3,8], %b: f32[1,1,3,8], %c: f32[1,3,3,8], %d: f32[1,2,3,8], %e: f32[1,4,3,8], %s: f32[8]) {
    %k = Concat(%a, %b, %c, %d, %e) {axis = 1} : f32[1,12,3,8]
    %m = Mul(%k, %s) : f32[1,12,3,8]
    %r = Relu(%m) : f32[1,12,3,8]
    %t = Transpose(%k) {perm = [0, 2, 3, 1]} : f32[1,3,8,12]
    return %r, %t
  }
})",
       "injective", 48},
      {"injective", R"(module @m {
  graph @main(%x: f32[3,8], %b: f32[8], %t: f32[8,3]) {
    %a = Add(%x, %b) : f32[3,8]
    %tt = Transpose(%t) {perm = [1, 0]} : f32[3,8]
    %m = Mul(%a, %tt) : f32[3,8]
    %r = Relu(%m) : f32[3,8]
    return %r
  }
})",
       "injective", 48},
  };
  std::vector<TemplateCase> out;
  for (TemplateCase& c : all)
    if (family.empty() || c.family == family) out.push_back(std::move(c));
  return out;
}

}  // namespace kiln::testing
