// Internal: giving the pages of a large compressed payload back once its
// decoder has read them (docs/first-check.md, "The input's pages").
//
// A CCOB streamed out of a file coload mapped would otherwise keep its whole
// payload resident beside the window it decodes into (25 MB beside 74 MiB
// for a bundler-written 7-target CCOB). Those pages are clean pages of a
// read-only private file mapping: MADV_DONTNEED drops them from the process
// and a later read faults them in again, unchanged, from the page cache.
// Only mappings coload made itself (Source::map_file) are ever advised;
// memory a caller lends (a wrapper, a loaded library, a span) never is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"

namespace coload::detail {

/// The system's page size (sysconf, read once).
std::uintptr_t page_size();

/// Source::map_file: `begin` maps a whole file read-only and privately.
/// Never throws (a mapping that cannot be noted is never advised).
void note_file_mapping(const void* begin, std::size_t size);
/// Source::release, before it unmaps `begin`.
void forget_file_mapping(const void* begin);

/// Gives back, a step at a time, the pages of `input` a decoder has read, when
/// `input` is large enough to be worth it and lies in a noted mapping;
/// otherwise does nothing. Pages `input` shares with its neighbours are kept.
class ReadPages {
 public:
  static constexpr std::size_t kStep = std::size_t{1} << 20;

  explicit ReadPages(Bytes input);
  /// input[0, offset) has been read and will not be read again by this decoder.
  void read_to(std::size_t offset) {
    if (active_ && offset - read_mark_ >= kStep) release(offset);
  }

 private:
  void release(std::size_t offset);

  Bytes input_;
  bool active_ = false;
  std::size_t read_mark_ = 0;     // the offset of the last release
  std::uintptr_t next_page_ = 0;  // the first page not given back
};

}  // namespace coload::detail
