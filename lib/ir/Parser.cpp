//===- lib/ir/Parser.cpp - Text IR lexer and recursive-descent parser ------===//
//
// A recursive-descent parser over TextLexer's tokens that builds the module
// through the Graph API,
// resolving value references through nested scopes. Tensors that reference
// resources are patched once the trailing resources section has been read.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Parser.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "TextLexer.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/ir/Verifier.h"

namespace kiln::ir {
namespace {

struct ResourceFixup {
  Node* node;
  std::string attr;
  int64_t listIndex;  // -1 for a single tensor attribute
  std::string resource;
  DType dtype;
  Dims dims;
  Token where;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : lex_(text, file) {}

  Expected<std::unique_ptr<Module>> parse() {
    KILN_TRY(advance());
    auto module = std::make_unique<Module>();
    KILN_TRY(expectKeyword("module"));
    if (tok_.kind != Tok::At) return err("expected '@name' after 'module'");
    module->name = tok_.text;
    KILN_TRY(advance());
    KILN_TRY(expect(Tok::LBrace, "'{'"));
    bool sawGraph = false;
    while (tok_.kind != Tok::RBrace) {
      if (tok_.kind != Tok::Ident) return err("expected a module field or 'graph'");
      std::string key = tok_.text;
      if (key == "graph") {
        if (sawGraph) return err("a module has exactly one main graph");
        sawGraph = true;
        KILN_TRY(parseGraph(module->graph()));
        continue;
      }
      KILN_TRY(advance());
      if (key == "opset" || key == "metadata") {
        KILN_ASSIGN(std::string name, string());
        KILN_TRY(expect(Tok::Equal, "'='"));
        if (key == "opset") {
          KILN_ASSIGN(int64_t v, integer());
          module->opsetImports[name] = v;
        } else {
          KILN_ASSIGN(std::string v, string());
          module->metadataProps.emplace_back(name, v);
        }
        continue;
      }
      KILN_TRY(expect(Tok::Equal, "'='"));
      if (key == "ir_version") {
        KILN_ASSIGN(module->irVersion, integer());
      } else if (key == "model_version") {
        KILN_ASSIGN(module->modelVersion, integer());
      } else if (key == "producer") {
        KILN_ASSIGN(module->producerName, string());
      } else if (key == "producer_version") {
        KILN_ASSIGN(module->producerVersion, string());
      } else if (key == "doc") {
        KILN_ASSIGN(module->docString, string());
      } else {
        return err("unknown module field '" + key + "'");
      }
    }
    if (!sawGraph) return err("module has no graph");
    KILN_TRY(advance());
    if (tok_.kind == Tok::Ident && tok_.text == "resources") KILN_TRY(parseResources());
    if (tok_.kind != Tok::End) return err("unexpected text after the module");
    KILN_TRY(applyFixups());
    KILN_TRY(verify(module->graph(), {.checkTypes = false}));  // types: the caller decides
    return module;
  }

 private:
  // --- token helpers -------------------------------------------------------
  Status advance() {
    KILN_ASSIGN(tok_, lex_.next());
    return Status::ok();
  }
  Error err(const std::string& msg) const { return lex_.error(tok_, msg); }
  Status expect(Tok kind, const char* what) {
    if (tok_.kind != kind) return err(std::string("expected ") + what);
    return advance();
  }
  Status expectKeyword(const char* kw) {
    if (tok_.kind != Tok::Ident || tok_.text != kw) return err(std::string("expected '") + kw + "'");
    return advance();
  }
  Expected<std::string> string() {
    if (tok_.kind != Tok::String) return err("expected a string");
    std::string s = tok_.text;
    KILN_TRY(advance());
    return s;
  }
  Expected<int64_t> integer() {
    if (tok_.kind != Tok::Number) return err("expected an integer");
    int64_t v = 0;
    const std::string& t = tok_.text;
    const char* b = t.data() + (t[0] == '+' ? 1 : 0);
    auto [p, ec] = std::from_chars(b, t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size()) return err("'" + t + "' is not an integer");
    KILN_TRY(advance());
    return v;
  }
  bool isFloatToken() const {
    if (tok_.kind == Tok::Ident) return tok_.text == "inf" || tok_.text == "nan";
    return tok_.kind == Tok::Number && tok_.text.find_first_of(".eEn") != std::string::npos;
  }
  template <class F>
  Expected<F> floating() {
    std::string t = tok_.text;
    if (tok_.kind != Tok::Number && !(tok_.kind == Tok::Ident && (t == "inf" || t == "nan"))) return err("expected a number");
    F v;
    if (t == "inf" || t == "+inf") v = std::numeric_limits<F>::infinity();
    else if (t == "-inf") v = -std::numeric_limits<F>::infinity();
    else if (t == "nan") v = std::numeric_limits<F>::quiet_NaN();
    else {
      const char* b = t.data() + (t[0] == '+' ? 1 : 0);
      auto [p, ec] = std::from_chars(b, t.data() + t.size(), v);
      if (ec != std::errc() || p != t.data() + t.size()) return err("'" + t + "' is not a number");
    }
    KILN_TRY(advance());
    return v;
  }
  Expected<std::string> name(Tok kind, const char* what) {
    if (tok_.kind != kind) return err(std::string("expected ") + what);
    std::string s = tok_.text;
    KILN_TRY(advance());
    return s;
  }

  // --- types ---------------------------------------------------------------
  Expected<Type> type() {
    if (tok_.kind != Tok::Ident) return err("expected a type");
    Token headTok = tok_;
    std::string head = tok_.text;
    KILN_TRY(advance());
    if (head == "seq" || head == "opt") {
      KILN_TRY(expect(Tok::Less, "'<'"));
      KILN_ASSIGN(Type elem, type());
      KILN_TRY(expect(Tok::Greater, "'>'"));
      return head == "seq" ? Type::sequence(elem) : Type::optional(elem);
    }
    auto dtype = parseDType(head);
    if (!dtype && head != "undefined") return lex_.error(headTok, "unknown element type '" + head + "'");
    DType dt = dtype.value_or(DType::Undefined);
    KILN_TRY(expect(Tok::LBracket, "'['"));
    if (tok_.kind == Tok::Star) {
      KILN_TRY(advance());
      KILN_TRY(expect(Tok::RBracket, "']'"));
      return Type(TensorType::unranked(dt));
    }
    Dims dims;
    std::vector<std::string> symbols;
    bool anySymbol = false;
    while (tok_.kind != Tok::RBracket) {
      if (!dims.empty()) KILN_TRY(expect(Tok::Comma, "',' or ']'"));
      if (tok_.kind == Tok::Question) {
        dims.push_back(kUnknownDim);
        symbols.emplace_back();
        KILN_TRY(advance());
      } else if (tok_.kind == Tok::Ident || tok_.kind == Tok::String) {
        dims.push_back(kUnknownDim);
        symbols.push_back(tok_.text);
        anySymbol = true;
        KILN_TRY(advance());
      } else {
        KILN_ASSIGN(int64_t d, integer());
        if (d < 0) return err("dims must be non-negative (use ? for unknown)");
        dims.push_back(d);
        symbols.emplace_back();
      }
    }
    KILN_TRY(advance());
    TensorType t(dt, dims);
    if (anySymbol) t.setDimSymbols(symbols);
    return Type(t);
  }

  // --- graphs and nodes ----------------------------------------------------
  Value* lookup(const std::string& n) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(n);
      if (f != it->end()) return f->second;
    }
    return nullptr;
  }

  Status parseGraph(Graph& g) {
    KILN_TRY(expectKeyword("graph"));
    KILN_ASSIGN(std::string gname, name(Tok::At, "'@name'"));
    g.setName(gname);
    scopes_.emplace_back();
    KILN_TRY(expect(Tok::LParen, "'('"));
    while (tok_.kind != Tok::RParen) {
      if (!g.inputs().empty()) KILN_TRY(expect(Tok::Comma, "',' or ')'"));
      KILN_ASSIGN(std::string vname, name(Tok::Percent, "'%name'"));
      KILN_TRY(expect(Tok::Colon, "':'"));
      KILN_ASSIGN(Type t, type());
      if (g.isValueNameTaken(vname)) return err("value '%" + vname + "' is defined twice");
      scopes_.back()[vname] = g.addInput(vname, t);
    }
    KILN_TRY(advance());
    KILN_TRY(expect(Tok::LBrace, "'{'"));
    while (!(tok_.kind == Tok::Ident && tok_.text == "return")) KILN_TRY(parseNode(g));
    KILN_TRY(advance());
    bool first = true;
    while (tok_.kind == Tok::Percent || (!first && tok_.kind == Tok::Comma)) {
      if (!first) KILN_TRY(expect(Tok::Comma, "','"));
      first = false;
      Token at = tok_;
      KILN_ASSIGN(std::string vname, name(Tok::Percent, "'%name'"));
      Value* v = lookup(vname);
      if (!v) return lex_.error(at, "use of undefined value '%" + vname + "'");
      g.addOutput(v);
    }
    KILN_TRY(expect(Tok::RBrace, "'}'"));
    scopes_.pop_back();
    return Status::ok();
  }

  Status parseNode(Graph& g) {
    Token start = tok_;
    size_t firstPending = pending_.size();
    std::vector<std::string> results;
    if (tok_.kind == Tok::LParen) {
      KILN_TRY(advance());
      KILN_TRY(expect(Tok::RParen, "')'"));
    } else {
      while (true) {
        KILN_ASSIGN(std::string r, name(Tok::Percent, "a result '%name' or 'return'"));
        results.push_back(r);
        if (tok_.kind != Tok::Comma) break;
        KILN_TRY(advance());
      }
    }
    KILN_TRY(expect(Tok::Equal, "'='"));
    Token opTok = tok_;
    KILN_ASSIGN(std::string op, name(Tok::Ident, "an op name"));
    std::string domain;
    if (tok_.kind == Tok::ColonColon) {
      KILN_TRY(advance());
      domain = op;
      KILN_ASSIGN(op, name(Tok::Ident, "an op name"));
    }
    const OpSchema* schema = OpRegistry::global().find(domain, op);
    if (!schema) return lex_.error(opTok, "unknown op '" + (domain.empty() ? op : domain + "::" + op) + "'");
    KILN_TRY(expect(Tok::LParen, "'('"));
    std::vector<Value*> operands;
    while (tok_.kind != Tok::RParen) {
      if (!operands.empty()) KILN_TRY(expect(Tok::Comma, "',' or ')'"));
      if (tok_.kind == Tok::Ident && tok_.text == "none") {
        operands.push_back(nullptr);
        KILN_TRY(advance());
        continue;
      }
      Token at = tok_;
      KILN_ASSIGN(std::string vname, name(Tok::Percent, "an operand '%name' or 'none'"));
      Value* v = lookup(vname);
      if (!v) return lex_.error(at, "use of undefined value '%" + vname + "'");
      operands.push_back(v);
    }
    KILN_TRY(advance());
    std::vector<std::pair<std::string, Attribute>> attrs;
    if (tok_.kind == Tok::LBrace) {
      KILN_TRY(advance());
      while (tok_.kind != Tok::RBrace) {
        if (!attrs.empty()) KILN_TRY(expect(Tok::Comma, "',' or '}'"));
        std::string aname;
        if (tok_.kind == Tok::Ident || tok_.kind == Tok::String) {
          aname = tok_.text;
          KILN_TRY(advance());
        } else {
          return err("expected an attribute name");
        }
        KILN_TRY(expect(Tok::Equal, "'='"));
        size_t before = pending_.size();
        KILN_ASSIGN(Attribute a, attribute(g));
        for (size_t i = before; i < pending_.size(); ++i)
          if (pending_[i].attr.empty()) pending_[i].attr = aname;  // nested ones are already set
        attrs.emplace_back(aname, std::move(a));
      }
      KILN_TRY(advance());
    }
    KILN_TRY(expect(Tok::Colon, "':'"));
    std::vector<Type> types;
    if (tok_.kind == Tok::LParen) {
      KILN_TRY(advance());
      KILN_TRY(expect(Tok::RParen, "')'"));
    } else {
      while (true) {
        KILN_ASSIGN(Type t, type());
        types.push_back(t);
        if (tok_.kind != Tok::Comma) break;
        KILN_TRY(advance());
      }
    }
    if (types.size() != results.size())
      return lex_.error(start, std::to_string(results.size()) + " results but " + std::to_string(types.size()) + " types");
    std::string nodeName;
    if (tok_.kind == Tok::Ident && tok_.text == "loc") {
      KILN_TRY(advance());
      KILN_TRY(expect(Tok::LParen, "'('"));
      KILN_ASSIGN(nodeName, string());
      KILN_TRY(expect(Tok::RParen, "')'"));
    }
    for (const auto& r : results)
      if (g.isValueNameTaken(r) || lookup(r)) return lex_.error(start, "value '%" + r + "' is defined twice");
    for (size_t i = 0; i < results.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (results[i] == results[j]) return lex_.error(start, "value '%" + results[i] + "' is defined twice");
    Node* node = g.createNode(*schema, operands, results, nodeName);
    for (size_t i = 0; i < types.size(); ++i) {
      node->output(i)->setType(types[i]);
      scopes_.back()[results[i]] = node->output(i);
    }
    for (auto& [aname, a] : attrs) node->setAttr(aname, std::move(a));
    for (size_t i = firstPending; i < pending_.size(); ++i)
      if (!pending_[i].node) pending_[i].node = node;  // entries of nested nodes are already set
    if (Status s = checkNodeAgainstSchema(*node); !s.isOk())
      return lex_.error(start, s.error().message());
    return Status::ok();
  }

  // --- attributes ----------------------------------------------------------
  Expected<Attribute> attribute(Graph& g) {
    if (tok_.kind == Tok::String) {
      KILN_ASSIGN(std::string s, string());
      return Attribute(s);
    }
    if (isFloatToken()) {
      KILN_ASSIGN(float f, floating<float>());
      return Attribute(f);
    }
    if (tok_.kind == Tok::Number) {
      KILN_ASSIGN(int64_t i, integer());
      return Attribute(i);
    }
    if (tok_.kind == Tok::Ident && tok_.text == "tensor") {
      KILN_ASSIGN(Tensor t, tensor(-1));
      return Attribute(t);
    }
    if (tok_.kind == Tok::Ident && tok_.text == "graph") {
      auto sub = g.createSubgraph("");
      KILN_TRY(parseGraph(*sub));
      return Attribute(std::move(sub));
    }
    if (tok_.kind == Tok::Ident) {
      static const std::map<std::string, AttrKind> kEmpty = {{"ints", AttrKind::Ints},       {"floats", AttrKind::Floats},
                                                             {"strings", AttrKind::Strings}, {"tensors", AttrKind::Tensors},
                                                             {"graphs", AttrKind::Graphs}};
      auto it = kEmpty.find(tok_.text);
      if (it == kEmpty.end()) return err("expected an attribute value");
      KILN_TRY(advance());
      KILN_TRY(expect(Tok::LBracket, "'['"));
      KILN_TRY(expect(Tok::RBracket, "']'"));
      return Attribute::emptyList(it->second);
    }
    if (tok_.kind != Tok::LBracket) return err("expected an attribute value");
    KILN_TRY(advance());
    if (tok_.kind == Tok::String) {
      std::vector<std::string> v;
      while (true) {
        KILN_ASSIGN(std::string s, string());
        v.push_back(s);
        if (tok_.kind != Tok::Comma) break;
        KILN_TRY(advance());
      }
      KILN_TRY(expect(Tok::RBracket, "']'"));
      return Attribute(v);
    }
    if (tok_.kind == Tok::Ident && tok_.text == "tensor") {
      std::vector<Tensor> v;
      while (true) {
        KILN_ASSIGN(Tensor t, tensor(int64_t(v.size())));
        v.push_back(t);
        if (tok_.kind != Tok::Comma) break;
        KILN_TRY(advance());
      }
      KILN_TRY(expect(Tok::RBracket, "']'"));
      return Attribute(v);
    }
    if (tok_.kind == Tok::Ident && tok_.text == "graph") {
      std::vector<std::unique_ptr<Graph>> v;
      while (true) {
        auto sub = g.createSubgraph("");
        KILN_TRY(parseGraph(*sub));
        v.push_back(std::move(sub));
        if (tok_.kind != Tok::Comma) break;
        KILN_TRY(advance());
      }
      KILN_TRY(expect(Tok::RBracket, "']'"));
      return Attribute(std::move(v));
    }
    // Numbers: a float list if the first element is written as a float.
    if (isFloatToken()) {
      std::vector<float> v;
      while (true) {
        KILN_ASSIGN(float f, floating<float>());
        v.push_back(f);
        if (tok_.kind != Tok::Comma) break;
        KILN_TRY(advance());
      }
      KILN_TRY(expect(Tok::RBracket, "']'"));
      return Attribute(v);
    }
    std::vector<int64_t> v;
    while (true) {
      KILN_ASSIGN(int64_t i, integer());
      v.push_back(i);
      if (tok_.kind != Tok::Comma) break;
      KILN_TRY(advance());
    }
    KILN_TRY(expect(Tok::RBracket, "']'"));
    return Attribute(v);
  }

  Expected<Tensor> tensor(int64_t listIndex) {
    Token at = tok_;
    KILN_TRY(expectKeyword("tensor"));
    KILN_TRY(expect(Tok::Less, "'<'"));
    KILN_ASSIGN(Type t, type());
    if (!t.isTensor() || !t.tensor().isStatic() || t.tensor().dtype() == DType::Undefined)
      return lex_.error(at, "a tensor literal needs a static tensor type, got " + t.str());
    DType dtype = t.tensor().dtype();
    const Dims& dims = t.tensor().dims();
    if (!checkedNumElements(dims)) return lex_.error(at, "tensor literal is too large");
    KILN_TRY(expect(Tok::Colon, "':'"));
    if (tok_.kind == Tok::At) {
      pending_.push_back({nullptr, "", listIndex, tok_.text, dtype, dims, tok_});
      KILN_TRY(advance());
      KILN_TRY(expect(Tok::Greater, "'>'"));
      return Tensor::zeros(dtype, dims);  // replaced once resources are read
    }
    KILN_TRY(expect(Tok::LBracket, "'[' or '@resource'"));
    Tensor out = Tensor::zeros(dtype, dims);
    int64_t n = out.numElements(), i = 0;
    Status s = dispatchDType(dtype, [&]<class T>() -> Status {
      T* p = out.mutableData<T>();
      while (tok_.kind != Tok::RBracket) {
        if (i > 0) KILN_TRY(expect(Tok::Comma, "',' or ']'"));
        if (i >= n) return err("tensor literal has more than " + std::to_string(n) + " elements");
        if constexpr (isFloatLike<T>) {
          if constexpr (std::is_same_v<T, double>) {
            KILN_ASSIGN(double d, floating<double>());
            p[i] = d;
          } else {
            KILN_ASSIGN(float f, floating<float>());
            p[i] = T(f);
          }
        } else {
          KILN_ASSIGN(int64_t v, integer());
          p[i] = static_cast<T>(v);
        }
        ++i;
      }
      return Status::ok();
    });
    KILN_TRY(s);
    if (i != n) return err("tensor literal has " + std::to_string(i) + " elements, type needs " + std::to_string(n));
    KILN_TRY(advance());
    KILN_TRY(expect(Tok::Greater, "'>'"));
    return out;
  }

  // --- resources -----------------------------------------------------------
  Status parseResources() {
    KILN_TRY(advance());
    KILN_TRY(expect(Tok::LBrace, "'{'"));
    while (tok_.kind != Tok::RBrace) {
      Token at = tok_;
      KILN_ASSIGN(std::string rname, string());
      KILN_TRY(expect(Tok::Colon, "':'"));
      KILN_ASSIGN(std::string hex, string());
      if (hex.size() < 2 || hex.compare(0, 2, "0x") != 0 || hex.size() % 2 != 0)
        return lex_.error(at, "resource '" + rname + "' must be a \"0x...\" hex string");
      std::string bytes((hex.size() - 2) / 2, '\0');
      for (size_t i = 0; i < bytes.size(); ++i) {
        int hi = hexDigitValue(hex[2 + 2 * i]), lo = hexDigitValue(hex[3 + 2 * i]);
        if (hi < 0 || lo < 0) return lex_.error(at, "resource '" + rname + "' has a non-hex digit");
        bytes[i] = char(hi * 16 + lo);
      }
      if (!resources_.emplace(rname, std::move(bytes)).second)
        return lex_.error(at, "resource '" + rname + "' is defined twice");
    }
    return advance();
  }

  Status applyFixups() {
    for (const ResourceFixup& f : pending_) {
      auto it = resources_.find(f.resource);
      if (it == resources_.end())
        return lex_.error(f.where, "resource '@" + f.resource +
                                       "' is not defined (was this IR printed with weights elided?)");
      size_t bytes = size_t(numElements(f.dims)) * dtypeSize(f.dtype);
      if (it->second.size() != bytes)
        return lex_.error(f.where, "resource '@" + f.resource + "' holds " + std::to_string(it->second.size()) +
                                       " bytes, its type needs " + std::to_string(bytes));
      Tensor t = Tensor::zeros(f.dtype, f.dims);
      if (bytes) std::memcpy(t.mutableRawData(), it->second.data(), bytes);
      if (f.dtype == DType::Bool) {
        auto* p = static_cast<uint8_t*>(t.mutableRawData());
        for (size_t i = 0; i < bytes; ++i) p[i] = p[i] ? 1 : 0;
      }
      if (f.listIndex < 0) {
        f.node->setAttr(f.attr, Attribute(t));
      } else {
        std::vector<Tensor> list = f.node->findAttr(f.attr)->tensors();
        list[size_t(f.listIndex)] = t;
        f.node->setAttr(f.attr, Attribute(list));
      }
    }
    return Status::ok();
  }

  Lexer lex_;
  Token tok_;
  std::vector<std::unordered_map<std::string, Value*>> scopes_;
  std::vector<ResourceFixup> pending_;
  std::map<std::string, std::string> resources_;
};

}  // namespace

Expected<std::unique_ptr<Module>> parseModule(std::string_view text, const std::string& fileName) {
  Parser p(text, fileName);
  return p.parse();
}

}  // namespace kiln::ir
