//===- lib/passes/Pipeline.cpp - Parsing textual pipelines -----------------===//
//
// Grammar: pipeline := entry (',' entry)* ; entry := level | name ('{' opt (',' opt)* '}')? ;
// level := 'O' digit (the passes of that -O level for the pipeline's target,
// e.g. "O3,combine-parallel-conv2d");
// opt := key '=' value. Names and keys are [a-z0-9-]; values are anything
// but ',', '}' and whitespace. Whitespace around tokens is ignored.
//
//===----------------------------------------------------------------------===//
#include "kiln/passes/Pipeline.h"

#include <cctype>

#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

class PipelineParser {
 public:
  PipelineParser(std::string_view text, std::string_view target) : text_(text), target_(target) {}

  Expected<std::vector<PipelineEntry>> parse() {
    std::vector<PipelineEntry> out;
    skipSpace();
    if (pos_ == text_.size()) return out;  // the empty pipeline
    while (true) {
      skipSpace();
      if (pos_ + 1 < text_.size() && text_[pos_] == 'O' && std::isdigit(uint8_t(text_[pos_ + 1]))) {
        const size_t at = pos_;
        const int level = text_[pos_ + 1] - '0';
        pos_ += 2;
        Expected<std::vector<PipelineEntry>> passes = optLevelPipeline(level, target_);
        if (!passes) return errorAt(at, passes.error().message());
        out.insert(out.end(), passes->begin(), passes->end());
      } else {
        KILN_ASSIGN(PipelineEntry entry, parseEntry());
        out.push_back(std::move(entry));
      }
      skipSpace();
      if (pos_ == text_.size()) return out;
      if (text_[pos_] != ',') return error("expected ',' between passes");
      ++pos_;
    }
  }

 private:
  Expected<PipelineEntry> parseEntry() {
    skipSpace();
    size_t at = pos_;
    std::string name = word();
    if (name.empty()) return error("expected a pass name");
    const PassInfo* pass = findPass(name);
    if (!pass) return errorAt(at, "unknown pass '" + name + "' (see `kiln passes list`)");
    std::map<std::string, std::string> given;
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == '{') {
      ++pos_;
      while (true) {
        skipSpace();
        size_t keyAt = pos_;
        std::string key = word();
        if (key.empty()) return error("expected an option name");
        skipSpace();
        if (pos_ >= text_.size() || text_[pos_] != '=') return error("expected '=' after option '" + key + "'");
        ++pos_;
        skipSpace();
        size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' && !std::isspace(uint8_t(text_[pos_])))
          ++pos_;
        std::string value(text_.substr(start, pos_ - start));
        if (value.empty()) return error("option '" + key + "' has no value");
        if (given.count(key)) return errorAt(keyAt, "option '" + key + "' given twice");
        given[key] = value;
        skipSpace();
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < text_.size() && text_[pos_] == '}') {
          ++pos_;
          break;
        }
        return error("expected ',' or '}' in the options of '" + name + "'");
      }
    }
    KILN_ASSIGN(PassOptions options, validate(*pass, given, at));
    return PipelineEntry{pass, std::move(options)};
  }

  Expected<PassOptions> validate(const PassInfo& pass, const std::map<std::string, std::string>& given, size_t at) {
    std::map<std::string, std::string> values = withDefaultOptions(pass).options.values();
    for (const auto& [key, value] : given) {
      const PassOptionSpec* spec = nullptr;
      for (const PassOptionSpec& s : pass.options)
        if (s.name == key) spec = &s;
      if (!spec) {
        std::string known;
        for (const PassOptionSpec& s : pass.options) known += (known.empty() ? "" : ", ") + s.name;
        return errorAt(at, "pass '" + pass.name + "' has no option '" + key + "'" +
                               (known.empty() ? " (it takes none)" : " (options: " + known + ")"));
      }
      if (spec->kind == PassOptionSpec::Kind::Int) {
        size_t used = 0;
        bool ok = true;
        try {
          std::stoll(value, &used);
        } catch (...) {
          ok = false;
        }
        if (!ok || used != value.size())
          return errorAt(at, "option '" + key + "' of '" + pass.name + "' must be an integer, not '" + value + "'");
      } else if (spec->kind == PassOptionSpec::Kind::Bool && value != "true" && value != "false") {
        return errorAt(at, "option '" + key + "' of '" + pass.name + "' must be true or false, not '" + value + "'");
      }
      values[key] = value;
    }
    return PassOptions(std::move(values));
  }

  std::string word() {
    size_t start = pos_;
    while (pos_ < text_.size() && (std::islower(uint8_t(text_[pos_])) || std::isdigit(uint8_t(text_[pos_])) ||
                                   text_[pos_] == '-'))
      ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(uint8_t(text_[pos_]))) ++pos_;
  }
  Error error(const std::string& message) { return errorAt(pos_, message); }
  Error errorAt(size_t at, const std::string& message) {
    return Error(ErrorCode::InvalidArgument,
                 "pipeline '" + std::string(text_) + "', at character " + std::to_string(at + 1) + ": " + message);
  }

  std::string_view text_;
  std::string_view target_;
  size_t pos_ = 0;
};

}  // namespace

Expected<std::vector<PipelineEntry>> parsePipeline(std::string_view text, std::string_view target) {
  return PipelineParser(text, target).parse();
}

Expected<std::vector<PipelineEntry>> precisionPasses(const std::string& precision) {
  if (precision == "f32" || precision == "tf32") return std::vector<PipelineEntry>{};
  if (precision == "f16" || precision == "bf16") return parsePipeline("to-mixed-precision{dtype=" + precision + "}");
  return Error(ErrorCode::InvalidArgument, "unknown precision '" + precision + "' (f32, tf32, f16, bf16)");
}

bool applicableWithDefaults(const PassInfo& pass, const ir::Graph& graph) {
  return !pass.applicable || pass.applicable(graph, withDefaultOptions(pass).options);
}

PipelineEntry withDefaultOptions(const PassInfo& pass) {
  std::map<std::string, std::string> values;
  for (const PassOptionSpec& spec : pass.options) values[spec.name] = spec.defaultValue;
  return PipelineEntry{&pass, PassOptions(std::move(values))};
}

std::vector<PipelineEntry> pipelineOf(const std::vector<const PassInfo*>& passes) {
  std::vector<PipelineEntry> pipeline;
  for (const PassInfo* p : passes) pipeline.push_back(withDefaultOptions(*p));
  return pipeline;
}

std::string printPipeline(const std::vector<PipelineEntry>& pipeline) {
  std::string out;
  for (const PipelineEntry& e : pipeline) {
    if (!out.empty()) out += ",";
    out += e.pass->name;
    std::string opts;
    for (const PassOptionSpec& spec : e.pass->options) {
      const std::string& v = e.options.values().at(spec.name);
      if (v != spec.defaultValue) opts += (opts.empty() ? "" : ",") + spec.name + "=" + v;
    }
    if (!opts.empty()) out += "{" + opts + "}";
  }
  return out;
}

}  // namespace kiln::passes
