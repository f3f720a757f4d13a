// coload/detail/stream_select.h: selecting in a compressed bundle (CCOB) while it
// decompresses, keeping only what the choice needs.
//
// Unstable, for the coload tool and the tests: it may change in any
// release; programs choose through coload/pipeline.h.
//
// Covers: one CCOB found by scan_bundles, one device (or one entry the caller
// picks from the table), decoded as a stream that keeps the table, each
// entry's ELF header and the chosen entry (what is kept, and the peak memory:
// docs/pipeline.md, "Where a CCOB is streamed"). Does not cover: plain
// bundles (accepted and read whole; read_bundle views them in place) or the
// comgr unbundler (comgr cannot read compressed bundles).
//
// Ownership: the result owns its bytes; `source` is only read during the call.
// Threads: calls share no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coload/bundle.h"
#include "coload/device.h"
#include "coload/error.h"
#include "coload/select.h"

namespace coload {

/// Entries viewing `heads` (bytes = head), valid while `heads` lives.
/// select_entry over them makes the choice it makes over the whole bundle:
/// it reads nothing past an entry's ELF header.
std::vector<BundleEntry> head_entries(std::span<const EntryHead> heads);

/// The memory `heads` hold (each record, ID and ELF header): what a caller
/// keeping a CCOB's table counts against max_decompressed_bytes.
std::uint64_t heads_bytes(std::span<const EntryHead> heads);

/// The outcome: the full report and the chosen entry's bytes.
struct StreamSelection {
  /// What became of the CCOB's stored hash.
  using Hash = StoredHash;
  /// Every entry judged, identical to select_entry over the decompressed bundle.
  Selection selection;
  /// The chosen entry's bytes; empty when nothing fits, or when not kept
  /// (StreamOptions::keep_chosen).
  std::vector<std::byte> chosen;
  /// Every entry's table fields and ELF header, in table order.
  std::vector<EntryHead> heads;
  /// False when the stream stopped (Skip mode, or a mark) before some
  /// entries' ELF headers (those of entries their IDs ruled out, after the
  /// choice): their `head` is then short or empty, and selecting on `heads`
  /// for another device is wrong.
  bool every_head = true;
  Hash hash = StoredHash::NotChecked;  ///< how the stored hash was (or was not) checked
  /// Uncompressed bytes decoded (all of them when the hash is Checked; often fewer otherwise).
  std::uint64_t decoded_bytes = 0;
  /// True when the entry table could not be streamed (entries out of offset
  /// order or overlapping, or a malformed table) and the bundle was
  /// decompressed whole instead. read_bundle then checks the hash in either
  /// mode (Checked), or in Verify mode trusts a mark (CheckedEarlier); Skip
  /// mode still reads and writes no marks.
  bool decompressed_whole = false;
};

/// Selects for `device` in the bundle `info` describes (from scan_bundles over
/// `source`), decompressing a CCOB as a stream. The selection equals
/// select_entry's over read_bundle's entries. Errors: those of read_bundle
/// (CorruptData, Truncated, SizeMismatch, HashMismatch in Verify mode,
/// LimitExceeded, table errors), and UnsupportedMethod for Unbundler::Comgr.
Expected<StreamSelection> select_in_compressed_bundle(const Device& device, std::span<const std::byte> source,
                                                      const BundleInfo& info, const SelectOptions& options = {},
                                                      const StreamOptions& stream = {});

/// Chooses an entry from a bundle's table alone: the entries carry ID,
/// offset, size and is_host, their bytes are empty. nullopt for none.
using EntryPicker = std::function<std::optional<std::size_t>(std::span<const BundleEntry> table)>;

/// Decodes the CCOB `info` describes as a stream, keeping only the entry
/// `pick` names (by entry ID, say, as clang-offload-bundler --unbundle
/// does). The selection marks that entry Selected ("requested") and every
/// other Rejected ("not requested"); `heads` holds every entry's table fields
/// and the ELF headers of the entries decoded before the choice was final.
/// With HashCheck::Skip, decoding stops once the picked entry is complete.
/// Plain bundles are read whole, as by select_in_compressed_bundle. Errors:
/// those of select_in_compressed_bundle (no UnsupportedMethod: no unbundler).
Expected<StreamSelection> extract_from_compressed_bundle(std::span<const std::byte> source, const BundleInfo& info,
                                                         const EntryPicker& pick, const StreamOptions& stream = {});

}  // namespace coload
