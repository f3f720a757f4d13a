// load/loaded_module.h: what the runtimes' LoadedModule implementations
// share (loaded_module.cpp). Internal.
#pragma once

#include <cstdint>
#include <string_view>

#include "coload/code_object.h"
#include "coload/error.h"
#include "coload/runtime.h"

namespace coload {

/// What every runtime hands back for `kernel` of a code object it loaded,
/// under the runtime's `handle` (LoadedKernel::handle): the names and sizes
/// of the metadata, and a dynamic call stack as the metadata says, else as
/// the descriptor says. A runtime that asks its own sizes sets them after.
LoadedKernel loaded_kernel(const Kernel& kernel, std::uint64_t handle);

/// NotFound for the global variable `name` of `code_object`: names the
/// variable and the code object's target, says when `name` is a kernel's
/// rather than a variable's, and ends with `cause` (the runtime's own answer;
/// may be empty).
Error global_not_found(const CodeObject& code_object, std::string_view name, std::string_view cause);

}  // namespace coload
