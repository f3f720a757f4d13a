// Writes a plain offload bundle (plain_bundle_writer.h).
#include "formats/plain_bundle_writer.h"

#include <cstdint>
#include <cstring>

#include "common/magic.h"

namespace coload::detail {

namespace {

void put_u64(std::vector<std::byte>& out, std::uint64_t value) {
  const std::size_t at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);  // little-endian, as the format is on x86-64
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t alignment) {
  return alignment <= 1 ? value : (value + alignment - 1) / alignment * alignment;
}

}  // namespace

std::vector<std::byte> write_plain_bundle(std::span<const EntryToWrite> entries, std::size_t alignment) {
  std::uint64_t header = kPlainBundleMagic.size() + sizeof(std::uint64_t);
  for (const EntryToWrite& entry : entries) header += 3 * sizeof(std::uint64_t) + entry.id.size();
  std::vector<std::uint64_t> offsets;
  std::uint64_t end = header;
  for (const EntryToWrite& entry : entries) {
    // An empty entry (the host's) takes no room: it sits where the next one would.
    const std::uint64_t offset = entry.bytes.empty() ? end : round_up(end, alignment);
    offsets.push_back(offset);
    end = offset + entry.bytes.size();
  }
  std::vector<std::byte> out;
  out.reserve(end);
  for (char c : kPlainBundleMagic) out.push_back(static_cast<std::byte>(c));
  put_u64(out, entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    put_u64(out, offsets[i]);
    put_u64(out, entries[i].bytes.size());
    put_u64(out, entries[i].id.size());
    for (char c : entries[i].id) out.push_back(static_cast<std::byte>(c));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    out.resize(offsets[i], std::byte{0});
    out.insert(out.end(), entries[i].bytes.begin(), entries[i].bytes.end());
  }
  return out;
}

}  // namespace coload::detail
