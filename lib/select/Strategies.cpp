//===- lib/select/Strategies.cpp - O0..O3, arch, random, exhaustive, learned ===//
//
// See kiln/select/Strategies.h. evolve lives in EvolveStrategy.cpp.
//
//===----------------------------------------------------------------------===//
#include "kiln/select/Strategies.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "kiln/passes/OptLevels.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::select {
namespace {

constexpr const char* kForms = "O0..O3, arch, random:N, exhaustive[:K], evolve[:P[xG]], learned[:K]";
constexpr const char* kCleanup = "dead-code-elimination";

Error badStrategy(std::string_view entry, const std::string& why) {
  return Error(ErrorCode::InvalidArgument,
               "strategy '" + std::string(entry) + "': " + why + " (strategies: " + kForms + ")");
}

/// A positive count in [1, most]; nullopt when `text` is not one.
std::optional<int> count(std::string_view text, int most) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > most) return std::nullopt;
  return value;
}

Expected<StrategySpec> parseOne(std::string_view entry) {
  StrategySpec s;
  s.text = std::string(entry);
  size_t colon = entry.find(':');
  std::string_view name = entry.substr(0, colon);
  std::string_view arg = colon == std::string_view::npos ? std::string_view() : entry.substr(colon + 1);
  bool hasArg = colon != std::string_view::npos;
  if (name.size() == 2 && (name[0] == 'O' || name[0] == 'o') && name[1] >= '0' && name[1] <= '0' + passes::kMaxOptLevel &&
      !hasArg) {
    s.kind = "O";
    s.level = name[1] - '0';
    s.text = "O" + std::string(1, name[1]);
    return s;
  }
  s.kind = std::string(name);
  if (s.kind == "arch") {
    if (hasArg) return badStrategy(entry, "arch takes no argument");
    return s;
  }
  if (s.kind == "random") {
    auto n = count(arg, 1000);
    if (!n) return badStrategy(entry, "random needs a count of pipelines, 1 to 1000 (random:8)");
    s.count = *n;
    return s;
  }
  if (s.kind == "exhaustive") {
    auto n = hasArg ? count(arg, 7) : std::optional<int>(5);
    if (!n) return badStrategy(entry, "exhaustive permutes at most 1 to 7 passes (exhaustive:5 is 120 orders)");
    s.count = *n;
    return s;
  }
  if (s.kind == "learned") {
    auto n = hasArg ? count(arg, 20) : std::optional<int>(3);
    if (!n) return badStrategy(entry, "learned takes a neighbour count, 1 to 20");
    s.count = *n;
    return s;
  }
  if (s.kind == "evolve") {
    s.count = 8;
    s.generations = 4;
    if (hasArg) {
      size_t x = arg.find('x');
      auto p = count(arg.substr(0, x), 256);
      auto g = x == std::string_view::npos ? std::optional<int>(4) : count(arg.substr(x + 1), 100);
      if (!p || !g || *p < 2) return badStrategy(entry, "evolve takes population 2..256 and generations 1..100 (evolve:8x4)");
      s.count = *p;
      s.generations = *g;
    }
    return s;
  }
  return badStrategy(entry, "unknown strategy");
}

Candidate candidate(const StrategySpec& spec, std::string label, const std::vector<const passes::PassInfo*>& passes) {
  return Candidate{spec.text, std::move(label), passes::pipelineOf(passes), ""};
}

const passes::PassInfo* cleanupPass(const SearchSpace& space) {
  return space.contains(kCleanup) ? passes::findPass(kCleanup) : nullptr;
}

Expected<StrategyResult> evaluateAll(std::vector<Candidate> candidates, const Evaluate& evaluate, std::string note = "") {
  StrategyResult result;
  result.note = std::move(note);
  for (Candidate& c : candidates) {
    KILN_TRY(evaluate(c).status());
    result.candidates.push_back(std::move(c));
  }
  return result;
}

std::vector<Candidate> randomCandidates(const StrategySpec& spec, const SearchSpace& space, uint64_t seed) {
  StrategyRandom rng(seed);
  std::vector<Candidate> out;
  for (int i = 0; i < spec.count; ++i) {
    std::vector<const passes::PassInfo*> pool = space.passes;
    rng.shuffle(pool);
    if (!pool.empty()) pool.resize(1 + rng.below(pool.size()));
    out.push_back(candidate(spec, "random-" + std::to_string(i + 1), pool));
  }
  return out;
}

std::pair<std::vector<Candidate>, std::string> exhaustiveCandidates(const StrategySpec& spec, const SearchSpace& space) {
  std::vector<const passes::PassInfo*> set;
  for (const passes::PassInfo* p : space.changedFirstRound)
    if (p->name != kCleanup && std::find(set.begin(), set.end(), p) == set.end()) set.push_back(p);
  std::string note = std::to_string(set.size()) + " passes change this model";
  if (set.size() > size_t(spec.count)) {
    note += "; permuting the first " + std::to_string(spec.count) + " by ordering rank (exhaustive:K for more)";
    set.resize(size_t(spec.count));
  }
  std::vector<size_t> order(set.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const passes::PassInfo* cleanup = cleanupPass(space);
  std::vector<Candidate> out;
  do {
    std::vector<const passes::PassInfo*> passes;
    for (size_t i : order) passes.push_back(set[i]);
    if (cleanup) passes.push_back(cleanup);
    out.push_back(candidate(spec, "exhaustive-" + std::to_string(out.size() + 1), passes));
  } while (std::next_permutation(order.begin(), order.end()));
  note += "; " + std::to_string(out.size()) + " orders";
  return {std::move(out), note};
}

Expected<std::pair<std::vector<Candidate>, std::string>> learnedCandidates(const StrategySpec& spec,
                                                                           const StrategyInputs& in) {
  KILN_TRY(checkStrategyInputs(spec, in));
  // Each other model's best record, preferring this backend's records.
  std::map<std::string, const ExperimentSummary*> best;
  for (const ExperimentSummary& r : in.database->records()) {
    if (!r.ok || r.modelHash == in.modelHash) continue;
    const ExperimentSummary*& b = best[r.modelHash];
    auto key = [&](const ExperimentSummary* s) { return std::make_pair(s->backend != in.backend, s->latencyMs); };
    if (!b || key(&r) < key(b)) b = &r;
  }
  std::vector<std::pair<double, const ExperimentSummary*>> nearest;
  for (const auto& [hash, r] : best) nearest.push_back({featureDistance(in.features, r->features), r});
  std::sort(nearest.begin(), nearest.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->model < b.second->model;
  });
  if (nearest.size() > size_t(spec.count)) nearest.resize(size_t(spec.count));
  std::vector<Candidate> out;
  std::string note;
  for (const auto& [distance, r] : nearest) {
    KILN_ASSIGN(std::vector<passes::PipelineEntry> theirs, passes::parsePipeline(r->pipeline));
    std::vector<passes::PipelineEntry> ours;
    for (passes::PipelineEntry& e : theirs)
      if (in.space->contains(e.pass->name)) ours.push_back(std::move(e));
    char d[32];
    std::snprintf(d, sizeof d, "%.3f", distance);
    Candidate c{spec.text, "learned-" + std::to_string(out.size() + 1), std::move(ours),
                "from " + r->model + " (" + r->label + ", distance " + d + ")"};
    note += (note.empty() ? "" : "; ") + c.label + " " + c.note;
    out.push_back(std::move(c));
  }
  return std::make_pair(std::move(out), note);
}

}  // namespace

Expected<std::vector<StrategySpec>> parseStrategies(std::string_view text) {
  std::vector<StrategySpec> specs;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view entry = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (entry.empty()) return badStrategy(entry, "empty entry in '" + std::string(text) + "'");
    KILN_ASSIGN(StrategySpec s, parseOne(entry));
    for (const StrategySpec& earlier : specs)
      if (earlier.text == s.text || (earlier.kind == s.kind && s.kind != "O"))
        return badStrategy(entry, s.kind + " given twice");
    specs.push_back(std::move(s));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return specs;
}

std::vector<const passes::PassInfo*> archOrder(const std::vector<const passes::PassInfo*>& firstRound,
                                               const std::vector<const passes::PassInfo*>& changedSecondRound) {
  std::vector<const passes::PassInfo*> out = firstRound;
  // A second round for the passes whose work appears only after others ran.
  out.insert(out.end(), changedSecondRound.begin(), changedSecondRound.end());
  // Dead-code elimination ranks last in a round; it closes the pipeline when the second round did not end with it.
  const bool cleanup = std::any_of(firstRound.begin(), firstRound.end(),
                                   [](const passes::PassInfo* p) { return p->name == kCleanup; });
  if (cleanup && out.back()->name != kCleanup) out.push_back(passes::findPass(kCleanup));
  return out;
}

std::vector<const passes::PassInfo*> archPasses(const SearchSpace& space) {
  return archOrder(space.passes, space.changedSecondRound);
}

Status checkStrategyInputs(const StrategySpec& spec, const StrategyInputs& in) {
  if (spec.kind != "learned") return Status::ok();
  const bool usable = in.database && std::any_of(in.database->records().begin(), in.database->records().end(),
                                                 [&](const ExperimentSummary& r) { return r.ok && r.modelHash != in.modelHash; });
  if (usable) return Status::ok();
  return Error(ErrorCode::InvalidArgument,
               "strategy '" + spec.text + "' needs successful records of other models in the experiment database" +
                   (in.database ? " '" + in.database->path() + "'" : "") +
                   " (run kiln passes compare with O3,arch,random:N on other models first)");
}

Expected<StrategyResult> runStrategy(const StrategySpec& spec, const StrategyInputs& in, const Evaluate& evaluate) {
  if (spec.kind == "O") {
    KILN_ASSIGN(std::vector<passes::PipelineEntry> pipeline, passes::optLevelPipeline(spec.level, in.backend));
    return evaluateAll({Candidate{spec.text, spec.text, std::move(pipeline), ""}}, evaluate);
  }
  if (spec.kind == "arch") return evaluateAll({candidate(spec, "arch", archPasses(*in.space))}, evaluate);
  if (spec.kind == "random") return evaluateAll(randomCandidates(spec, *in.space, in.seed), evaluate);
  if (spec.kind == "exhaustive") {
    auto [candidates, note] = exhaustiveCandidates(spec, *in.space);
    return evaluateAll(std::move(candidates), evaluate, note);
  }
  if (spec.kind == "learned") {
    KILN_ASSIGN(auto proposed, learnedCandidates(spec, in));
    return evaluateAll(std::move(proposed.first), evaluate, proposed.second);
  }
  if (spec.kind == "evolve") return runEvolve(spec, in, evaluate);
  return badStrategy(spec.text, "unknown strategy");
}

std::vector<int> paretoRanks(const std::vector<Evaluation>& points) {
  auto dominates = [&](size_t a, size_t b) {
    const Evaluation &p = points[a], &q = points[b];
    if (p.ok != q.ok) return p.ok;
    if (!p.ok) return false;
    return p.latencyMs <= q.latencyMs && p.compileMs <= q.compileMs &&
           (p.latencyMs < q.latencyMs || p.compileMs < q.compileMs);
  };
  std::vector<int> rank(points.size(), -1);
  size_t assigned = 0;
  for (int front = 0; assigned < points.size(); ++front) {
    std::vector<size_t> members;
    for (size_t i = 0; i < points.size(); ++i) {
      if (rank[i] >= 0) continue;
      bool dominated = false;
      for (size_t j = 0; j < points.size() && !dominated; ++j)
        dominated = j != i && rank[j] < 0 && dominates(j, i);
      if (!dominated) members.push_back(i);
    }
    for (size_t i : members) rank[i] = front;
    assigned += members.size();
  }
  return rank;
}

}  // namespace kiln::select
