// The registry benchmarks of coload_bench (see bench/coload_bench.cpp for
// the whole list): a cold first lookup (fresh registry, dry-run runtime;
// plain and compressed host image), the first verified use of the compressed
// image against decoding and hashing its CCOBs alone, and warm lookups, 1 and
// 16 threads.
#include <benchmark/benchmark.h>
#define OPENSSL_SUPPRESS_DEPRECATED  // MD5_* (ccob/md5_stream.h says why)
#include <openssl/md5.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "coload/config.h"
#include "coload/detail/ordered_pool.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
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

// The first verified use of a host image of many CCOBs (issue 27): a fresh
// registry's first lookup in libbench_compressed.so (128 CCOBs, no marks:
// each CCOB decoded whole and hashed by the decode thread that streams it,
// its gfx90a entry checked and loaded), against the work no check can avoid
// (peer): ZSTD_decompress of every CCOB's payload and MD5_* over its content,
// spread over as many threads as the registry's decode threads. Registering
// and destroying the registry are not timed. speedup >= 0.9 is the target.
struct CcobPayloads {
  std::vector<std::span<const std::byte>> payloads;
  std::vector<std::size_t> sizes;  // decoded
  std::size_t largest = 0;
};

void decode_and_hash(const CcobPayloads& ccobs, std::size_t threads) {
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    std::vector<std::byte> content(ccobs.largest);
    for (std::size_t i; (i = next++) < ccobs.payloads.size();) {
      std::span<const std::byte> payload = ccobs.payloads[i];
      std::size_t n = ZSTD_decompress(content.data(), ccobs.sizes[i], payload.data(), payload.size());
      if (ZSTD_isError(n) || n != ccobs.sizes[i]) std::abort();
      unsigned char digest[MD5_DIGEST_LENGTH];
      MD5_CTX md5;
      MD5_Init(&md5);
      MD5_Update(&md5, content.data(), n);
      MD5_Final(digest, &md5);
      benchmark::DoNotOptimize(digest);
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
}

CcobPayloads payloads_of(const coload::FatBinary& fat) {
  CcobPayloads ccobs;
  for (const coload::BundleInfo& info : fat.bundles()) {
    if (!info.compressed) std::abort();
    ccobs.payloads.push_back(fat.source().bytes().subspan(info.offset + info.compressed->header_size,
                                                          info.size - info.compressed->header_size));
    ccobs.sizes.push_back(info.compressed->uncompressed_size);
    ccobs.largest = std::max(ccobs.largest, ccobs.sizes.back());
  }
  return ccobs;
}

std::vector<std::size_t> every_bundle(const coload::FatBinary& fat) {
  std::vector<std::size_t> indices(fat.bundles().size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

void BM_RegistryFirstUse(benchmark::State& state) {
  const auto& names = kernel_names();
  const std::string file = input("libbench_compressed.so");
  auto fat = coload::FatBinary::open(file);
  if (!fat) std::abort();
  const CcobPayloads ccobs = payloads_of(*fat);
  const std::size_t threads = coload::decode_threads(*fat, every_bundle(*fat), coload::Unbundler::Builtin);
  PairedTimes times;
  for (auto _ : state) {
    state.PauseTiming();
    auto registry = make_registry();
    auto handle = registry->register_file(file);
    if (!handle) std::abort();
    state.ResumeTiming();
    times.coload([&] {
      if (!registry->lookup_kernel(*handle, 0, names.front())) std::abort();
    });
    times.peer([&] { decode_and_hash(ccobs, threads); });
    state.PauseTiming();
    registry.reset();
    state.ResumeTiming();
  }
  times.report(state);
  state.counters["ccobs"] = static_cast<double>(ccobs.payloads.size());
  state.counters["threads"] = static_cast<double>(threads);
}
BENCHMARK(BM_RegistryFirstUse)->Unit(benchmark::kMillisecond)->MinTime(1)->UseRealTime();

// The registry's decode threads alone: choose_in_binary (the pipeline a
// registry's first lookup runs) for gfx90a over the same 128 CCOBs, hash
// verified, the chosen entries kept and taken in order, against the same
// peer. What RegistryFirstUse adds to it is checking and loading the 128
// chosen code objects. speedup >= 0.9 is the target.
void BM_DecodeThreadsFirstCheck(benchmark::State& state) {
  auto fat = coload::FatBinary::open(input("libbench_compressed.so"));
  if (!fat) std::abort();
  const CcobPayloads ccobs = payloads_of(*fat);
  const std::vector<std::size_t> indices = every_bundle(*fat);
  const std::size_t threads = coload::decode_threads(*fat, indices, coload::Unbundler::Builtin);
  const HashSetup hash(HashMode::Verify);
  paired(
      state,
      [&] {
        std::size_t kept = 0;
        coload::choose_in_binary(*fat, indices, gfx90a(), {.stream = hash.options},
                                 [&](std::size_t, coload::Expected<coload::BundleChoice>& choice) {
                                   if (!choice || choice->chosen_bytes().empty() || !choice->streamed() ||
                                       choice->streamed()->hash != coload::StoredHash::Checked) {
                                     std::abort();
                                   }
                                   kept += choice->chosen_bytes().size();
                                   return true;
                                 });
        benchmark::DoNotOptimize(kept);
      },
      [&] { decode_and_hash(ccobs, threads); });
  state.counters["threads"] = static_cast<double>(threads);
}
BENCHMARK(BM_DecodeThreadsFirstCheck)->Unit(benchmark::kMillisecond)->MinTime(1)->UseRealTime();

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
