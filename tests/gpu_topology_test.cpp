// The GPUs of a machine from a fake KFD topology (src/topology/gpu_topology.cpp;
// docs/preload.md, "The GPUs without the runtime"): the ISA names ROCr gives,
// xnack and sramecc modes, ROCR_VISIBLE_DEVICES then HIP_VISIBLE_DEVICES, and
// every malformed tree refused with its kind, file, key and value.
#include "coload/detail/gpu_topology.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "fake_topology.h"
#include "test_util.h"

namespace coload::detail {
namespace {

using coload::testing::GpuProperties;
using coload::testing::kCpuProperties;
using coload::testing::kSramEdc;
using coload::testing::write;

// nodes/0 a CPU, nodes/1.. the GPUs given, each with its render node.
class FakeTopology {
 public:
  explicit FakeTopology(const std::vector<GpuProperties>& gpus) {
    write(root() / "nodes/0/gpu_id", "0\n");
    write(root() / "nodes/0/properties", kCpuProperties);
    for (std::size_t i = 0; i < gpus.size(); ++i) add_node(1 + i, gpus[i].text(), gpus[i].drm_render_minor);
  }
  void add_node(std::size_t node, const std::string& properties, std::uint64_t minor) {
    const std::filesystem::path dir = root() / "nodes" / std::to_string(node);
    write(dir / "gpu_id", std::to_string(1000 + node) + "\n");
    write(dir / "properties", properties);
    write(std::filesystem::path(dev()) / ("renderD" + std::to_string(minor)), "");
  }
  std::filesystem::path root() const { return scratch_.path() / "topology"; }
  std::string dev() const { return (scratch_.path() / "dri").string(); }
  std::filesystem::path properties(std::size_t node) const {
    return root() / "nodes" / std::to_string(node) / "properties";
  }

  Expected<std::vector<TopologyGpu>> read(std::map<std::string, std::string> environment = {},
                                          std::optional<bool> kfd_xnack = std::nullopt) const {
    TopologyOptions options;
    options.root = root().string();
    options.render_nodes = dev();
    options.environment = [environment](std::string_view name) -> std::optional<std::string> {
      auto it = environment.find(std::string(name));
      return it == environment.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    if (kfd_xnack) options.kfd_xnack_mode = [kfd_xnack] { return kfd_xnack; };
    return topology_gpus(options);
  }

 private:
  testing::ScratchDirectory scratch_;
};

std::vector<std::string> isa_names(const Expected<std::vector<TopologyGpu>>& gpus) {
  std::vector<std::string> names;
  if (!gpus) return {"error: " + gpus.error().message()};
  for (const TopologyGpu& gpu : *gpus) names.push_back(std::to_string(gpu.node) + " " + gpu.isa_name);
  return names;
}

using Names = std::vector<std::string>;

GpuProperties gpu(std::uint64_t version, std::uint64_t unique_id = 0, std::uint64_t minor = 128) {
  GpuProperties properties;
  properties.gfx_target_version = version;
  properties.unique_id = unique_id;
  properties.drm_render_minor = minor;
  return properties;
}

// --- ISA names ---------------------------------------------------------------

TEST(GpuTopology, Gfx90aWithoutAndWithHsaXnack) {
  FakeTopology topology({gpu(90010)});
  EXPECT_EQ(isa_names(topology.read()), (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-"}));
  // gfx90a selects xnack per process: the KFD grants HSA_XNACK=1.
  EXPECT_EQ(isa_names(topology.read({{"HSA_XNACK", "1"}})), (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"}));
  // Without HSA_XNACK the KFD's mode holds; HSA_XNACK=0 turns it off.
  EXPECT_EQ(isa_names(topology.read({}, true)), (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"}));
  EXPECT_EQ(isa_names(topology.read({{"HSA_XNACK", "0"}}, true)),
            (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-"}));
  // Any other value is ROCr's "unchanged".
  EXPECT_EQ(isa_names(topology.read({{"HSA_XNACK", "yes"}})), (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-"}));

  auto gpus = topology.read();
  ASSERT_TRUE(gpus) << gpus.error().message();
  const Device& device = (*gpus)[0].device;
  EXPECT_EQ(device.str(), "gfx90a:sramecc-:xnack-");
  EXPECT_EQ(device.target.xnack, FeatureState::Off);
  EXPECT_EQ(device.target.sramecc, FeatureState::Off);
  EXPECT_EQ(device.lds_bytes, 64u * 1024);
  EXPECT_EQ(device.asic_revision, 0u);
  EXPECT_EQ(device.code_object_versions, (std::vector<unsigned>{4, 5, 6}));  // release fields at defaults
  EXPECT_TRUE(device.runtime_release.empty());
}

TEST(GpuTopology, Gfx1031AndGfx1101HaveNoModes) {
  FakeTopology topology({gpu(100301), gpu(110001, 0, 129)});
  EXPECT_EQ(isa_names(topology.read({{"HSA_XNACK", "1"}})),
            (Names{"1 amdgcn-amd-amdhsa--gfx1031", "2 amdgcn-amd-amdhsa--gfx1101"}));
  auto gpus = topology.read();
  ASSERT_TRUE(gpus);
  EXPECT_EQ((*gpus)[0].device.target.xnack, FeatureState::Unsupported);
  EXPECT_EQ((*gpus)[1].device.target.sramecc, FeatureState::Unsupported);
}

TEST(GpuTopology, Gfx942WithSramecc) {
  GpuProperties mi300 = gpu(90402);
  mi300.capability |= kSramEdc | (1u << 22);  // ASIC revision 1
  mi300.lds_size_in_kb = 64;
  FakeTopology topology({mi300});
  auto gpus = topology.read();
  EXPECT_EQ(isa_names(gpus), (Names{"1 amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"}));
  ASSERT_TRUE(gpus);
  EXPECT_EQ((*gpus)[0].device.target.sramecc, FeatureState::On);
  EXPECT_EQ((*gpus)[0].device.asic_revision, 1u);
  // HSA_ENABLE_SRAMECC=0 overrides the capability bit, as in ROCr's GpuAgent.
  EXPECT_EQ(isa_names(topology.read({{"HSA_ENABLE_SRAMECC", "0"}})),
            (Names{"1 amdgcn-amd-amdhsa--gfx942:sramecc-:xnack-"}));
}

TEST(GpuTopology, Gfx1250IsBare) {
  FakeTopology topology({gpu(120500)});
  auto gpus = topology.read({{"HSA_XNACK", "1"}});
  EXPECT_EQ(isa_names(gpus), (Names{"1 amdgcn-amd-amdhsa--gfx1250"}));
  ASSERT_TRUE(gpus);
  EXPECT_EQ((*gpus)[0].device.target.xnack, FeatureState::Unsupported);
}

TEST(GpuTopology, KfdModeIsAskedOnlyWhenNeeded) {
  FakeTopology topology({gpu(90010), gpu(90008, 0, 129)});  // gfx90a, gfx908
  int asked = 0;
  TopologyOptions options;
  options.root = topology.root().string();
  options.render_nodes = topology.dev();
  options.kfd_xnack_mode = [&asked] {
    ++asked;
    return std::optional<bool>(true);
  };
  std::map<std::string, std::string> environment{{"HSA_XNACK", "0"}};
  options.environment = [&environment](std::string_view name) -> std::optional<std::string> {
    auto it = environment.find(std::string(name));
    return it == environment.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  EXPECT_EQ(isa_names(topology_gpus(options)),
            (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-", "2 amdgcn-amd-amdhsa--gfx908:sramecc-:xnack-"}));
  EXPECT_EQ(asked, 0);
  // HSA_XNACK=1 with a gfx908 (no per-process mode): granted only when its retry is on,
  // which is when the KFD's mode is on.
  environment["HSA_XNACK"] = "1";
  EXPECT_EQ(isa_names(topology_gpus(options)),
            (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+", "2 amdgcn-amd-amdhsa--gfx908:sramecc-:xnack+"}));
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(isa_names(topology.read({{"HSA_XNACK", "1"}}, false)),
            (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-", "2 amdgcn-amd-amdhsa--gfx908:sramecc-:xnack-"}));
}

TEST(GpuTopology, ClientApuReportsNoXnackMode) {
  FakeTopology topology({gpu(90012)});
  EXPECT_EQ(isa_names(topology.read({}, true)), (Names{"1 amdgcn-amd-amdhsa--gfx90c"}));
}

TEST(GpuTopology, TwoGpusOfDifferentIsas) {
  FakeTopology topology({gpu(90010, 0x1111), gpu(100301, 0x2222, 129)});
  EXPECT_EQ(isa_names(topology.read()),
            (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-", "2 amdgcn-amd-amdhsa--gfx1031"}));
  // The KFD refuses xnack on when a gfx10 GPU is in the process: HSA_XNACK=1 leaves it off.
  EXPECT_EQ(isa_names(topology.read({{"HSA_XNACK", "1"}})),
            (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-", "2 amdgcn-amd-amdhsa--gfx1031"}));
}

TEST(GpuTopology, HsaOverrideGfxVersion) {
  FakeTopology topology({gpu(100301), gpu(100302, 0, 129)});
  EXPECT_EQ(isa_names(topology.read({{"HSA_OVERRIDE_GFX_VERSION", "10.3.0"}})),
            (Names{"1 amdgcn-amd-amdhsa--gfx1030", "2 amdgcn-amd-amdhsa--gfx1030"}));
  // The per-node variable names libhsakmt's node number, and wins.
  EXPECT_EQ(
      isa_names(topology.read({{"HSA_OVERRIDE_GFX_VERSION", "10.3.0"}, {"HSA_OVERRIDE_GFX_VERSION_2", "11.0.1"}})),
      (Names{"1 amdgcn-amd-amdhsa--gfx1030", "2 amdgcn-amd-amdhsa--gfx1101"}));
  auto bad = topology.read({{"HSA_OVERRIDE_GFX_VERSION", "10.3.0x"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::InvalidArgument);
  EXPECT_EQ(bad.error().location().field, "HSA_OVERRIDE_GFX_VERSION");
  EXPECT_FALSE(topology.read({{"HSA_OVERRIDE_GFX_VERSION", "64.0.0"}}));
}

// --- ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES ------------------------

class FourGpus : public ::testing::Test {
 protected:
  FakeTopology topology{{gpu(90010, 0xabcdef0011223344, 128), gpu(100301, 0xabcdef0055667788, 129), gpu(110001, 0, 130),
                         gpu(90402, 0x0123456789abcdef, 131)}};
  Names read(std::map<std::string, std::string> environment) { return isa_names(topology.read(environment)); }
};

const std::string k90a = "1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-", k1031 = "2 amdgcn-amd-amdhsa--gfx1031",
                  k1101 = "3 amdgcn-amd-amdhsa--gfx1101", k942 = "4 amdgcn-amd-amdhsa--gfx942:sramecc-:xnack-";

TEST_F(FourGpus, AllInNodeOrder) { EXPECT_EQ(read({}), (Names{k90a, k1031, k1101, k942})); }

TEST_F(FourGpus, RocrVisibleDevicesByIndexInItsOrder) {
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "3,0"}}), (Names{k942, k90a}));
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", " 2 , 0x1 "}}), (Names{k1101, k1031}));  // trimmed; strtol base 0
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", ""}}), Names{});                         // set and empty: no GPU
}

TEST_F(FourGpus, RocrVisibleDevicesByUuid) {
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "GPU-0123456789ABCDEF,gpu-abcdef0055667788"}}), (Names{k942, k1031}));
  // A prefix that names one GPU is enough; one that names two ends the list.
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "GPU-01,1"}}), (Names{k942, k1031}));
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "GPU-abcdef00,1"}}), Names{});
}

TEST_F(FourGpus, RocrVisibleDevicesEndsAtAnInvalidEntry) {
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "1,7,0"}}), (Names{k1031}));       // out of range
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "1,x,0"}}), (Names{k1031}));       // not a number
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "1,1,0"}}), (Names{k1031}));       // seen before
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "1,GPU-ff,0"}}), (Names{k1031}));  // no such UUID
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "1,,0"}}), Names{});               // ROCr throws on the empty token
  // Only as many tokens as GPUs are read.
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "0,1,2,3,,"}}), (Names{k90a, k1031, k1101, k942}));
}

TEST_F(FourGpus, HipVisibleDevicesAfterRocr) {
  // HIP's indices count the GPUs ROCr left, in ROCr's order.
  EXPECT_EQ(read({{"ROCR_VISIBLE_DEVICES", "3,2,1"}, {"HIP_VISIBLE_DEVICES", "2,0"}}), (Names{k1031, k942}));
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "1,1,3"}}), (Names{k1031, k942}));  // a repeat is skipped
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "1,01,3"}}), (Names{k1031}));       // not exactly a decimal: ends
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "1,4,0"}}), (Names{k1031}));        // out of range: ends
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "x"}}), Names{});
  // CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES is unset or empty.
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", ""}, {"CUDA_VISIBLE_DEVICES", "2"}}), (Names{k1101}));
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "3"}, {"CUDA_VISIBLE_DEVICES", "2"}}), (Names{k942}));
}

TEST_F(FourGpus, HipVisibleDevicesByUuid) {
  // CLR looks the item up inside ROCr's lower-case UUID.
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "GPU-0123456789abcdef,0"}}), (Names{k942, k90a}));
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "GPU-0123456789ABCDEF"}}), Names{});
  EXPECT_EQ(read({{"HIP_VISIBLE_DEVICES", "GPU-XX"}}), (Names{k1101}));  // the GPU without a unique_id
}

TEST(GpuTopology, KfdXnackQueryWithoutAKfdIsNullopt) {
  EXPECT_EQ(query_kfd_xnack_mode("/nonexistent/kfd"), std::nullopt);
  EXPECT_EQ(query_kfd_xnack_mode("/dev/null"), std::nullopt);  // not the KFD: the ioctl fails
}

TEST(GpuTopology, UniqueIdIsKept) {
  FakeTopology topology({gpu(90010, 0xabcdef0011223344)});
  auto gpus = topology.read();
  ASSERT_TRUE(gpus);
  EXPECT_EQ((*gpus)[0].unique_id, 0xabcdef0011223344u);
}

// --- Nodes libhsakmt does not admit -----------------------------------------

TEST(GpuTopology, GpuWithoutItsRenderNodeIsNotSeen) {
  FakeTopology topology({gpu(90010), gpu(100301, 0, 129)});
  std::filesystem::remove(std::filesystem::path(topology.dev()) / "renderD128");
  // The second GPU becomes libhsakmt's node 1: HSA_OVERRIDE_GFX_VERSION_1 is its variable.
  EXPECT_EQ(isa_names(topology.read({{"HSA_OVERRIDE_GFX_VERSION_1", "10.3.0"}})),
            (Names{"2 amdgcn-amd-amdhsa--gfx1030"}));
}

TEST(GpuTopology, RenderMinorOutOfRange) {
  FakeTopology topology({gpu(90010, 0, 127)});
  auto gpus = topology.read();
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().kind(), ErrorKind::Malformed);
  EXPECT_EQ(gpus.error().location().file, topology.properties(1).string());
  EXPECT_EQ(gpus.error().location().field, "drm_render_minor");
  EXPECT_EQ(gpus.error().location().value, 127u);
}

// --- Errors --------------------------------------------------------------------

TEST(GpuTopology, MissingTreeIsIo) {
  TopologyOptions options;
  options.root = "/nonexistent/kfd/topology";
  auto gpus = topology_gpus(options);
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().kind(), ErrorKind::Io);
  EXPECT_EQ(gpus.error().location().file, "/nonexistent/kfd/topology/nodes");
}

TEST(GpuTopology, MissingNodeFileIsIo) {
  FakeTopology topology({gpu(90010)});
  std::filesystem::remove(topology.properties(1));
  auto gpus = topology.read();
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().kind(), ErrorKind::Io);
  EXPECT_EQ(gpus.error().location().file, topology.properties(1).string());
}

struct Malformed {
  std::string properties;
  ErrorKind kind;
  std::string field;
  std::string says;
};

TEST(GpuTopology, MalformedPropertiesAreNamedErrors) {
  const std::string good = gpu(90010).text();
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::vector<Malformed> cases = {
      {replace("simd_count 416", "simd_count 4x6"), ErrorKind::Malformed, "simd_count",
       "key 'simd_count' has value '4x6', not a decimal number"},
      {replace("gfx_target_version 90010", "gfx_target_version -1"), ErrorKind::Malformed, "gfx_target_version",
       "key 'gfx_target_version' has value '-1', not a decimal number"},
      {replace("gfx_target_version 90010", "gfx_target_version 4294967296"), ErrorKind::Overflow, "gfx_target_version",
       "key 'gfx_target_version' has value 4294967296, past its 32-bit field"},
      {replace("unique_id 0", "unique_id 99999999999999999999999"), ErrorKind::Malformed, "unique_id",
       "key 'unique_id' has value '99999999999999999999999', not a decimal number"},
      {replace("capability 532608", "capability"), ErrorKind::Malformed, "capability",
       "line 'capability' is not 'name value'"},
      {replace("lds_size_in_kb 64", "lds_size_in_kb 64 kb"), ErrorKind::Malformed, "lds_size_in_kb",
       "line 'lds_size_in_kb 64 kb' is not 'name value'"},
      {good + "simd_count 1\n", ErrorKind::Malformed, "simd_count", "key 'simd_count' appears twice"},
      {"", ErrorKind::Malformed, "", "properties file is empty"},
      {std::string("\x7f"
                   "ELF\x01\x02 \x03\n",
                   9),
       ErrorKind::Malformed, "line", "line '\\x7fELF\\x01\\x02 \\x03' has a key that is not printable text"},
  };
  for (const Malformed& c : cases) {
    FakeTopology topology({});
    topology.add_node(1, c.properties, 128);
    auto gpus = topology.read();
    ASSERT_FALSE(gpus) << c.says;
    EXPECT_EQ(gpus.error().kind(), c.kind) << c.says;
    EXPECT_EQ(gpus.error().detail(), c.says);
    EXPECT_EQ(gpus.error().location().file, topology.properties(1).string()) << c.says;
    EXPECT_EQ(gpus.error().location().field, c.field) << c.says;
  }
}

TEST(GpuTopology, UnknownKeysOfAnyShapeAreTolerated) {
  // A kernel may print keys coload does not read in other shapes ("gpu_family gfx9X").
  FakeTopology topology({});
  topology.add_node(1, "gpu_family gfx9X\n" + gpu(90010).text(), 128);
  EXPECT_EQ(isa_names(topology.read()), (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-"}));
}

TEST(GpuTopology, UnknownVersionIsNotFound) {
  FakeTopology topology({gpu(990000)});
  auto gpus = topology.read();
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().kind(), ErrorKind::NotFound);
  EXPECT_EQ(gpus.error().location().field, "gfx_target_version");
  EXPECT_EQ(gpus.error().location().value, 990000u);
  // Hidden by ROCR_VISIBLE_DEVICES, it does not matter.
  FakeTopology two({gpu(90010), gpu(990000, 0, 129)});
  EXPECT_EQ(isa_names(two.read({{"ROCR_VISIBLE_DEVICES", "0"}})),
            (Names{"1 amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-"}));
}

TEST(GpuTopology, HugeFileIsRefusedAfterOnePage) {
  FakeTopology topology({gpu(90010)});
  std::string huge = gpu(90010).text();
  while (huge.size() < (1u << 20)) huge += "padding_key 0\n";
  write(topology.properties(1), huge);
  auto gpus = topology.read();
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().kind(), ErrorKind::LimitExceeded);
  EXPECT_EQ(gpus.error().location().file, topology.properties(1).string());
  EXPECT_EQ(gpus.error().location().limit, static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
}

TEST(GpuTopology, EveryPrefixOfAPropertiesFileIsReadOrRefusedWithoutACrash) {
  const std::string text = gpu(90402).text();
  FakeTopology topology({});
  topology.add_node(1, text, 128);
  for (std::size_t size = 0; size <= text.size(); ++size) {
    write(topology.properties(1), text.substr(0, size));
    auto gpus = topology.read();
    if (!gpus) EXPECT_EQ(gpus.error().location().file, topology.properties(1).string()) << size;
  }
}

}  // namespace
}  // namespace coload::detail
