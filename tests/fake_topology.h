// A fake KFD topology in the shape of sysfs (/sys/class/kfd/kfd/topology),
// for the topology layer's tests and the preload's (COLOAD_KFD_TOPOLOGY).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace coload::testing {

// A GPU node's properties with the keys the kernel prints, in its order
// (drivers/gpu/drm/amd/amdkfd/kfd_topology.c, node_show); the values are
// those of an MI210-class board except the ones a test sets.
struct GpuProperties {
  std::uint64_t gfx_target_version = 90010;
  std::uint64_t capability = 0x00082080;  // no SRAM EDC bit
  std::uint64_t unique_id = 0;
  std::uint64_t drm_render_minor = 128;
  std::uint64_t lds_size_in_kb = 64;
  std::uint64_t simd_count = 416;

  std::string text() const {
    std::string out;
    auto line = [&](const char* key, std::uint64_t value) {
      out += std::string(key) + " " + std::to_string(value) + "\n";
    };
    line("cpu_cores_count", 0);
    line("simd_count", simd_count);
    line("mem_banks_count", 1);
    line("caches_count", 253);
    line("io_links_count", 1);
    line("p2p_links_count", 0);
    line("cpu_core_id_base", 0);
    line("simd_id_base", 2147487744);
    line("max_waves_per_simd", 8);
    line("lds_size_in_kb", lds_size_in_kb);
    line("gds_size_in_kb", 0);
    line("num_gws", 64);
    line("wave_front_size", 64);
    line("array_count", 8);
    line("simd_arrays_per_engine", 1);
    line("cu_per_simd_array", 16);
    line("simd_per_cu", 4);
    line("max_slots_scratch_cu", 32);
    line("gfx_target_version", gfx_target_version);
    line("vendor_id", 4098);
    line("device_id", 29711);
    line("location_id", 768);
    line("domain", 0);
    line("drm_render_minor", drm_render_minor);
    line("hive_id", 0);
    line("num_sdma_engines", 2);
    line("num_sdma_xgmi_engines", 3);
    line("num_sdma_queues_per_engine", 8);
    line("num_cp_queues", 24);
    line("max_engine_clk_fcompute", 1700);
    line("local_mem_size", 0);
    line("fw_version", 78);
    line("capability", capability);
    line("debug_prop", 1495);
    line("sdma_fw_version", 8);
    line("unique_id", unique_id);
    line("num_xcc", 1);
    line("max_engine_clk_ccompute", 3500);
    return out;
  }
};

inline constexpr std::uint64_t kSramEdc = 1u << 26;

inline const char* const kCpuProperties =
    "cpu_cores_count 32\nsimd_count 0\nmem_banks_count 1\ncaches_count 96\nio_links_count 2\n"
    "p2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base 0\nmax_waves_per_simd 0\nlds_size_in_kb 0\n"
    "gds_size_in_kb 0\nnum_gws 0\nwave_front_size 0\narray_count 0\nsimd_arrays_per_engine 0\n"
    "cu_per_simd_array 0\nsimd_per_cu 0\nmax_slots_scratch_cu 0\ngfx_target_version 0\nvendor_id 0\n"
    "device_id 0\nlocation_id 0\ndomain 0\ndrm_render_minor 0\nhive_id 0\nnum_sdma_engines 0\n"
    "num_sdma_xgmi_engines 0\nnum_sdma_queues_per_engine 0\nnum_cp_queues 0\nmax_engine_clk_ccompute 3500\n";

inline void write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

/// Writes a topology at `root`: nodes/0 a CPU, nodes/1.. the GPUs given, and
/// each GPU's render node in `render_nodes`.
inline void write_fake_topology(const std::filesystem::path& root, const std::filesystem::path& render_nodes,
                                const std::vector<GpuProperties>& gpus) {
  write(root / "nodes/0/gpu_id", "0\n");
  write(root / "nodes/0/properties", kCpuProperties);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::filesystem::path dir = root / "nodes" / std::to_string(1 + i);
    write(dir / "gpu_id", std::to_string(1001 + i) + "\n");
    write(dir / "properties", gpus[i].text());
    write(render_nodes / ("renderD" + std::to_string(gpus[i].drm_render_minor)), "");
  }
}

}  // namespace coload::testing
