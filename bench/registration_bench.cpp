// What a HIP runtime pays when a library's constructors run (issue 33,
// docs/performance.md "Registration as cheap as CLR's"): every
// __hip_fatbin_wrapper of the 128-TU bench image registered, then every
// kernel's host stub, each timed per call; beside them, in the same
// iterations, the peer: what CLR records for the same calls (a map from the
// wrapper to a new record, a map from the stub to a new record holding the
// device name and one slot per device: PlatformState::addFatBinary and
// PlatformState::registerStatFunction). Then the first lookup after all of
// that, against resolving every stub: the first must load only its binary.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "loaded_wrappers.h"

namespace {

using namespace coload_bench;

/// The bench image loaded once, its wrappers and its __hipRegisterFunction
/// calls: (wrapper index, stub, kernel). A kernel name found in several
/// translation units gets one stub, as a template's COMDAT stub does.
struct Registrations {
  std::vector<const void*> wrappers;
  struct Function {
    std::size_t wrapper;
    const void* stub;
    std::string kernel;
  };
  std::vector<Function> functions;
  std::size_t shared_stubs = 0;  // stubs registered by two or more wrappers
  std::unique_ptr<char[]> stubs;
};

std::unique_ptr<coload::Registry> dry_run_registry() {
  return std::make_unique<coload::Registry>(coload::open_dry_run_runtime({gfx90a()}), coload::Config{});
}

const Registrations& registrations() {
  static const Registrations made = [] {
    Registrations r;
    const std::string path = input("libbench_plain.so");
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the run
    if (!handle) {
      std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), ::dlerror());
      std::abort();
    }
    r.wrappers = coload::testing::loaded_wrappers(path, handle);
    // The kernels each wrapper's bundle holds for gfx90a, as its TU's constructor names them.
    auto registry = dry_run_registry();
    std::vector<std::pair<std::size_t, std::string>> calls;
    std::map<std::string, std::size_t> registered_by;
    for (std::size_t i = 0; i < r.wrappers.size(); ++i) {
      auto binary = registry->register_wrapper(r.wrappers[i]);
      auto modules = binary ? registry->modules(*binary, 0) : decltype(registry->modules({}, 0))(binary.error());
      if (!modules) {
        std::fprintf(stderr, "wrapper %zu: %s\n", i, modules.error().message().c_str());
        std::abort();
      }
      for (const coload::LoadedModule* module : *modules) {
        for (const coload::LoadedKernel& kernel : module->kernels()) {
          calls.emplace_back(i, kernel.name);
          ++registered_by[kernel.name];
        }
      }
    }
    std::map<std::string, std::size_t> stub_of;
    for (const auto& [name, count] : registered_by) {
      stub_of.emplace(name, stub_of.size());
      if (count > 1) ++r.shared_stubs;
    }
    r.stubs = std::make_unique<char[]>(stub_of.size());
    for (auto& [wrapper, kernel] : calls) {
      r.functions.push_back({wrapper, &r.stubs[stub_of.at(kernel)], std::move(kernel)});
    }
    return r;
  }();
  return made;
}

/// CLR's records of the same calls (hip_platform.cpp): one allocation per
/// wrapper, one per stub with the name and a slot per device.
struct ClrLikeRecords {
  struct FatBinaryInfo {
    const void* image;
  };
  struct Function {
    std::string name;
    std::vector<void*> per_device;
  };
  std::unordered_map<const void*, std::unique_ptr<FatBinaryInfo>> binaries;
  std::unordered_map<const void*, std::unique_ptr<Function>> functions;

  void add_binary(const void* wrapper) {
    const void* image = static_cast<const void* const*>(wrapper)[1];
    binaries.emplace(wrapper, std::make_unique<FatBinaryInfo>(FatBinaryInfo{image}));
  }
  void add_function(const void* stub, const std::string& name, std::size_t devices) {
    auto function = std::make_unique<Function>(Function{name, std::vector<void*>(devices)});
    functions.try_emplace(stub, std::move(function));  // CLR keeps the first and logs
  }
};

// Registration alone, wrappers then stubs, per call; the peer in the same iterations.
void BM_RegisterAsALibraryLoads(benchmark::State& state) {
  const Registrations& r = registrations();
  double wrapper_ns = 0, stub_ns = 0, peer_wrapper_ns = 0, peer_stub_ns = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto registry = dry_run_registry();
    ClrLikeRecords peer;
    std::vector<coload::BinaryHandle> binaries(r.wrappers.size());
    state.ResumeTiming();
    auto start = Clock::now();
    for (std::size_t i = 0; i < r.wrappers.size(); ++i) binaries[i] = *registry->register_wrapper(r.wrappers[i]);
    auto wrappers_done = Clock::now();
    for (const Registrations::Function& f : r.functions) {
      if (!registry->register_function(binaries[f.wrapper], f.stub, f.kernel)) std::abort();
    }
    auto stubs_done = Clock::now();
    for (const void* wrapper : r.wrappers) peer.add_binary(wrapper);
    auto peer_wrappers_done = Clock::now();
    for (const Registrations::Function& f : r.functions) peer.add_function(f.stub, f.kernel, 1);
    auto peer_done = Clock::now();
    benchmark::DoNotOptimize(peer);
    state.PauseTiming();
    using ns = std::chrono::duration<double, std::nano>;
    wrapper_ns += ns(wrappers_done - start).count();
    stub_ns += ns(stubs_done - wrappers_done).count();
    peer_wrapper_ns += ns(peer_wrappers_done - stubs_done).count();
    peer_stub_ns += ns(peer_done - peer_wrappers_done).count();
    registry.reset();
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  const double wrappers = static_cast<double>(r.wrappers.size());
  const double functions = static_cast<double>(r.functions.size());
  state.counters["wrappers"] = wrappers;
  state.counters["functions"] = functions;
  state.counters["shared_stubs"] = static_cast<double>(r.shared_stubs);
  state.counters["us_per_wrapper"] = wrapper_ns / n / wrappers / 1e3;  // target <= 2
  state.counters["us_per_stub"] = stub_ns / n / functions / 1e3;       // target <= 0.5
  state.counters["clr_like_us_per_wrapper"] = peer_wrapper_ns / n / wrappers / 1e3;
  state.counters["clr_like_us_per_stub"] = peer_stub_ns / n / functions / 1e3;
}
BENCHMARK(BM_RegisterAsALibraryLoads)->Unit(benchmark::kMicrosecond);

/// A fresh registry with every wrapper and stub registered.
std::unique_ptr<coload::Registry> registered(const Registrations& r) {
  auto registry = dry_run_registry();
  std::vector<coload::BinaryHandle> binaries;
  for (const void* wrapper : r.wrappers) binaries.push_back(*registry->register_wrapper(wrapper));
  for (const Registrations::Function& f : r.functions) {
    if (!registry->register_function(binaries[f.wrapper], f.stub, f.kernel)) std::abort();
  }
  return registry;
}

// The first launch after the library loaded (one stub's lookup) against
// resolving every stub, each in its own fresh registry: target ratio <= 1/20.
void BM_FirstLookupAgainstEveryStub(benchmark::State& state) {
  const Registrations& r = registrations();
  double first_ns = 0, every_ns = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto one = registered(r);
    auto all = registered(r);
    state.ResumeTiming();
    auto start = Clock::now();
    if (!one->lookup_function(r.functions.front().stub, 0)) std::abort();
    auto first_done = Clock::now();
    for (const Registrations::Function& f : r.functions) {
      if (!all->lookup_function(f.stub, 0)) std::abort();
    }
    auto every_done = Clock::now();
    state.PauseTiming();
    using ns = std::chrono::duration<double, std::nano>;
    first_ns += ns(first_done - start).count();
    every_ns += ns(every_done - first_done).count();
    one.reset();
    all.reset();
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["first_us"] = first_ns / n / 1e3;
  state.counters["every_us"] = every_ns / n / 1e3;
  state.counters["first_over_every"] = first_ns / every_ns;  // target <= 0.05
}
BENCHMARK(BM_FirstLookupAgainstEveryStub)->Unit(benchmark::kMillisecond);

}  // namespace
