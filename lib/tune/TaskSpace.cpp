//===- lib/tune/TaskSpace.cpp - A knob space by index ----------------------===//
//
// See kiln/tune/SearchStrategy.h (TaskSpace). Features come from lowering
// the representative group with the configuration (kernel IR statistics)
// next to the knob values; the same lowering gives the code key.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "kiln/support/Hash.h"
#include "kiln/tune/ScheduleFeatures.h"
#include "kiln/tune/SearchStrategy.h"

namespace kiln::tune {

using namespace codegen;

TaskSpace::TaskSpace(const TuningTask& task) : task_(task), size_(task.space.size()) {}

std::vector<size_t> TaskSpace::digits(uint64_t index) const {
  std::vector<size_t> d;
  for (const Knob& k : task_.space.knobs) {
    d.push_back(size_t(index % k.values.size()));
    index /= k.values.size();
  }
  return d;
}

std::vector<double> TaskSpace::positions(uint64_t index) const {
  const std::vector<size_t> d = digits(index);
  std::vector<double> p;
  for (size_t k = 0; k < d.size(); ++k) {
    const size_t n = task_.space.knobs[k].values.size();
    p.push_back(n > 1 ? double(d[k]) / double(n - 1) : 0.0);
  }
  return p;
}

uint64_t TaskSpace::fromDigits(const std::vector<size_t>& digits) const {
  uint64_t index = 0;
  for (size_t i = task_.space.knobs.size(); i-- > 0;) index = index * task_.space.knobs[i].values.size() + digits[i];
  return index;
}

uint64_t TaskSpace::indexOf(const Config& c) const {
  std::vector<size_t> d;
  for (const Knob& k : task_.space.knobs) {
    auto it = c.find(k.name);
    int64_t v = it == c.end() ? k.defaultValue : it->second;
    auto at = std::find(k.values.begin(), k.values.end(), v);
    d.push_back(at == k.values.end() ? 0 : size_t(at - k.values.begin()));
  }
  return fromDigits(d);
}

uint64_t TaskSpace::neighbour(uint64_t index, SplitMix64& rng) const {
  std::vector<size_t> movable;
  for (size_t i = 0; i < task_.space.knobs.size(); ++i)
    if (task_.space.knobs[i].values.size() > 1) movable.push_back(i);
  if (movable.empty()) return index;
  std::vector<size_t> d = digits(index);
  size_t knob = movable[rng.below(movable.size())], n = task_.space.knobs[knob].values.size();
  d[knob] = (d[knob] + 1 + rng.below(n - 1)) % n;  // any other value
  return fromDigits(d);
}

std::vector<uint64_t> TaskSpace::neighbours(uint64_t index) const {
  std::vector<uint64_t> out;
  const std::vector<size_t> d = digits(index);
  for (size_t k = 0; k < d.size(); ++k)
    for (size_t v = 0; v < task_.space.knobs[k].values.size(); ++v) {
      if (v == d[k]) continue;
      std::vector<size_t> moved = d;
      moved[k] = v;
      out.push_back(fromDigits(moved));
    }
  return out;
}

const TaskSpace::Lowered& TaskSpace::lowered(uint64_t index) {
  auto it = lowered_.find(index);
  if (it == lowered_.end()) {
    Config c = config(index);
    Expected<LoweredKernel> lk = lowerGroup(*task_.groups.front(), task_.target, &c);
    Lowered l;
    if (lk) {
      l.features = scheduleFeatures(task_.space, c, lk->kernel);
      l.codeKey = hashString(kernelBodyKey(lk->kernel));
    }
    it = lowered_.emplace(index, std::move(l)).first;
  }
  return it->second;
}

const std::vector<float>* TaskSpace::features(uint64_t index) {
  const Lowered& l = lowered(index);
  return l.features ? &*l.features : nullptr;
}

std::optional<uint64_t> TaskSpace::codeKey(uint64_t index) { return lowered(index).codeKey; }

}  // namespace kiln::tune
