// What a HIP runtime pays when a library's constructors run (issue 33,
// docs/notes/performance.md "Registration as cheap as CLR's"): the template
// library's registrations (tests/HipTemplates.cmake: 104 wrappers, 876
// __hipRegisterFunction calls of 116 stubs, 12 of them shared by 44 to 104
// translation units), recorded once without any runtime
// (tests/support/record_registrations.h) and replayed into a fresh dry-run
// registry, every wrapper and then every stub timed per call; beside them, in
// the same iterations, the peer: what CLR records for the same calls (a map
// from the wrapper to a new record; a map from the stub to a new record
// holding the device name and a slot per device: PlatformState's
// addFatBinary and registerStatFunction). Then the first lookup after all
// of that against resolving every stub: the first must load only its binary.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <zstd.h>

#include "coload/config.h"
#include "coload/device.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "counting_new.h"
#include "preload/session.h"
#include "record_registrations.h"

namespace {

using Clock = std::chrono::steady_clock;
using Nanoseconds = std::chrono::duration<double, std::nano>;

/// The library's registrations, in call order.
struct Registrations {
  std::vector<const void*> wrappers;
  struct Function {
    std::size_t wrapper;
    const void* stub;
    std::string kernel;
  };
  std::vector<Function> functions;
  std::size_t stubs = 0;
  std::size_t shared_stubs = 0;  ///< registered by two or more wrappers
  std::size_t first_own = 0;     ///< a function whose stub only its own wrapper registers
};

const Registrations& registrations() {
  static const Registrations made = [] {
    Registrations r;
    record_registrations_start(RECORD_ONLY);
    if (!::dlopen(COLOAD_BENCH_TEMPLATES, RTLD_LAZY | RTLD_LOCAL)) {  // kept for the run
      std::fprintf(stderr, "dlopen %s: %s\n", COLOAD_BENCH_TEMPLATES, ::dlerror());
      std::abort();
    }
    std::size_t wrappers = 0, functions = 0;
    const recorded_wrapper* recorded = record_wrappers(&wrappers);
    for (std::size_t i = 0; i < wrappers; ++i) r.wrappers.push_back(recorded[i].wrapper);
    const recorded_function* calls = record_functions(&functions);
    std::map<const void*, std::size_t> registrations_of;
    for (std::size_t i = 0; i < functions; ++i) {
      r.functions.push_back({calls[i].wrapper, calls[i].host_stub, calls[i].device_name});
      ++registrations_of[calls[i].host_stub];
    }
    r.stubs = registrations_of.size();
    for (const auto& [stub, count] : registrations_of) r.shared_stubs += count > 1 ? 1 : 0;
    while (registrations_of.at(r.functions.at(r.first_own).stub) > 1) ++r.first_own;
    return r;
  }();
  return made;
}

std::unique_ptr<coload::Registry> dry_run_registry() {
  static const coload::Device gfx942 = *coload::device_from_spec("gfx942");
  coload::Config config;
  config.log_level = coload::LogLevel::Error;  // the 26 units with no gfx942 code warn on every lookup
  return std::make_unique<coload::Registry>(coload::open_dry_run_runtime({gfx942}), config);
}

/// CLR's records of the same calls: one allocation per wrapper, one per stub
/// with the name and a slot per device.
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
  void add_function(const void* stub, const std::string& name) {
    functions.try_emplace(stub, std::make_unique<Function>(Function{name, std::vector<void*>(1)}));
  }
};

// Registration alone, wrappers then stubs, per call; the peer in the same iterations.
void BM_RegisterAsALibraryLoads(benchmark::State& state) {
  const Registrations& r = registrations();
  double wrapper_ns = 0, stub_ns = 0, peer_wrapper_ns = 0, peer_stub_ns = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto registry = dry_run_registry();
    auto peer = std::make_unique<ClrLikeRecords>();
    std::vector<coload::BinaryHandle> binaries(r.wrappers.size());
    state.ResumeTiming();
    auto start = Clock::now();
    for (std::size_t i = 0; i < r.wrappers.size(); ++i) binaries[i] = *registry->register_wrapper(r.wrappers[i]);
    auto wrappers_done = Clock::now();
    for (const Registrations::Function& f : r.functions) {
      if (!registry->register_function(binaries[f.wrapper], f.stub, f.kernel)) std::abort();
    }
    auto stubs_done = Clock::now();
    for (const void* wrapper : r.wrappers) peer->add_binary(wrapper);
    auto peer_wrappers_done = Clock::now();
    for (const Registrations::Function& f : r.functions) peer->add_function(f.stub, f.kernel);
    auto peer_done = Clock::now();
    benchmark::DoNotOptimize(peer.get());
    state.PauseTiming();
    wrapper_ns += Nanoseconds(wrappers_done - start).count();
    stub_ns += Nanoseconds(stubs_done - wrappers_done).count();
    peer_wrapper_ns += Nanoseconds(peer_wrappers_done - stubs_done).count();
    peer_stub_ns += Nanoseconds(peer_done - peer_wrappers_done).count();
    registry.reset();
    peer.reset();
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  const double wrappers = static_cast<double>(r.wrappers.size());
  const double functions = static_cast<double>(r.functions.size());
  state.counters["wrappers"] = wrappers;
  state.counters["functions"] = functions;
  state.counters["stubs"] = static_cast<double>(r.stubs);
  state.counters["shared_stubs"] = static_cast<double>(r.shared_stubs);
  state.counters["us_per_wrapper"] = wrapper_ns / n / wrappers / 1e3;  // target <= 2
  state.counters["us_per_stub"] = stub_ns / n / functions / 1e3;       // target <= 0.5
  state.counters["clr_like_us_per_wrapper"] = peer_wrapper_ns / n / wrappers / 1e3;
  state.counters["clr_like_us_per_stub"] = peer_stub_ns / n / functions / 1e3;
}
BENCHMARK(BM_RegisterAsALibraryLoads)->Unit(benchmark::kMicrosecond);

/// A preload session for one gfx942 GPU behind HIP 7 (docs/preload.md),
/// CCOBs checked as COLOAD_HASH_CHECK `hash` says ("verify" or "skip"), its
/// CCOB tables kept in `cache` (COLOAD_VERIFY_CACHE: "off" for none).
std::unique_ptr<coload::preload::Session> preload_session(const std::string& hash, const std::string& cache) {
  return std::make_unique<coload::preload::Session>(coload::preload::read_settings(
      [&](std::string_view name) -> std::optional<std::string> {
        if (name == "COLOAD_DEVICES") return "gfx942";
        if (name == "COLOAD_HASH_CHECK") return hash;
        if (name == "COLOAD_VERIFY_CACHE") return cache;
        return std::nullopt;
      },
      coload::preload::HipRelease{.file = "libamdhip64.so.7.0.70000", .major = 7, .minor = 0}));
}

void** next_runtime(const void* wrapper) {  // a runtime that keeps nothing
  benchmark::DoNotOptimize(wrapper);
  static void* handle = nullptr;
  return &handle;
}

/// Whether the wrapper's image is a CCOB (the bench reads its own library's memory directly).
bool compressed_image(const void* wrapper) {
  const char* image = static_cast<const char* const*>(wrapper)[1];
  return std::memcmp(image, "CCOB", 4) == 0;
}

// The preload's decision per wrapper as the library's constructors call it,
// for a GPU whose runtime finds native or generic code in 78 of the 104
// wrappers and nothing in 26 (all go on untouched), against the peer: CLR's
// record of the same call. A plain bundle is decided from its table's IDs
// in place; a CCOB from the table its stream starts with. Target: <= 2 us per
// plain wrapper (issue 37).
void BM_PreloadPassesWrappersOn(benchmark::State& state) {
  const Registrations& r = registrations();
  const bool verify = state.range(0) != 1;
  const bool kept = state.range(0) == 2;
  // A process's first run keeps nothing; a later one finds its library's CCOB tables kept.
  std::string cache = "off";
  if (kept) {
    cache = (std::filesystem::temp_directory_path() / "coload_bench_tables_XXXXXX").string();
    if (!::mkdtemp(cache.data())) std::abort();
    auto warm = preload_session("verify", cache);
    for (const void* wrapper : r.wrappers) warm->register_fat_binary(wrapper, next_runtime);
  }
  double plain_ns = 0, ccob_ns = 0, slowest_ccob_ns = 0, peer_ns = 0, plain_allocations = 0;
  std::size_t plain = 0, ccob = 0;
  for (const void* wrapper : r.wrappers) (compressed_image(wrapper) ? ccob : plain) += 1;
  for (auto _ : state) {
    state.PauseTiming();
    auto peer = std::make_unique<ClrLikeRecords>();
    auto session = preload_session(verify ? "verify" : "skip", cache);  // one process's
    state.ResumeTiming();
    double slowest = 0;
    for (const void* wrapper : r.wrappers) {
      const std::size_t allocated = allocations.load(std::memory_order_relaxed);
      const auto start = Clock::now();
      benchmark::DoNotOptimize(session->register_fat_binary(wrapper, next_runtime));
      const double ns = Nanoseconds(Clock::now() - start).count();
      if (!compressed_image(wrapper))
        plain_allocations += static_cast<double>(allocations.load(std::memory_order_relaxed) - allocated);
      (compressed_image(wrapper) ? ccob_ns : plain_ns) += ns;
      if (compressed_image(wrapper)) slowest = std::max(slowest, ns);
    }
    slowest_ccob_ns += slowest;
    const auto peer_start = Clock::now();
    for (const void* wrapper : r.wrappers) peer->add_binary(wrapper);
    peer_ns += Nanoseconds(Clock::now() - peer_start).count();
    state.PauseTiming();
    if (session->kept() != 0) std::abort();  // nothing was rewritten
    peer.reset();
    session.reset();
    state.ResumeTiming();
  }
  if (kept) std::filesystem::remove_all(cache);
  const double n = static_cast<double>(state.iterations());
  state.counters["plain_wrappers"] = static_cast<double>(plain);
  state.counters["ccob_wrappers"] = static_cast<double>(ccob);
  state.counters["us_per_plain_wrapper"] = plain_ns / n / static_cast<double>(plain) / 1e3;              // target <= 2
  state.counters["allocations_per_plain_wrapper"] = plain_allocations / n / static_cast<double>(plain);  // target 0
  state.counters["us_per_ccob_wrapper"] = ccob_ns / n / static_cast<double>(ccob) / 1e3;
  // Without the slowest CCOB call: the one wrapper planned in full for its no-fit line.
  state.counters["us_per_other_ccob_wrapper"] = (ccob_ns - slowest_ccob_ns) / n / static_cast<double>(ccob - 1) / 1e3;
  state.counters["clr_like_us_per_wrapper"] = peer_ns / n / static_cast<double>(r.wrappers.size()) / 1e3;
}
// Arg 0: COLOAD_HASH_CHECK=verify (the default: each CCOB decoded whole and
// its MD5 checked), nothing kept (a first run); 1: skip (its table alone),
// nothing kept; 2: verify, a later run: the library's CCOB tables kept by
// an earlier one (docs/preload.md). Each iteration is a new session, as a
// new process has.
BENCHMARK(BM_PreloadPassesWrappersOn)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// The floor under a CCOB's first-run screen: zstd alone decoding each CCOB
// wrapper's frame (its one block, which holds the table) into a buffer,
// with one reused context. No screen can read a table sooner with libzstd.
void BM_ZstdDecodeOfEachCcob(benchmark::State& state) {
  const Registrations& r = registrations();
  struct Frame {
    const char* payload;
    std::size_t size;
    std::size_t uncompressed;
  };
  std::vector<Frame> frames;
  for (const void* wrapper : r.wrappers) {
    if (!compressed_image(wrapper)) continue;
    const char* image = static_cast<const char* const*>(wrapper)[1];
    std::uint16_t version = 0;
    std::memcpy(&version, image + 4, sizeof version);
    if (version != 3) continue;  // clang-22 writes v3: a 32-byte header
    std::uint64_t total = 0, uncompressed = 0;
    std::memcpy(&total, image + 8, sizeof total);
    std::memcpy(&uncompressed, image + 16, sizeof uncompressed);
    frames.push_back({image + 32, total - 32, uncompressed});
  }
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<char> out;
  double decode_ns = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    for (const Frame& frame : frames) {
      out.resize(frame.uncompressed);
      const std::size_t made = ZSTD_decompressDCtx(context.get(), out.data(), out.size(), frame.payload, frame.size);
      if (ZSTD_isError(made)) std::abort();
      benchmark::DoNotOptimize(out.data());
    }
    decode_ns += Nanoseconds(Clock::now() - start).count();
  }
  state.counters["ccobs"] = static_cast<double>(frames.size());
  state.counters["us_per_ccob"] =
      decode_ns / static_cast<double>(state.iterations()) / static_cast<double>(frames.size()) / 1e3;
}
BENCHMARK(BM_ZstdDecodeOfEachCcob)->Unit(benchmark::kMicrosecond);

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

// The first launch after the library loaded (one translation unit's own
// kernel) against resolving every stub (26 units' own kernels have no gfx942
// code: those lookups fail after loading their unit), each in its own fresh
// registry: target ratio <= 1/20.
void BM_FirstLookupAgainstEveryStub(benchmark::State& state) {
  const Registrations& r = registrations();
  double first_ns = 0, every_ns = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto one = registered(r);
    auto all = registered(r);
    state.ResumeTiming();
    auto start = Clock::now();
    if (!one->lookup_function(r.functions[r.first_own].stub, 0)) std::abort();
    auto first_done = Clock::now();
    for (const Registrations::Function& f : r.functions) benchmark::DoNotOptimize(all->lookup_function(f.stub, 0));
    auto every_done = Clock::now();
    state.PauseTiming();
    first_ns += Nanoseconds(first_done - start).count();
    every_ns += Nanoseconds(every_done - first_done).count();
    state.counters["binaries_loaded_first"] = static_cast<double>(one->stats().modules_loaded);
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

BENCHMARK_MAIN();
