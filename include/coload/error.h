// coload/error.h: the one error type of the library and the Expected<T> result.
//
// Covers: error kinds, messages that name field, offset, value and limit, and a
// small Expected<T> (C++20 has no std::expected). Does not cover: the C API's
// status codes (coload.h maps these kinds onto them).
//
// Thread safety: values only; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace coload {

/// What went wrong, independent of where. Tests assert on these.
enum class ErrorKind : std::uint8_t {
  Io,                  ///< the operating system refused (open, stat, mmap, write)
  Truncated,           ///< input ends before a structure it declares
  BadMagic,            ///< bytes at a position are not the expected format
  OutOfBounds,         ///< a declared offset/size points outside its container
  Overflow,            ///< offset + size (or a count product) overflows 64 bits
  LimitExceeded,       ///< a size or count is above a configured cap
  UnsupportedVersion,  ///< a format version this library does not know
  UnsupportedMethod,   ///< a compression method this library does not know
  HashMismatch,        ///< a stored hash disagrees with the data
  SizeMismatch,        ///< a declared size disagrees with the real one
  CorruptData,         ///< a decoder rejected its stream (zstd/zlib errors)
  Malformed,           ///< structurally invalid in a way not covered above
  NotFound,            ///< a requested entry, section or target is absent
  Ambiguous,           ///< a request matches more than one thing
  InvalidArgument,     ///< the caller's request itself is wrong
};

/// Stable lower-case name of a kind ("out_of_bounds"), for messages and JSON.
std::string_view to_string(ErrorKind kind);

/// An error: a kind plus a message that says what, where and which value.
class Error {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }

  /// Returns this error with "context: " put in front of the message, so outer
  /// layers can say which file or bundle the inner error is about.
  Error with_context(std::string_view context) const&;
  Error with_context(std::string_view context) &&;

 private:
  ErrorKind kind_;
  std::string message_;
};

/// Either a T or an Error. Never throws; accessing the wrong side is a bug in
/// the caller (checked with a debug assertion, never reached by input bytes).
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(state_); }
  Error&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, Error> state_;
};

/// Success or an Error, for operations that produce nothing.
template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), failed_(true) {}

  bool has_value() const { return !failed_; }
  explicit operator bool() const { return has_value(); }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_{ErrorKind::Malformed, {}};
  bool failed_ = false;
};

}  // namespace coload
