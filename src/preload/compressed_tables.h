// Internal: the entry IDs of the CCOBs in a loaded object's file, kept
// between runs (docs/preload.md, "What it reads, and how").
//
// A CCOB's table comes only after zstd has decoded its first block (and, to
// check its MD5, the whole stream): 0.1-0.5 ms per wrapper, against a 2 us
// budget. The IDs are a function of the bytes, and a library's bytes change
// only with its file, so they are kept per file: one small file in the
// verified cache (ReadOptions::verified_cache) per loaded object, named by
// its device and inode, whose first line is the file's identity (device,
// inode, size, mtime, ctime: a file written since gives another line, and
// its IDs are read again). Each CCOB has one line: its offset in the object,
// its header's bytes (sizes and stored hash), whether its MD5 was checked,
// and its IDs. A Verify-mode session trusts only checked lines.
//
// What a wrong line can do: make the session pass a wrapper on (what the
// runtime would have had without coload), or plan it in full (which reads
// everything again). It never puts bytes before the runtime.
//
// Threads: not thread-safe; the session calls it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "preload/loaded_objects.h"

namespace coload::preload {

class CompressedTables {
 public:
  /// Files are kept in `directory`; empty: none (COLOAD_VERIFY_CACHE=off).
  explicit CompressedTables(std::string directory) : directory_(std::move(directory)) {}

  /// The IDs kept for the CCOB at `image` in `object`, whose readable
  /// bytes from its first are `ccob`; `checked`: only if its MD5 was
  /// checked. Null when none are kept.
  const std::vector<std::string>* find(const LoadedObject& object, const void* image, std::span<const std::byte> ccob,
                                       bool checked);
  /// Keeps `ids` for that CCOB (appended to its object's file).
  void keep(const LoadedObject& object, const void* image, std::span<const std::byte> ccob, bool checked,
            const std::vector<std::string>& ids);
  /// Forgets every object's lines read (a library may be unloaded).
  void forget() { objects_.clear(); }

 private:
  struct Kept {
    std::string header;  // the CCOB's first bytes (its header)
    bool checked = false;
    std::vector<std::string> ids;
  };
  struct ObjectFile {
    std::string path;      // empty: the object's file cannot be named or kept
    std::string identity;  // the first line its file must hold
    bool current = false;  // the file holds `identity` (else a new one replaces it)
    std::map<std::uint64_t, Kept> by_offset;
  };
  ObjectFile& file_of(const LoadedObject& object);

  std::string directory_;
  std::map<std::uintptr_t, ObjectFile> objects_;  // by base
};

}  // namespace coload::preload
