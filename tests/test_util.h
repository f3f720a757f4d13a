// Shared helpers for coload's tests: assertions on exact error kinds.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "coload/error.h"

namespace coload::testing {

inline std::span<const std::byte> view(const std::vector<std::byte>& bytes) { return bytes; }

/// Asserts that `result` failed with exactly `kind`; prints the message otherwise.
template <class T>
::testing::AssertionResult FailsWith(const Expected<T>& result, ErrorKind kind) {
  if (result.has_value()) return ::testing::AssertionFailure() << "succeeded, expected " << to_string(kind);
  if (result.error().kind() != kind) {
    return ::testing::AssertionFailure() << "failed with " << to_string(result.error().kind()) << " ("
                                         << result.error().message() << "), expected " << to_string(kind);
  }
  return ::testing::AssertionSuccess();
}

/// Asserts success, printing the error otherwise.
template <class T>
::testing::AssertionResult Succeeds(const Expected<T>& result) {
  if (result.has_value()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << to_string(result.error().kind()) << ": " << result.error().message();
}

}  // namespace coload::testing
