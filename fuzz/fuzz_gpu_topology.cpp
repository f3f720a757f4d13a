// Fuzzes the KFD topology reader (coload/detail/gpu_topology.h) on a fake
// tree written for each input: a CPU node 0 and up to four GPU nodes whose
// properties files hold the input's bytes, with the environment the input
// names. Nothing may crash; every failure is an error naming its file
// (docs/preload.md, "The GPUs without the runtime").
//
// Input: byte 0, flags (bit 0 HSA_XNACK=1, bit 1 the KFD's xnack mode on,
// bit 2 HSA_ENABLE_SRAMECC=1, bit 3 ROCR_VISIBLE_DEVICES set, bit 4
// HIP_VISIBLE_DEVICES set, bit 5 HSA_OVERRIDE_GFX_VERSION set); the rest,
// split at NUL bytes: ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and
// HSA_OVERRIDE_GFX_VERSION values, then the properties of nodes 1, 2, 3, 4.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "coload/detail/gpu_topology.h"

namespace {

constexpr std::size_t kGpus = 4;

const std::filesystem::path& scratch() {
  static const std::filesystem::path* made = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "coload_fuzz_topology_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch(), ignored);
    });
    return new std::filesystem::path(pattern);
  }();
  return *made;
}

void write(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t flags = data[0];
  std::vector<std::string> parts;
  std::string current;
  for (std::size_t i = 1; i < size; ++i) {
    if (data[i] == 0 && parts.size() < 3 + kGpus - 1) {
      parts.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  parts.push_back(current);
  parts.resize(3 + kGpus);

  const std::filesystem::path root = scratch() / "topology";
  std::error_code ignored;
  std::filesystem::remove_all(root, ignored);
  write(root / "nodes/0/gpu_id", "0\n");
  write(root / "nodes/0/properties", "cpu_cores_count 8\nsimd_count 0\n");
  for (std::size_t gpu = 0; gpu < kGpus; ++gpu) {
    const std::string node = std::to_string(gpu + 1);
    write(root / "nodes" / node / "gpu_id", node + "\n");
    write(root / "nodes" / node / "properties", parts[3 + gpu]);
    write(scratch() / "dri" / ("renderD" + std::to_string(128 + gpu)), "");
  }

  std::map<std::string, std::string> environment;
  if (flags & 1) environment["HSA_XNACK"] = "1";
  if (flags & 4) environment["HSA_ENABLE_SRAMECC"] = "1";
  if (flags & 8) environment["ROCR_VISIBLE_DEVICES"] = parts[0];
  if (flags & 16) environment["HIP_VISIBLE_DEVICES"] = parts[1];
  if (flags & 32) environment["HSA_OVERRIDE_GFX_VERSION"] = parts[2];
  coload::detail::TopologyOptions options;
  options.root = root.string();
  options.render_nodes = (scratch() / "dri").string();
  options.environment = [&environment](std::string_view name) -> std::optional<std::string> {
    auto it = environment.find(std::string(name));
    return it == environment.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  const bool kfd_on = (flags & 2) != 0;
  options.kfd_xnack_mode = [kfd_on] { return std::optional<bool>(kfd_on); };
  auto gpus = coload::detail::topology_gpus(options);
  if (!gpus) {
    (void)gpus.error().message();
  } else {
    for (const auto& gpu : *gpus) {
      if (gpu.isa_name.empty() || gpu.node == 0 || gpu.node > kGpus) std::abort();
    }
  }
  return 0;
}
