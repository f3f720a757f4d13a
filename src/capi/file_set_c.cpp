// The C API's file sets (coload/coload.h: coload_register_files,
// coload_register_directory) over Registry::register_files and
// register_directory; docs/loading.md, "File sets".
#include <cstddef>
#include <string>
#include <vector>

#include "capi/c_boundary.h"
#include "coload/coload.h"
#include "coload/fat_binary.h"
#include "coload/registry.h"

using namespace coload::capi;  // NOLINT: the C API's shared parts, in every entry point

coload_status coload_register_files(coload_registry* registry, const char* const* paths, size_t count,
                                    coload_binary* out) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (!out) return null_argument(function, "out");
    *out = 0;
    if (!paths) return null_argument(function, "paths");
    if (count > coload::kMaxSetFiles) {  // before anything is allocated for it
      return fail(COLOAD_ERROR_LIMIT_EXCEEDED, std::string(function) + ": count " + std::to_string(count) +
                                                   " is above the " + std::to_string(coload::kMaxSetFiles) +
                                                   " files a file set may hold");
    }
    std::vector<std::string> copied;
    copied.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (!paths[i]) return null_argument(function, ("paths[" + std::to_string(i) + "]").c_str());
      copied.emplace_back(paths[i]);
    }
    auto binary = cxx->register_files(copied);
    if (!binary) return fail(binary.error());
    *out = binary->value;
    return ok();
  });
}

coload_status coload_register_directory(coload_registry* registry, const char* path, const char* pattern, int recursive,
                                        coload_binary* out) {
  return register_binary(__func__, registry, out, path, "path", [&](coload::Registry& cxx) {
    return cxx.register_directory(path, {.pattern = pattern ? pattern : "", .recursive = recursive != 0});
  });
}
