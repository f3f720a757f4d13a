// The registry benchmarks of coload_bench (see bench/coload_bench.cpp for
// the whole list): a cold first lookup (fresh registry, dry-run runtime;
// plain and compressed host image) and warm lookups, 1 and 16 threads.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"

namespace {

using namespace coload_bench;

// ---------------------------------------------------------------------------
// Registry over the dry-run runtime (one gfx90a device), host image plain.

// decode_threads 0: the registry's default (hardware concurrency, at most 8).
std::unique_ptr<coload::Registry> make_registry(std::size_t decode_threads = 0, const std::string& marks = {}) {
  std::shared_ptr<coload::Runtime> runtime = coload::open_dry_run_runtime({gfx90a()});
  coload::Config config;
  config.verified_cache = marks;
  return std::make_unique<coload::Registry>(std::move(runtime), config,
                                            coload::RegistryOptions{.decode_threads = decode_threads});
}

// Kernel names of the host image (from a registry loaded once).
const std::vector<std::string>& kernel_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    auto registry = make_registry();
    auto handle = registry->register_file(input("libbench_plain.so"));
    if (!handle) std::abort();
    auto modules = registry->modules(*handle, 0);
    if (!modules) {
      std::fprintf(stderr, "%s\n", modules.error().message().c_str());
      std::abort();
    }
    for (const coload::LoadedModule* m : *modules)
      for (const coload::LoadedKernel& k : m->kernels()) out.push_back(k.name);
    return out;
  }();
  return names;
}

// Cold: a fresh registry, register, then THREADS threads ask for a different
// kernel at once; the time is until every thread has its answer (one of them
// loads all 128 bundles; the others wait for that load).
void BM_RegistryCold(benchmark::State& state, const char* file) {
  const int threads = static_cast<int>(state.range(0));
  const auto& names = kernel_names();
  const HashSetup hash(state.range(2) ? HashMode::Marked : HashMode::Verify);
  if (state.range(2)) {  // untimed: the first process's lookup, which checks and marks
    auto registry = make_registry(1, hash.options.read.verified_cache);
    auto handle = registry->register_file(input(file));
    if (!handle || !registry->lookup_kernel(*handle, 0, names.front())) std::abort();
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto registry = make_registry(static_cast<std::size_t>(state.range(1)), hash.options.read.verified_cache);
    auto handle = registry->register_file(input(file));
    if (!handle) std::abort();
    state.ResumeTiming();
    if (threads == 1) {
      auto k = registry->lookup_kernel(*handle, 0, names.front());
      if (!k) std::abort();
    } else {
      std::vector<std::thread> pool;
      std::atomic<int> failures{0};
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          if (!registry->lookup_kernel(*handle, 0, names[(t * 97) % names.size()])) ++failures;
        });
      for (auto& th : pool) th.join();
      if (failures) std::abort();
    }
    state.PauseTiming();
    registry.reset();
    state.ResumeTiming();
  }
  state.counters["kernels_in_image"] = static_cast<double>(names.size());
}
// Args: threads asking at once, decode_threads (0: the registry's default),
// and whether CCOBs carry marks from an earlier check (a verified cache).
BENCHMARK_CAPTURE(BM_RegistryCold, plain, "libbench_plain.so")
    ->Args({1, 1, 0})
    ->Args({1, 0, 0})
    ->Args({16, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();
// The compressed image: each of the 128 CCOBs streamed once (verified, or
// trusted from its mark), only the gfx90a entry kept; on one decode thread,
// then on the default number.
BENCHMARK_CAPTURE(BM_RegistryCold, compressed, "libbench_compressed.so")
    ->Args({1, 1, 0})
    ->Args({1, 0, 0})
    ->Args({1, 1, 1})
    ->Args({1, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

// Warm: the pair is loaded; each lookup is for another kernel name (all 768
// in turn), from 1 or 16 threads sharing one registry.
struct Warm {
  std::unique_ptr<coload::Registry> registry;
  coload::BinaryHandle handle;
};
Warm& warm() {
  static Warm w = [] {
    Warm x{make_registry(), {}};
    auto handle = x.registry->register_file(input("libbench_plain.so"));
    if (!handle) std::abort();
    x.handle = *handle;
    if (!x.registry->lookup_kernel(x.handle, 0, kernel_names().front())) std::abort();
    return x;
  }();
  return w;
}
void BM_RegistryWarm(benchmark::State& state) {
  const auto& names = kernel_names();
  Warm& w = warm();
  std::size_t i = static_cast<std::size_t>(state.thread_index()) * 131;
  for (auto _ : state) {
    auto k = w.registry->lookup_kernel(w.handle, 0, names[i++ % names.size()]);
    benchmark::DoNotOptimize(k);
  }
  state.counters["lookups_per_s_per_thread"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RegistryWarm)->Threads(1)->Threads(16)->MinTime(0.2)->UseRealTime();

}  // namespace
