// Fuzzes streaming selection in compressed bundles against the whole-bundle
// path: for any input, select_in_compressed_bundle must fail exactly when
// read_bundle fails (in Verify mode), and otherwise agree with select_entry
// on the chosen entry and its bytes, in both modes, and on the choice alone
// without the bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "coload/bundle.h"
#include "coload/detail/stream_select.h"
#include "coload/device.h"
#include "coload/select.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  coload::ReadOptions read;
  read.max_decompressed_bytes = 16u << 20;  // stays inside libFuzzer's malloc limit
  auto header = coload::parse_compressed_header(bytes, read);
  if (!header) return 0;
  auto total = coload::compressed_bundle_size(bytes, *header, read);
  if (!total || *total > bytes.size()) return 0;
  coload::BundleInfo info{
      .index = 0, .offset = 0, .size = *total, .format = coload::BundleFormat::Compressed, .compressed = *header};
  static const coload::Device device = *coload::device_from_spec("gfx90a:sramecc+:xnack-");

  auto whole = coload::read_bundle(bytes, info, read);
  coload::StreamOptions stream{.hash = coload::StreamOptions::HashCheck::Verify, .read = read};
  auto streamed = coload::select_in_compressed_bundle(device, bytes, info, {}, stream);
  if (whole.has_value() != streamed.has_value()) std::abort();
  if (!whole) return 0;
  coload::Selection expected = coload::select_entry(device, whole->entries());
  if (expected.selected != streamed->selection.selected) std::abort();
  if (expected.selected) {
    std::span<const std::byte> chosen = whole->entries()[*expected.selected].bytes;
    if (!std::equal(chosen.begin(), chosen.end(), streamed->chosen.begin(), streamed->chosen.end())) std::abort();
  }
  // Selecting on the kept heads (a second device in the registry) agrees too.
  static const coload::Device other = *coload::device_from_spec("gfx1100");
  coload::Selection on_whole = coload::select_entry(other, whole->entries());
  if (!streamed->every_head) std::abort();  // Verify decodes every head
  coload::Selection on_heads = coload::select_entry(other, coload::head_entries(streamed->heads));
  if (on_whole.selected != on_heads.selected) std::abort();
  // Skip mode decodes a prefix of the same intact stream: the same choice and
  // bytes, and its heads, when they are all there, choose as the whole does.
  stream.hash = coload::StreamOptions::HashCheck::Skip;
  auto skipped = coload::select_in_compressed_bundle(device, bytes, info, {}, stream);
  if (!skipped || skipped->selection.selected != expected.selected || skipped->chosen != streamed->chosen) std::abort();
  if (skipped->every_head &&
      coload::select_entry(other, coload::head_entries(skipped->heads)).selected != on_whole.selected) {
    std::abort();
  }
  // Without the chosen bytes, Skip stops sooner: the same choice, nothing kept.
  stream.keep_chosen = false;
  auto bare = coload::select_in_compressed_bundle(device, bytes, info, {}, stream);
  if (!bare || bare->selection.selected != expected.selected || !bare->chosen.empty()) std::abort();
  if (bare->decoded_bytes > skipped->decoded_bytes) std::abort();
  return 0;
}
