//===- lib/codegen/ScheduleTemplate.cpp - Knob spaces and group lowering ---===//
//
// Knob-space arithmetic (size, mixed-radix enumeration, features, checks),
// the config text form ("tm=4,tn=32"), constants packed into GEMM panels
// (into new storage, or over a source nobody else holds), the template
// table and lowerGroup, which instantiates a template and verifies the
// kernel it produced.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/ScheduleTemplate.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "TensorExpr.h"
#include "templates/Templates.h"

namespace kiln::codegen {

uint64_t KnobSpace::size() const {
  uint64_t n = 1;
  for (const Knob& k : knobs) n *= std::max<uint64_t>(k.values.size(), 1);
  return n;
}

Config KnobSpace::defaultConfig() const {
  Config c;
  for (const Knob& k : knobs) c[k.name] = k.defaultValue;
  return c;
}

Config KnobSpace::configAt(uint64_t i) const {
  Config c;
  for (const Knob& k : knobs) {
    c[k.name] = k.values[i % k.values.size()];
    i /= k.values.size();
  }
  return c;
}

std::vector<double> KnobSpace::features(const Config& c) const {
  std::vector<double> f;
  for (const Knob& k : knobs) f.push_back(double(c.at(k.name)));
  return f;
}

Status KnobSpace::check(const Config& c) const {
  for (const auto& [name, value] : c) {
    auto k = std::find_if(knobs.begin(), knobs.end(), [&](const Knob& x) { return x.name == name; });
    if (k == knobs.end()) return makeError(ErrorCode::InvalidArgument, "unknown knob '", name, "' (knobs: ", str(), ")");
    if (std::find(k->values.begin(), k->values.end(), value) == k->values.end())
      return makeError(ErrorCode::InvalidArgument, "knob ", name, "=", value, " is not a candidate (", str(), ")");
  }
  for (const Knob& k : knobs)
    if (!c.count(k.name)) return makeError(ErrorCode::InvalidArgument, "knob '", k.name, "' has no value");
  return Status::ok();
}

std::string KnobSpace::str() const {
  std::ostringstream os;
  for (size_t i = 0; i < knobs.size(); ++i) {
    os << (i ? " " : "") << knobs[i].name << "={";
    for (size_t j = 0; j < knobs[i].values.size(); ++j) os << (j ? "," : "") << knobs[i].values[j];
    os << "}" << (knobs[i].approximate ? "(approximate)" : "");
  }
  return os.str();
}

std::string configToString(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

Expected<Config> parseConfig(const std::string& text) {
  Config c;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return makeError(ErrorCode::InvalidArgument, "config item '", item, "' is not name=value");
    try {
      size_t used = 0;
      int64_t v = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument(item);
      c[item.substr(0, eq)] = v;
    } catch (const std::exception&) {
      return makeError(ErrorCode::InvalidArgument, "config item '", item, "' has no integer value");
    }
  }
  return c;
}

namespace {

/// The pack's [K, N] extents of `source`, or an error where it is no panel pack of a matrix.
Expected<std::pair<int64_t, int64_t>> panelExtents(const Tensor& source, const PackSpec& spec) {
  if (spec.kind != "panels" || source.rank() != 2 || spec.width <= 0)
    return makeError(ErrorCode::Internal, "cannot pack a ", source.typeString(), " constant as ", spec.kind);
  return std::pair{spec.transposed ? source.dim(1) : source.dim(0), spec.transposed ? source.dim(0) : source.dim(1)};
}

/// Writes the [ceil(n / w), k, w] panels of the [k, n] (or transposed [n, k]) matrix at `src` to `dst`.
void writePanels(const uint8_t* src, int64_t k, int64_t n, size_t elem, const PackSpec& spec, uint8_t* dst) {
  const int64_t w = spec.width, panels = ceilDiv(n, w);
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t cols = std::min(w, n - p * w);
    uint8_t* panel = dst + size_t(p * k * w) * elem;
    if (cols < w)  // the last panel's missing columns are zero (the artifact's bytes are the same every compile)
      for (int64_t kk = 0; kk < k; ++kk) std::memset(panel + size_t(kk * w + cols) * elem, 0, size_t(w - cols) * elem);
    if (!spec.transposed) {  // a panel row is a contiguous run of the source row
      for (int64_t kk = 0; kk < k; ++kk)
        std::memcpy(panel + size_t(kk * w) * elem, src + size_t(kk * n + p * w) * elem, size_t(cols) * elem);
      continue;
    }
    // Transposed: panel column j is source row p * w + j, read contiguously,
    // kBlock rows of the panel at a time so the strided writes stay in L1
    // (a whole 768-deep panel at once is 2.7x slower on BERT-base's weights).
    constexpr int64_t kBlock = 32;
    byElementSize(elem, [&]<class U>() {
      for (int64_t k0 = 0; k0 < k; k0 += kBlock) {
        const int64_t k1 = std::min(k, k0 + kBlock);
        for (int64_t j = 0; j < cols; ++j) {
          const U* from = reinterpret_cast<const U*>(src) + (p * w + j) * k;
          U* to = reinterpret_cast<U*>(panel) + j;
          for (int64_t kk = k0; kk < k1; ++kk) to[kk * w] = from[kk];
        }
      }
    });
  }
}

}  // namespace

Expected<Tensor> packConstant(const Tensor& source, const PackSpec& spec) {
  KILN_ASSIGN(auto extents, panelExtents(source, spec));
  const auto [k, n] = extents;
  Tensor out = Tensor::forWrite(source.dtype(), {ceilDiv(n, spec.width), k, spec.width});  // every byte written
  writePanels(static_cast<const uint8_t*>(source.rawData()), k, n, dtypeSize(source.dtype()), spec,
              static_cast<uint8_t*>(out.mutableRawData()));
  return out;
}

Expected<Tensor> packConstantInPlace(Tensor&& source, const PackSpec& spec, std::shared_ptr<kiln::Buffer>& scratch) {
  KILN_ASSIGN(auto extents, panelExtents(source, spec));
  const auto [k, n] = extents;
  const std::shared_ptr<kiln::Buffer>& buffer = source.buffer();
  if (n % spec.width != 0 || buffer.use_count() != 1 || !buffer->isMutable()) return packConstant(source, spec);
  if (!scratch || scratch->size() < source.byteSize()) scratch = kiln::Buffer::copyOf(source.rawData(), source.byteSize());
  else std::memcpy(scratch->mutableData(), source.rawData(), source.byteSize());
  writePanels(scratch->data(), k, n, dtypeSize(source.dtype()), spec, static_cast<uint8_t*>(buffer->mutableData()));
  return Tensor(source.dtype(), {n / spec.width, k, spec.width}, buffer);
}

const std::vector<const ScheduleTemplate*>& allTemplates() {
  static const std::vector<const ScheduleTemplate*> templates = {
      &matmulTemplate(), &conv2dTemplate(), &convNchwcTemplate(), &poolTemplate(), &reduceTemplate(),
      &softmaxTemplate(), &layerNormTemplate(), &attentionTemplate(), &injectiveTemplate()};
  return templates;
}

Expected<const ScheduleTemplate*> templateFor(const KernelGroup& group) {
  for (const ScheduleTemplate* t : allTemplates())
    if (t->matches(group)) return t;
  const ir::Node* n = group.anchor ? group.anchor : group.nodes.front();
  return makeError(ErrorCode::CodegenUnsupported, "no schedule template lowers ", n->qualifiedOpType(),
                   " (", kernelRoleName(group.role), ")")
      .atNode(n->displayName(), n->opType());
}

Expected<LoweredKernel> lowerGroup(const KernelGroup& group, KernelTarget target, const Config* config) {
  KILN_ASSIGN(const ScheduleTemplate* t, templateFor(group));
  KILN_ASSIGN(KnobSpace space, t->knobSpace(group, target));
  Config chosen = config ? *config : space.defaultConfig();
  if (config) KILN_TRY(space.check(chosen));
  ElementBuilder elements(group);
  Expected<Stmt> body = t->instantiate(elements, chosen, target);
  if (!body) {
    Error e = std::move(body).error();
    const ir::Node* n = group.anchor ? group.anchor : group.nodes.front();
    e.atNode(n->displayName(), n->opType());
    return e;
  }
  LoweredKernel lk;
  lk.kernel.name = group.name();
  lk.kernel.target = target;
  lk.kernel.params = elements.params();
  for (const auto& [symbol, extent] : elements.extents()) {
    lk.kernel.extents.push_back(extent);
    lk.extentSymbols.push_back(symbol);
  }
  lk.kernel.body = simplifyIndices(*body);
  lk.group = &group;
  lk.templateName = t->name();
  lk.config = chosen;
  lk.args = elements.paramValues();
  lk.packs = elements.paramPacks();
  KILN_TRY(verifyKernel(lk.kernel));
  return lk;
}

}  // namespace kiln::codegen
