//===- lib/runtime/interpreter/kernels/RandomKernels.cpp - Random generators -===//
//
// RandomNormal/Uniform(+Like), Multinomial and Bernoulli. A node's `seed`
// attribute seeds its own generator (repeatable per node); otherwise the
// interpreter's seeded generator is used. Results cannot match other
// frameworks' generators bit for bit.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

template <class F>
Status withGenerator(KernelContext& ctx, F&& f) {
  if (const ir::Attribute* s = ctx.node().findAttr("seed")) {
    std::mt19937_64 local(uint64_t(int64_t(s->f())));
    return f(local);
  }
  return f(ctx.rng());
}

enum class Dist { Normal, Uniform };
template <Dist dist>
Status kRandom(KernelContext& ctx) {
  Tensor& y = ctx.allocate(0);
  const ir::Node& n = ctx.node();
  return withGenerator(ctx, [&](std::mt19937_64& gen) {
    return forFloat(y.dtype(), [&]<class T>() {
      if constexpr (dist == Dist::Normal) {
        std::normal_distribution<double> d(n.getFloat("mean"), n.getFloat("scale"));
        for (int64_t i = 0; i < y.numElements(); ++i) y.mutableData<T>()[i] = T(d(gen));
      } else {
        std::uniform_real_distribution<double> d(n.getFloat("low"), n.getFloat("high"));
        for (int64_t i = 0; i < y.numElements(); ++i) y.mutableData<T>()[i] = T(d(gen));
      }
    });
  });
}

Status kBernoulli(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  std::vector<double> p = x.toDoubles();
  return withGenerator(ctx, [&](std::mt19937_64& gen) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    return forAny(y.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < y.numElements(); ++i) y.mutableData<T>()[i] = convertValue<T, double>(u(gen) < p[size_t(i)] ? 1.0 : 0.0);
    });
  });
}

Status kMultinomial(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  int64_t batch = x.dim(0), classes = x.dim(1), samples = ctx.node().getInt("sample_size");
  std::vector<double> logits = x.toDoubles();
  return withGenerator(ctx, [&](std::mt19937_64& gen) {
    return forInteger(y.dtype(), [&]<class T>() {
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<double> w(static_cast<size_t>(classes));
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, logits[size_t(b * classes + c)]);
        for (int64_t c = 0; c < classes; ++c) w[size_t(c)] = std::exp(logits[size_t(b * classes + c)] - mx);
        std::discrete_distribution<int64_t> d(w.begin(), w.end());
        for (int64_t s = 0; s < samples; ++s) y.mutableData<T>()[b * samples + s] = T(d(gen));
      }
    });
  });
}

}  // namespace

void registerRandomKernels(KernelRegistry& r) {
  r.add("RandomNormal", kRandom<Dist::Normal>);
  r.add("RandomNormalLike", kRandom<Dist::Normal>);
  r.add("RandomUniform", kRandom<Dist::Uniform>);
  r.add("RandomUniformLike", kRandom<Dist::Uniform>);
  r.add("Bernoulli", kBernoulli);
  r.add("Multinomial", kMultinomial);
}

}  // namespace kiln::runtime
