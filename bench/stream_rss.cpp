// Peak RSS of one select_in_compressed_bundle call: maps a fat binary, selects
// for a device in its first bundle and prints the chosen entry's size and the
// process's peak RSS before and after the call (getrusage ru_maxrss, KiB).
//   coload_stream_rss FILE DEVICE verify|skip|whole [MARKS]
// `whole` is read_bundle + select_entry, the path that keeps the whole bundle.
// MARKS is a verified cache (ReadOptions::verified_cache): run twice, the
// first run checks the hash and marks the CCOB, the second trusts the mark.
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"

namespace {
long peak_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s FILE DEVICE verify|skip|whole [MARKS]\n", argv[0]);
    return 2;
  }
  auto fat = coload::FatBinary::open(argv[1]);
  auto device = coload::device_from_spec(argv[2]);
  if (!fat || !device || fat->bundles().empty()) {
    std::fprintf(stderr, "cannot open %s or parse device %s\n", argv[1], argv[2]);
    return 1;
  }
  const coload::BundleInfo& info = fat->bundles()[0];
  long before = peak_kib();
  std::size_t chosen = 0;
  const char* hash = "checked";  // read_bundle checks it
  if (std::strcmp(argv[3], "whole") == 0) {
    auto bundle = coload::read_bundle(fat->source().bytes(), info);
    if (!bundle) return 1;
    auto selection = coload::select_entry(*device, bundle->entries());
    if (selection.chosen()) chosen = bundle->entries()[selection.chosen()->entry_index].size;
  } else {
    coload::StreamOptions options;
    options.hash = std::strcmp(argv[3], "skip") == 0 ? coload::StreamOptions::HashCheck::Skip
                                                     : coload::StreamOptions::HashCheck::Verify;
    if (argc == 5) options.read.verified_cache = argv[4];
    auto result = coload::select_in_compressed_bundle(*device, fat->source().bytes(), info, {}, options);
    if (!result) {
      std::fprintf(stderr, "%s\n", result.error().message().c_str());
      return 1;
    }
    chosen = result->chosen.size();
    hash = result->hash == coload::StreamSelection::Hash::Checked          ? "checked"
           : result->hash == coload::StreamSelection::Hash::CheckedEarlier ? "checked_earlier"
                                                                           : "not_checked";
  }
  long after = peak_kib();
  std::printf("mode %s hash %s chosen_KiB %zu peak_before_KiB %ld peak_after_KiB %ld growth_KiB %ld\n", argv[3], hash,
              chosen / 1024, before, after, after - before);
  return 0;
}
