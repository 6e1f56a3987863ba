//===- lib/runtime/core/StepTrace.cpp - A run's steps as trace events -----===//
//
// runTraced names and sizes each executed step from the executable;
// chromeTraceJson writes runs as complete ("X") events in microseconds, each
// run's events inside one "run" event, with the bytes and ops as arguments.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/StepTrace.h"

#include <chrono>
#include <cstdio>
#include <sstream>

#include "kiln/support/Strings.h"

namespace kiln {
namespace runtime {
namespace {

TraceEvent stepEvent(const Executable& exe, const KernelStep& step) {
  TraceEvent e;
  switch (step.kind) {
    case StepKind::Kernel:
      e.name = exe.kernelNames[step.kernel];
      e.category = "kernel";
      for (uint64_t b : exe.kernelParamBytes[step.kernel]) e.bytes += b;
      break;
    case StepKind::Host:
      e.name = exe.hostGraphs[step.kernel].name;
      e.category = "host";
      e.ops = joinStrings(exe.hostGraphs[step.kernel].ops, ", ");
      for (uint32_t a : step.args) e.bytes += exe.buffers[a].bytes();
      break;
    case StepKind::Copy:
      e.name = "copy " + exe.buffers[step.args[1]].name;
      e.category = "copy";
      e.bytes = exe.buffers[step.args[1]].bytes();
      break;
    default:
      e.name = stepKindName(step.kind);
      e.category = "control";
  }
  return e;
}

/// The trace of a run of `exe` that took `runMs` and executed `timeline`.
RunTrace traceOfRun(const Executable& exe, const std::vector<StepTiming>& timeline, double runMs) {
  RunTrace t;
  t.runUs = runMs * 1000;
  double firstUs = timeline.empty() ? t.runUs : timeline.front().startMs * 1000, endUs = firstUs;
  t.events.push_back({"prologue", "runtime", 0, firstUs, 0, "inputs checked, scratch memory taken"});
  for (const StepTiming& s : timeline) {
    TraceEvent e = stepEvent(exe, exe.steps[s.step]);
    e.startUs = s.startMs * 1000;
    e.durationUs = s.ms * 1000;
    endUs = e.startUs + e.durationUs;
    t.events.push_back(std::move(e));
  }
  if (t.runUs > endUs) t.events.push_back({"epilogue", "runtime", endUs, t.runUs - endUs, 0, "outputs returned"});
  return t;
}

}  // namespace

Expected<std::vector<Tensor>> runTraced(const CpuExecutor& executor, const std::vector<Tensor>& inputs, RunTrace& trace) {
  std::vector<StepTiming> timeline;
  const auto start = std::chrono::steady_clock::now();
  KILN_ASSIGN(std::vector<Tensor> outputs, executor.run(inputs, nullptr, &timeline));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  trace = traceOfRun(executor.executable(), timeline, ms);
  return outputs;
}

}  // namespace runtime

namespace {

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += char(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

void writeEvent(std::ostringstream& os, const std::string& name, const std::string& category, double ts, double dur,
                const std::string& args) {
  os << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"name\":" << jsonString(name) << ",\"cat\":" << jsonString(category)
     << ",\"ts\":" << ts << ",\"dur\":" << dur << ",\"args\":{" << args << "}}";
}

}  // namespace

std::string chromeTraceJson(const std::vector<RunTrace>& runs, const std::string& process) {
  std::ostringstream os;
  os.precision(12);
  os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":"
     << jsonString(process) << "}}";
  double offsetUs = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const RunTrace& run = runs[r];
    writeEvent(os, "run " + std::to_string(r), "run", offsetUs, run.runUs, "\"events\":" + std::to_string(run.events.size()));
    for (const TraceEvent& e : run.events) {
      std::string args = "\"bytes\":" + std::to_string(e.bytes);
      if (!e.ops.empty()) args += ",\"ops\":" + jsonString(e.ops);
      writeEvent(os, e.name, e.category, offsetUs + e.startUs, e.durationUs, args);
    }
    offsetUs += run.runUs + 10;  // a gap that shows where one run ends
  }
  os << "\n]}\n";
  return os.str();
}

}  // namespace kiln
