//===- tools/kiln/OpsCommand.cpp - `kiln ops` -------------------------------===//
//
// Lists the ops kiln supports (the op table), with their fusion pattern,
// whether the reference interpreter runs them, and a one-line description.
//
//===----------------------------------------------------------------------===//
#include <iomanip>
#include <iostream>
#include <set>

#include "Commands.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/runtime/Interpreter.h"

namespace kiln::cli {

void addOpsCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("ops", "List the supported ops");
  cmd->callback([&exitCode] {
    auto kernels = runtime::interpreterKernelNames();
    std::set<std::string> withKernel(kernels.begin(), kernels.end());
    auto all = ir::OpRegistry::global().all();
    for (const ir::OpSchema* s : all)
      std::cout << std::left << std::setw(42) << s->qualifiedName() << std::setw(26) << ir::fusionPatternName(s->pattern)
                << (withKernel.count(s->qualifiedName()) ? "" : "[no kernel] ") << s->doc << "\n";
    std::cout << all.size() << " ops\n";
    exitCode = 0;
  });
}

}  // namespace kiln::cli
