//===- lib/evolve/FrontReport.cpp - What `kiln evolve` writes --------------===//
//
// See kiln/evolve/FrontReport.h. The chart is plain SVG 1.1 without
// scripts, so that it renders in browsers and Markdown viewers alike.
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/FrontReport.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kiln/support/Strings.h"

namespace kiln::evolve {

namespace {

constexpr double kLeft = 70, kTop = 40, kWidth = 520, kHeight = 300;

std::string fixed(double v, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

/// An error as the metric reads: a share as a percentage, a distance as is.
std::string errorText(Metric metric, double e) {
  return metric == Metric::Mae ? fixed(e, 4) : fixed(100 * e, 2) + "%";
}

class Plot {
 public:
  Plot(double maxMs, double maxError) : maxMs_(maxMs > 0 ? maxMs : 1), maxError_(maxError > 0 ? maxError : 1) {}
  double x(double ms) const { return kLeft + kWidth * ms / maxMs_; }
  double y(double error) const { return kTop + kHeight - kHeight * error / maxError_; }
  double maxMs() const { return maxMs_; }
  double maxError() const { return maxError_; }

 private:
  double maxMs_, maxError_;
};

void axes(std::ostringstream& svg, const Plot& p, Metric metric) {
  svg << "<line x1=\"" << kLeft << "\" y1=\"" << kTop + kHeight << "\" x2=\"" << kLeft + kWidth << "\" y2=\""
      << kTop + kHeight << "\" stroke=\"#333\"/>\n<line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft
      << "\" y2=\"" << kTop + kHeight << "\" stroke=\"#333\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    const double ms = p.maxMs() * t / 4, e = p.maxError() * t / 4;
    svg << "<text x=\"" << p.x(ms) << "\" y=\"" << kTop + kHeight + 15 << "\" text-anchor=\"middle\">"
        << fixed(ms, ms < 1 ? 4 : 2) << "</text>\n<text x=\"" << kLeft - 6 << "\" y=\"" << p.y(e) + 4
        << "\" text-anchor=\"end\">" << errorText(metric, e) << "</text>\n";
  }
  svg << "<text x=\"" << kLeft + kWidth / 2 << "\" y=\"" << kTop + kHeight + 32
      << "\" text-anchor=\"middle\">latency of one run, ms</text>\n<text x=\"14\" y=\"" << kTop + kHeight / 2
      << "\" transform=\"rotate(-90 14 " << kTop + kHeight / 2 << ")\" text-anchor=\"middle\">" << metricName(metric)
      << " error</text>\n";
}

void dot(std::ostringstream& svg, double x, double y, double r, const char* fill, const char* stroke) {
  svg << "<circle cx=\"" << x << "\" cy=\"" << y << "\" r=\"" << r << "\" fill=\"" << fill << "\" stroke=\"" << stroke
      << "\"/>\n";
}

}  // namespace

std::string frontChartSvg(const std::string& title, Metric metric, const VariantScore& original,
                          const std::vector<Individual>& population, const std::vector<FrontMember>& front) {
  double maxMs = original.ms, maxError = std::max(original.trainError, original.testError);
  for (const Individual& i : population)
    maxMs = std::max(maxMs, i.score.ms), maxError = std::max({maxError, i.score.trainError, i.score.testError});
  const Plot p(maxMs * 1.05, std::min(maxError * 1.1 + 1e-9, metric == Metric::Mae ? 1e30 : 1.0));
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"430\" font-family=\"sans-serif\" "
         "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"8\" y=\"18\" "
         "font-size=\"13\" font-weight=\"bold\">"
      << xmlEscaped(title) << "</text>\n";
  axes(svg, p, metric);
  for (const Individual& i : population) dot(svg, p.x(i.score.ms), p.y(i.score.trainError), 2.5, "#bbbbbb", "none");
  std::string steps;
  for (const FrontMember& m : front) {
    const VariantScore& s = m.individual->score;
    steps += (steps.empty() ? "M" : " L") + fixed(p.x(s.ms), 1) + "," + fixed(p.y(s.trainError), 1);
  }
  if (!steps.empty()) svg << "<path d=\"" << steps << "\" fill=\"none\" stroke=\"#4e79a7\"/>\n";
  for (const FrontMember& m : front) {
    const VariantScore& s = m.individual->score;
    dot(svg, p.x(s.ms), p.y(s.testError), 4, "none", "#f28e2b");
    dot(svg, p.x(s.ms), p.y(s.trainError), 4, "#4e79a7", "#4e79a7");
  }
  const double ox = p.x(original.ms), oy = p.y(original.trainError);
  svg << "<path d=\"M" << ox - 6 << "," << oy - 6 << " L" << ox + 6 << "," << oy + 6 << " M" << ox - 6 << ","
      << oy + 6 << " L" << ox + 6 << "," << oy - 6 << "\" stroke=\"#e15759\" stroke-width=\"2\"/>\n";
  dot(svg, ox, p.y(original.testError), 5, "none", "#e15759");
  const double legend = kTop + kHeight + 52;
  dot(svg, kLeft, legend, 4, "#4e79a7", "#4e79a7");
  svg << "<text x=\"" << kLeft + 8 << "\" y=\"" << legend + 4 << "\">front, training error</text>\n";
  dot(svg, kLeft + 150, legend, 4, "none", "#f28e2b");
  svg << "<text x=\"" << kLeft + 158 << "\" y=\"" << legend + 4 << "\">front, test error</text>\n";
  dot(svg, kLeft + 280, legend, 2.5, "#bbbbbb", "none");
  svg << "<text x=\"" << kLeft + 288 << "\" y=\"" << legend + 4 << "\">last generation</text>\n"
      << "<text x=\"" << kLeft + 400 << "\" y=\"" << legend + 4
      << "\" fill=\"#e15759\">x / o: the original (training / test)</text>\n</svg>\n";
  return svg.str();
}

std::string frontMarkdown(const std::string& title, Metric metric, const VariantScore& original,
                          const std::vector<FrontMember>& front) {
  std::ostringstream md;
  md << "# " << title << "\n\n"
     << "| member | latency, ms | vs original | paired ratio | training " << metricName(metric) << " error | test "
     << metricName(metric) << " error | edits | files |\n|---|---|---|---|---|---|---|---|\n"
     << "| original | " << fixed(original.ms, 4) << " | 1.000 | - | " << errorText(metric, original.trainError)
     << " | " << errorText(metric, original.testError) << " | 0 | - |\n";
  for (size_t k = 0; k < front.size(); ++k) {
    const VariantScore& s = front[k].individual->score;
    md << "| " << k << " | " << fixed(s.ms, 4) << " | " << fixed(s.ms / original.ms, 3) << " | "
       << (front[k].pairedRatio > 0 ? fixed(front[k].pairedRatio, 3) : "-") << " | "
       << errorText(metric, s.trainError) << " | " << errorText(metric, s.testError) << " | "
       << front[k].individual->patch.size() << " | " << front[k].files << " |\n";
  }
  md << "\nThe paired ratio is the member's latency over the original's in alternating warm runs (below 1: "
        "faster).\n";
  for (size_t k = 0; k < front.size(); ++k) {
    const FrontMember& m = front[k];
    md << "\n## Member " << k << " (" << m.individual->origin << ")\n\n";
    for (const std::string& line : m.edits.edits) md << "- " << printable(line) << "\n";
    if (m.edits.edits.empty()) md << "- no edits: the original\n";
    md << "- " << m.edits.repairNodes << " nodes added by repairs; " << m.edits.removedDead
       << " nodes no output needed any more removed\n";
  }
  return md.str();
}

}  // namespace kiln::evolve
