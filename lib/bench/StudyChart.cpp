//===- lib/bench/StudyChart.cpp - SVG chart of a pass study ----------------===//
//
// Two panels of horizontal bars, one row per pipeline: latency (median, with
// the p90 as a whisker) and compile time (the pass pipeline, the research's
// compile time, stacked with code generation). Bars are coloured by
// strategy; the IR letter after each label marks pipelines that produced
// identical IR; Pareto-front pipelines of evolve are starred. Plain SVG 1.1,
// no scripts, so it renders in browsers and Markdown viewers alike.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kiln/bench/PassStudy.h"
#include "kiln/support/Strings.h"

namespace kiln::bench {
namespace {

constexpr int kRow = 18, kTop = 48, kLabel = 210, kPanel = 320, kGap = 40;
const char* const kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f", v);
  return text;
}

}  // namespace

std::string studyChartSvg(const PassStudy& s) {
  const std::map<std::string, std::string> letters = irLetters(s);
  double maxLatency = 0, maxCompile = 0;
  for (const StudyEntry& e : s.entries)
    if (e.ok()) {
      maxLatency = std::max(maxLatency, e.bench->latencyMs.p90);
      maxCompile = std::max(maxCompile, e.passesMs + e.compile.codegenMs.value_or(0));
    }
  maxLatency = maxLatency > 0 ? maxLatency : 1;
  maxCompile = maxCompile > 0 ? maxCompile : 1;
  const int rows = int(s.entries.size());
  const int width = kLabel + 2 * kPanel + kGap + 60, height = kTop + rows * kRow + 70;
  const int left1 = kLabel, left2 = kLabel + kPanel + kGap;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"8\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" << xmlEscaped(s.modelName) << " on " << s.backend
      << ": pass pipelines compared</text>\n"
      << "<text x=\"" << left1 << "\" y=\"38\">latency, ms (median; whisker p90)</text>\n"
      << "<text x=\"" << left2 << "\" y=\"38\">compile time, ms (passes dark, code generation light)</text>\n";
  std::map<std::string, const char*> colour;
  for (size_t i = 0; i < s.strategies.size(); ++i) colour[s.strategies[i].spec] = kColours[i % std::size(kColours)];
  for (int r = 0; r < rows; ++r) {
    const StudyEntry& e = s.entries[size_t(r)];
    const int y = kTop + r * kRow;
    const char* fill = colour.count(e.candidate.strategy) ? colour[e.candidate.strategy] : "#888888";
    std::string label = e.candidate.label + (e.irHash.empty() ? "" : " [" + letters.at(e.irHash) + "]") + (e.pareto ? " *" : "");
    svg << "<text x=\"" << kLabel - 6 << "\" y=\"" << y + 12 << "\" text-anchor=\"end\">" << xmlEscaped(label) << "</text>\n";
    if (!e.ok()) {
      svg << "<text x=\"" << left1 + 4 << "\" y=\"" << y + 12 << "\" fill=\"#c00\">failed: "
          << xmlEscaped(e.error.substr(0, 90)) << "</text>\n";
      continue;
    }
    const double lat = e.bench->latencyMs.p50, p90 = e.bench->latencyMs.p90;
    const double pass = e.passesMs, gen = e.compile.codegenMs.value_or(0);
    const double wl = kPanel * lat / maxLatency, wp = kPanel * pass / maxCompile, wg = kPanel * gen / maxCompile;
    svg << "<rect x=\"" << left1 << "\" y=\"" << y + 3 << "\" width=\"" << wl << "\" height=\"" << kRow - 6 << "\" fill=\""
        << fill << "\"/>\n"
        << "<line x1=\"" << left1 + wl << "\" x2=\"" << left1 + kPanel * p90 / maxLatency << "\" y1=\"" << y + kRow / 2
        << "\" y2=\"" << y + kRow / 2 << "\" stroke=\"#333\"/>\n"
        << "<text x=\"" << left1 + kPanel * p90 / maxLatency + 3 << "\" y=\"" << y + 12 << "\">" << number(lat) << "</text>\n"
        << "<rect x=\"" << left2 << "\" y=\"" << y + 3 << "\" width=\"" << wp << "\" height=\"" << kRow - 6 << "\" fill=\""
        << fill << "\"/>\n"
        << "<rect x=\"" << left2 + wp << "\" y=\"" << y + 3 << "\" width=\"" << wg << "\" height=\"" << kRow - 6
        << "\" fill=\"" << fill << "\" fill-opacity=\"0.35\"/>\n"
        << "<text x=\"" << left2 + wp + wg + 3 << "\" y=\"" << y + 12 << "\">" << number(pass) << " + " << number(gen)
        << "</text>\n";
  }
  const int axis = kTop + rows * kRow + 4;
  svg << "<line x1=\"" << left1 << "\" x2=\"" << left1 + kPanel << "\" y1=\"" << axis << "\" y2=\"" << axis
      << "\" stroke=\"#333\"/>\n<text x=\"" << left1 + kPanel << "\" y=\"" << axis + 13 << "\" text-anchor=\"end\">"
      << number(maxLatency) << " ms</text>\n"
      << "<line x1=\"" << left2 << "\" x2=\"" << left2 + kPanel << "\" y1=\"" << axis << "\" y2=\"" << axis
      << "\" stroke=\"#333\"/>\n<text x=\"" << left2 + kPanel << "\" y=\"" << axis + 13 << "\" text-anchor=\"end\">"
      << number(maxCompile) << " ms</text>\n";
  int x = 8;
  for (const StudyStrategy& st : s.strategies) {
    svg << "<rect x=\"" << x << "\" y=\"" << axis + 26 << "\" width=\"10\" height=\"10\" fill=\"" << colour[st.spec]
        << "\"/><text x=\"" << x + 14 << "\" y=\"" << axis + 35 << "\">" << xmlEscaped(st.spec) << "</text>\n";
    x += 24 + 7 * int(st.spec.size());
  }
  svg << "<text x=\"8\" y=\"" << axis + 55 << "\">[A], [B], ...: pipelines with the same letter produced identical IR"
      << " (measured once); *: on evolve's Pareto front</text>\n</svg>\n";
  return svg.str();
}

}  // namespace kiln::bench
