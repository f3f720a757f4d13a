// The GPUs of the machine from the KFD topology, as libhsakmt, ROCr and CLR
// read them (docs/preload.md, "The GPUs without the runtime", names the code
// each step models).
#include "coload/detail/gpu_topology.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "coload/target.h"
#include "common/try.h"
#include "target/isa_name.h"

namespace coload::detail {
namespace {

// The KFD's xnack query (linux/kfd_ioctl.h): AMDKFD_IOWR(0x21, struct
// kfd_ioctl_set_xnack_mode_args { __s32 xnack_enabled; }), -1 to ask.
struct KfdXnackModeArgs {
  std::int32_t xnack_enabled;
};
constexpr unsigned long kKfdIocSetXnackMode = _IOWR('K', 0x21, KfdXnackModeArgs);

// A bound on the nodes walked, far above any machine's. A node's files are
// read one page at most, as libhsakmt reads them (topology.c, fread of PAGE_SIZE).
constexpr std::size_t kMaxNodes = 4096;
constexpr std::size_t kMaxKeyLength = 255;  // libhsakmt's prop_name[256]
// The render minors libhsakmt accepts (fmm.c, DRM_FIRST/LAST_RENDER_NODE).
constexpr std::uint64_t kFirstRenderMinor = 128, kLastRenderMinor = 255;
// HSA_CAPABILITY (hsakmttypes.h): SRAM_EDCSupport is bit 26, ASICRevision bits 22-25.
constexpr std::uint32_t kCapSramEdc = 1u << 26;
constexpr unsigned kCapAsicRevisionShift = 22;

std::size_t page_size() {
  long size = sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<std::size_t>(size) : 4096;
}

// A value from a file, printable in a message: at most 40 bytes, other
// than printable ASCII escaped.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < 40; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out + (text.size() > 40 ? "'…" : "'");
}

Error io_error(std::string_view what, const std::string& path, int error_number) {
  return Error(ErrorKind::Io, std::string(what) + ": " + std::strerror(error_number)).in_file(path);
}

// A file read whole, refused past `limit` bytes. EPERM on read is returned
// as its own outcome: libhsakmt treats a gpu_id it may not read as a node
// this process does not see.
struct FileText {
  std::string text;
  bool permission_denied = false;
};

Expected<FileText> read_bounded(const std::string& path, std::size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path, errno);
  FileText file;
  file.text.resize(limit + 1);
  std::size_t size = 0;
  while (size < file.text.size()) {
    ssize_t got = ::read(fd, file.text.data() + size, file.text.size() - size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int error_number = errno;
      ::close(fd);
      if (error_number == EPERM) return FileText{.text = {}, .permission_denied = true};
      return io_error("cannot read", path, error_number);
    }
    if (got == 0) break;
    size += static_cast<std::size_t>(got);
  }
  ::close(fd);
  if (size > limit) {
    return Error(ErrorKind::LimitExceeded,
                 "file is longer than " + std::to_string(limit) + " bytes, the page libhsakmt reads")
        .in_file(path)
        .at_field("size", std::nullopt, size, limit);
  }
  file.text.resize(size);
  return file;
}

// A decimal number from a sysfs file, as the kernel prints it.
std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (status != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// A node's properties: `name value` lines (libhsakmt scans "%s %llu\n";
// coload refuses a line of another shape, where that scan would silently stop).
class Properties {
 public:
  static Expected<Properties> parse(const std::string& path, std::string_view text) {
    if (text.empty()) return Error(ErrorKind::Malformed, "properties file is empty").in_file(path);
    Properties properties;
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(at, end - at);
      std::uint64_t offset = at;
      at = end + 1;
      std::size_t key_end = 0;
      while (key_end < line.size() && !is_space(line[key_end])) ++key_end;
      std::string_view key = line.substr(0, key_end);
      std::string_view rest = line.substr(key_end);
      while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
      while (!rest.empty() && is_space(rest.back())) rest.remove_suffix(1);
      if (key.empty() && rest.empty()) continue;
      if (key.empty() || rest.empty() || std::any_of(rest.begin(), rest.end(), is_space)) {
        return Error(ErrorKind::Malformed, "line " + quoted(line) + " is not 'name value'")
            .in_file(path)
            .at_field(key.empty() ? std::string_view("line") : key, offset);
      }
      if (std::any_of(key.begin(), key.end(), [](char c) { return c < 0x21 || c > 0x7e; })) {
        return Error(ErrorKind::Malformed, "line " + quoted(line) + " has a key that is not printable text")
            .in_file(path)
            .at_field("line", offset);
      }
      if (key.size() > kMaxKeyLength) {
        return Error(ErrorKind::LimitExceeded,
                     "key " + quoted(key) + " is longer than " + std::to_string(kMaxKeyLength) + " bytes")
            .in_file(path)
            .at_field("key", offset, key.size(), kMaxKeyLength);
      }
      if (!properties.values_.emplace(std::string(key), Value{std::string(rest), offset}).second) {
        return Error(ErrorKind::Malformed, "key '" + std::string(key) + "' appears twice")
            .in_file(path)
            .at_field(key, offset);
      }
    }
    properties.path_ = path;
    return properties;
  }

  /// The value of `key`, 0 when absent (libhsakmt zeroes what it does not
  /// read). Malformed when it is not a decimal number (only the keys coload
  /// reads are judged: a kernel may add keys of other shapes); Overflow
  /// when it does not fit the field's `bits`.
  Expected<std::uint64_t> get(std::string_view key, unsigned bits = 32) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return std::uint64_t{0};
    const Value& found = it->second;
    std::optional<std::uint64_t> value = parse_decimal(found.text);
    if (!value) {
      return Error(ErrorKind::Malformed,
                   "key '" + std::string(key) + "' has value " + quoted(found.text) + ", not a decimal number")
          .in_file(path_)
          .at_field(key, found.offset);
    }
    std::uint64_t limit = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    if (*value > limit) {
      return Error(ErrorKind::Overflow, "key '" + std::string(key) + "' has value " + std::to_string(*value) +
                                            ", past its " + std::to_string(bits) + "-bit field")
          .in_file(path_)
          .at_field(key, found.offset, *value, limit);
    }
    return *value;
  }
  const std::string& path() const { return path_; }

 private:
  struct Value {
    std::string text;
    std::uint64_t offset = 0;  // the line's offset in the file
  };
  std::map<std::string, Value> values_;
  std::string path_;
};

// One node libhsakmt admits (its user node number is its position).
struct Node {
  std::size_t sysfs_node = 0;
  Properties properties;
};

std::optional<std::string> lookup(const TopologyOptions& options, std::string_view name) {
  return options.environment ? options.environment(name) : std::nullopt;
}

// libhsakmt's hsakmt_topology_sysfs_get_system_props: count the entries of
// nodes/, then admit node i for i below that count when its gpu_id is 0 (a
// CPU) or its render node opens; ENOENT and EPERM skip the node, any other
// failure fails the whole topology.
Expected<std::vector<Node>> admitted_nodes(const TopologyOptions& options) {
  const std::string nodes_dir = options.root + "/nodes";
  DIR* dir = ::opendir(nodes_dir.c_str());
  if (!dir) return io_error("cannot list the KFD topology's nodes", nodes_dir, errno);
  std::size_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) ++count;
  }
  ::closedir(dir);
  if (count > kMaxNodes) {
    return Error(ErrorKind::LimitExceeded, "the KFD topology lists " + std::to_string(count) + " nodes")
        .in_file(nodes_dir)
        .at_field("nodes", std::nullopt, count, kMaxNodes);
  }
  std::vector<Node> nodes;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string node_dir = nodes_dir + "/" + std::to_string(i);
    auto gpu_id_file = read_bounded(node_dir + "/gpu_id", page_size());
    COLOAD_RETURN_IF_ERROR(gpu_id_file);
    if (gpu_id_file->permission_denied) continue;
    std::string_view gpu_id_text = gpu_id_file->text;
    while (!gpu_id_text.empty() && is_space(gpu_id_text.back())) gpu_id_text.remove_suffix(1);
    std::optional<std::uint64_t> gpu_id = parse_decimal(gpu_id_text);
    if (!gpu_id || *gpu_id > 0xffffffffu) {
      return Error(ErrorKind::Malformed, "gpu_id " + quoted(gpu_id_text) + " is not a 32-bit decimal number")
          .in_file(node_dir + "/gpu_id")
          .at_field("gpu_id", 0);
    }
    const std::string properties_path = node_dir + "/properties";
    auto text = read_bounded(properties_path, page_size());
    COLOAD_RETURN_IF_ERROR(text);
    if (text->permission_denied) return io_error("cannot read", properties_path, EPERM);
    auto properties = Properties::parse(properties_path, text->text);
    COLOAD_RETURN_IF_ERROR(properties);
    if (*gpu_id != 0) {
      auto minor = properties->get("drm_render_minor");
      COLOAD_RETURN_IF_ERROR(minor);
      if (*minor < kFirstRenderMinor || *minor > kLastRenderMinor) {
        return Error(ErrorKind::Malformed, "drm_render_minor " + std::to_string(*minor) + " of GPU " +
                                               std::to_string(*gpu_id) + " is outside 128..255")
            .in_file(properties_path)
            .at_field("drm_render_minor", std::nullopt, *minor, kLastRenderMinor);
      }
      const std::string render = options.render_nodes + "/renderD" + std::to_string(*minor);
      int fd = ::open(render.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0 && errno != ENOENT && errno != EPERM) return io_error("cannot open the render node", render, errno);
      if (fd < 0) continue;
      ::close(fd);
    }
    nodes.push_back(Node{.sysfs_node = i, .properties = std::move(*properties)});
  }
  return nodes;
}

// A GPU node as ROCr's GpuAgent sees it before naming its ISA.
struct GpuNode {
  std::size_t user_node = 0;  // libhsakmt's node number, which HSA_OVERRIDE_GFX_VERSION_<N> uses
  const Node* node = nullptr;
  std::uint32_t gfx_target_version = 0;  // as the KFD reports it
  std::uint64_t unique_id = 0;
};

// "%u.%u.%u%c" matching exactly three numbers, each within libhsakmt's range.
std::optional<std::array<unsigned, 3>> parse_override(std::string_view text) {
  std::array<unsigned, 3> parts{};
  const unsigned limits[3] = {63, 255, 255};
  for (std::size_t i = 0; i < 3; ++i) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    const bool negative = !text.empty() && text.front() == '-';
    if (!text.empty() && (text.front() == '+' || negative)) text.remove_prefix(1);
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    std::optional<std::uint64_t> value = parse_decimal(text.substr(0, digits));
    // strtoul's negation wraps: only -0 stays in range.
    if (!value || *value > limits[i] || (negative && *value != 0)) return std::nullopt;
    parts[i] = static_cast<unsigned>(*value);
    text.remove_prefix(digits);
    if (i < 2) {
      if (text.empty() || text.front() != '.') return std::nullopt;
      text.remove_prefix(1);
    }
  }
  if (!text.empty()) return std::nullopt;
  return parts;
}

// The ISA version ROCr names a GPU by: the KFD's, or HSA_OVERRIDE_GFX_VERSION_<node>
// (else HSA_OVERRIDE_GFX_VERSION) when set.
Expected<std::array<unsigned, 3>> isa_version(const TopologyOptions& options, const GpuNode& gpu) {
  const std::string per_node = "HSA_OVERRIDE_GFX_VERSION_" + std::to_string(gpu.user_node);
  std::string variable = per_node;
  std::optional<std::string> value = lookup(options, per_node);
  if (!value) value = lookup(options, variable = "HSA_OVERRIDE_GFX_VERSION");
  if (value) {
    auto parts = parse_override(*value);
    if (!parts) {
      return Error(ErrorKind::InvalidArgument, variable + "=" + quoted(*value) +
                                                   " is not major.minor.stepping (at most 63.255.255); "
                                                   "libhsakmt refuses the topology, so ROCr finds no GPU")
          .at_field(variable, std::nullopt);
    }
    return *parts;
  }
  // topology.c: HSA_GET_GFX_VERSION_MAJOR/MINOR/STEP, two decimal digits each.
  const std::uint32_t v = gpu.gfx_target_version;
  return std::array<unsigned, 3>{(v / 10000) % 100, (v / 100) % 100, v % 100};
}

// ROCr's IsaRegistry entry for a version: the first processor with it.
const Processor* processor_for(const std::array<unsigned, 3>& version) {
  for (const Processor& processor : processors()) {
    if (!processor.is_generic && processor.isa_major == version[0] && processor.isa_minor == version[1] &&
        processor.isa_stepping == version[2]) {
      return &processor;
    }
  }
  return nullptr;
}

// Whether ROCr names an xnack mode for the processor: its registry has
// `xnack-`/`xnack+` entries for the OnOff processors except the gfx9 client
// APUs (ROCm PR #8237), which coload's table gives no default mode.
bool reports_xnack(const Processor& processor) { return processor.default_xnack != FeatureState::Unsupported; }

// ROCr's BindXnackMode: HSA_XNACK=0 or 1 asks the KFD for that mode
// (hsaKmtSetXNACKMode); without it, or when the KFD refuses, the process's
// KFD mode holds. The KFD (kfd_process_xnack_mode with supported=true)
// grants xnack on when no GPU is gfx10 or later and every gfx9 GPU either
// selects xnack per process (gfx90a, gfx940-942, gfx950) or runs with
// retry on, which is when its default mode is on too.
bool xnack_mode(const TopologyOptions& options, const std::vector<GpuNode>& gpus) {
  // Asked only when needed, as ROCr asks: the query may open /dev/kfd.
  auto kfd_mode = [&] { return options.kfd_xnack_mode && options.kfd_xnack_mode().value_or(false); };
  std::optional<std::string> request = lookup(options, "HSA_XNACK");
  if (request == "0") return false;
  if (request != "1") return kfd_mode();
  bool needs_retry = false;
  for (const GpuNode& gpu : gpus) {
    const std::uint32_t v = gpu.gfx_target_version;
    if (v >= 100000) return kfd_mode();
    bool per_process = v == 90010 || (v >= 90400 && v <= 90402) || v == 90500;
    needs_retry = needs_retry || (v >= 90000 && !per_process);
  }
  return !needs_retry || kfd_mode();
}

std::string uppercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string uuid_text(std::uint64_t unique_id) {
  char text[24];
  std::snprintf(text, sizeof text, "GPU-%016llx", static_cast<unsigned long long>(unique_id));
  return text;
}

// ROCr's RvdFilter (amd_filter_device.cpp): for each GPU node, in order,
// its rank among the visible ones, or -1. Tokens split at ',', upper-cased,
// trimmed; only the first min(GPUs, tokens) are read; a token starting with
// 'G' is a UUID prefix (5..20 characters, matching one GPU only), any other
// is strtol(token, base 0) to its end; a token that fails, an index out of
// range or one seen before ends the list. An empty token makes ROCr throw
// (token.at(0)), hsa_init fails and no GPU is visible.
std::vector<int> rocr_visible_ranks(const std::string& value, const std::vector<GpuNode>& gpus) {
  std::vector<int> ranks(gpus.size(), -1);
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start < value.size()) {  // std::getline: no token after a trailing ','
    std::size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string token = uppercase(value.substr(start, comma - start));
    std::size_t first = token.find_first_not_of(" \t\n\r\v\f");
    std::size_t last = token.find_last_not_of(" \t\n\r\v\f");
    tokens.push_back(first == std::string::npos ? std::string() : token.substr(first, last - first + 1));
    start = comma + 1;
  }
  std::vector<std::string> uuids;
  for (const GpuNode& gpu : gpus)
    uuids.push_back(gpu.unique_id == 0 ? "Invalid-UUID" : uppercase(uuid_text(gpu.unique_id)));
  int next_rank = 0;
  std::size_t count = std::min(gpus.size(), tokens.size());
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& token = tokens[i];
    if (token.empty()) return std::vector<int>(gpus.size(), -1);
    long index = -1;
    if (token[0] == 'G') {
      if (token.size() < 5 || token.size() > 20) break;
      for (std::size_t gpu = 0; gpu < uuids.size(); ++gpu) {
        if (token.size() > uuids[gpu].size() || uuids[gpu].compare(0, token.size(), token) != 0) continue;
        if (index != -1) {
          index = -1;
          break;
        }
        index = static_cast<long>(gpu);
      }
      if (index == -1) break;
    } else {
      char* end = nullptr;
      index = static_cast<std::int32_t>(std::strtol(token.c_str(), &end, 0));  // ROCr keeps an int32_t
      if (*end != '\0') break;
    }
    if (index < 0 || static_cast<std::size_t>(index) >= gpus.size() || ranks[index] != -1) break;
    ranks[index] = next_rank++;
  }
  return ranks;
}

// CLR's roc::Device::init: HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES,
// split at ','; an item holding "GPU-" becomes the index of the first GPU
// whose UUID (lower-case hex, "GPU-XX" without one) contains it; an item
// that is not exactly the decimal of an index in range ends the list; a
// repeated index is skipped.
std::vector<TopologyGpu> hip_visible(const std::string& ordinals, std::vector<TopologyGpu> gpus) {
  std::vector<TopologyGpu> visible;
  std::set<std::size_t> seen;
  std::size_t pos = 0;
  do {
    std::size_t end = ordinals.find(',', pos);
    if (end == std::string::npos) end = ordinals.size();
    std::string item = ordinals.substr(pos, end - pos);
    if (item.find("GPU-") != std::string::npos) {
      for (std::size_t i = 0; i < gpus.size(); ++i) {
        std::string uuid = gpus[i].unique_id == 0 ? "GPU-XX" : uuid_text(gpus[i].unique_id);
        if (uuid.find(item) != std::string::npos) {
          item = std::to_string(i);
          break;
        }
      }
    }
    std::optional<std::uint64_t> index = parse_decimal(item);
    if (!index || std::to_string(*index) != item || *index >= gpus.size()) break;
    if (seen.insert(*index).second) visible.push_back(gpus[*index]);
    pos = end + 1;
  } while (pos < ordinals.size());
  return visible;
}

Expected<TopologyGpu> describe(const TopologyOptions& options, const GpuNode& gpu, bool xnack_on) {
  const Properties& properties = gpu.node->properties;
  if (gpu.gfx_target_version == 0) {
    return Error(ErrorKind::NotFound,
                 "GPU node has no gfx_target_version (the device-ID table of older libhsakmt is not modelled)")
        .in_file(properties.path())
        .at_field("gfx_target_version", std::nullopt, 0);
  }
  auto version = isa_version(options, gpu);
  COLOAD_RETURN_IF_ERROR(version);
  const Processor* processor = processor_for(*version);
  if (!processor) {
    return Error(ErrorKind::NotFound, "gfx_target_version " + std::to_string(gpu.gfx_target_version) +
                                          " (ISA version " + std::to_string((*version)[0]) + "." +
                                          std::to_string((*version)[1]) + "." + std::to_string((*version)[2]) +
                                          ") names no processor coload knows")
        .in_file(properties.path())
        .at_field("gfx_target_version", std::nullopt, gpu.gfx_target_version);
  }
  auto capability = properties.get("capability");
  COLOAD_RETURN_IF_ERROR(capability);
  std::string target(processor->name);
  if (processor->sramecc) {
    // ROCr's GpuAgent: HSA_ENABLE_SRAMECC=0/1 decides, else the capability bit.
    std::optional<std::string> forced = lookup(options, "HSA_ENABLE_SRAMECC");
    bool on = forced == "1" || (forced != "0" && (*capability & kCapSramEdc) != 0);
    target += on ? ":sramecc+" : ":sramecc-";
  }
  if (reports_xnack(*processor)) target += xnack_on ? ":xnack+" : ":xnack-";
  const std::string isa_name = std::string(kIsaNamePrefix) + target;

  DeviceOverrides overrides;
  overrides.asic_revision = static_cast<std::uint32_t>((*capability >> kCapAsicRevisionShift) & 0xf);
  auto lds_kb = properties.get("lds_size_in_kb");
  COLOAD_RETURN_IF_ERROR(lds_kb);
  if (*lds_kb != 0) overrides.lds_bytes = *lds_kb * 1024;
  auto device = device_from_spec(isa_name, overrides);
  if (!device) return std::move(device).error().in_file(properties.path());
  auto runtime_target = device_target_from_runtime(isa_name);
  if (!runtime_target) return std::move(runtime_target).error().in_file(properties.path());
  device->target = *runtime_target;
  return TopologyGpu{
      .node = gpu.node->sysfs_node, .device = std::move(*device), .isa_name = isa_name, .unique_id = gpu.unique_id};
}

}  // namespace

Expected<std::vector<TopologyGpu>> topology_gpus(const TopologyOptions& options) {
  auto nodes = admitted_nodes(options);
  COLOAD_RETURN_IF_ERROR(nodes);
  // ROCr's BuildTopology: GPU nodes (simd_count > 0) in node order.
  std::vector<GpuNode> gpus;
  for (std::size_t user_node = 0; user_node < nodes->size(); ++user_node) {
    const Properties& properties = (*nodes)[user_node].properties;
    auto simd_count = properties.get("simd_count");
    COLOAD_RETURN_IF_ERROR(simd_count);
    if (*simd_count == 0) continue;
    auto version = properties.get("gfx_target_version");
    COLOAD_RETURN_IF_ERROR(version);
    auto unique_id = properties.get("unique_id", 64);
    COLOAD_RETURN_IF_ERROR(unique_id);
    gpus.push_back(GpuNode{.user_node = user_node,
                           .node = &(*nodes)[user_node],
                           .gfx_target_version = static_cast<std::uint32_t>(*version),
                           .unique_id = *unique_id});
  }
  // ROCR_VISIBLE_DEVICES, set (even empty), surfaces the GPUs it ranks, in rank order.
  std::vector<const GpuNode*> surfaced;
  if (std::optional<std::string> rvd = lookup(options, "ROCR_VISIBLE_DEVICES")) {
    std::vector<int> ranks = rocr_visible_ranks(*rvd, gpus);
    std::vector<const GpuNode*> by_rank(gpus.size(), nullptr);
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (ranks[i] >= 0) by_rank[static_cast<std::size_t>(ranks[i])] = &gpus[i];
    }
    for (const GpuNode* gpu : by_rank) {
      if (!gpu) break;  // SurfaceGpuList stops at the first unfilled rank
      surfaced.push_back(gpu);
    }
  } else {
    for (const GpuNode& gpu : gpus) surfaced.push_back(&gpu);
  }
  const bool xnack_on = xnack_mode(options, gpus);
  std::vector<TopologyGpu> agents;
  for (const GpuNode* gpu : surfaced) {
    auto described = describe(options, *gpu, xnack_on);
    COLOAD_RETURN_IF_ERROR(described);
    agents.push_back(std::move(*described));
  }
  std::optional<std::string> ordinals = lookup(options, "HIP_VISIBLE_DEVICES");
  if (!ordinals || ordinals->empty()) ordinals = lookup(options, "CUDA_VISIBLE_DEVICES");
  if (!ordinals || ordinals->empty()) return agents;
  return hip_visible(*ordinals, std::move(agents));
}

std::optional<bool> query_kfd_xnack_mode(const std::string& kfd) {
  int fd = ::open(kfd.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  KfdXnackModeArgs args{.xnack_enabled = -1};
  int status = ::ioctl(fd, kKfdIocSetXnackMode, &args);
  ::close(fd);
  if (status != 0 || args.xnack_enabled < 0) return std::nullopt;
  return args.xnack_enabled != 0;
}

}  // namespace coload::detail
