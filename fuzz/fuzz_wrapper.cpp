// Fuzzes the __hip_fatbin_wrapper entry point (coload/detail/wrapper.h, and
// Registry::register_wrapper with a lookup) on memory that faults: the
// input's bytes are placed in a scratch file mapping, some of whose pages
// are then made PROT_NONE and the rest of which is cut off by truncating
// the file (its pages past the end fault with SIGBUS). Nothing may fault
// (docs/reading-rules.md, "What coload requires of the caller's memory and files").
//
// Input: byte 0, the pages made PROT_NONE (bit i: page i); byte 1, the
// file's length in 256-byte units (0 keeps it whole); bytes 2-3, where the
// image starts in the mapping (little-endian, modulo its size); byte 4, where
// the wrapper record lies (0xff: outside the mapping, else that many
// 64-byte steps in); the rest, the image, placed from its start.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "coload/detail/wrapper.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/registry.h"
#include "coload/runtime.h"

namespace {

constexpr std::size_t kPages = 8;

struct Scratch {
  std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::size_t size = kPages * page;
  int fd = ::memfd_create("coload-fuzz-wrapper", MFD_CLOEXEC);
  std::byte* base = nullptr;
  Scratch() {
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) return;
    void* at = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (at != MAP_FAILED) base = static_cast<std::byte*>(at);
  }
  /// Whole, writable and zero again.
  bool reset() {
    if (!base || ::mprotect(base, size, PROT_READ | PROT_WRITE) != 0) return false;
    if (::ftruncate(fd, 0) != 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) return false;
    return true;
  }
};

Scratch& scratch() {
  static Scratch* made = new Scratch;  // one mapping for the whole run
  return *made;
}

coload::Registry& registry() {
  static coload::Registry* made = [] {
    std::vector<coload::Device> devices;
    for (const char* spec : {"gfx90a", "gfx1100"}) {
      if (auto device = coload::device_from_spec(spec)) devices.push_back(*device);
    }
    return new coload::Registry(coload::open_dry_run_runtime(std::move(devices)), coload::Config{});
  }();
  return *made;
}

struct Record {
  std::uint32_t magic = coload::kHipFatbinWrapperMagic;
  std::uint32_t version = coload::kHipFatbinWrapperVersion;
  const void* binary = nullptr;
  void* reserved = nullptr;
};

std::uint64_t touch(std::span<const std::byte> bytes) {
  std::uint64_t sum = 0;
  for (std::byte b : bytes) sum += static_cast<std::uint8_t>(b);
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  Scratch& memory = scratch();
  if (!memory.reset()) return 0;
  const std::uint8_t protect = data[0];
  const std::size_t file_length = std::size_t{data[1]} * 256;
  const std::size_t image_at = (std::size_t{data[2]} | std::size_t{data[3]} << 8) % memory.size;
  const std::uint8_t record_step = data[4];
  std::span<const std::uint8_t> image(data + 5, size - 5);
  std::memcpy(memory.base + image_at, image.data(), std::min(image.size(), memory.size - image_at));

  Record outside{.binary = memory.base + image_at};
  const void* record = &outside;
  if (record_step != 0xff) {
    std::size_t at = std::size_t{record_step} * 64 % (memory.size - sizeof(Record) + 1);
    std::memcpy(memory.base + at, &outside, sizeof outside);
    record = memory.base + at;
  }
  if (file_length != 0 && file_length < memory.size && ::ftruncate(memory.fd, static_cast<off_t>(file_length)) != 0)
    return 0;
  for (std::size_t i = 0; i < kPages; ++i) {
    if ((protect >> i & 1) != 0) ::mprotect(memory.base + i * memory.page, memory.page, PROT_NONE);
  }

  std::uint64_t sum = 0;
  if (auto reach = coload::wrapper_reach(record)) {
    if (auto copy = coload::wrapped_image_in(record, *reach)) {
      sum += touch(*copy);  // the copy is coload's own: every byte is there
      if (auto fat = coload::FatBinary::from_memory(*copy)) sum += fat->bundles().size();
    }
  }
  if (auto mapped = coload::readable_bytes_at(memory.base + image_at)) {
    if (auto image_in_place = coload::measured_in_place(*mapped)) sum += image_in_place->size();
  }
  if (auto binary = registry().register_wrapper(record)) {
    for (std::size_t device = 0; device < registry().devices().size(); ++device) {
      if (auto kernel = registry().lookup_kernel(*binary, device, "_Z5saxpyfPKfPfi"))
        sum += (*kernel)->kernarg_segment_size;
    }
    (void)registry().unregister(*binary);
  }
  return sum == 0xdeadbeef ? 0 : 0;
}
