// coload/error.h: the one error type of the library and the Expected<T> result.
//
// Covers: error kinds, locations as data (file, bundle, entry, field, offset,
// value, limit), the sentence rendered from them, and a small Expected<T>
// (C++20 has no std::expected). Does not cover: the C API's status codes
// (coload.h maps these kinds onto them).
//
// Thread safety: values only; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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

/// Where an error lies, as data: each field is filled once, by the layer that
/// knows it (the reader knows a bundle's offset, the caller the file's name),
/// and never overwritten by an outer one. Unset fields are empty / nullopt.
struct ErrorLocation {
  std::string file;                            ///< the file, or the name a binary was registered under
  std::optional<std::size_t> bundle;           ///< bundle index in the file
  std::optional<std::uint64_t> bundle_offset;  ///< that bundle's byte offset in the file
  /// How the bundle was reached, rendered right after it: ", decompressed",
  /// " (from __hip_fatbin_wrapper)".
  std::string bundle_view;
  std::optional<std::size_t> entry;     ///< entry index in that bundle's table
  std::string entry_id;                 ///< that entry's ID
  std::string field;                    ///< the field (path) at fault: "uncompressed_size", "max_decompressed_bytes"
  std::optional<std::uint64_t> offset;  ///< the field's byte offset in its structure
  std::optional<std::uint64_t> value;   ///< the value found there
  std::optional<std::uint64_t> limit;   ///< the limit it passes
};

/// An error: a kind, where it lies (ErrorLocation) and a sentence that says
/// what went wrong. message() renders the three at the edges (CLI, C API, log):
/// "[outer context: ][file: ][bundle N[ at offset X][view]: ][entry N[ (ID)]: ]detail".
class Error {
 public:
  Error(ErrorKind kind, std::string detail);

  Error(const Error& other);
  Error& operator=(const Error& other);
  Error(Error&& other) noexcept;
  Error& operator=(Error&& other) noexcept;
  ~Error();

  ErrorKind kind() const { return kind_; }
  /// The whole sentence, location included.
  std::string message() const;
  /// The sentence without the file, bundle and entry of location() (inner
  /// contexts included).
  const std::string& detail() const { return detail_; }
  /// Where the error lies; every field unset until a layer sets it.
  const ErrorLocation& location() const;

  /// Returns this error with "context: " put in front of what it says, so
  /// outer layers can say what the inner error is about. A context added
  /// once a file or bundle is set is rendered before them.
  Error with_context(std::string_view context) const&;
  Error with_context(std::string_view context) &&;

  /// Sets location().file unless a layer closer to the fault has.
  Error&& in_file(std::string_view file) &&;
  /// Sets location().bundle (with its offset and view, when known) unless a
  /// layer closer to the fault has.
  Error&& in_bundle(std::size_t index, std::optional<std::uint64_t> offset = std::nullopt,
                    std::string_view view = {}) &&;
  /// Sets location().entry and entry_id unless a layer closer to the fault has.
  Error&& at_entry(std::size_t index, std::string_view id) &&;
  /// Sets the field at fault and, when known, its offset, value and limit,
  /// unless a layer closer to the fault has named a field.
  /// These setters are for a temporary or a moved-from error
  /// (`std::move(error).in_file(path)`); they return that same error.
  Error&& at_field(std::string_view field, std::optional<std::uint64_t> offset,
                   std::optional<std::uint64_t> value = std::nullopt,
                   std::optional<std::uint64_t> limit = std::nullopt) &&;

 private:
  struct Where;  // the location and the contexts added after it
  Where& where();

  ErrorKind kind_;
  std::string detail_;
  // Allocated once a location is set: an Error, and so every Expected<T>,
  // stays small on the success paths that never make one.
  std::unique_ptr<Where> where_;
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
  Expected(Error error) : error_(std::move(error)) {}

  bool has_value() const { return !error_.has_value(); }
  explicit operator bool() const { return has_value(); }
  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;  // nothing is built on success
};

}  // namespace coload
