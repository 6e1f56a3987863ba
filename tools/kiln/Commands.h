//===- tools/kiln/Commands.h - Subcommands of the kiln CLI ----------------===//
//
// Each subcommand registers itself on the CLI11 app with a callback that
// stores its exit code in `exitCode`. Shared options (--shape, -O) and model
// loading live in ModelLoader.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <CLI/CLI.hpp>

namespace kiln::cli {

void addInspectCommand(CLI::App& app, int& exitCode);
void addRunCommand(CLI::App& app, int& exitCode);
void addConvertCommand(CLI::App& app, int& exitCode);
void addOpsCommand(CLI::App& app, int& exitCode);
void addBenchCommand(CLI::App& app, int& exitCode);
void addPassesCommand(CLI::App& app, int& exitCode);
/// `kiln passes space` and `kiln passes compare` under the `passes` command.
void addPassSelectionCommands(CLI::App& passes, int& exitCode);
void addCompileCommand(CLI::App& app, int& exitCode);
void addTuneCommand(CLI::App& app, int& exitCode);
void addGenerateCommand(CLI::App& app, int& exitCode);
/// `kiln fuse`: fusion search (kiln/fuse).
void addFuseCommand(CLI::App& app, int& exitCode);
/// `kiln evolve`: evolutionary search over graph edits (kiln/evolve).
void addEvolveCommand(CLI::App& app, int& exitCode);

}  // namespace kiln::cli
