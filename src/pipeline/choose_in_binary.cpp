// The pipeline (coload/pipeline.h): a device's choice in every bundle of a
// binary, and the byte budget its callers share.
#include <algorithm>
#include <exception>
#include <new>
#include <thread>

#include "coload/detail/ordered_pool.h"
#include "coload/detail/stream_select.h"
#include "coload/pipeline.h"
#include "common/bytes.h"
#include "common/try.h"
#include "formats/kpack_bundles.h"
#include "select/rank.h"

namespace coload {

Expected<void> KeptBytes::charge(std::uint64_t size, std::string_view what) {
  std::uint64_t before = used_.load(std::memory_order_relaxed);
  do {
    if (size > limit_ - before) {
      return Error(ErrorKind::LimitExceeded, std::string(what) + " (" + detail::hex(size) +
                                                 " bytes) would pass the limit " + detail::hex(limit_) +
                                                 " (max_decompressed_bytes) on " + scope_ + ", of which " +
                                                 detail::hex(before) + " is kept already")
          .at_field("max_decompressed_bytes", std::nullopt, size, limit_);
    }
  } while (!used_.compare_exchange_weak(before, before + size, std::memory_order_relaxed));
  return {};
}

std::uint64_t selection_bytes(const Selection& selection) {
  std::uint64_t total = 0;
  for (const Candidate& candidate : selection.candidates) {
    total += sizeof(Candidate) + candidate.id.size() + candidate.reason.size();
  }
  return total;
}

std::span<const std::byte> BundleChoice::chosen_bytes() const {
  const Candidate* chosen = selection.chosen();
  if (!chosen) return {};
  if (const PlainChoice* in_place = plain()) return in_place->bundle.entries()[chosen->entry_index].bytes;
  if (const StreamedChoice* stream = streamed()) return stream->chosen;
  return {};
}

namespace {

/// A kpack key's choice, decoding as little as a CCOB's stream does: the ELF
/// headers of the entries whose IDs leave the choice to them, then the
/// chosen entry whole. The bundle handed over holds only the chosen entry's bytes.
Expected<BundleChoice> select_in_kpack_bundle(const FatBinary& binary, std::size_t index, const Selector& selector,
                                              Selection* spent) {
  const auto members = binary.kpack_members(index);
  auto located = [&](Error error) { return std::move(error).in_bundle(index).in_file(binary.file(index)); };
  if (members->members.empty()) return located(Error(ErrorKind::NotFound, members->none_found));
  std::vector<detail::KpackPart> parts(members->members.size(), detail::KpackPart::Stored);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& id = members->members[i].toc().id;
    if (detail::judge_id(selector.device(), id, selector.options()).target) parts[i] = detail::KpackPart::Head;
  }
  auto heads = detail::read_kpack_bundle(members, binary.bundles()[index], parts);
  if (!heads) return located(std::move(heads).error());
  BundleChoice choice;
  if (spent) choice.selection = std::move(*spent);
  if (auto selected = selector.select(*heads, choice.selection); !selected) return located(std::move(selected).error());
  std::fill(parts.begin(), parts.end(), detail::KpackPart::Nothing);
  if (const Candidate* chosen = choice.selection.chosen()) {
    const detail::kpack::Member& member = members->members[chosen->entry_index];
    if (!member.refused.empty()) {
      return located(Error(ErrorKind::Ambiguous, member.refused).at_entry(chosen->entry_index, member.toc().id));
    }
    parts[chosen->entry_index] = detail::KpackPart::Whole;
    choice.file = binary.file(index, chosen->entry_index);
  } else {
    choice.file = binary.file(index);
  }
  auto bundle = detail::read_kpack_bundle(members, binary.bundles()[index], parts);
  if (!bundle) return located(std::move(bundle).error());
  choice.how = PlainChoice{std::move(*bundle)};
  return choice;
}

}  // namespace

Expected<BundleChoice> select_in_bundle_at(const FatBinary& binary, std::size_t index, const Selector& selector,
                                           const StreamOptions& stream, Selection* spent) {
  const BundleInfo& info = binary.bundles()[index];
  BundleChoice choice;
  // Streamed, or with comgr refused before anything is decoded (comgr cannot read a CCOB).
  if (info.format == BundleFormat::Compressed) {
    auto streamed = select_in_compressed_bundle(selector.device(), binary.source_of(index).bytes(), info,
                                                selector.options(), stream);
    if (!streamed) return std::move(streamed).error().in_bundle(index).in_file(binary.file(index));
    choice.file = binary.file(index);
    choice.selection = std::move(streamed->selection);
    choice.how = StreamedChoice{.chosen = std::move(streamed->chosen),
                                .heads = std::move(streamed->heads),
                                .every_head = streamed->every_head,
                                .hash = streamed->hash,
                                .decoded_bytes = streamed->decoded_bytes};
    return choice;
  }
  if (info.format == BundleFormat::Kpack) return select_in_kpack_bundle(binary, index, selector, spent);
  auto bundle = binary.read(index);
  COLOAD_RETURN_IF_ERROR(bundle);
  if (spent) choice.selection = std::move(*spent);
  if (auto selected = selector.select(*bundle, choice.selection); !selected) {
    return binary.at_bundle(std::move(selected).error(), index);
  }
  const Candidate* chosen = choice.selection.chosen();
  choice.file = binary.file(index, chosen ? std::optional(chosen->entry_index) : std::nullopt);
  choice.how = PlainChoice{std::move(*bundle)};
  return choice;
}

std::size_t decode_threads(const FatBinary& binary, std::span<const std::size_t> indices, Unbundler unbundler,
                           bool reads_entries) {
  // Only decoding CCOBs (or reading code objects) is worth a thread: for
  // choosing in plain bundles a second thread's start and malloc arena cost
  // more than the work it would share (docs/notes/performance.md).
  if (unbundler != Unbundler::Builtin) return 1;
  const std::size_t worth =
      reads_entries ? indices.size() : std::count_if(indices.begin(), indices.end(), [&](std::size_t index) {
        return binary.bundles()[index].format == BundleFormat::Compressed;
      });
  if (worth < 2) return 1;  // hardware_concurrency reads sysfs
  return std::min<std::size_t>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u), worth);
}

Error bundle_failure(std::size_t index, const std::exception& exception) {
  if (dynamic_cast<const std::bad_alloc*>(&exception)) {
    return Error(ErrorKind::LimitExceeded, "out of memory while reading it").in_bundle(index);
  }
  return Error(ErrorKind::InvalidArgument, std::string("reading it failed: ") + exception.what()).in_bundle(index);
}

void choose_in_binary(const FatBinary& binary, std::span<const std::size_t> indices, const Device& device,
                      const ChooseOptions& options, const ChoiceTaker& take) {
  const Selector selector(device, options.select);
  const std::size_t threads =
      std::min(options.threads ? options.threads
                               : decode_threads(binary, indices, options.select.unbundler, options.reads_entries),
               std::max<std::size_t>(indices.size(), 1));
  // One thread: each bundle's report (a Candidate with two strings per
  // entry) takes over the storage of the one before; an image of 128
  // bundles was 2 300 allocations for them.
  Selection spent;
  Selection* reuse = threads < 2 ? &spent : nullptr;
  auto choose = [&](std::size_t index) -> Expected<BundleChoice> {
    try {
      auto choice = options.reader ? options.reader(index, selector)
                                   : select_in_bundle_at(binary, index, selector, options.stream, reuse);
      if (StreamedChoice* streamed = choice ? choice->streamed() : nullptr; streamed && !options.keep_heads) {
        std::vector<EntryHead>().swap(streamed->heads);
      }
      return choice;
    } catch (const std::exception& exception) {
      return bundle_failure(index, exception).in_file(binary.file(index));
    }
  };
  if (threads < 2) {  // no slots to keep: each result lives until the next
    for (std::size_t index : indices) {
      Expected<BundleChoice> choice = choose(index);
      if (!take(index, choice)) return;
      if (choice) spent = std::move(choice->selection);
    }
    return;
  }
  std::vector<std::optional<Expected<BundleChoice>>> made(indices.size());
  auto work = [&](std::size_t slot) { made[slot].emplace(choose(indices[slot])); };
  auto hand_over = [&](std::size_t slot) {
    bool going = take(indices[slot], *made[slot]);
    made[slot].reset();
    return going;
  };
  for_each_in_order(indices.size(), threads, work, hand_over);
}

}  // namespace coload
