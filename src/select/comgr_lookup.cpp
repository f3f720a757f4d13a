// The comgr wrapper: dlopen, dlsym of the few entry points coload calls, and
// one status check per call. <amd_comgr.h> is included for its types only;
// nothing links against comgr.
#include "select/comgr_lookup.h"

#include <amd_comgr.h>
#include <dlfcn.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "common/bytes.h"
#include "common/try.h"

namespace coload::detail {

struct Comgr::Api {
  decltype(&amd_comgr_status_string) status_string = nullptr;
  decltype(&amd_comgr_get_version) get_version = nullptr;
  decltype(&amd_comgr_get_isa_count) get_isa_count = nullptr;
  decltype(&amd_comgr_get_isa_name) get_isa_name = nullptr;
  decltype(&amd_comgr_create_data) create_data = nullptr;
  decltype(&amd_comgr_set_data) set_data = nullptr;
  decltype(&amd_comgr_release_data) release_data = nullptr;
  decltype(&amd_comgr_get_data_isa_name) get_data_isa_name = nullptr;
  decltype(&amd_comgr_lookup_code_object) lookup_code_object = nullptr;
};

namespace {

ErrorKind kind_of(amd_comgr_status_t status) {
  switch (status) {
    case AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT: return ErrorKind::InvalidArgument;
    case AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES: return ErrorKind::LimitExceeded;
    // AMD_COMGR_STATUS_ERROR: for lookup_code_object, "the code object bundle
    // header is incorrect or reading bundle entries failed".
    default: return ErrorKind::Malformed;
  }
}

/// The one place a comgr status becomes a coload error: names the function,
/// comgr's own status text and number, and what was asked.
Expected<void> check(const Comgr::Api& api, amd_comgr_status_t status, std::string_view function,
                     std::string_view what) {
  if (status == AMD_COMGR_STATUS_SUCCESS) return {};
  const char* text = nullptr;
  std::string name = api.status_string(status, &text) == AMD_COMGR_STATUS_SUCCESS && text ? text : "unknown status";
  std::string message = "comgr " + std::string(function) + " failed with " + name + " (status " +
                        std::to_string(static_cast<int>(status)) + ")";
  if (!what.empty()) message += " " + std::string(what);
  return Error(kind_of(status), std::move(message))
      .at_field(function, std::nullopt, static_cast<std::uint64_t>(status));
}

/// A comgr data object, released on every path.
class DataObject {
 public:
  static Expected<DataObject> create(const Comgr::Api& api, amd_comgr_data_kind_t kind,
                                     std::span<const std::byte> bytes, std::string_view what) {
    DataObject object(api);
    COLOAD_RETURN_IF_ERROR(check(api, api.create_data(kind, &object.data_), "amd_comgr_create_data", what));
    object.live_ = true;
    // comgr copies the bytes (amd_comgr.h: "can be freed after the call").
    auto ok = check(api, api.set_data(object.data_, bytes.size(), reinterpret_cast<const char*>(bytes.data())),
                    "amd_comgr_set_data", what);
    COLOAD_RETURN_IF_ERROR(ok);
    return object;
  }

  DataObject(DataObject&& other) noexcept
      : api_(other.api_), data_(other.data_), live_(std::exchange(other.live_, false)) {}
  DataObject& operator=(DataObject&&) = delete;
  ~DataObject() {
    // Nothing to report a failure to; comgr only fails here for a bad handle.
    if (live_) api_->release_data(data_);
  }

  amd_comgr_data_t get() const { return data_; }

 private:
  explicit DataObject(const Comgr::Api& api) : api_(&api) {}

  const Comgr::Api* api_;
  amd_comgr_data_t data_{0};
  bool live_ = false;
};

std::string describe(std::span<const std::byte> bytes, ComgrInput input) {
  return std::string(input == ComgrInput::Bundle ? "on a bundle of " : "on a code object of ") + hex(bytes.size()) +
         " bytes";
}

Expected<std::vector<std::string>> list_isas(const Comgr::Api& api) {
  std::size_t count = 0;
  COLOAD_RETURN_IF_ERROR(check(api, api.get_isa_count(&count), "amd_comgr_get_isa_count", ""));
  // comgr 5.2.3 lists 33; a count far beyond any real table is a broken library.
  constexpr std::size_t kMaxIsas = 4096;
  if (count > kMaxIsas) {
    return Error(ErrorKind::LimitExceeded, "comgr amd_comgr_get_isa_count reports " + std::to_string(count) +
                                               " ISAs, above the limit of " + std::to_string(kMaxIsas))
        .at_field("amd_comgr_get_isa_count", std::nullopt, count, kMaxIsas);
  }
  std::vector<std::string> names;
  names.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    COLOAD_RETURN_IF_ERROR(
        check(api, api.get_isa_name(i, &name), "amd_comgr_get_isa_name", "for index " + std::to_string(i)));
    names.emplace_back(name ? name : "");
  }
  return names;
}

/// Every library loaded so far, by the path it was asked for. Allocated once
/// and never destroyed: loaded comgrs stay valid until the process ends, even
/// while other static destructors run.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<const Comgr>, std::less<>> loaded;
};

Registry& registry() {
  static Registry* instance = new Registry;
  return *instance;
}

}  // namespace

Comgr::Comgr(std::string path, std::unique_ptr<const Api> api, std::string version, std::vector<std::string> isa_names)
    : path_(std::move(path)), api_(std::move(api)), version_(std::move(version)), isa_names_(std::move(isa_names)) {}

// The library stays loaded (no dlclose): comgr and its LLVM keep global state,
// and a Comgr handed out must stay usable for the life of the process.
Comgr::~Comgr() = default;

Expected<const Comgr*> Comgr::load(std::string_view path) {
  Registry& loaded = registry();
  std::lock_guard lock(loaded.mutex);
  if (auto it = loaded.loaded.find(path); it != loaded.loaded.end()) return it->second.get();

  std::string name(path);
  dlerror();  // clear a stale message
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return Error(ErrorKind::Io, "cannot load comgr from '" + name + "': " + (why ? why : "dlopen failed"));
  }
  auto api = std::make_unique<Api>();
  std::string missing;
  auto resolve = [&](auto& function, const char* symbol) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(handle, symbol));
    if (!function) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  resolve(api->status_string, "amd_comgr_status_string");
  resolve(api->get_version, "amd_comgr_get_version");
  resolve(api->get_isa_count, "amd_comgr_get_isa_count");
  resolve(api->get_isa_name, "amd_comgr_get_isa_name");
  resolve(api->create_data, "amd_comgr_create_data");
  resolve(api->set_data, "amd_comgr_set_data");
  resolve(api->release_data, "amd_comgr_release_data");
  resolve(api->get_data_isa_name, "amd_comgr_get_data_isa_name");
  resolve(api->lookup_code_object, "amd_comgr_lookup_code_object");
  if (!missing.empty()) {
    dlclose(handle);
    return Error(ErrorKind::UnsupportedVersion,
                 "'" + name + "' lacks " + missing +
                     " (coload needs comgr interface 2.3 or later, as in ROCm 5.2, for amd_comgr_lookup_code_object)");
  }
  std::size_t major = 0, minor = 0;
  api->get_version(&major, &minor);
  auto isas = list_isas(*api);
  if (!isas) {
    dlclose(handle);
    return std::move(isas).error().with_context("loading comgr from '" + name + "'");
  }
  auto comgr = std::unique_ptr<const Comgr>(
      new Comgr(name, std::move(api), std::to_string(major) + "." + std::to_string(minor), std::move(*isas)));
  const Comgr* result = comgr.get();
  loaded.loaded.emplace(std::move(name), std::move(comgr));
  return result;
}

bool Comgr::knows_processor(std::string_view processor) const {
  for (const std::string& isa : isa_names_) {
    if (isa_processor(isa) == processor) return true;
  }
  return false;
}

Expected<std::vector<std::optional<ComgrHit>>> Comgr::lookup(std::span<const std::byte> data, ComgrInput input,
                                                             std::span<const std::string> isa_names) const {
  std::string what = describe(data, input);
  auto object = DataObject::create(
      *api_, input == ComgrInput::Bundle ? AMD_COMGR_DATA_KIND_FATBIN : AMD_COMGR_DATA_KIND_EXECUTABLE, data, what);
  COLOAD_RETURN_IF_ERROR(object);
  std::vector<std::optional<ComgrHit>> hits;
  hits.reserve(isa_names.size());
  for (const std::string& isa : isa_names) {
    amd_comgr_code_object_info_t query{isa.c_str(), 0, 0};
    auto ok = check(*api_, api_->lookup_code_object(object->get(), &query, 1), "amd_comgr_lookup_code_object",
                    what + " for " + isa);
    COLOAD_RETURN_IF_ERROR(ok);
    // Size 0 is comgr's "not found"; a found empty entry looks the same.
    if (query.size == 0) {
      hits.emplace_back(std::nullopt);
    } else {
      hits.emplace_back(ComgrHit{.offset = query.offset, .size = query.size});
    }
  }
  return hits;
}

Expected<std::string> Comgr::code_object_isa_name(std::span<const std::byte> code_object) const {
  std::string what = describe(code_object, ComgrInput::CodeObject);
  auto object = DataObject::create(*api_, AMD_COMGR_DATA_KIND_EXECUTABLE, code_object, what);
  COLOAD_RETURN_IF_ERROR(object);
  std::size_t size = 0;
  COLOAD_RETURN_IF_ERROR(
      check(*api_, api_->get_data_isa_name(object->get(), &size, nullptr), "amd_comgr_get_data_isa_name", what));
  std::string name(size, '\0');
  COLOAD_RETURN_IF_ERROR(
      check(*api_, api_->get_data_isa_name(object->get(), &size, name.data()), "amd_comgr_get_data_isa_name", what));
  name.resize(std::min(size, name.size()));
  while (!name.empty() && name.back() == '\0') name.pop_back();
  return name;
}

std::string_view isa_processor(std::string_view isa_name) {
  std::size_t start = isa_name.find("--");
  std::string_view target = start == std::string_view::npos ? isa_name : isa_name.substr(start + 2);
  return target.substr(0, target.find(':'));
}

}  // namespace coload::detail
