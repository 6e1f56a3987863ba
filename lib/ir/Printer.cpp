//===- lib/ir/Printer.cpp - Text IR printer --------------------------------===//
//
// Deterministic printing: attributes are sorted by name, resources are named
// after the values that hold them (made unique) and listed in first-use order.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Printer.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>
#include <vector>

#include "kiln/ir/OpSchema.h"

namespace kiln::ir {

std::string formatFloat(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

static bool isBareChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string quoteString(const std::string& s) {
  std::string out = "\"";
  static const char* kHex = "0123456789abcdef";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string formatName(const std::string& name) {
  bool bare = !name.empty();
  for (char c : name) bare = bare && isBareChar(c);
  // Names that read as keywords or numbers are quoted to stay unambiguous.
  if (bare && (name == "none" || (name[0] >= '0' && name[0] <= '9') || name[0] == '.')) bare = false;
  return bare ? name : quoteString(name);
}

namespace {

class Printer {
 public:
  explicit Printer(const PrintOptions& options) : options_(options) {}

  void module(const Module& m) {
    os_ << "module @" << formatName(m.name.empty() ? std::string("model") : m.name) << " {\n";
    os_ << "  ir_version = " << m.irVersion << "\n";
    if (!m.producerName.empty()) os_ << "  producer = " << quoteString(m.producerName) << "\n";
    if (!m.producerVersion.empty()) os_ << "  producer_version = " << quoteString(m.producerVersion) << "\n";
    if (m.modelVersion) os_ << "  model_version = " << m.modelVersion << "\n";
    if (!m.docString.empty()) os_ << "  doc = " << quoteString(m.docString) << "\n";
    for (const auto& [domain, version] : m.opsetImports)
      os_ << "  opset " << quoteString(domain) << " = " << version << "\n";
    for (const auto& [k, v] : m.metadataProps) os_ << "  metadata " << quoteString(k) << " = " << quoteString(v) << "\n";
    graph(m.graph(), 1);
    os_ << "\n}\n";
    resources();
  }

  /// Prints `graph @name(...) {...}`; the first line is indented only when the
  /// graph starts a line (not when it is an attribute value).
  void graph(const Graph& g, int indent, bool padFirstLine = true) {
    std::string pad(size_t(indent) * 2, ' ');
    os_ << (padFirstLine ? pad : "") << "graph @" << formatName(g.name()) << "(";
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      if (i) os_ << ", ";
      os_ << "%" << formatName(g.inputs()[i]->name()) << ": " << g.inputs()[i]->type().str();
    }
    os_ << ") {\n";
    for (Node* n : g.nodes()) node(*n, indent + 1);
    os_ << pad << "  return";
    for (size_t i = 0; i < g.outputs().size(); ++i) os_ << (i ? ", %" : " %") << formatName(g.outputs()[i]->name());
    os_ << "\n" << pad << "}";
  }

  std::string str() const { return os_.str(); }

 private:
  void node(const Node& n, int indent) {
    os_ << std::string(size_t(indent) * 2, ' ');
    if (n.numOutputs() == 0) os_ << "()";
    for (size_t i = 0; i < n.numOutputs(); ++i) os_ << (i ? ", %" : "%") << formatName(n.output(i)->name());
    os_ << " = " << (n.domain().empty() ? n.opType() : n.domain() + "::" + n.opType()) << "(";
    for (size_t i = 0; i < n.numInputs(); ++i) {
      if (i) os_ << ", ";
      if (n.input(i)) os_ << "%" << formatName(n.input(i)->name());
      else os_ << "none";
    }
    os_ << ")";
    if (!n.attributes().empty()) {
      os_ << " {";
      bool first = true;
      for (const auto& [name, attr] : n.attributes()) {
        os_ << (first ? "" : ", ") << formatName(name) << " = ";
        first = false;
        attribute(attr, n, name, indent);
      }
      os_ << "}";
    }
    os_ << " : ";
    if (n.numOutputs() == 0) os_ << "()";
    for (size_t i = 0; i < n.numOutputs(); ++i) os_ << (i ? ", " : "") << n.output(i)->type().str();
    if (!n.name().empty()) os_ << " loc(" << quoteString(n.name()) << ")";
    os_ << "\n";
  }

  void attribute(const Attribute& a, const Node& n, const std::string& name, int indent) {
    auto list = [&](auto&& items, auto&& printOne, const char* emptyName) {
      if (items.empty()) {
        os_ << emptyName << "[]";
        return;
      }
      os_ << "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) os_ << ", ";
        printOne(items[i], i);
      }
      os_ << "]";
    };
    std::string base = n.op() == ir::Op::Constant && n.numOutputs() == 1 ? n.output(0)->name()
                                                                        : (n.name().empty() ? n.opType() : n.name()) + "." + name;
    switch (a.kind()) {
      case AttrKind::Int: os_ << a.i(); break;
      case AttrKind::Float: os_ << formatFloat(a.f()); break;
      case AttrKind::String: os_ << quoteString(a.s()); break;
      case AttrKind::Tensor: tensor(a.t(), base); break;
      case AttrKind::Graph: graph(*a.g(), indent + 1, false); break;
      case AttrKind::Ints: list(a.ints(), [&](int64_t v, size_t) { os_ << v; }, "ints"); break;
      case AttrKind::Floats: list(a.floats(), [&](float v, size_t) { os_ << formatFloat(v); }, "floats"); break;
      case AttrKind::Strings: list(a.strings(), [&](const std::string& v, size_t) { os_ << quoteString(v); }, "strings"); break;
      case AttrKind::Tensors:
        list(a.tensors(), [&](const Tensor& t, size_t i) { tensor(t, base + "." + std::to_string(i)); }, "tensors");
        break;
      case AttrKind::Graphs:
        list(a.graphs(), [&](const std::unique_ptr<Graph>& g, size_t) { graph(*g, indent + 1, false); }, "graphs");
        break;
    }
  }

  void tensor(const Tensor& t, const std::string& base) {
    os_ << "tensor<" << t.typeString() << ": ";
    if (t.numElements() <= options_.inlineTensorLimit) {
      os_ << "[";
      dispatchDType(t.dtype(), [&]<class T>() {
        const T* p = t.data<T>();
        for (int64_t i = 0; i < t.numElements(); ++i) {
          if (i) os_ << ", ";
          if constexpr (isFloatLike<T>) os_ << formatFloat(float(p[i]));
          else if constexpr (std::is_same_v<T, bool>) os_ << (p[i] ? 1 : 0);
          else os_ << +p[i];
        }
      });
      os_ << "]>";
      return;
    }
    std::string name = base;
    for (int k = 1; usedResourceNames_.count(name); ++k) name = base + "_" + std::to_string(k);
    usedResourceNames_.insert(name);
    resources_.push_back({name, t});
    os_ << "@" << formatName(name) << ">";
  }

  void resources() {
    if (options_.elideResources || resources_.empty()) return;
    static const char* kHex = "0123456789abcdef";
    os_ << "resources {\n";
    for (const auto& [name, t] : resources_) {
      os_ << "  " << quoteString(name) << ": \"0x";
      const auto* p = static_cast<const uint8_t*>(t.rawData());
      std::string hex(t.byteSize() * 2, '0');
      for (size_t i = 0; i < t.byteSize(); ++i) {
        hex[2 * i] = kHex[p[i] >> 4];
        hex[2 * i + 1] = kHex[p[i] & 15];
      }
      os_ << hex << "\"\n";
    }
    os_ << "}\n";
  }

  const PrintOptions& options_;
  std::ostringstream os_;
  std::vector<std::pair<std::string, Tensor>> resources_;
  std::set<std::string> usedResourceNames_;
};

}  // namespace

std::string printModule(const Module& module, const PrintOptions& options) {
  Printer p(options);
  p.module(module);
  return p.str();
}

std::string printGraph(const Graph& graph, const PrintOptions& options) {
  PrintOptions o = options;
  o.elideResources = true;
  Printer p(o);
  p.graph(graph, 0);
  return p.str() + "\n";
}

}  // namespace kiln::ir
