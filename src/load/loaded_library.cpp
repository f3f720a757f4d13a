// load/loaded_library.cpp: finding a loaded runtime library by its SONAME
// family (loaded_library.h).
#include "load/loaded_library.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <charconv>
#include <utility>

namespace coload::detail {
namespace {

/// The DT_SONAME in the dynamic section at `dynamic` of an object loaded at `base`.
std::optional<std::string_view> soname_in(ElfW(Addr) base, const ElfW(Dyn) * dynamic) {
  if (!dynamic) return std::nullopt;
  ElfW(Addr) strtab = 0;
  std::optional<ElfW(Xword)> soname;
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_STRTAB) strtab = entry->d_un.d_ptr;
    if (entry->d_tag == DT_SONAME) soname = entry->d_un.d_val;
  }
  if (!soname || strtab == 0) return std::nullopt;
  // glibc relocates DT_STRTAB in place; where the dynamic section is
  // read-only (and under other loaders) it stays relative to the load address.
  if (strtab < base) strtab += base;
  return std::string_view(reinterpret_cast<const char*>(strtab + *soname));
}

/// The DT_SONAME of a loaded object, from its dynamic segment in memory.
std::optional<std::string_view> soname_of(const dl_phdr_info& info) {
  const ElfW(Dyn)* dynamic = nullptr;
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    if (info.dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info.dlpi_addr + info.dlpi_phdr[i].p_vaddr);
    }
  }
  return soname_in(info.dlpi_addr, dynamic);
}

/// `name` is `family` itself or `family` + "." + a number.
bool in_family(std::string_view name, std::string_view family) {
  if (!name.starts_with(family)) return false;
  std::string_view rest = name.substr(family.size());
  return rest.empty() || (rest.size() >= 2 && rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9');
}

LoadedLibrary describe(const dl_phdr_info& info) {
  const std::optional<std::string_view> soname = soname_of(info);
  const std::string_view name = soname ? *soname : base_name(info.dlpi_name);
  return LoadedLibrary{info.dlpi_name, std::string(name), major_in_name(name), soname.has_value()};
}

struct Search {
  std::string_view family;
  std::optional<LoadedLibrary> found;
};

int visit(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;  // the executable, the vDSO
  LoadedLibrary library = describe(*info);
  if (!in_family(library.name, search->family)) return 0;
  search->found = std::move(library);
  return 1;
}

}  // namespace

std::optional<LoadedLibrary> find_loaded_library(std::string_view family) {
  Search search{family, std::nullopt};
  dl_iterate_phdr(visit, &search);
  return search.found;
}

std::optional<LoadedLibrary> loaded_library_of(void* handle) {
  link_map* map = nullptr;
  if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return std::nullopt;
  const std::optional<std::string_view> soname = soname_in(map->l_addr, map->l_ld);
  const std::string_view name = soname ? *soname : base_name(map->l_name);
  return LoadedLibrary{map->l_name, std::string(name), major_in_name(name), soname.has_value()};
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string family_of(std::string_view name) {
  name = base_name(name);
  for (std::size_t at = name.find(".so"); at != std::string_view::npos; at = name.find(".so", at + 1)) {
    const std::size_t end = at + 3;
    if (end == name.size() || name[end] == '.') return std::string(name.substr(0, end));
  }
  return std::string(name);
}

std::optional<int> major_in_name(std::string_view name) {
  name = base_name(name);
  const std::size_t so = name.find(".so.");
  if (so == std::string_view::npos) return std::nullopt;
  const std::string_view digits = name.substr(so + 4);
  int major = 0;
  auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), major);
  if (status != std::errc() || end == digits.data() || end - digits.data() > 4) return std::nullopt;
  if (end != digits.data() + digits.size() && *end != '.') return std::nullopt;
  return major;
}

}  // namespace coload::detail
