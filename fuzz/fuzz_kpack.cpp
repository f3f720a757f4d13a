// Fuzzes kpack archives (coload/detail/kpack_archive.h): the header, the
// msgpack TOC, blobs and zstd frames, through FatBinary (every bundle read
// whole and one entry at a time) and through the Archive directly (every
// entry's stored range, head and bytes); and the HIPK marker reader. The input is read twice: as it is,
// and wrapped in a valid header so that any bytes reach the TOC reader:
// byte 0 gives the data region's length in units of 8 bytes, which follows
// from file offset 64; the rest is the TOC.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coload/detail/kpack_archive.h"
#include "coload/fat_binary.h"

namespace {

void read_binary(std::span<const std::byte> bytes, const coload::ReadOptions& options) {
  auto binary = coload::FatBinary::from_memory(bytes, "fuzz.kpack", options);
  if (!binary) return;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    if (auto bundle = binary->read(i)) {
      for (const coload::BundleEntry& entry : bundle->entries()) {
        volatile std::byte last = entry.bytes.empty() ? std::byte{0} : entry.bytes.back();
        (void)last;
      }
      for (std::size_t e = 0; e < bundle->entries().size(); ++e) (void)binary->read_only(i, e);
    }
  }
}

void read_archive(std::span<const std::byte> bytes, const coload::ReadOptions& options) {
  auto archive = coload::detail::kpack::Archive::parse(coload::SourceReader(bytes), options);
  if (!archive) return;
  std::vector<std::byte> out;
  for (const auto& entry : (*archive)->entries()) {
    if (auto stored = (*archive)->stored(entry)) {
      auto view = (*archive)->stored_bytes(*stored);
      volatile std::byte last = view.empty() ? std::byte{0} : view.back();
      (void)last;
    }
    (void)(*archive)->head(entry, 64, out);
    if (auto code = (*archive)->bytes(entry, out)) {
      volatile std::byte last = code->empty() ? std::byte{0} : code->back();
      (void)last;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  coload::ReadOptions options;
  options.max_decompressed_bytes = 16u << 20;
  read_binary(bytes, options);
  read_archive(bytes, options);
  // The same bytes as a kpack'd image's marker (the map a HIPK wrapper points at).
  if (auto marker = coload::detail::kpack::parse_marker(bytes)) {
    for (const std::string& path : marker->search_paths) (void)path.size();
  }
  if (size < 2) return 0;
  const std::size_t region = std::min<std::size_t>(std::size_t{data[0]} * 8, size - 2);
  std::vector<std::byte> wrapped(64, std::byte{0});
  const std::uint64_t toc = 64 + region;
  const char magic[] = {'K', 'P', 'A', 'K', 1, 0, 0, 0};
  for (std::size_t i = 0; i < 8; ++i) wrapped[i] = static_cast<std::byte>(magic[i]);
  for (std::size_t i = 0; i < 8; ++i) wrapped[8 + i] = static_cast<std::byte>(toc >> (8 * i));
  wrapped.insert(wrapped.end(), bytes.begin() + 1, bytes.end());
  read_binary(wrapped, options);
  read_archive(wrapped, options);
  return 0;
}
