// load/loaded_module.h: what the runtimes' LoadedModule implementations
// share (loaded_module.cpp). Internal.
#pragma once

#include <string_view>

#include "coload/code_object.h"
#include "coload/error.h"

namespace coload {

/// NotFound for the global variable `name` of `code_object`: names the
/// variable and the code object's target, says when `name` is a kernel's
/// rather than a variable's, and ends with `cause` (the runtime's own answer;
/// may be empty).
Error global_not_found(const CodeObject& code_object, std::string_view name, std::string_view cause);

}  // namespace coload
