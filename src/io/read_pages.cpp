#include "io/read_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

namespace coload::detail {

std::uintptr_t page_size() {
  static const auto size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

namespace {

struct Mapping {
  std::uintptr_t begin;
  std::uintptr_t end;
};

struct NotedMappings {
  std::mutex mutex;
  std::vector<Mapping> mappings;  // guarded by mutex
};

NotedMappings& noted() {
  static NotedMappings* mappings = new NotedMappings;  // never destroyed: a Source may outlive static destruction
  return *mappings;
}

}  // namespace

void note_file_mapping(const void* begin, std::size_t size) {
  auto at = reinterpret_cast<std::uintptr_t>(begin);
  NotedMappings& all = noted();
  std::lock_guard lock(all.mutex);
  try {
    all.mappings.push_back({at, at + size});
  } catch (const std::bad_alloc&) {  // not noted: its pages are never advised
  }
}

void forget_file_mapping(const void* begin) {
  auto at = reinterpret_cast<std::uintptr_t>(begin);
  NotedMappings& all = noted();
  std::lock_guard lock(all.mutex);
  std::erase_if(all.mappings, [&](const Mapping& mapping) { return mapping.begin == at; });
}

ReadPages::ReadPages(Bytes input) : input_(input) {
  if (input.size() < 2 * kStep) return;
  auto begin = reinterpret_cast<std::uintptr_t>(input.data());
  auto end = begin + input.size();
  NotedMappings& all = noted();
  std::lock_guard lock(all.mutex);
  active_ = std::any_of(all.mappings.begin(), all.mappings.end(),
                        [&](const Mapping& mapping) { return mapping.begin <= begin && end <= mapping.end; });
  // The first page wholly inside the input: the one before may hold a neighbour's bytes.
  next_page_ = (begin + page_size() - 1) & ~(page_size() - 1);
}

void ReadPages::release(std::size_t offset) {
  read_mark_ = offset;
  // Up to the page the decoder is in, which it may still read.
  std::uintptr_t to = (reinterpret_cast<std::uintptr_t>(input_.data()) + offset) & ~(page_size() - 1);
  if (to <= next_page_) return;
  // A failure leaves the pages resident, which is all the advice changes.
  (void)::madvise(reinterpret_cast<void*>(next_page_), to - next_page_, MADV_DONTNEED);
  next_page_ = to;
}

}  // namespace coload::detail
