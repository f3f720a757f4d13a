// Test support for the streamed-selection tests (stream_select_test.cpp,
// stream_select_marks_test.cpp, stream_extract_test.cpp): the compressed
// fixtures, a bundle of three real-looking entries, a CCOB whose table is out
// of offset order, and streamed selection from a one-CCOB binary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload::stream_select_test {

// The names every streamed-selection test uses.
using testing::Bytes;
using testing::CcobMethod;
using testing::describe;
using testing::device;
using testing::entry_bytes;
using testing::FailsWith;
using testing::Succeeds;
using Hash = StreamOptions::HashCheck;

inline const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;
inline constexpr std::uint32_t kGfx90a = 0x3f, kGfx942 = 0x4c, kGfx1030 = 0x36;

inline std::vector<std::string> compressed_fixtures() {
  std::ifstream table(kFixtures / "bundles.tsv");
  std::vector<std::string> paths;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string path, index, file, format;
    fields >> path >> index >> file >> format;
    if (format.starts_with("ccob") && std::find(paths.begin(), paths.end(), path) == paths.end()) {
      paths.push_back(path);
    }
  }
  return paths;
}

// A bundle of real-looking entries: gfx1030, gfx90a (large), gfx942, each an
// ELF header followed by filler.

// kLarge makes it 4.8 MB: past 2 MiB, libzstd's window gives way to decoding
// in place (ccob/decompress.cpp), so both ways are covered.
inline constexpr std::size_t kLarge = 4;

inline Bytes three_entry_bundle(std::size_t scale = 1) {
  constexpr std::uint32_t kAny = testing::kXnackAny | testing::kSrameccAny;
  return testing::write_plain_bundle({
      {"host-x86_64-unknown-linux-gnu", {}},
      {"hipv4-amdgcn-amd-amdhsa--gfx1030", entry_bytes(kGfx1030, 300000 * scale, 1)},
      {"hipv4-amdgcn-amd-amdhsa--gfx90a", entry_bytes(kGfx90a | kAny, 500000 * scale, 2)},
      {"hipv4-amdgcn-amd-amdhsa--gfx942", entry_bytes(kGfx942 | kAny, 400000 * scale, 3)},
  });
}

inline Expected<StreamSelection> select_ccob(const Bytes& ccob, std::string_view spec, StreamOptions stream = {}) {
  auto binary = FatBinary::from_memory(ccob);
  if (!binary) return std::move(binary).error();
  return select_in_compressed_bundle(device(spec), ccob, binary->bundles()[0], {}, stream);
}

// A CCOB whose entries are not in ascending offset order: the gfx90a entry
// (returned in `gfx90a`) comes after the gfx942 one.
inline Bytes out_of_order_ccob(Bytes& gfx90a) {
  gfx90a = entry_bytes(kGfx90a | testing::kXnackAny | testing::kSrameccAny, 1000, 4);
  Bytes b = entry_bytes(kGfx942 | testing::kXnackAny | testing::kSrameccAny, 1000, 5);
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x2000, gfx90a.size()),
                 testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx942", 0x1000, b.size())};
  Bytes plain = testing::write_raw_bundle_header(raw);
  testing::place(plain, 0x2000, gfx90a);
  testing::place(plain, 0x1000, b);
  return testing::write_ccob(plain, 3, CcobMethod::Zstd);
}

}  // namespace coload::stream_select_test
