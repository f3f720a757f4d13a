// The C++ consumer: the same checks as consumer.c, from C++17 (the standard
// CLR-style runtimes build with), through the C API with RAII handles.
//
//   consumer_cpp FILE DEVICE KERNEL ENTRY_ID KERNARG_SIZE LDS_SIZE
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "coload/coload.h"

namespace {

struct RegistryDeleter {
  void operator()(coload_registry* registry) const { coload_registry_destroy(registry); }
};
using Registry = std::unique_ptr<coload_registry, RegistryDeleter>;

void check(coload_status status, const char* what) {
  if (status != COLOAD_OK)
    throw std::runtime_error(std::string(what) + ": " + coload_status_string(status) + ": " +
                             coload_last_error_message());
}

struct Chosen {
  std::string entry_id;
  coload_tier tier = COLOAD_TIER_HOTSWAP;
  coload_status status = COLOAD_ERROR_NOT_FOUND;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fputs("usage: consumer_cpp FILE DEVICE KERNEL ENTRY_ID KERNARG_SIZE LDS_SIZE\n", stderr);
    return 2;
  }
  try {
    if (std::string_view(coload_version()) != COLOAD_VERSION_STRING)
      throw std::runtime_error(std::string("library ") + coload_version() + ", headers " + COLOAD_VERSION_STRING);
    coload_registry_options options{};
    options.struct_size = sizeof options;
    options.runtime = COLOAD_RUNTIME_DRY_RUN;
    options.dry_run_devices = argv[2];
    options.ignore_environment = 1;
    coload_registry* raw = nullptr;
    check(coload_registry_create(&options, &raw), "coload_registry_create");
    Registry registry(raw);

    coload_binary binary = 0;
    check(coload_register_file(registry.get(), argv[1], &binary), "coload_register_file");
    Chosen chosen;
    auto take_first = [](void* user_data, const coload_choice* choice) -> int {
      auto* into = static_cast<Chosen*>(user_data);
      into->entry_id = choice->entry_id;
      into->tier = choice->tier;
      into->status = choice->status;
      return 0;
    };
    check(coload_choose(registry.get(), binary, 0, take_first, &chosen), "coload_choose");
    if (chosen.status != COLOAD_OK || chosen.entry_id != argv[4] || chosen.tier != COLOAD_TIER_NATIVE)
      throw std::runtime_error("bundle 0 chose '" + chosen.entry_id + "', expected native " + argv[4]);

    coload_kernel_info info{};
    info.struct_size = sizeof info;
    check(coload_lookup_kernel(registry.get(), binary, 0, argv[3], &info), "coload_lookup_kernel");
    if (info.kernarg_segment_size != std::strtoul(argv[5], nullptr, 0) ||
        info.group_segment_size != std::strtoul(argv[6], nullptr, 0))
      throw std::runtime_error(std::string(argv[3]) + " has kernarg " + std::to_string(info.kernarg_segment_size) +
                               " and LDS " + std::to_string(info.group_segment_size));
    std::printf("coload %s (C++): %s chose %s; %s kernarg %u LDS %u\n", coload_version(), argv[2],
                chosen.entry_id.c_str(), argv[3], info.kernarg_segment_size, info.group_segment_size);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "consumer_cpp: %s\n", error.what());
    return 1;
  }
}
