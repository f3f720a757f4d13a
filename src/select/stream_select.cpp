// select_in_compressed_bundle / extract_from_compressed_bundle: the selector
// (or a caller's pick from the table) fed by a decompressing stream.
// A sink follows the plain bundle as it arrives: it buffers the header until
// the entry table parses, then walks the entries in offset order, judges each
// from its first 64 bytes with the selector's own rules (select/rank.h), and
// keeps the bytes of the best entry so far (unless the caller wants none),
// dropping them when a better one appears. Anything the walk cannot follow
// (entries out of offset order or overlapping, a table that does not parse)
// falls back to read_bundle + select_entry, so errors and results stay those
// of the whole-bundle path.
#include "coload/detail/stream_select.h"

#include <algorithm>
#include <optional>
#include <string>

#include "ccob/ccob_decode.h"
#include "common/bytes.h"
#include "common/try.h"
#include "formats/plain_table.h"
#include "io/window_memory.h"
#include "select/rank.h"

namespace coload {
namespace {

using detail::Bytes;
using detail::hex;

/// How the sink chooses: by a device's rules (judging each entry's ELF
/// header as it arrives) or by a caller's pick from the table alone.
struct Chooser {
  const Device* device = nullptr;
  const SelectOptions* options = nullptr;
  const EntryPicker* pick = nullptr;
};

/// An entry judged by a caller's pick: the picked one fits (and is
/// selected once complete), every other is "not requested".
Candidate picked_candidate(std::size_t index, std::string id, bool picked) {
  Candidate candidate;
  candidate.entry_index = index;
  candidate.id = std::move(id);
  if (picked) {
    candidate.tier = Tier::Native;
    candidate.verdict = Verdict::Compatible;
    candidate.reason = "requested";
  } else {
    candidate.reason = "not requested";
  }
  return candidate;
}

class SelectingSink final : public detail::DecodeSink {
 public:
  /// `keep_chosen`: buffer the chosen entry (the choice is then final only
  /// once it is complete).
  SelectingSink(Chooser chooser, std::uint64_t extent, bool keep_chosen)
      : chooser_(chooser), extent_(extent), keep_chosen_(keep_chosen) {}

  /// A stream decoded whole (for its hash) is never stopped early; otherwise
  /// it stops once the choice is final.
  void begin(bool whole_stream) override { whole_stream_ = whole_stream; }

  void write(Bytes chunk) override {
    std::uint64_t at = position_;
    position_ += chunk.size();
    if (state_ == State::Header) {
      header_.insert(header_.end(), chunk.begin(), chunk.end());
      if (header_.size() < next_attempt_ && header_.size() < extent_) return;
      try_table();
      if (state_ != State::Entries) return;
      // The rest of what is buffered is entry data.
      Bytes rest = Bytes(header_).subspan(header_size_);
      walk(rest, header_size_);
      std::vector<std::byte>().swap(header_);
      return;
    }
    if (state_ == State::Entries) walk(chunk, at);
  }

  bool done() const override { return !whole_stream_ && finished_; }

  bool streamed() const { return state_ == State::Entries && finished_; }
  /// Whether every entry's head went by (Skip mode may stop before).
  bool every_head() const {
    return std::all_of(slots_.begin(), slots_.end(), [](const EntryHead& slot) {
      return slot.head.size() == std::min<std::uint64_t>(slot.size, detail::kElfHeaderBytes);
    });
  }
  std::uint64_t decoded() const { return position_; }
  Selection take_selection() { return std::move(selection_); }
  std::vector<std::byte> take_chosen() { return std::move(best_bytes_); }
  std::vector<EntryHead> take_heads() { return std::move(slots_); }

 private:
  enum class State { Header, Entries, Fallback };

  // Parses the table once the buffered prefix holds it; a table that cannot
  // be streamed sends the caller to the whole-bundle path.
  void try_table() {
    auto table = detail::parse_plain_bundle_prefix(header_, extent_);
    if (!table) {
      if (table.error().kind() == ErrorKind::Truncated && header_.size() < extent_) {
        next_attempt_ = header_.size() * 2;  // geometric: a huge table is parsed a few times, not per chunk
        return;
      }
      state_ = State::Fallback;
      return;
    }
    header_size_ = table->header_size;
    slots_.reserve(table->entries.size());
    std::uint64_t previous_end = header_size_;
    for (const BundleEntry& entry : table->entries) {
      slots_.push_back({std::string(entry.id), entry.offset, entry.size, entry.is_host, {}});
      if (entry.size == 0) continue;
      if (entry.offset < previous_end) {  // out of offset order or overlapping
        state_ = State::Fallback;
        return;
      }
      previous_end = entry.offset + entry.size;
    }
    state_ = State::Entries;
    selection_.candidates.resize(slots_.size());
    decided_.assign(slots_.size(), false);
    if (chooser_.pick) {
      // Every entry is judged from the table; only the picked one is kept.
      std::vector<BundleEntry> listed = head_entries(slots_);
      picked_ = (*chooser_.pick)(listed);
      if (picked_ && *picked_ >= slots_.size()) picked_.reset();
      for (std::size_t i = 0; i < slots_.size(); ++i) judge_picked(i);
      if (picked_ && slots_[*picked_].size == 0) {  // nothing to wait for
        best_ = picked_;
        best_complete_ = true;
      }
    } else {
      selection_.device = chooser_.device->str();
      for (std::size_t i = 0; i < slots_.size(); ++i) judge_by_table(i);
    }
    advance_to_sized();
    check_finished();
  }

  // Judges entry `index` from the table when its bytes cannot change the
  // verdict: an empty entry, the host's, or one its ID rejects (another
  // kind, a processor unrelated to the device). Skip mode then needs none
  // of its bytes, so the stream can stop before it.
  void judge_by_table(std::size_t index) {
    const EntryHead& slot = slots_[index];
    if (slot.size == 0 || slot.is_host) {
      judge(index, Bytes());
      return;
    }
    detail::IdVerdict verdict = detail::judge_id(*chooser_.device, slot.id, *chooser_.options);
    if (verdict.target) return;  // its ELF header decides
    detail::judge_by_id(selection_.candidates[index], index, slot.id, verdict);
    decided_[index] = true;
    ++judged_;
  }

  void advance_to_sized() {
    while (current_ < slots_.size() && slots_[current_].size == 0) ++current_;
    // Only an entry that may yet be chosen is kept while it arrives.
    keep_current_ =
        current_ < slots_.size() && !finished_ && (chooser_.pick ? picked_ == current_ : !decided_[current_]);
  }

  // Feeds `data`, which starts at bundle offset `at`, to the entries: each
  // entry's first 64 bytes become its head (and its judgement, unless the
  // table decided it); a kept entry is buffered whole.
  void walk(Bytes data, std::uint64_t at) {
    while (!data.empty() && current_ < slots_.size()) {
      EntryHead& slot = slots_[current_];
      if (at < slot.offset) {  // padding before the entry
        std::uint64_t skip = std::min<std::uint64_t>(data.size(), slot.offset - at);
        data = data.subspan(skip);
        at += skip;
        continue;
      }
      std::uint64_t end = slot.offset + slot.size;
      std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), end - at));
      std::size_t head_size = static_cast<std::size_t>(std::min<std::uint64_t>(slot.size, detail::kElfHeaderBytes));
      bool had_head = slot.head.size() == head_size;
      if (!had_head) {
        std::size_t more = std::min(take, head_size - slot.head.size());
        slot.head.insert(slot.head.end(), data.begin(), data.begin() + more);
      }
      if (keep_current_ && keep_chosen_) {
        if (buffer_.empty()) {
          buffer_.reserve(std::min<std::uint64_t>(slot.size, 64u << 20));
          detail::window_memory::populate(buffer_.data(), buffer_.capacity());
        }
        buffer_.insert(buffer_.end(), data.begin(), data.begin() + take);
      }
      data = data.subspan(take);
      at += take;
      if (!had_head && slot.head.size() == head_size) {
        if (!chooser_.pick && !decided_[current_]) judge(current_, slot.head);
        if (keep_current_ && takes(current_)) {
          best_ = current_;
          best_complete_ = false;
          std::vector<std::byte>().swap(best_bytes_);  // the old best loses
        } else {
          keep_current_ = false;
          std::vector<std::byte>().swap(buffer_);
        }
      }
      if (at == end) {
        if (best_ == current_) {
          best_bytes_ = std::move(buffer_);
          best_complete_ = true;
        }
        buffer_ = {};
        ++current_;
        check_finished();
        advance_to_sized();
      }
      check_finished();
      if (done()) return;
    }
  }

  void judge(std::size_t index, Bytes head) {
    const EntryHead& slot = slots_[index];
    BundleEntry entry{.id = slot.id, .offset = slot.offset, .size = slot.size, .is_host = slot.is_host, .bytes = head};
    detail::judge_candidate(selection_.candidates[index], *chooser_.device, entry, index, *chooser_.options);
    decided_[index] = true;
    ++judged_;
  }

  void judge_picked(std::size_t index) {
    selection_.candidates[index] = picked_candidate(index, slots_[index].id, picked_ == index);
    decided_[index] = true;
    ++judged_;
  }

  // Whether the entry just judged replaces the best so far.
  bool takes(std::size_t index) {
    if (chooser_.pick) return picked_ == index;
    const Candidate& candidate = selection_.candidates[index];
    if (!candidate.tier || (best_ && !(detail::rank(candidate) < *best_rank_))) return false;
    best_rank_ = detail::rank(candidate);
    return true;
  }

  // Final once every entry is judged and the best one is complete: Skip mode
  // stops here; Verify mode decodes on for the hash, keeping only heads.
  void check_finished() {
    if (finished_ || judged_ != slots_.size() || (keep_chosen_ && best_ && !best_complete_) || (picked_ && !best_)) {
      return;
    }
    finished_ = true;
    keep_current_ = false;
    if (!chooser_.pick) {
      detail::finish_selection(selection_);
    } else if (picked_) {
      selection_.selected = picked_;
      selection_.candidates[*picked_].verdict = Verdict::Selected;
    }
  }

  Chooser chooser_;
  std::uint64_t extent_;
  bool keep_chosen_;
  bool whole_stream_ = false;  // hashed: never stop early
  std::uint64_t position_ = 0;

  State state_ = State::Header;
  std::vector<std::byte> header_;
  std::uint64_t next_attempt_ = 0;
  std::uint64_t header_size_ = 0;

  std::vector<EntryHead> slots_;
  Selection selection_;
  std::vector<bool> decided_;  // judged already (from the table or its head)
  std::size_t judged_ = 0;
  std::size_t current_ = 0;        // the sized entry the stream is in or before
  bool keep_current_ = false;      // its bytes may yet be the best
  std::vector<std::byte> buffer_;  // its bytes so far, while kept
  std::optional<std::size_t> best_;
  std::optional<detail::Rank> best_rank_;
  bool best_complete_ = false;
  std::vector<std::byte> best_bytes_;
  std::optional<std::size_t> picked_;  // pick mode: the caller's choice
  bool finished_ = false;
};

StreamSelection::Hash stream_hash(detail::HashOutcome outcome) {
  switch (outcome) {
    case detail::HashOutcome::Checked: return StreamSelection::Hash::Checked;
    case detail::HashOutcome::CheckedEarlier: return StreamSelection::Hash::CheckedEarlier;
    case detail::HashOutcome::NotChecked: break;
  }
  return StreamSelection::Hash::NotChecked;
}

// The whole-bundle path: read_bundle, choose, copy the chosen entry.
// `hash` says how read_bundle's hash check went, as the caller arranged it.
Expected<StreamSelection> select_whole(const Chooser& chooser, Bytes source, const BundleInfo& info,
                                       const ReadOptions& read, bool keep_chosen, std::uint64_t decoded,
                                       StreamSelection::Hash hash) {
  auto bundle = read_bundle(source, info, read);
  COLOAD_RETURN_IF_ERROR(bundle);
  StreamSelection result;
  for (const BundleEntry& entry : bundle->entries()) {
    Bytes head = entry.bytes.first(std::min<std::size_t>(entry.bytes.size(), detail::kElfHeaderBytes));
    result.heads.push_back(
        {std::string(entry.id), entry.offset, entry.size, entry.is_host, {head.begin(), head.end()}});
  }
  if (chooser.pick) {
    std::vector<BundleEntry> listed(bundle->entries().begin(), bundle->entries().end());
    for (BundleEntry& entry : listed) entry.bytes = {};  // the picker sees the table alone
    std::optional<std::size_t> picked = (*chooser.pick)(listed);
    if (picked && *picked >= listed.size()) picked.reset();
    for (std::size_t i = 0; i < listed.size(); ++i) {
      result.selection.candidates.push_back(picked_candidate(i, std::string(listed[i].id), picked == i));
    }
    if (picked) {
      result.selection.selected = picked;
      result.selection.candidates[*picked].verdict = Verdict::Selected;
    }
  } else {
    result.selection = select_entry(*chooser.device, bundle->entries(), *chooser.options);
  }
  if (const Candidate* chosen = result.selection.chosen(); chosen && keep_chosen) {
    Bytes bytes = bundle->entries()[chosen->entry_index].bytes;
    result.chosen.assign(bytes.begin(), bytes.end());
  }
  result.decoded_bytes = decoded + (info.compressed ? info.compressed->uncompressed_size : 0);
  result.decompressed_whole = true;
  result.hash = hash;
  return result;
}

// Streams the CCOB `info` describes through a sink choosing as `chooser` says.
Expected<StreamSelection> stream_bundle(const Chooser& chooser, Bytes source, const BundleInfo& info,
                                        const StreamOptions& stream) {
  if (info.format != BundleFormat::Compressed) {
    return select_whole(chooser, source, info, stream.read, stream.keep_chosen, 0, StreamSelection::Hash::NotChecked);
  }
  if (auto fits = detail::check_range({}, info.offset, info.size, source.size(), "the input"); !fits) {
    return std::move(fits)
        .error()
        .at_field("bundle", info.offset, info.size, source.size())
        .in_bundle(info.index, info.offset);
  }
  Bytes bytes = source.subspan(info.offset, info.size);
  auto header =
      info.compressed ? Expected<CompressedHeader>(*info.compressed) : parse_compressed_header(bytes, stream.read);
  if (!header) return std::move(header).error().in_bundle(info.index, info.offset);
  SelectingSink sink(chooser, header->uncompressed_size, stream.keep_chosen);
  auto hash = detail::decode_verified(bytes, *header, stream.read, sink,
                                      {.check_hash = stream.hash == StreamOptions::HashCheck::Verify});
  if (!hash) return std::move(hash).error().in_bundle(info.index, info.offset);
  if (!sink.streamed()) {
    // read_bundle checks the hash whatever the mode. In Verify mode it
    // trusts the mark this call found (CheckedEarlier) or has just written
    // (the stream checked); Skip mode reads and writes no marks, so it checks.
    ReadOptions read = stream.read;
    if (stream.hash == StreamOptions::HashCheck::Skip) read.verified_cache.clear();
    return select_whole(chooser, source, info, read, stream.keep_chosen, sink.decoded(),
                        *hash == detail::HashOutcome::CheckedEarlier ? StreamSelection::Hash::CheckedEarlier
                                                                     : StreamSelection::Hash::Checked);
  }

  StreamSelection result;
  result.every_head = sink.every_head();
  result.selection = sink.take_selection();
  result.chosen = sink.take_chosen();
  result.heads = sink.take_heads();
  result.decoded_bytes = sink.decoded();
  result.hash = stream_hash(*hash);
  return result;
}

}  // namespace

std::uint64_t heads_bytes(std::span<const EntryHead> heads) {
  std::uint64_t total = 0;
  for (const EntryHead& head : heads) total += sizeof(EntryHead) + head.id.size() + head.head.size();
  return total;
}

std::vector<BundleEntry> head_entries(std::span<const EntryHead> heads) {
  std::vector<BundleEntry> entries;
  entries.reserve(heads.size());
  for (const EntryHead& head : heads) {
    entries.push_back(
        {.id = head.id, .offset = head.offset, .size = head.size, .is_host = head.is_host, .bytes = head.head});
  }
  return entries;
}

Expected<StreamSelection> select_in_compressed_bundle(const Device& device, std::span<const std::byte> source,
                                                      const BundleInfo& info, const SelectOptions& options,
                                                      const StreamOptions& stream) {
  if (options.unbundler == Unbundler::Comgr) {
    return Error(ErrorKind::UnsupportedMethod,
                 "the comgr unbundler cannot read compressed bundles; use the builtin one")
        .in_bundle(info.index, info.offset);
  }
  return stream_bundle(Chooser{.device = &device, .options = &options}, source, info, stream);
}

Expected<StreamSelection> extract_from_compressed_bundle(std::span<const std::byte> source, const BundleInfo& info,
                                                         const EntryPicker& pick, const StreamOptions& stream) {
  return stream_bundle(Chooser{.pick = &pick}, source, info, stream);
}

}  // namespace coload
