// Internal: marks of CCOBs whose stored hash was checked (by a Verify-mode
// stream or a whole read).
//
// Checking a CCOB's MD5 means decoding all of it, which costs 5-10 times what
// choosing an entry does, and a runtime checks the same libraries at every
// start. A mark is a file in ReadOptions::verified_cache named by a 128-bit
// xxh3 of the CCOB's bytes (header and payload): those exact bytes decode to
// a stream whose MD5 prefix and size matched the header. Decoding is a
// function of the bytes, so a CCOB with a mark needs no second MD5, and a
// stream of it may stop as Skip mode does. Changed bytes give another name,
// so corruption is still caught. Marks are best-effort: a mark that cannot be
// read or written is a miss, never an error. Only a folder and marks of the
// effective user that no one else may write are trusted, and only regular
// files (docs/reading-rules.md, "Files"); anything else is a miss.
#pragma once

#include <string>

#include "coload/bundle.h"
#include "common/bytes.h"

namespace coload::detail {

class VerifiedMark {
 public:
  /// The mark of `ccob` (header and payload, as `header` was parsed from)
  /// in `directory`.
  VerifiedMark(const std::string& directory, Bytes ccob, const CompressedHeader& header);

  /// Whether the mark exists, is a regular file of the effective user in
  /// a folder of that user (neither writable by group or others) and says
  /// what `header` says.
  bool present() const;
  /// Records the mark: written under a temporary name, then renamed into
  /// place, so a reader never sees half of one. The directory (and its
  /// parents) is created as needed; nothing is written to a folder
  /// present() would not trust.
  void record() const;

 private:
  std::string path_;
  std::string contents_;
};

}  // namespace coload::detail
