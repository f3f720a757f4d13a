// Helpers the subcommands share: choosing in bundles, output files.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "bundle_order.h"
#include "coload/hotswap.h"
#include "commands.h"

namespace coload::cli {

std::span<const std::byte> BundleChoice::chosen_bytes() const {
  const Candidate* chosen = selection.chosen();
  if (!chosen) return {};
  if (bundle) return bundle->entries()[chosen->entry_index].bytes;
  return streamed;
}

Expected<BundleChoice> choose_in_bundle(const FatBinary& binary, std::size_t index, const Selector& selector,
                                        const StreamOptions& stream, std::string_view path, Selection* spent) {
  const Device& device = selector.device();
  const SelectOptions& select = selector.options();
  const BundleInfo& info = binary.bundles()[index];
  BundleChoice choice;
  // Streamed, or with comgr refused before anything is decoded (comgr cannot read a CCOB).
  if (info.format == BundleFormat::Compressed) {
    auto streamed = select_in_compressed_bundle(device, binary.source().bytes(), info, select, stream);
    if (!streamed) return in_bundle(std::move(streamed).error(), path, index);
    choice.selection = std::move(streamed->selection);
    choice.streamed = std::move(streamed->chosen);
    return choice;
  }
  auto bundle = binary.read(index);
  if (!bundle) return std::move(bundle).error();
  if (spent) choice.selection = std::move(*spent);
  if (auto selected = selector.select(*bundle, choice.selection); !selected) {
    return in_bundle(std::move(selected).error(), path, index);
  }
  choice.bundle = std::move(*bundle);
  return choice;
}

std::optional<SelectOptions> cli_select_options(const Config& config) {
  if (!config.hotswap) {
    if (!config.hotswap_plugin.empty() || !config.hotswap_pairs.empty()) {  // not a silent no-op (seeds/001)
      std::fprintf(stderr, "coload: warning: COLOAD_HOTSWAP_PLUGIN or COLOAD_HOTSWAP_PAIRS is set but "
                           "COLOAD_HOTSWAP is not 1: the hotswap tier is off\n");
    }
    return config.select_options();
  }
  auto registry = hotswap_registry(config);
  if (!registry) {
    std::fprintf(stderr, "coload: hotswap: %s\n", registry.error().message().c_str());
    return std::nullopt;
  }
  return config.select_options(*registry);
}

Error in_bundle(Error error, std::string_view path, std::size_t index) {
  std::string named = "bundle " + std::to_string(index) + " at offset ";
  if (error.message().starts_with(named)) return std::move(error).with_context(path);
  return std::move(error).with_context(std::string(path) + ": bundle " + std::to_string(index));
}

bool KeptBudget::charge(std::uint64_t size, std::string_view path, std::size_t bundle, std::string_view what) {
  auto hex = [](std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return std::string(text);
  };
  if (size <= limit_ - used_) {
    used_ += size;
    return true;
  }
  std::fprintf(stderr,
               "coload: %.*s: bundle %zu: %.*s (%s bytes) would pass the limit %s (max_decompressed_bytes) on what "
               "this command keeps of the file's compressed bundles, of which %s is kept already\n",
               static_cast<int>(path.size()), path.data(), bundle, static_cast<int>(what.size()), what.data(),
               hex(size).c_str(), hex(limit_).c_str(), hex(used_).c_str());
  return false;
}

std::uint64_t selection_bytes(const Selection& selection) {
  std::uint64_t total = 0;
  for (const Candidate& candidate : selection.candidates) {
    total += sizeof(Candidate) + candidate.id.size() + candidate.reason.size();
  }
  return total;
}

Error bundle_read_failure(std::string_view path, std::size_t index, const std::exception& exception) {
  std::string where = std::string(path) + ": bundle " + std::to_string(index);
  if (dynamic_cast<const std::bad_alloc*>(&exception)) {
    return Error(ErrorKind::LimitExceeded, where + ": out of memory while reading it");
  }
  return Error(ErrorKind::InvalidArgument, where + ": reading it failed: " + exception.what());
}

std::size_t decode_threads(const FatBinary& binary, std::span<const std::size_t> indices, Unbundler unbundler) {
  // Only decoding CCOBs is worth a thread: for plain bundles a second thread's
  // start and malloc arena cost more than the work it would share (measured:
  // `coload select` on 128 plain bundles, 1.44 -> 1.79 ms).
  if (unbundler != Unbundler::Builtin) return 1;
  std::size_t compressed = std::count_if(indices.begin(), indices.end(), [&](std::size_t index) {
    return binary.bundles()[index].format == BundleFormat::Compressed;
  });
  if (compressed < 2) return 1;  // hardware_concurrency reads sysfs
  return std::min<std::size_t>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u), compressed);
}

void choose_in_bundles(const FatBinary& binary, std::span<const std::size_t> indices, const Device& device,
                       const SelectOptions& select, const StreamOptions& stream, std::string_view path,
                       const std::function<bool(std::size_t index, Expected<BundleChoice>& choice)>& take) {
  const Selector selector(device, select);
  const std::size_t threads = decode_threads(binary, indices, select.unbundler);
  // One thread: each bundle's selection (a Candidate with two strings per
  // entry) takes over the storage of the one before; an image of 128
  // bundles was 2 300 allocations for them.
  Selection spent;
  Selection* reuse = threads < 2 ? &spent : nullptr;
  auto choose = [&](std::size_t index) -> Expected<BundleChoice> {
    try {
      return choose_in_bundle(binary, index, selector, stream, path, reuse);
    } catch (const std::exception& exception) {
      return bundle_read_failure(path, index, exception);
    }
  };
  auto take_back = [&](std::size_t index, Expected<BundleChoice>& choice) {
    bool going = take(index, choice);
    if (reuse && choice) spent = std::move(choice->selection);
    return going;
  };
  in_bundle_order(indices, threads, choose, take_back);
}

bool write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    std::fprintf(stderr, "coload: %s: cannot create: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) std::fprintf(stderr, "coload: %s: write failed: %s\n", path.c_str(), std::strerror(errno));
  return ok;
}

}  // namespace coload::cli
