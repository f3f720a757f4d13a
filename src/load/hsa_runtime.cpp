// load/hsa_runtime.cpp: the HSA (ROCr) runtime, opened with dlopen at run time.
//
// Every HSA function coload calls is resolved once into HsaApi and called
// through call(), which turns an hsa_status_t into a coload::Error naming the
// function and hsa_status_string's text. The HSA headers give the types only;
// nothing links against libhsa-runtime64. Sequence and statuses:
// docs/loading.md.
//
// Status → ErrorKind: hsa_init failing is NotFound (no GPU, no /dev/kfd);
// INVALID_SYMBOL_NAME is NotFound; INCOMPATIBLE_ARGUMENTS, INVALID_ARGUMENT and
// INVALID_AGENT are InvalidArgument (the code object does not fit the agent);
// INVALID_CODE_OBJECT, INVALID_ISA and INVALID_ISA_NAME are Malformed; every
// other status (OUT_OF_RESOURCES, NOT_INITIALIZED, ERROR, …) is Io.
#include "load/hsa_runtime.h"

#include <dlfcn.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <link.h>

#include <bit>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "coload/runtime.h"
#include "common/bytes.h"

namespace coload {
namespace hsa {

namespace {
constexpr std::string_view kIsaPrefix = "amdgcn-amd-amdhsa--";
}  // namespace

Expected<TargetId> parse_isa_name(std::string_view isa_name) {
  std::string quoted = "ISA name '" + std::string(isa_name) + "'";
  if (!isa_name.starts_with(kIsaPrefix)) {
    return Error(ErrorKind::Malformed, quoted + " does not start with " + std::string(kIsaPrefix));
  }
  auto target = device_target_from_runtime(isa_name.substr(kIsaPrefix.size()));
  if (!target) {
    Error error = std::move(target).error();
    // A generic name is a malformed answer from the runtime, not a caller's mistake.
    ErrorKind kind = error.kind() == ErrorKind::InvalidArgument ? ErrorKind::Malformed : error.kind();
    return Error(kind, quoted + ": " + error.message());
  }
  return target;
}

std::vector<unsigned> code_object_versions_for_library(std::string_view library_file) {
  std::string_view name = library_file.substr(library_file.rfind('/') + 1);
  std::size_t so = name.find(".so.");
  if (so != std::string_view::npos) {
    std::string_view version = name.substr(so + 4);  // "1.5.0"
    unsigned major = 0, minor = 0;
    auto [dot, status] = std::from_chars(version.data(), version.data() + version.size(), major);
    if (status == std::errc() && dot != version.data() + version.size() && *dot == '.') {
      auto [end, minor_status] = std::from_chars(dot + 1, version.data() + version.size(), minor);
      (void)end;
      if (minor_status == std::errc() && (major > 1 || (major == 1 && minor >= 14))) return {4, 5, 6};
    }
  }
  return {4, 5};
}

}  // namespace hsa

namespace {

// Every HSA function coload calls; one dlsym each.
#define COLOAD_HSA_FUNCTIONS(X)                \
  X(hsa_init)                                  \
  X(hsa_shut_down)                             \
  X(hsa_status_string)                         \
  X(hsa_iterate_agents)                        \
  X(hsa_agent_get_info)                        \
  X(hsa_agent_iterate_isas)                    \
  X(hsa_isa_get_info_alt)                      \
  X(hsa_amd_agent_iterate_memory_pools)        \
  X(hsa_amd_memory_pool_get_info)              \
  X(hsa_code_object_reader_create_from_memory) \
  X(hsa_code_object_reader_destroy)            \
  X(hsa_executable_create_alt)                 \
  X(hsa_executable_destroy)                    \
  X(hsa_executable_load_agent_code_object)     \
  X(hsa_executable_freeze)                     \
  X(hsa_executable_get_symbol_by_name)         \
  X(hsa_executable_symbol_get_info)

static_assert(sizeof(hsa_device_type_t) == sizeof(std::uint32_t) && sizeof(hsa_symbol_kind_t) == sizeof(std::uint32_t),
              "HSA enums are read as 32-bit values");

struct HsaApi {
#define COLOAD_HSA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  COLOAD_HSA_FUNCTIONS(COLOAD_HSA_MEMBER)
#undef COLOAD_HSA_MEMBER
};

ErrorKind kind_of(hsa_status_t status) {
  switch (status) {
    case HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: return ErrorKind::NotFound;
    case HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS:
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
    case HSA_STATUS_ERROR_INVALID_AGENT: return ErrorKind::InvalidArgument;
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
    case HSA_STATUS_ERROR_INVALID_ISA:
    case HSA_STATUS_ERROR_INVALID_ISA_NAME: return ErrorKind::Malformed;
    default: return ErrorKind::Io;
  }
}

/// The opened library: the handle, the function table, hsa_init's reference.
/// Shared by the Runtime and its modules, so hsa_shut_down and dlclose come
/// after the last executable is destroyed. Immutable after open(): thread-safe.
class HsaLibrary {
 public:
  static Expected<std::shared_ptr<HsaLibrary>> open(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      return Error(ErrorKind::Io, "cannot load the HSA runtime '" + path + "': " + (why ? why : "dlopen failed"));
    }
    std::shared_ptr<HsaLibrary> library(new HsaLibrary(handle, path));
#define COLOAD_HSA_RESOLVE(fn)                                                                    \
  library->api_.fn = reinterpret_cast<decltype(&::fn)>(dlsym(handle, #fn));                       \
  if (!library->api_.fn) {                                                                        \
    return Error(ErrorKind::Io, "the HSA runtime '" + library->file_ + "' does not export " #fn); \
  }
    COLOAD_HSA_FUNCTIONS(COLOAD_HSA_RESOLVE)
#undef COLOAD_HSA_RESOLVE
    return library;
  }

  HsaLibrary(const HsaLibrary&) = delete;
  HsaLibrary& operator=(const HsaLibrary&) = delete;
  ~HsaLibrary() {
    if (initialized_) api_.hsa_shut_down();
    dlclose(handle_);
  }

  const HsaApi& api() const { return api_; }
  /// The real file behind the name dlopen was given (symlinks resolved).
  const std::string& file() const { return file_; }

  /// hsa_init; on success the destructor pairs it with hsa_shut_down.
  Expected<void> init() {
    hsa_status_t status = api_.hsa_init();
    if (status == HSA_STATUS_SUCCESS) {
      initialized_ = true;
      return {};
    }
    auto [name, description] = status_text(status);
    std::string message = "hsa_init failed with " + name;
    if (status == HSA_STATUS_ERROR_OUT_OF_RESOURCES) {
      message += ": no AMD GPU or /dev/kfd not available (" + description + ")";
    } else {
      message += ": " + description + " (no usable AMD GPU?)";
    }
    return Error(ErrorKind::NotFound, std::move(message));
  }

  /// "<function> failed with HSA_STATUS_ERROR_X (0x...): <ROCr's text>".
  Error error(std::string_view function, hsa_status_t status) const {
    auto [name, description] = status_text(status);
    return Error(kind_of(status), std::string(function) + " failed with " + name + ": " + description);
  }

 private:
  HsaLibrary(void* handle, std::string path) : handle_(handle), file_(std::move(path)) {
    link_map* map = nullptr;
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) {
      if (char* real = realpath(map->l_name, nullptr)) {
        file_ = real;
        std::free(real);
      } else {
        file_ = map->l_name;
      }
    }
  }

  /// {"HSA_STATUS_ERROR_X (0x1008)", "description"} from hsa_status_string.
  std::pair<std::string, std::string> status_text(hsa_status_t status) const {
    const char* text = nullptr;
    std::string code = detail::hex(static_cast<std::uint32_t>(status));
    if (api_.hsa_status_string(status, &text) != HSA_STATUS_SUCCESS || !text) {
      return {"status " + code, "hsa_status_string has no text for it"};
    }
    std::string_view view(text);
    std::size_t colon = view.find(':');
    if (view.starts_with("HSA_STATUS") && colon != std::string_view::npos) {
      std::string_view rest = view.substr(colon + 1);
      while (rest.starts_with(' ')) rest.remove_prefix(1);
      return {std::string(view.substr(0, colon)) + " (" + code + ")", std::string(rest)};
    }
    return {"status " + code, std::string(view)};
  }

  void* handle_;
  std::string file_;
  HsaApi api_;
  bool initialized_ = false;
};

/// One HSA call: success, or the error naming `function` and its status.
template <class Fn, class... Args>
Expected<void> call(const HsaLibrary& library, std::string_view function, Fn fn, Args... args) {
  hsa_status_t status = fn(args...);
  if (status == HSA_STATUS_SUCCESS) return {};
  return library.error(function, status);
}
#define COLOAD_HSA_CALL(library, fn, ...) call((library), #fn, (library).api().fn __VA_OPT__(, ) __VA_ARGS__)

/// Collects the handles an hsa_*_iterate_* function hands to its callback.
template <class Handle>
hsa_status_t collect(Handle handle, void* data) {
  static_cast<std::vector<Handle>*>(data)->push_back(handle);
  return HSA_STATUS_SUCCESS;
}

/// An hsa_code_object_reader_t that is destroyed with its owner.
class Reader {
 public:
  Reader(std::shared_ptr<const HsaLibrary> library, hsa_code_object_reader_t handle)
      : library_(std::move(library)), handle_(handle) {}
  Reader(Reader&& other) noexcept : library_(std::move(other.library_)), handle_(other.handle_) {}
  Reader& operator=(Reader&&) = delete;
  ~Reader() {
    if (library_) library_->api().hsa_code_object_reader_destroy(handle_);
  }
  hsa_code_object_reader_t get() const { return handle_; }

 private:
  std::shared_ptr<const HsaLibrary> library_;
  hsa_code_object_reader_t handle_;
};

/// An hsa_executable_t that is destroyed with its owner.
class Executable {
 public:
  Executable(std::shared_ptr<const HsaLibrary> library, hsa_executable_t handle)
      : library_(std::move(library)), handle_(handle) {}
  Executable(Executable&& other) noexcept : library_(std::move(other.library_)), handle_(other.handle_) {}
  Executable& operator=(Executable&&) = delete;
  ~Executable() {
    if (library_) library_->api().hsa_executable_destroy(handle_);
  }
  hsa_executable_t get() const { return handle_; }

 private:
  std::shared_ptr<const HsaLibrary> library_;
  hsa_executable_t handle_;
};

/// A code object loaded into one executable. Members are destroyed in
/// reverse order: executable, reader, then the bytes' owner, then (with the
/// last reference) hsa_shut_down and dlclose.
class HsaModule final : public LoadedModule {
 public:
  HsaModule(std::shared_ptr<const HsaLibrary> library, std::shared_ptr<const void> owner, CodeObject code_object,
            std::vector<LoadedKernel> kernels, Reader reader, Executable executable)
      : library_(std::move(library)),
        owner_(std::move(owner)),
        code_object_(std::move(code_object)),
        kernels_(std::move(kernels)),
        reader_(std::move(reader)),
        executable_(std::move(executable)) {}

  const CodeObject& code_object() const override { return code_object_; }
  std::span<const LoadedKernel> kernels() const override { return kernels_; }

 private:
  std::shared_ptr<const HsaLibrary> library_;
  std::shared_ptr<const void> owner_;
  CodeObject code_object_;
  std::vector<LoadedKernel> kernels_;
  Reader reader_;
  Executable executable_;
};

template <class T>
Expected<T> agent_info(const HsaLibrary& library, hsa_agent_t agent, hsa_agent_info_t attribute,
                       std::string_view attribute_name) {
  T value{};
  auto status = call(library, "hsa_agent_get_info(" + std::string(attribute_name) + ")",
                     library.api().hsa_agent_get_info, agent, attribute, static_cast<void*>(&value));
  if (!status) return std::move(status).error();
  return value;
}

template <class T>
Expected<T> symbol_info(const HsaLibrary& library, hsa_executable_symbol_t symbol,
                        hsa_executable_symbol_info_t attribute, std::string_view attribute_name) {
  T value{};
  auto status = call(library, "hsa_executable_symbol_get_info(" + std::string(attribute_name) + ")",
                     library.api().hsa_executable_symbol_get_info, symbol, attribute, static_cast<void*>(&value));
  if (!status) return std::move(status).error();
  return value;
}

/// One ISA's name, as hsa_isa_get_info_alt gives it.
Expected<std::string> isa_name(const HsaLibrary& library, hsa_isa_t isa) {
  std::uint32_t length = 0;  // includes the NUL
  auto got_length = call(library, "hsa_isa_get_info_alt(NAME_LENGTH)", library.api().hsa_isa_get_info_alt, isa,
                         HSA_ISA_INFO_NAME_LENGTH, static_cast<void*>(&length));
  if (!got_length) return std::move(got_length).error();
  constexpr std::uint32_t kMaxIsaName = 256;
  if (length == 0 || length > kMaxIsaName) {
    return Error(ErrorKind::LimitExceeded, "hsa_isa_get_info_alt(NAME_LENGTH) gave " + std::to_string(length) +
                                               ", outside 1.." + std::to_string(kMaxIsaName));
  }
  std::string name(length, '\0');
  auto got_name = call(library, "hsa_isa_get_info_alt(NAME)", library.api().hsa_isa_get_info_alt, isa,
                       HSA_ISA_INFO_NAME, static_cast<void*>(name.data()));
  if (!got_name) return std::move(got_name).error();
  name.resize(name.find('\0') == std::string::npos ? name.size() : name.find('\0'));
  return name;
}

/// The agent's native ISA: the first processor (not generic) ISA that
/// hsa_agent_iterate_isas reports. ROCr lists the native one first and its
/// generic after it; every one is read, in case a runtime orders them otherwise.
Expected<TargetId> agent_target(const HsaLibrary& library, hsa_agent_t agent) {
  std::vector<hsa_isa_t> isas;
  auto iterated =
      COLOAD_HSA_CALL(library, hsa_agent_iterate_isas, agent, &collect<hsa_isa_t>, static_cast<void*>(&isas));
  if (!iterated) return std::move(iterated).error();
  if (isas.empty()) return Error(ErrorKind::NotFound, "hsa_agent_iterate_isas reported no ISA");
  // A generic ISA is not the device, whatever its place in the list: what
  // decides is the first processor ISA's error (NotFound for an unknown one).
  std::optional<Error> first_error, generic_error;
  for (hsa_isa_t isa : isas) {
    auto name = isa_name(library, isa);
    if (!name) return std::move(name).error();
    auto target = hsa::parse_isa_name(*name);
    if (target) return target;
    std::string_view id = std::string_view(*name).substr(std::min(name->size(), hsa::kIsaPrefix.size()));
    const Processor* named = find_processor(id.substr(0, id.find(':')));
    std::optional<Error>& slot = named && named->is_generic ? generic_error : first_error;
    if (!slot) slot = std::move(target).error();
  }
  return std::move(first_error ? *first_error : *generic_error);
}

/// The GROUP segment pool's size (what clr reports as shared memory per
/// block); 0 when the agent has no such pool.
Expected<std::uint64_t> agent_lds(const HsaLibrary& library, hsa_agent_t agent) {
  std::vector<hsa_amd_memory_pool_t> pools;
  auto iterated = COLOAD_HSA_CALL(library, hsa_amd_agent_iterate_memory_pools, agent, &collect<hsa_amd_memory_pool_t>,
                                  static_cast<void*>(&pools));
  if (!iterated) return std::move(iterated).error();
  for (hsa_amd_memory_pool_t pool : pools) {
    hsa_amd_segment_t segment{};
    auto got_segment =
        call(library, "hsa_amd_memory_pool_get_info(SEGMENT)", library.api().hsa_amd_memory_pool_get_info, pool,
             HSA_AMD_MEMORY_POOL_INFO_SEGMENT, static_cast<void*>(&segment));
    if (!got_segment) return std::move(got_segment).error();
    if (segment != HSA_AMD_SEGMENT_GROUP) continue;
    std::size_t size = 0;
    auto got_size = call(library, "hsa_amd_memory_pool_get_info(SIZE)", library.api().hsa_amd_memory_pool_get_info,
                         pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, static_cast<void*>(&size));
    if (!got_size) return std::move(got_size).error();
    return static_cast<std::uint64_t>(size);
  }
  return std::uint64_t{0};
}

Expected<Device> describe_agent(const HsaLibrary& library, hsa_agent_t agent, const TargetId& target,
                                const std::vector<unsigned>& code_object_versions) {
  Device device;
  device.target = target;
  const Processor& processor = *device.target.processor;

  auto wave = agent_info<std::uint32_t>(library, agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, "WAVEFRONT_SIZE");
  if (!wave) return std::move(wave).error();
  std::uint8_t wave_bit = *wave == 32 ? kWave32 : *wave == 64 ? kWave64 : 0;
  if (wave_bit == 0 || (processor.wave_sizes & wave_bit) == 0) {
    return Error(ErrorKind::Malformed, "HSA_AGENT_INFO_WAVEFRONT_SIZE is " + std::to_string(*wave) + " but " +
                                           std::string(processor.name) + " runs " +
                                           ((processor.wave_sizes & kWave32) ? "wave32" : "") +
                                           ((processor.wave_sizes == (kWave32 | kWave64)) ? " and " : "") +
                                           ((processor.wave_sizes & kWave64) ? "wave64" : "") + " only");
  }
  device.wave_sizes = processor.wave_sizes;

  auto lds = agent_lds(library, agent);
  if (!lds) return std::move(lds).error();
  device.lds_bytes = *lds;

  // Optional: older runtimes refuse the attribute. An AMD attribute lies
  // outside hsa_agent_info_t's enumerators, so it is bit_cast, not converted.
  std::uint32_t revision = 0;
  const auto asic_revision = std::bit_cast<hsa_agent_info_t>(
      static_cast<std::underlying_type_t<hsa_agent_info_t>>(HSA_AMD_AGENT_INFO_ASIC_REVISION));
  if (library.api().hsa_agent_get_info(agent, asic_revision, &revision) == HSA_STATUS_SUCCESS) {
    device.asic_revision = revision;
  }
  device.code_object_versions = code_object_versions;
  return device;
}

class HsaRuntime final : public Runtime {
 public:
  HsaRuntime(std::shared_ptr<const HsaLibrary> library, std::vector<hsa_agent_t> agents, std::vector<Device> devices)
      : library_(std::move(library)), agents_(std::move(agents)), devices_(std::move(devices)) {}

  std::string_view name() const override { return "hsa"; }
  std::span<const Device> devices() const override { return devices_; }

  // Reads only what the constructor set; ROCr's calls are thread-safe.
  Expected<std::unique_ptr<LoadedModule>> load(std::size_t device, const Image& image,
                                               const CodeObject& code_object) override {
    if (device >= devices_.size()) {
      return Error(ErrorKind::InvalidArgument, "HSA device " + std::to_string(device) + " does not exist (" +
                                                   std::to_string(devices_.size()) + " GPU agents)");
    }
    auto module = load_on(agents_[device], image, code_object);
    if (!module) {
      return std::move(module).error().with_context("HSA device " + std::to_string(device) + " (" +
                                                    devices_[device].str() + ")");
    }
    return module;
  }

 private:
  Expected<std::unique_ptr<LoadedModule>> load_on(hsa_agent_t agent, const Image& image,
                                                  const CodeObject& code_object) const {
    const HsaLibrary& library = *library_;
    if (image.bytes.empty()) return Error(ErrorKind::InvalidArgument, "the code object image is empty");

    hsa_code_object_reader_t reader_handle{};
    auto created_reader = COLOAD_HSA_CALL(library, hsa_code_object_reader_create_from_memory, image.bytes.data(),
                                          image.bytes.size(), &reader_handle);
    if (!created_reader) return std::move(created_reader).error();
    Reader reader(library_, reader_handle);

    hsa_executable_t executable_handle{};
    auto created = COLOAD_HSA_CALL(library, hsa_executable_create_alt, HSA_PROFILE_FULL,
                                   HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, nullptr, &executable_handle);
    if (!created) return std::move(created).error();
    Executable executable(library_, executable_handle);  // destroyed before `reader` on every path

    hsa_loaded_code_object_t loaded{};
    auto loaded_status = COLOAD_HSA_CALL(library, hsa_executable_load_agent_code_object, executable.get(), agent,
                                         reader.get(), nullptr, &loaded);
    if (!loaded_status) {
      Error error = std::move(loaded_status).error();
      if (error.kind() == ErrorKind::InvalidArgument) {
        error =
            error.with_context("code object for " + code_object.target().target.str() + " does not run on this agent");
      }
      return error;
    }
    auto frozen = COLOAD_HSA_CALL(library, hsa_executable_freeze, executable.get(), nullptr);
    if (!frozen) return std::move(frozen).error();

    std::vector<LoadedKernel> kernels;
    kernels.reserve(code_object.kernels().size());
    for (const Kernel& kernel : code_object.kernels()) {
      auto loaded_kernel = lookup(executable.get(), agent, kernel);
      if (!loaded_kernel) {
        return std::move(loaded_kernel)
            .error()
            .with_context("kernel '" + kernel.name + "' (symbol " + kernel.symbol + ")");
      }
      kernels.push_back(std::move(*loaded_kernel));
    }
    return std::unique_ptr<LoadedModule>(new HsaModule(library_, image.owner, code_object, std::move(kernels),
                                                       std::move(reader), std::move(executable)));
  }

  /// The registration probe: the metadata's `.symbol` must be an agent kernel
  /// symbol whose descriptor-derived sizes agree with the metadata.
  Expected<LoadedKernel> lookup(hsa_executable_t executable, hsa_agent_t agent, const Kernel& kernel) const {
    const HsaLibrary& library = *library_;
    hsa_executable_symbol_t symbol{};
    auto found =
        COLOAD_HSA_CALL(library, hsa_executable_get_symbol_by_name, executable, kernel.symbol.c_str(), &agent, &symbol);
    if (!found) return std::move(found).error();

    auto type = symbol_info<std::uint32_t>(library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, "TYPE");
    if (!type) return std::move(type).error();
    if (*type != HSA_SYMBOL_KIND_KERNEL) {
      return Error(ErrorKind::Malformed,
                   "HSA_EXECUTABLE_SYMBOL_INFO_TYPE is " + std::to_string(*type) + ", not HSA_SYMBOL_KIND_KERNEL");
    }
    LoadedKernel loaded;
    loaded.name = kernel.name;
    loaded.symbol = kernel.symbol;
    loaded.explicit_kernarg_size = kernel.layout.explicit_size;
#define COLOAD_SYMBOL_INFO(field, type, attribute)                                                       \
  {                                                                                                      \
    auto value = symbol_info<type>(library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_##attribute, #attribute); \
    if (!value) return std::move(value).error();                                                         \
    loaded.field = *value;                                                                               \
  }
    COLOAD_SYMBOL_INFO(handle, std::uint64_t, KERNEL_OBJECT)
    COLOAD_SYMBOL_INFO(kernarg_segment_size, std::uint32_t, KERNEL_KERNARG_SEGMENT_SIZE)
    COLOAD_SYMBOL_INFO(kernarg_segment_align, std::uint32_t, KERNEL_KERNARG_SEGMENT_ALIGNMENT)
    COLOAD_SYMBOL_INFO(group_segment_size, std::uint32_t, KERNEL_GROUP_SEGMENT_SIZE)
    COLOAD_SYMBOL_INFO(private_segment_size, std::uint32_t, KERNEL_PRIVATE_SEGMENT_SIZE)
    COLOAD_SYMBOL_INFO(dynamic_callstack, bool, KERNEL_DYNAMIC_CALLSTACK)
#undef COLOAD_SYMBOL_INFO
    if (loaded.handle == 0) return Error(ErrorKind::Malformed, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT is 0");

    // ROCr takes these from the descriptor; the metadata must agree.
    auto check = [&](std::string_view attribute, std::uint32_t from_runtime, std::string_view key,
                     std::uint32_t from_metadata) -> Expected<void> {
      if (from_runtime == from_metadata) return {};
      return Error(ErrorKind::SizeMismatch, "HSA_EXECUTABLE_SYMBOL_INFO_" + std::string(attribute) +
                                                " (from the kernel descriptor) is " + std::to_string(from_runtime) +
                                                " but the metadata's " + std::string(key) + " is " +
                                                std::to_string(from_metadata));
    };
    if (auto ok = check("KERNEL_KERNARG_SEGMENT_SIZE", loaded.kernarg_segment_size, ".kernarg_segment_size",
                        kernel.kernarg_segment_size);
        !ok) {
      return std::move(ok).error();
    }
    if (auto ok = check("KERNEL_GROUP_SEGMENT_SIZE", loaded.group_segment_size, ".group_segment_fixed_size",
                        kernel.group_segment_fixed_size);
        !ok) {
      return std::move(ok).error();
    }
    return loaded;
  }

  std::shared_ptr<const HsaLibrary> library_;
  std::vector<hsa_agent_t> agents_;
  std::vector<Device> devices_;
};

}  // namespace

Expected<std::unique_ptr<Runtime>> open_hsa_runtime(const HsaOptions& options) {
  auto opened = HsaLibrary::open(options.library);
  if (!opened) return std::move(opened).error();
  std::shared_ptr<HsaLibrary> library = std::move(*opened);
  // A failed hsa_init holds no reference: the library is closed without hsa_shut_down.
  if (auto initialized = library->init(); !initialized) return std::move(initialized).error();

  std::vector<hsa_agent_t> all_agents;
  auto iterated = COLOAD_HSA_CALL(*library, hsa_iterate_agents, &collect<hsa_agent_t>, static_cast<void*>(&all_agents));
  if (!iterated) return std::move(iterated).error();

  const std::vector<unsigned> versions = hsa::code_object_versions_for_library(library->file());
  std::vector<hsa_agent_t> agents;
  std::vector<Device> devices;
  std::size_t skipped = 0;
  std::optional<Error> first_skipped;
  for (std::size_t i = 0; i < all_agents.size(); ++i) {
    // Enums are read as their 32-bit values: no HSA type reaches an exported template.
    auto type = agent_info<std::uint32_t>(*library, all_agents[i], HSA_AGENT_INFO_DEVICE, "DEVICE");
    if (!type) return std::move(type).error().with_context("HSA agent " + std::to_string(i));
    if (*type != HSA_DEVICE_TYPE_GPU) continue;
    const std::string where =
        "HSA agent " + std::to_string(i) + " (GPU " + std::to_string(devices.size() + skipped) + ")";
    auto target = agent_target(*library, all_agents[i]);
    if (!target && target.error().kind() == ErrorKind::NotFound) {
      // A GPU of a processor coload does not know is left out, as CLR leaves
      // out GPUs missing from its table; the others stay usable.
      if (!first_skipped) first_skipped = std::move(target).error().with_context(where);
      ++skipped;
      continue;
    }
    if (!target) return std::move(target).error().with_context(where);
    auto device = describe_agent(*library, all_agents[i], *target, versions);
    if (!device) return std::move(device).error().with_context(where);
    agents.push_back(all_agents[i]);
    devices.push_back(std::move(*device));
  }
  if (devices.empty() && first_skipped) {
    return std::move(*first_skipped)
        .with_context("no GPU agent coload can describe (" + std::to_string(skipped) + " left out)");
  }
  if (devices.empty()) {  // as HIP's hipErrorNoDevice: a caller falls back to another runtime
    return Error(ErrorKind::NotFound, "no AMD GPU: hsa_iterate_agents reported " + std::to_string(all_agents.size()) +
                                          " agent(s), none of them a GPU");
  }
  return std::unique_ptr<Runtime>(new HsaRuntime(std::move(library), std::move(agents), std::move(devices)));
}

}  // namespace coload
