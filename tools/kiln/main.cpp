//===- tools/kiln/main.cpp - The kiln command-line tool --------------------===//
//
// One CLI for kiln's jobs: inspect a model, compile it to an artifact, run it
// once (a model or an artifact), decode with a KV cache, tune its kernels,
// search its fusion decisions, evolve edits to its graph, benchmark it, list
// and run graph passes, convert between ONNX and text IR, list supported ops.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"
#include "kiln/support/ProcessInfo.h"

int main(int argc, char** argv) {
  kiln::keepFreedMemoryForReuse();  // compiling drops many weight-sized tensors: reuse their pages
  CLI::App app{"kiln: a deep-learning graph compiler for ONNX models.\n"
               "Run `kiln <command> --help` for a command's options."};
  app.set_version_flag("--version", "kiln " KILN_VERSION);
  app.require_subcommand(1);
  int exitCode = 0;
  kiln::cli::addInspectCommand(app, exitCode);
  kiln::cli::addCompileCommand(app, exitCode);
  kiln::cli::addTuneCommand(app, exitCode);
  kiln::cli::addFuseCommand(app, exitCode);
  kiln::cli::addEvolveCommand(app, exitCode);
  kiln::cli::addRunCommand(app, exitCode);
  kiln::cli::addGenerateCommand(app, exitCode);
  kiln::cli::addBenchCommand(app, exitCode);
  kiln::cli::addPassesCommand(app, exitCode);
  kiln::cli::addConvertCommand(app, exitCode);
  kiln::cli::addOpsCommand(app, exitCode);
  CLI11_PARSE(app, argc, argv);
  return exitCode;
}
