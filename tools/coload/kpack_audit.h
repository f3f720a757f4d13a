// coload check DIR over a kpack'd install tree (a DIR with `.kpack/`): per
// kpack'd binary and per target any archive holds, the wrappers that would
// get no code object (or only one refused as ambiguous), and the archives
// no binary takes code from: the missing-archive reports filed against
// TheRock, before a user runs into them.
#pragma once

#include <optional>
#include <string>

#include "command_context.h"

namespace coload::cli {

/// Whether `dir` is a kpack'd install tree (it holds `.kpack/`).
bool is_kpack_tree(const std::string& dir);

/// The audit of `dir`; the exit code (1 when a wrapper gets nothing for a
/// target, an archive cannot be read or no binary uses one).
int run_kpack_audit(CommandContext& context, const std::string& dir);

}  // namespace coload::cli
