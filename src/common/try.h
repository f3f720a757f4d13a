// Internal: COLOAD_RETURN_IF_ERROR, how src/ forwards an error it adds nothing
// to. Private to the library: the public headers, the tool and the tests do
// not use it. A forward that adds a location or context (with_context,
// at_field, in_bundle …) is written out where it happens.
#pragma once

#include <utility>

#include "coload/error.h"

/// Evaluates `result` (an Expected<T> or Expected<void>: a call, or a variable
/// whose value the caller uses after) once; when it holds an error, returns
/// that same Error, moved out unchanged, from the enclosing function.
///
///   auto header = cursor.take("header", 24);
///   COLOAD_RETURN_IF_ERROR(header);
///   COLOAD_RETURN_IF_ERROR(check_range(what, offset, size, limit, container));
#define COLOAD_RETURN_IF_ERROR(result)                             \
  do {                                                             \
    auto&& coload_result_ = (result);                              \
    if (!coload_result_) return std::move(coload_result_).error(); \
  } while (false)
