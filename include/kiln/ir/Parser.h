//===- kiln/ir/Parser.h - Reading the text IR --------------------*- C++ -*-===//
//
// Parses the text IR written by Printer.h into a Module and verifies its
// structure (callers verify types with ir::verify, as kiln-opt does).
// Errors (ErrorCode::IrParse) give file:line:column.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kiln/ir/Module.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

Expected<std::unique_ptr<Module>> parseModule(std::string_view text, const std::string& fileName = "<input>");

}  // namespace kiln::ir
