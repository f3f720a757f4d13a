#include "coload/error.h"

namespace coload {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Io: return "io";
    case ErrorKind::Truncated: return "truncated";
    case ErrorKind::BadMagic: return "bad_magic";
    case ErrorKind::OutOfBounds: return "out_of_bounds";
    case ErrorKind::Overflow: return "overflow";
    case ErrorKind::LimitExceeded: return "limit_exceeded";
    case ErrorKind::UnsupportedVersion: return "unsupported_version";
    case ErrorKind::UnsupportedMethod: return "unsupported_method";
    case ErrorKind::HashMismatch: return "hash_mismatch";
    case ErrorKind::SizeMismatch: return "size_mismatch";
    case ErrorKind::CorruptData: return "corrupt_data";
    case ErrorKind::Malformed: return "malformed";
    case ErrorKind::NotFound: return "not_found";
    case ErrorKind::Ambiguous: return "ambiguous";
    case ErrorKind::InvalidArgument: return "invalid_argument";
  }
  return "unknown";
}

Error Error::with_context(std::string_view context) const& {
  Error copy = *this;
  return std::move(copy).with_context(context);
}

Error Error::with_context(std::string_view context) && {
  message_.insert(0, std::string(context) + ": ");
  return std::move(*this);
}

}  // namespace coload
