//===- lib/fuse/FusionDatabase.cpp - Measured partitions, kept across runs ===//
//
// See kiln/fuse/FusionDatabase.h. Hashes are written as 16 hex digits.
//
//===----------------------------------------------------------------------===//
#include "kiln/fuse/FusionDatabase.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/support/File.h"

namespace kiln::fuse {

namespace {

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::optional<uint64_t> parseHex(const nlohmann::json& j) {
  if (!j.is_string() || j.get<std::string>().size() != 16) return std::nullopt;
  const std::string s = j.get<std::string>();
  if (s.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return std::stoull(s, nullptr, 16);
}

std::optional<EvaluationStatus> parseStatus(const std::string& s) {
  for (EvaluationStatus st : {EvaluationStatus::Ok, EvaluationStatus::Invalid, EvaluationStatus::WrongOutput})
    if (s == evaluationStatusName(st)) return st;
  return std::nullopt;
}

}  // namespace

Expected<std::unique_ptr<FusionDatabase>> FusionDatabase::open(const std::string& path, uint64_t graph) {
  auto db = std::make_unique<FusionDatabase>();
  db->path_ = path, db->graph_ = graph;
  if (std::filesystem::exists(path)) {
    KILN_ASSIGN(std::string text, readFile(path));
    std::istringstream in(text);
    std::string line;
    for (size_t number = 1; std::getline(in, line); ++number) {
      if (line.empty()) continue;
      auto bad = [&](const std::string& why) {
        return makeError(ErrorCode::InvalidArgument, path, ":", number, ": ", why, " (a kiln fuse --db record)");
      };
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
      const auto g = parseHex(j.value("graph", nlohmann::json())), p = parseHex(j.value("partition", nlohmann::json()));
      if (!g || !p) return bad("graph and partition must be 16 hex digits");
      const nlohmann::json st = j.value("status", nlohmann::json());
      const auto status = parseStatus(st.is_string() ? st.get<std::string>() : "");
      if (!status) return bad("status must be ok, invalid or wrong-output");
      if (*g != graph) continue;
      Evaluation e;
      e.status = *status;
      if (e.ok()) {
        if (!j.contains("ms") || !j["ms"].is_number() || !std::isfinite(j["ms"].get<double>()) || j["ms"].get<double>() <= 0)
          return bad("an ok record needs a positive ms");
        e.ms = j["ms"].get<double>();
      }
      if (j.contains("error") && j["error"].is_string()) e.error = j["error"].get<std::string>();
      db->records_[*p] = e;
    }
  }
  db->out_.open(path, std::ios::app);
  if (!db->out_) return makeError(ErrorCode::IoError, "cannot append to ", path);
  return db;
}

Status FusionDatabase::append(uint64_t partition, const Evaluation& e) {
  nlohmann::json j = {{"graph", hex(graph_)}, {"partition", hex(partition)}, {"status", evaluationStatusName(e.status)}};
  if (e.ok()) j["ms"] = e.ms;
  if (!e.error.empty()) j["error"] = e.error;
  out_ << j.dump() << "\n" << std::flush;
  if (!out_) return makeError(ErrorCode::IoError, "cannot append to ", path_);
  records_[partition] = e;
  return Status::ok();
}

}  // namespace kiln::fuse
