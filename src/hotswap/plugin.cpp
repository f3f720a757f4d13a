// External hotswap passes (coload/hotswap_plugin.h): a shared library opened
// with dlopen, its C ABI checked and wrapped as a HotswapPass. Every failure
// (open, missing symbol, version, pairs, and later each transform) is an
// Error naming the plugin; the library is closed again when loading fails, so
// a bad plugin leaves the process as it was.
#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <string>

#include "coload/detail/hotswap.h"
#include "coload/hotswap_plugin.h"
#include "coload/target.h"
#include "target/elf_target.h"

namespace coload {
namespace {

using VersionFn = int (*)();
using NameFn = const char* (*)();
using PairsFn = int (*)(const char* const**, const char* const**, std::size_t*);
using TransformFn = int (*)(const void*, std::size_t, const char*, void**, std::size_t*, char*, std::size_t);
using FreeFn = void (*)(void*);

/// More pairs than any processor table could make: a plugin reporting more
/// is returning garbage.
constexpr std::size_t kMaxPluginPairs = 4096;
constexpr std::size_t kErrorCapacity = 1024;

struct PluginAbi {
  std::shared_ptr<void> library;  // dlclose when the last pass using it goes
  VersionFn version = nullptr;
  NameFn name = nullptr;
  PairsFn pairs = nullptr;
  TransformFn transform = nullptr;
  FreeFn free = nullptr;
};

template <class Fn>
Expected<void> resolve(void* library, const char* symbol, const std::string& where, Fn& out) {
  dlerror();
  void* address = dlsym(library, symbol);
  if (!address) {
    const char* reason = dlerror();
    return Error(ErrorKind::NotFound,
                 where + ": missing symbol " + symbol + (reason ? std::string(" (") + reason + ")" : ""));
  }
  out = reinterpret_cast<Fn>(address);
  return {};
}

/// The transform of a plugin as a HotswapPass transform: the plugin's
/// failure, an empty output or one that is not an AMDHSA code object becomes
/// an Error naming the plugin and the device.
HotswapPass::Transform wrap_transform(std::shared_ptr<const PluginAbi> abi, std::string where) {
  return [abi = std::move(abi), where = std::move(where)](std::span<const std::byte> source,
                                                          const Device& device) -> Expected<std::vector<std::byte>> {
    const std::string target = device.str();
    const std::string context = where + ": transform for " + target;
    void* out = nullptr;
    std::size_t out_size = 0;
    char error[kErrorCapacity] = {};
    int status = abi->transform(source.data(), source.size(), target.c_str(), &out, &out_size, error, sizeof(error));
    std::unique_ptr<void, FreeFn> owned(out, abi->free);
    error[sizeof(error) - 1] = '\0';
    if (status != 0) {
      std::string reason(error, strnlen(error, sizeof(error)));
      return Error(ErrorKind::InvalidArgument, context + " failed with status " + std::to_string(status) +
                                                   (reason.empty() ? std::string(" and no reason") : ": " + reason));
    }
    if (!out || out_size == 0) {
      return Error(ErrorKind::Malformed, context + ": returned " + (out ? "an empty buffer" : "no buffer"));
    }
    std::span<const std::byte> bytes(static_cast<const std::byte*>(out), out_size);
    if (auto target_read = read_code_object_target(bytes); !target_read) {
      return std::move(target_read)
          .error()
          .with_context(context + ": output of " + std::to_string(out_size) + " bytes is not an AMDHSA code object");
    }
    // Only the ELF's own extent is kept: bytes a plugin returns past it are
    // never read, and copying them would let a plugin grow memory at will.
    auto extent = detail::code_object_size(bytes);
    if (!extent) {
      return std::move(extent).error().with_context(context + ": output of " + std::to_string(out_size) + " bytes");
    }
    return std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(*extent));
  };
}

}  // namespace

Expected<void> HotswapRegistry::add_plugin(const std::string& path) {
  std::string where = "hotswap plugin " + path;
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = dlerror();
    return Error(ErrorKind::Io, where + ": cannot be loaded: " + (reason ? reason : "unknown dlopen error"));
  }
  auto abi = std::make_shared<PluginAbi>();
  abi->library = std::shared_ptr<void>(handle, [](void* library) { dlclose(library); });
  if (auto r = resolve(handle, "coload_hotswap_plugin_version", where, abi->version); !r) return r;
  if (auto r = resolve(handle, "coload_hotswap_plugin_name", where, abi->name); !r) return r;
  if (auto r = resolve(handle, "coload_hotswap_plugin_pairs", where, abi->pairs); !r) return r;
  if (auto r = resolve(handle, "coload_hotswap_plugin_transform", where, abi->transform); !r) return r;
  if (auto r = resolve(handle, "coload_hotswap_plugin_free", where, abi->free); !r) return r;

  int version = abi->version();
  if (version != COLOAD_HOTSWAP_PLUGIN_ABI) {
    return Error(ErrorKind::UnsupportedVersion, where + ": plugin ABI version " + std::to_string(version) +
                                                    "; coload supports " + std::to_string(COLOAD_HOTSWAP_PLUGIN_ABI));
  }
  const char* name = abi->name();
  if (!name || !*name) return Error(ErrorKind::Malformed, where + ": coload_hotswap_plugin_name returned no name");
  where += " (\"" + std::string(name) + "\")";

  const char* const* sources = nullptr;
  const char* const* devices = nullptr;
  std::size_t count = 0;
  if (int status = abi->pairs(&sources, &devices, &count); status != 0) {
    return Error(ErrorKind::Malformed,
                 where + ": coload_hotswap_plugin_pairs failed with status " + std::to_string(status));
  }
  if (count > kMaxPluginPairs) {
    return Error(ErrorKind::LimitExceeded, where + ": " + std::to_string(count) + " pairs exceed the limit of " +
                                               std::to_string(kMaxPluginPairs));
  }
  if (count == 0 || !sources || !devices) {
    return Error(ErrorKind::Malformed,
                 where + ": coload_hotswap_plugin_pairs returned " + (count == 0 ? "no pairs" : "a null array"));
  }
  HotswapPass pass;
  pass.name = name;
  for (std::size_t i = 0; i < count; ++i) {
    if (!sources[i] || !devices[i]) {
      return Error(ErrorKind::Malformed, where + ": pair " + std::to_string(i) + " has a null processor name");
    }
    pass.pairs.push_back({sources[i], devices[i]});
  }
  pass.transform = wrap_transform(abi, where);
  if (auto added = add(std::move(pass)); !added) return std::move(added).error().with_context(where);
  plugins_.push_back(abi->library);
  return {};
}

}  // namespace coload
