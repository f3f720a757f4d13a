// The template library (tests/HipTemplates.cmake, libhip_templates.so: 104
// translation units, each a __hip_fatbin_wrapper, in four groups of
// --offload-arch lists) loaded through the example HIP layer
// (examples/hip_layer, dry-run, one device) with the registration entry
// points recorded on the way (tests/support/record_registrations.h).
//
// Every template instantiation's host stub is one weak function the linker
// merged, registered by every unit that instantiated it; every unit compiled
// it with its own static LDS, elem_size * (base_elems + unit), so a launch's
// group_segment_size names the unit whose code it reached. Checks, for the
// device given by its label (kDevices):
//  - registration: 104 wrappers, 876 functions, 0 errors (nothing on stderr);
//  - every kernel of every unit, launched by the unit's own code, reaches the
//    best-fitting registrant of its stub (the group's rank on the device,
//    then the first registration), or is refused (98) when no registrant
//    has code for the device;
//  - the same stub registered for another name is refused as ambiguous, the
//    same name by another binary accepted;
//  - unregistering the stub's binary, again and again, moves it to the next
//    best registrant until none has code;
//  - dlclose unregisters every remaining wrapper.
// Usage: hip_templates_app LIBRARY DEVICE_LABEL. Exit 0 when all hold.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hip_layer.h"
#include "record_registrations.h"

namespace {

constexpr size_t kUnits = 104;
constexpr size_t kRegistrations = 876;  // 104 own kernels + 4 * 104 + the 8 partial slots' 356
constexpr size_t kSharedStubs = 12;     // the template instantiations (tests/kernels/templates/tpl_unit.hip)
constexpr int kInvalidDeviceFunction = 98;

/// What a unit's launch function says about the kernel it launched (tpl_kernels.h).
struct KernelRow {
  const void* stub;
  unsigned elem_size;
  unsigned base_elems;
};
using LaunchFn = int (*)(int index, KernelRow* row);

/// How well each group's code fits a device: 0 none; lower is better. 1/2
/// native with exact features / "any", 3/4 equivalent, 5/6 generic
/// (docs/selection.md, "Tiers"). Groups as tests/HipTemplates.cmake builds
/// them: 0 gfx9-4-generic, gfx11-generic, gfx10-3-generic; 1 gfx90a,
/// gfx942; 2 gfx90a:xnack+, gfx1100; 3 gfx942, gfx1100, gfx1030.
struct DeviceRanks {
  const char* label;
  int rank[4];
  /// The 772 template launches by the group whose code served them (on a
  /// tie the first registrant wins: on gfx942 and gfx1100, the slots whose
  /// first fitting registrant is a group 3 unit are served by group 3), and
  /// the launches refused: the own kernels of the 26 units of each group
  /// with no code for the device.
  size_t served[4];
  size_t refused;
};
constexpr DeviceRanks kDevices[] = {
    {"gfx90a-xnack-off", {0, 2, 0, 0}, {0, 772, 0, 0}, 78},  // xnack+ code never runs on xnack-
    {"gfx90a-xnack-on", {0, 2, 1, 0}, {0, 0, 772, 0}, 52},   // exact xnack+ before "any"
    {"gfx942", {6, 2, 0, 2}, {0, 639, 0, 133}, 26},          // native before generic; groups 1 and 3 tie
    {"gfx950", {6, 0, 0, 0}, {772, 0, 0, 0}, 78},            // gfx9-4-generic only
    {"gfx1100", {6, 0, 2, 2}, {0, 0, 593, 179}, 26},         // groups 2 and 3 tie
    {"gfx1101", {6, 0, 0, 0}, {772, 0, 0, 0}, 78},           // gfx11-generic only
    {"gfx1030", {6, 0, 0, 2}, {0, 0, 0, 772}, 52},
    {"gfx1031", {6, 0, 0, 0}, {772, 0, 0, 0}, 78},           // gfx1030 code is no fit without the opt-in
    {"gfx1031-extended", {6, 0, 0, 4}, {0, 0, 0, 772}, 52},  // COLOAD_EXTENDED_ISA_COMPAT=all: equivalent first
};

int failures = 0;

void expect(bool holds, const std::string& what) {
  std::printf("%s: %s\n", holds ? "ok" : "FAILED", what.c_str());
  if (!holds) ++failures;
}

/// fd 2 goes to a temporary file for the whole run, so what the layer
/// reports (one "hip_layer: …" line per error) can be read back per step.
class StderrLog {
 public:
  StderrLog() : file_(std::tmpfile()) {
    if (!file_) return;
    // A sanitizer's report still goes to the real stderr (the function exists in sanitizer builds only).
    using set_report_fd = void (*)(void*);
    if (auto set = reinterpret_cast<set_report_fd>(dlsym(RTLD_DEFAULT, "__sanitizer_set_report_fd")))
      set(reinterpret_cast<void*>(static_cast<intptr_t>(dup(STDERR_FILENO))));
    dup2(fileno(file_), STDERR_FILENO);
  }
  bool capturing() const { return file_ != nullptr; }
  long mark() const { return file_ ? lseek(fileno(file_), 0, SEEK_END) : 0; }
  std::string since(long mark) const {
    std::string text;
    if (!file_) return text;
    char buffer[4096];
    ssize_t read;
    for (long at = mark; (read = pread(fileno(file_), buffer, sizeof buffer, at)) > 0; at += read)
      text.append(buffer, static_cast<size_t>(read));
    return text;
  }

 private:
  FILE* file_;
};

/// Whether a line of `text` starts with `prefix`.
bool has_line(const std::string& text, const std::string& prefix) {
  for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
    if (text.compare(at, prefix.size(), prefix) == 0) return true;
    if (text.find('\n', at) == std::string::npos) break;
  }
  return false;
}

/// The first `count` lines of `text`, and how many more there were.
std::string first_lines(const std::string& text, size_t count) {
  size_t at = 0, lines = 0;
  while (lines < count && (at = text.find('\n', at)) != std::string::npos) ++at, ++lines;
  if (at == std::string::npos || at >= text.size()) return text;
  size_t more = 0;
  for (size_t i = at; i < text.size(); ++i) more += text[i] == '\n' ? 1 : 0;
  return text.substr(0, at) + "... and " + std::to_string(more) + " more lines\n";
}

/// A launch the test made and what the layer saw.
struct Launch {
  size_t unit;
  int index;
  KernelRow row;
  hip_layer_launch seen;
  std::string reported;
};

class Library {
 public:
  explicit Library(const DeviceRanks& device) : device_(device) {}

  bool open(const char* path, const StderrLog& log) {
    record_registrations_start(RECORD_AND_FORWARD);
    long mark = log.mark();
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    std::string reported = log.since(mark);
    expect(handle_ != nullptr, std::string("dlopen ") + path + (handle_ ? "" : std::string(": ") + dlerror()));
    expect(reported.empty(),
           "0 registration errors on stderr" + (reported.empty() ? "" : ":\n" + first_lines(reported, 5)));
    expect(record_registration_errors() == 0, "the recording shim forwarded every call");
    for (size_t unit = 0; handle_ && unit < kUnits; ++unit) {
      std::string name = "tpl_unit_" + std::to_string(unit) + "_launch";
      launchers_.push_back(reinterpret_cast<LaunchFn>(dlsym(handle_, name.c_str())));
      if (!launchers_.back()) expect(false, name + " is exported");
    }
    return handle_ && launchers_.size() == kUnits;
  }

  /// Launches unit `unit`'s kernel `index` through the unit's own code.
  bool launch(size_t unit, int index, const StderrLog& log, Launch* out) {
    out->unit = unit;
    out->index = index;
    long mark = log.mark();
    if (launchers_[unit](index, &out->row) == 0) return false;
    std::memset(&out->seen, 0, sizeof out->seen);
    hip_layer_last_launch(&out->seen);
    out->reported = log.since(mark);
    return true;
  }

  /// Indexes the recorded registrations: stub -> its registrations, wrapper -> unit.
  void index_registrations(const std::vector<Launch>& launches) {
    size_t count = 0;
    const recorded_function* functions = record_functions(&count);
    for (size_t i = 0; i < count; ++i) {
      by_stub_[functions[i].host_stub].push_back(functions[i]);
      if (names_.find(functions[i].host_stub) == names_.end())
        names_[functions[i].host_stub] = functions[i].device_name;
    }
    size_t wrapper_count = 0;
    record_wrappers(&wrapper_count);
    unit_of_wrapper_.assign(wrapper_count, kUnits);
    wrapper_of_unit_.assign(kUnits, wrapper_count);
    for (const Launch& launch : launches) {  // index 0 is the unit's own kernel: one registration
      if (launch.index != 0) continue;
      const std::vector<recorded_function>& own = by_stub_[launch.row.stub];
      if (own.size() != 1) continue;
      unit_of_wrapper_[own[0].wrapper] = launch.unit;
      wrapper_of_unit_[launch.unit] = own[0].wrapper;
    }
  }

  const std::map<const void*, std::vector<recorded_function>>& stubs() const { return by_stub_; }
  size_t wrapper_of_unit(size_t unit) const { return wrapper_of_unit_[unit]; }
  size_t unit_of_wrapper(size_t wrapper) const { return unit_of_wrapper_[wrapper]; }
  const std::string& name_of(const void* stub) { return names_[stub]; }
  void* handle() const { return handle_; }

  /// The unit whose code a lookup of `stub` must reach: the best rank among
  /// its registrants still registered (for the name it was first registered
  /// with), the first registered on a tie; kUnits when none has code.
  size_t expected_unit(const void* stub) {
    size_t wrapper_count = 0;
    const recorded_wrapper* wrappers = record_wrappers(&wrapper_count);
    size_t best_unit = kUnits;
    int best_rank = 0;
    for (const recorded_function& registration : by_stub_[stub]) {
      if (registration.device_name != names_[stub] || wrappers[registration.wrapper].unregistered) continue;
      size_t unit = unit_of_wrapper_[registration.wrapper];
      if (unit == kUnits) continue;
      int rank = device_.rank[unit % 4];
      if (rank != 0 && (best_rank == 0 || rank < best_rank)) best_rank = rank, best_unit = unit;
    }
    return best_unit;
  }

  /// Whether `launch` reached what expected_unit says; `why` says what it reached.
  bool reached_expected(const Launch& launch, std::string* why) {
    size_t unit = expected_unit(launch.row.stub);
    const std::string not_found =
        std::string("hip_layer: hipLaunchKernel: ") + coload_status_string(COLOAD_ERROR_NOT_FOUND);
    std::string where = "unit " + std::to_string(launch.unit) + " kernel " + std::to_string(launch.index) + " (" +
                        name_of(launch.row.stub) + ")";
    if (unit == kUnits) {
      *why = where + ": no registrant has code; status " + std::to_string(launch.seen.status) + ", reported " +
             launch.reported;
      return launch.seen.status == kInvalidDeviceFunction && has_line(launch.reported, not_found);
    }
    uint32_t lds = launch.row.elem_size * (launch.row.base_elems + static_cast<uint32_t>(unit));
    *why = where + ": expected unit " + std::to_string(unit) + " (LDS " + std::to_string(lds) + "), status " +
           std::to_string(launch.seen.status) + ", LDS " + std::to_string(launch.seen.kernel.group_segment_size) +
           (launch.reported.empty() ? "" : ", reported " + launch.reported);
    return launch.seen.status == 0 && launch.seen.host_stub == launch.row.stub &&
           launch.seen.kernel.group_segment_size == lds && !has_line(launch.reported, "hip_layer: ");
  }

 private:
  const DeviceRanks& device_;
  void* handle_ = nullptr;
  std::vector<LaunchFn> launchers_;
  std::map<const void*, std::vector<recorded_function>> by_stub_;
  std::map<const void*, std::string> names_;
  std::vector<size_t> unit_of_wrapper_, wrapper_of_unit_;
};

void check_registrations(Library& library, const std::vector<Launch>& launches) {
  size_t wrappers = 0, functions = 0;
  record_wrappers(&wrappers);
  record_functions(&functions);
  expect(wrappers == kUnits, std::to_string(wrappers) + " wrappers registered, one per unit");
  expect(hip_layer_binary_count() == kUnits, "the layer holds one binary per wrapper");
  expect(functions == kRegistrations, std::to_string(functions) + " __hipRegisterFunction calls");
  expect(launches.size() == kRegistrations, std::to_string(launches.size()) + " kernels launched, one per call");
  size_t mapped = 0;
  for (size_t unit = 0; unit < kUnits; ++unit) mapped += library.wrapper_of_unit(unit) < wrappers ? 1 : 0;
  expect(mapped == kUnits, "every unit's own kernel was registered by exactly one wrapper");
  size_t shared = 0, shared_registrations = 0;
  for (const auto& [stub, registrations] : library.stubs()) {
    if (registrations.size() < 2) continue;
    ++shared;
    shared_registrations += registrations.size();
  }
  expect(shared == kSharedStubs && shared_registrations == kRegistrations - kUnits,
         std::to_string(shared) + " stubs registered by several wrappers, in " + std::to_string(shared_registrations) +
             " registrations");
}

void check_ambiguous(Library& library, const StderrLog& log, const Launch& shared) {
  const void* stub = shared.row.stub;
  const std::string name = library.name_of(stub);
  size_t unit = library.expected_unit(stub);
  size_t wrapper = library.wrapper_of_unit(unit == kUnits ? 0 : unit);
  size_t wrapper_count = 0;
  const recorded_wrapper* wrappers = record_wrappers(&wrapper_count);
  const std::string ambiguous =
      std::string("hip_layer: __hipRegisterFunction: ") + coload_status_string(COLOAD_ERROR_AMBIGUOUS);

  // Through the layer: the same stub for another kernel name, in a binary that registered it.
  char other[] = "_Z14tpl_block_scanIiLi128EEvPKT_PS0_i";
  long mark = log.mark();
  __hipRegisterFunction(wrappers[wrapper].handle, stub, other, other, ~0u, nullptr, nullptr, nullptr, nullptr, nullptr);
  expect(log.since(mark).rfind(ambiguous, 0) == 0,
         "the shared stub registered again for another kernel of its binary: ambiguous");

  // The C API: the bundle of the serving unit registered again from memory, another binary.
  coload_registry* registry = hip_layer_registry();
  const void* image = nullptr;
  std::memcpy(&image, static_cast<const char*>(wrappers[wrapper].wrapper) + 8,
              sizeof image);  // {magic, version, binary}
  size_t size = 0;
  coload_binary again = 0;
  expect(coload_bundle_size(image, COLOAD_AVAILABLE_MAPPED, &size) == COLOAD_OK &&
             coload_register_memory(registry, image, size, "the serving unit's bundle again", &again) == COLOAD_OK,
         "the serving unit's bundle registered again from memory: another binary");
  expect(coload_register_function(registry, again, stub, other) == COLOAD_ERROR_AMBIGUOUS,
         "coload_register_function: the shared stub for another name in another binary is COLOAD_ERROR_AMBIGUOUS");
  expect(coload_register_function(registry, again, stub, name.c_str()) == COLOAD_OK,
         "coload_register_function: the shared stub for its own name in another binary is accepted");
  Launch launch;
  library.launch(shared.unit, shared.index, log, &launch);
  std::string why;
  expect(library.reached_expected(launch, &why), "a later registration on a tie changes nothing: " + why);
  expect(coload_unregister(registry, again) == COLOAD_OK, "that binary unregisters");
  library.launch(shared.unit, shared.index, log, &launch);
  expect(library.reached_expected(launch, &why), "and the stub still reaches the same code: " + why);
}

void check_unregister_chain(Library& library, const StderrLog& log, const Launch& shared) {
  const void* stub = shared.row.stub;
  std::string why;
  Launch launch;
  // A registrant that is not the best first: nothing changes.
  size_t best = library.expected_unit(stub);
  size_t last = library.stubs().at(stub).back().wrapper;
  if (best != kUnits && library.unit_of_wrapper(last) != best) {
    expect(record_unregister(last) == 0, "the stub's last registrant unregistered through the layer");
    library.launch(shared.unit, shared.index, log, &launch);
    expect(library.expected_unit(stub) == best && library.reached_expected(launch, &why),
           "the best registrant still serves the stub: " + why);
  }
  // Then the best one, again and again, until no registrant has code.
  size_t steps = 0, held = 0, first_gone = kUnits;
  while ((best = library.expected_unit(stub)) != kUnits) {
    if (record_unregister(library.wrapper_of_unit(best)) != 0) break;
    if (first_gone == kUnits) first_gone = best;
    library.launch(shared.unit, shared.index, log, &launch);
    ++steps;
    if (library.reached_expected(launch, &why)) {
      ++held;
    } else {
      expect(false, "after unregistering unit " + std::to_string(best) + "'s binary: " + why);
    }
  }
  expect(steps > 0 && held == steps, "unregistering the best binary " + std::to_string(steps) +
                                         " times: each time the stub moved to the next best (" + std::to_string(held) +
                                         "), the last time to none");
  if (first_gone != kUnits) {
    Launch own;
    library.launch(first_gone, 0, log, &own);
    expect(own.seen.status == kInvalidDeviceFunction, "the first unregistered unit's own kernel is forgotten");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const DeviceRanks* device = nullptr;
  for (const DeviceRanks& candidate : kDevices) {
    if (argc == 3 && std::strcmp(argv[2], candidate.label) == 0) device = &candidate;
  }
  if (!device) {
    std::fprintf(stderr, "usage: hip_templates_app LIBRARY DEVICE_LABEL (a label of kDevices)\n");
    return 2;
  }
  StderrLog log;
  expect(log.capturing(), "stderr goes to a temporary file, read back after each step");
  Library library(*device);
  if (!library.open(argv[1], log)) {
    std::printf("some checks FAILED\n");
    return 1;
  }
  std::vector<Launch> launches;
  Launch launch;
  for (size_t unit = 0; unit < kUnits; ++unit) {
    for (int index = 0; library.launch(unit, index, log, &launch); ++index) launches.push_back(launch);
  }
  library.index_registrations(launches);
  check_registrations(library, launches);

  size_t reached = 0, refused = 0, misses = 0, served_by_group[4] = {};
  std::string why;
  for (const Launch& each : launches) {
    bool holds = library.reached_expected(each, &why);
    if (!holds && ++misses <= 20) expect(false, why);  // the first 20 say enough
    (each.seen.status == 0 ? reached : refused) += holds ? 1 : 0;
    if (each.seen.status == 0 && each.index != 0 && each.row.elem_size != 0) {  // a template: which group served it
      size_t unit = each.seen.kernel.group_segment_size / each.row.elem_size - each.row.base_elems;
      if (unit < kUnits) ++served_by_group[unit % 4];
    }
  }
  expect(reached + refused == launches.size() && refused == device->refused,
         std::to_string(launches.size()) + " launches: " + std::to_string(reached) +
             " reached the best-fitting registrant's code, " + std::to_string(refused) +
             " refused where no registrant has code");
  const size_t* served = served_by_group;
  expect(std::equal(served, served + 4, device->served),
         "template launches served by groups 0-3: " + std::to_string(served[0]) + " " + std::to_string(served[1]) +
             " " + std::to_string(served[2]) + " " + std::to_string(served[3]));

  // A runtime that loads (HSA) hands each unit's kernel its own handle; the dry-run runtime gives 0.
  const char* runtime = std::getenv("HIP_LAYER_RUNTIME");
  if (runtime && std::strcmp(runtime, "dry-run") != 0) {
    std::set<uint64_t> own_handles;
    size_t own_launched = 0, zero = 0;
    for (const Launch& each : launches) {
      if (each.seen.status != 0) continue;
      zero += each.seen.kernel.handle == 0 ? 1 : 0;
      if (each.index == 0) ++own_launched, own_handles.insert(each.seen.kernel.handle);
    }
    expect(
        zero == 0 && own_handles.size() == own_launched,
        "every launch has a runtime handle; the " + std::to_string(own_launched) + " units' own kernels, each its own");
  }

  const Launch& shared = launches[1];  // unit 0's tpl_block_reduce<float, 256>: every unit registered it
  check_ambiguous(library, log, shared);
  check_unregister_chain(library, log, shared);

  long mark = log.mark();
  dlclose(library.handle());
  expect(hip_layer_binary_count() == 0, "dlclose unregistered every remaining wrapper");
  expect(log.since(mark).empty() && record_registration_errors() == 0, "nothing reported while unloading");
  std::printf("%s\n", failures == 0 ? "all checks passed" : "some checks FAILED");
  return failures == 0 ? 0 : 1;
}
