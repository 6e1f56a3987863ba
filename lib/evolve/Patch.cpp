//===- lib/evolve/Patch.cpp - Patches as JSON ------------------------------===//
//
// See kiln/evolve/Patch.h. One JSON object per edit:
//   {"edit": "delete",  "node": N, "with": [V, ...]}
//   {"edit": "copy",    "node": N, "operands": [V or "", ...], "into": M, "input": I, "as": C}
//   {"edit": "operand", "node": N, "input": I, "value": V}
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/Patch.h"

#include <nlohmann/json.hpp>

#include "kiln/support/File.h"

namespace kiln::evolve {

namespace {

constexpr const char* kSchema = "kiln-patch/1";

nlohmann::json editToJson(const Edit& e) {
  switch (e.kind) {
    case EditKind::Delete: return {{"edit", "delete"}, {"node", e.node}, {"with", e.values}};
    case EditKind::Copy:
      return {{"edit", "copy"}, {"node", e.node}, {"operands", e.values}, {"into", e.into}, {"input", e.input}, {"as", e.as}};
    case EditKind::Operand:
      return {{"edit", "operand"}, {"node", e.node}, {"input", e.input}, {"value", e.values.at(0)}};
  }
  return {};
}

/// Reads one edit; the message says what is wrong when it is malformed.
std::optional<std::string> editFromJson(const nlohmann::json& j, Edit& e) {
  if (!j.is_object()) return "not a JSON object";
  auto text = [&](const char* key, std::string& out) -> bool {
    if (!j.contains(key) || !j[key].is_string()) return false;
    out = j[key].get<std::string>();
    return !out.empty();
  };
  auto names = [&](const char* key) -> bool {
    if (!j.contains(key) || !j[key].is_array()) return false;
    for (const auto& v : j[key]) {
      if (!v.is_string()) return false;
      e.values.push_back(v.get<std::string>());
    }
    return true;
  };
  auto index = [&]() -> bool {
    if (!j.contains("input") || !j["input"].is_number_unsigned() || j["input"].get<uint64_t>() > 1u << 20) return false;
    e.input = j["input"].get<uint32_t>();
    return true;
  };
  std::string kind;
  if (!text("edit", kind)) return "\"edit\" must be delete, copy or operand";
  if (!text("node", e.node)) return "\"node\" must name a node by its first result";
  if (kind == "delete") {
    e.kind = EditKind::Delete;
    if (!names("with") || e.values.empty()) return "\"with\" must list one value per result of the node";
  } else if (kind == "copy") {
    e.kind = EditKind::Copy;
    if (!names("operands")) return "\"operands\" must list the copy's operands";
    if (!text("into", e.into)) return "\"into\" must name the node that reads the copy";
    if (!index()) return "\"input\" must be an operand index";
    if (!text("as", e.as)) return "\"as\" must name the copy's first result";
  } else if (kind == "operand") {
    e.kind = EditKind::Operand;
    std::string value;
    if (!index()) return "\"input\" must be an operand index";
    if (!text("value", value)) return "\"value\" must name a value";
    e.values = {value};
  } else {
    return "\"edit\" must be delete, copy or operand, not '" + kind + "'";
  }
  return std::nullopt;
}

}  // namespace

const char* editKindName(EditKind kind) {
  switch (kind) {
    case EditKind::Delete: return "delete";
    case EditKind::Copy: return "copy";
    case EditKind::Operand: return "operand";
  }
  return "?";
}

std::string patchToJson(const Patch& patch) {
  nlohmann::json edits = nlohmann::json::array();
  for (const Edit& e : patch) edits.push_back(editToJson(e));
  return nlohmann::json({{"schema", kSchema}, {"edits", edits}}).dump(1) + "\n";
}

Expected<Patch> patchFromJson(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError(ErrorCode::PatchFormat, "a patch must be a JSON object");
  if (j.value("schema", nlohmann::json()) != kSchema)
    return makeError(ErrorCode::PatchFormat, "a patch's \"schema\" must be \"", kSchema, "\"");
  if (!j.contains("edits") || !j["edits"].is_array())
    return makeError(ErrorCode::PatchFormat, "a patch must list its \"edits\"");
  Patch patch;
  for (size_t k = 0; k < j["edits"].size(); ++k) {
    Edit e;
    if (auto why = editFromJson(j["edits"][k], e)) return makeError(ErrorCode::PatchFormat, "edit ", k, ": ", *why);
    patch.push_back(std::move(e));
  }
  return patch;
}

Expected<Patch> readPatch(const std::string& path) {
  KILN_ASSIGN(std::string text, readFile(path));
  auto patch = patchFromJson(text);
  if (!patch) return Error(patch.error()).withContext(path);
  return patch;
}

}  // namespace kiln::evolve
