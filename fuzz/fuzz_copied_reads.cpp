// Fuzzes reading a large mapped file by copies (SourceReader: bundle tables
// and ELF headers read with pread) against reading the same bytes in place:
// the input, padded with zeros past Source::kKeepOpenAbove in a memfd, must
// open, read, give the same heads and select exactly as FatBinary::from_memory
// over the same bytes, and fail with the same error, word for word. One
// Selector over all of a file's bundles must select as select_in_bundle does.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/select.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

template <class T>
void require_same_outcome(const coload::Expected<T>& a, const coload::Expected<T>& b) {
  require(a.has_value() == b.has_value());
  if (!a) require(a.error().kind() == b.error().kind() && a.error().message() == b.error().message());
}

void require_same_selection(const coload::Selection& a, const coload::Selection& b) {
  require(a.device == b.device && a.selected == b.selected && a.candidates.size() == b.candidates.size());
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    const coload::Candidate& x = a.candidates[i];
    const coload::Candidate& y = b.candidates[i];
    require(x.entry_index == y.entry_index && x.id == y.id && x.tier == y.tier && x.verdict == y.verdict &&
            x.reason == y.reason && x.needs_jit == y.needs_jit &&
            x.code_object.has_value() == y.code_object.has_value());
  }
}

void require_same_bundle(const coload::Bundle& copied, const coload::Bundle& in_place, const std::byte* copied_base,
                         const std::byte* in_place_base, const coload::Device& device,
                         const coload::Selector& selector) {
  require(copied.entries().size() == in_place.entries().size());
  for (std::size_t e = 0; e < copied.entries().size(); ++e) {
    const coload::BundleEntry& a = copied.entries()[e];
    const coload::BundleEntry& b = in_place.entries()[e];
    require(a.id == b.id && a.offset == b.offset && a.size == b.size && a.is_host == b.is_host);
    require(a.bytes.size() == b.bytes.size());
    if (copied.info().format == coload::BundleFormat::Plain) {
      require(a.bytes.data() - copied_base == b.bytes.data() - in_place_base);
    }
    std::vector<std::byte> scratch;
    auto head = copied.head(e, 64, scratch);
    require(head.has_value());
    auto expected = b.bytes.first(std::min<std::size_t>(64, b.bytes.size()));
    require(std::equal(head->begin(), head->end(), expected.begin(), expected.end()));
  }
  auto x = coload::select_in_bundle(device, copied);
  auto y = coload::select_in_bundle(device, in_place);
  auto z = selector.select(copied);
  require(x.has_value() && y.has_value() && z.has_value());
  require_same_selection(*x, *y);
  require_same_selection(*z, *x);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One sparse in-memory file, rewritten for every input.
  static const int fd = memfd_create("coload_fuzz_copied_reads", MFD_CLOEXEC);
  require(fd >= 0);
  const std::size_t padded = std::max<std::size_t>(size, coload::Source::kKeepOpenAbove + 1);
  require(ftruncate(fd, 0) == 0 && ftruncate(fd, static_cast<off_t>(padded)) == 0);
  require(size == 0 || pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  static std::vector<std::byte> bytes;
  bytes.assign(padded, std::byte{0});
  if (size > 0) std::memcpy(bytes.data(), data, size);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  coload::ReadOptions read;
  read.max_decompressed_bytes = 16u << 20;  // stays inside libFuzzer's malloc limit
  auto copied = coload::FatBinary::open(path, read);
  auto in_place = coload::FatBinary::from_memory(bytes, path, read);
  require_same_outcome(copied, in_place);
  if (!copied) return 0;
  require(copied->source().reader().copies());
  require(copied->bundles().size() == in_place->bundles().size());
  static const coload::Device device = *coload::device_from_spec("gfx90a:sramecc+:xnack-");
  const coload::Selector selector(device);  // one per file, as the CLI and the registry use it
  for (std::size_t b = 0; b < copied->bundles().size(); ++b) {
    const coload::BundleInfo& info = copied->bundles()[b];
    const coload::BundleInfo& other = in_place->bundles()[b];
    require(info.offset == other.offset && info.size == other.size && info.format == other.format);
    auto x = copied->read(b);
    auto y = in_place->read(b);
    require_same_outcome(x, y);
    if (x) {
      require_same_bundle(*x, *y, copied->source().bytes().data(), in_place->source().bytes().data(), device, selector);
    }
  }
  return 0;
}
