#include "io/window_memory.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>

namespace coload::detail::window_memory {
namespace {

constexpr std::size_t kHeader = 64;  // ahead of each buffer; keeps malloc's alignment

struct Header {
  std::size_t mapped;  // bytes mapped from the header on, or 0 for a malloc'd block
};

struct Mapping {
  std::byte* block = nullptr;
  std::size_t length = 0;
};

std::byte* map_aligned(std::size_t length) {
  // Over-map by one huge page and trim, so the block starts on a 2 MiB boundary.
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto address = reinterpret_cast<std::uintptr_t>(raw);
  std::uintptr_t start = (address + kHugePage - 1) / kHugePage * kHugePage;
  std::size_t head = start - address;
  if (head > 0) munmap(raw, head);
  munmap(reinterpret_cast<void*>(start + length), kHugePage - head);
  auto* block = reinterpret_cast<std::byte*>(start);
  madvise(block, length, MADV_HUGEPAGE);  // fails without THP in the kernel: 4 KiB pages, as malloc's
  return block;
}

class KeptMappings {
 public:
  /// The smallest kept mapping of at least `length` bytes, or none.
  Mapping take(std::size_t length) {
    std::lock_guard lock(mutex_);
    Mapping* best = nullptr;
    for (Mapping& kept : kept_) {
      if (kept.block != nullptr && kept.length >= length && (best == nullptr || kept.length < best->length)) {
        best = &kept;
      }
    }
    if (best == nullptr) return {};
    return std::exchange(*best, Mapping{});
  }

  /// Keeps the largest of the kept mappings and `mapping`, at most
  /// kKeptMappings of them and kKeptBytes in all; unmaps the others.
  void give(Mapping mapping) {
    std::array<Mapping, kKeptMappings + 1> all{};
    all[kKeptMappings] = mapping;
    if (mapping.length <= kKeptBytes) madvise(mapping.block, mapping.length, MADV_FREE);
    {
      std::lock_guard lock(mutex_);
      std::copy(kept_.begin(), kept_.end(), all.begin());
      std::sort(all.begin(), all.end(), [](const Mapping& a, const Mapping& b) { return a.length > b.length; });
      kept_ = {};
      std::size_t count = 0;
      std::size_t total = 0;
      for (Mapping& candidate : all) {
        if (candidate.block == nullptr || count == kKeptMappings || total + candidate.length > kKeptBytes) continue;
        total += candidate.length;
        kept_[count++] = std::exchange(candidate, Mapping{});
      }
    }
    for (const Mapping& left : all) {
      if (left.block != nullptr) munmap(left.block, left.length);
    }
  }

  void drop() {
    std::array<Mapping, kKeptMappings> dropped;
    {
      std::lock_guard lock(mutex_);
      dropped = std::exchange(kept_, {});
    }
    for (const Mapping& mapping : dropped) {
      if (mapping.block != nullptr) munmap(mapping.block, mapping.length);
    }
  }

  void lock() { mutex_.lock(); }
  void unlock() { mutex_.unlock(); }

  std::size_t bytes() {
    std::lock_guard lock(mutex_);
    std::size_t total = 0;
    for (const Mapping& kept : kept_) total += kept.length;
    return total;
  }

 private:
  std::mutex mutex_;
  std::array<Mapping, kKeptMappings> kept_{};
};

KeptMappings* kept = nullptr;  // set once, by kept_mappings()

KeptMappings& kept_mappings() {
  // Never destroyed: decoding threads may outlive static destructors. The
  // lock is held across fork(), so a child never inherits it locked by a
  // thread it does not have.
  static const bool ready = [] {
    kept = new KeptMappings;
    pthread_atfork([] { kept->lock(); }, [] { kept->unlock(); }, [] { kept->unlock(); });
    return true;
  }();
  (void)ready;
  return *kept;
}

}  // namespace

void* allocate(void*, std::size_t size) {
  if (size > SIZE_MAX / 2) return nullptr;
  if (size + kHeader < kHugePage) {
    auto* block = static_cast<std::byte*>(std::malloc(size + kHeader));
    if (block == nullptr) return nullptr;
    new (block) Header{0};
    return block + kHeader;
  }
  std::size_t length = (size + kHeader + kHugePage - 1) / kHugePage * kHugePage;
  Mapping mapping = kept_mappings().take(length);
  if (mapping.block == nullptr) mapping = Mapping{map_aligned(length), length};
  if (mapping.block == nullptr) return nullptr;
  new (mapping.block) Header{mapping.length};
  return mapping.block + kHeader;
}

void release(void*, void* buffer) {
  if (buffer == nullptr) return;
  auto* block = static_cast<std::byte*>(buffer) - kHeader;
  std::size_t mapped = reinterpret_cast<Header*>(block)->mapped;
  if (mapped == 0) {
    std::free(block);
  } else {
    kept_mappings().give(Mapping{block, mapped});
  }
}

std::size_t kept_bytes() { return kept_mappings().bytes(); }

void drop_kept() { kept_mappings().drop(); }

void populate(void* bytes, std::size_t size) {
  static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<std::uintptr_t>(bytes);
  std::uintptr_t first = (begin + page - 1) / page * page;
  std::uintptr_t last = (begin + size) / page * page;
  // Fails before Linux 5.14 (EINVAL): the pages are then faulted as written.
  if (last >= first + kPopulateFrom) madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
}

}  // namespace coload::detail::window_memory
