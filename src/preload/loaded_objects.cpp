// The loaded objects' readable segments (loaded_objects.h).
#include "preload/loaded_objects.h"

#include <link.h>

#include <unistd.h>

#include <algorithm>

namespace coload::preload {

namespace {

struct Search {
  std::uintptr_t address = 0;
  std::optional<LoadedObject> found;
};

/// The name of the main program, which dl_iterate_phdr lists as "".
std::string program_name() {
  char path[4096];
  const ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return length > 0 ? std::string(path, static_cast<std::size_t>(length)) : "the program";
}

int visit(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  LoadedObject object{.base = info->dlpi_addr, .name = info->dlpi_name ? info->dlpi_name : "", .readable = {}};
  bool holds = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) & header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_R) == 0) continue;
    const std::uintptr_t start = info->dlpi_addr + header.p_vaddr;
    object.readable.emplace_back(start, start + header.p_filesz);
    holds |= search->address >= start && search->address - start < header.p_filesz;
  }
  if (!holds) return 0;
  if (object.name.empty()) object.name = program_name();
  search->found = std::move(object);
  return 1;
}

}  // namespace

std::span<const std::byte> LoadedObject::bytes_at(const void* address, std::size_t limit) const {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  for (const auto& [start, end] : readable) {
    if (at < start || at >= end) continue;
    const std::size_t size = std::min<std::uintptr_t>(end - at, limit);
    return {static_cast<const std::byte*>(address), size};
  }
  return {};
}

const LoadedObject* LoadedObjects::holding(const void* address) {
  if (last_ && !last_->bytes_at(address, 1).empty()) return &*last_;
  Search search{.address = reinterpret_cast<std::uintptr_t>(address)};
  dl_iterate_phdr(visit, &search);
  if (!search.found) return nullptr;
  last_ = std::move(search.found);
  return &*last_;
}

}  // namespace coload::preload
