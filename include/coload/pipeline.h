// coload/pipeline.h: the one path from a fat binary to a device's code
// objects, which the registry, the CLI and the C API all take.
//
// Covers: choosing for a device in every bundle of a FatBinary, on bounded
// decode threads, results handed over in bundle order; the byte budget one
// caller's CCOBs share. Does not cover: reading, validating or loading the
// chosen code object, caching across calls (the registry's, through a
// BundleReader); the thread pool itself (coload/detail/ordered_pool.h).
// Ownership: a StreamedChoice owns a CCOB's chosen bytes; a PlainChoice's
// entries view the FatBinary's source. Threads: KeptBytes is shared by
// threads; the functions share no state; `take` runs on the calling thread.
// docs/pipeline.md has the rest.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "coload/bundle.h"
#include "coload/device.h"
#include "coload/error.h"
#include "coload/fat_binary.h"
#include "coload/select.h"

namespace coload {

/// What one caller keeps of a binary's compressed bundles (table heads,
/// chosen entries, reports), held to one limit together: each CCOB is held to
/// max_decompressed_bytes alone, so a small file of many CCOBs would
/// otherwise make a caller keep many limits' worth. Thread-safe.
class KeptBytes {
 public:
  /// `scope` ends the error's sentence: "what one load keeps of its compressed bundles".
  KeptBytes(std::uint64_t limit, std::string scope) : limit_(limit), scope_(std::move(scope)) {}

  /// Counts `size` more bytes, or fails with LimitExceeded (field
  /// "max_decompressed_bytes", value `size`, the limit) naming `what`
  /// ("its chosen entry") and what is kept already; nothing is counted then.
  Expected<void> charge(std::uint64_t size, std::string_view what);
  std::uint64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  std::uint64_t limit_;
  std::string scope_;
  std::atomic<std::uint64_t> used_{0};
};

/// The bytes a selection's report holds (candidates, their IDs and reasons):
/// what a caller keeping reports counts against its KeptBytes.
std::uint64_t selection_bytes(const Selection& selection);

/// A plain bundle's (or a bare code object's, or a file set's group's)
/// choice: the bundle read in place; its entries view the binary's source.
struct PlainChoice {
  Bundle bundle;
};

/// A CCOB's choice: what its stream kept (select_in_compressed_bundle,
/// coload/detail/stream_select.h).
struct StreamedChoice {
  /// The chosen entry's bytes; empty when nothing fits, or when
  /// StreamOptions::keep_chosen is false.
  std::vector<std::byte> chosen;
  /// Every entry's table fields and ELF header, in table order; handed over
  /// only with ChooseOptions::keep_heads.
  std::vector<EntryHead> heads;
  /// False when the stream stopped (Skip mode, or a mark) before some
  /// entries' ELF headers: selecting on `heads` for another device is then wrong.
  bool every_head = true;
  StoredHash hash = StoredHash::NotChecked;  ///< how the stored hash was (or was not) checked
  /// Uncompressed bytes decoded (all of them when the hash is Checked; often fewer otherwise).
  std::uint64_t decoded_bytes = 0;
};

/// One bundle's choice for a device.
struct BundleChoice {
  /// Every entry judged, as Selector::select over the whole bundle judges it.
  Selection selection;
  /// How the bundle was read: in place, or streamed; std::monostate when a
  /// BundleReader keeps what it read itself (the registry's cache).
  std::variant<std::monostate, PlainChoice, StreamedChoice> how;
  /// The file the bundle came from: the binary's name, a file set's member,
  /// or for a file set's group of code objects the chosen entry's file (the
  /// set's name when nothing is chosen). FatBinary::file.
  std::string file;

  /// The plain choice; null for a CCOB's or a reader's.
  const PlainChoice* plain() const { return std::get_if<PlainChoice>(&how); }
  /// The streamed choice; null for a plain bundle's or a reader's.
  const StreamedChoice* streamed() const { return std::get_if<StreamedChoice>(&how); }
  StreamedChoice* streamed() { return std::get_if<StreamedChoice>(&how); }
  bool compressed() const { return streamed() != nullptr; }
  /// The chosen entry's bytes; empty when nothing was chosen (or kept).
  std::span<const std::byte> chosen_bytes() const;
};

/// Selects with `selector` in bundle `index` of `binary`: a plain bundle is
/// read in place, a CCOB streamed (select_in_compressed_bundle with
/// `stream`). `spent`, when given, is a selection no longer needed whose
/// storage a plain bundle's report reuses. Errors carry the bundle (and, from
/// the reader, the file) in their location; a file set's group of code
/// objects is read through FatBinary::read and selected as a plain bundle.
Expected<BundleChoice> select_in_bundle_at(const FatBinary& binary, std::size_t index, const Selector& selector,
                                           const StreamOptions& stream, Selection* spent = nullptr);

/// Reads bundle `index` for `selector`'s device in place of select_in_bundle_at:
/// the seam for a caller that keeps what it reads across calls (the
/// registry's cache of bundles and code objects). Called on a decode thread.
using BundleReader = std::function<Expected<BundleChoice>(std::size_t index, const Selector& selector)>;

/// How choose_in_binary works.
struct ChooseOptions {
  SelectOptions select;
  StreamOptions stream;
  /// Decode threads, this one included; 0: decode_threads() decides.
  std::size_t threads = 0;
  /// Whether a CCOB's StreamedChoice::heads are handed over (for a caller that
  /// selects again on them); dropped otherwise.
  bool keep_heads = false;
  /// Reads each bundle instead of select_in_bundle_at; null: select_in_bundle_at.
  BundleReader reader;
  /// Whether `reader` also reads each chosen entry's code object, which
  /// makes a plain bundle worth a thread too (decode_threads).
  bool reads_entries = false;
};

/// Takes a bundle's result on the calling thread; returns false to stop.
/// It may move the result out.
using ChoiceTaker = std::function<bool(std::size_t index, Expected<BundleChoice>& choice)>;

/// The pipeline: chooses for `device` in each bundle of `indices` (one
/// Selector for all of them), on up to `options.threads` threads, and hands
/// each result to `take` in the order of `indices`. An exception while
/// reading a bundle becomes that bundle's error (LimitExceeded for
/// bad_alloc). On one thread, a report `take` leaves in place is reused for
/// the next bundle.
void choose_in_binary(const FatBinary& binary, std::span<const std::size_t> indices, const Device& device,
                      const ChooseOptions& options, const ChoiceTaker& take);

}  // namespace coload
