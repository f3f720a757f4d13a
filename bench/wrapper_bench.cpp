// Registering a host image the way a HIP runtime does, one
// __hip_fatbin_wrapper at a time (docs/embedding.md), against registering it
// whole: the cost per wrapper (mapping lookup and header measurement; no
// entry is read), and the time from registering every wrapper of the
// 128-bundle image to the first lookup of one kernel, which reads only that
// kernel's bundle.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.h"
#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "loaded_wrappers.h"

namespace {

using namespace coload_bench;

std::unique_ptr<coload::Registry> dry_run_registry() {
  return std::make_unique<coload::Registry>(coload::open_dry_run_runtime({gfx90a()}), coload::Config{});
}

/// A host image loaded once for the whole run, its wrappers, and a kernel of bundle 0.
struct LoadedImage {
  std::string path;
  std::vector<const void*> wrappers;
  std::string kernel;  // a kernel of the bundle wrappers[0] points at
};

const LoadedImage& loaded(const char* file) {
  static std::vector<std::unique_ptr<LoadedImage>> images;
  for (const auto& image : images)
    if (image->path == input(file)) return *image;
  auto image = std::make_unique<LoadedImage>();
  image->path = input(file);
  void* handle = ::dlopen(image->path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the run
  if (!handle) {
    std::fprintf(stderr, "dlopen %s: %s\n", image->path.c_str(), ::dlerror());
    std::abort();
  }
  image->wrappers = coload::testing::loaded_wrappers(image->path, handle);
  auto registry = dry_run_registry();
  auto binary = registry->register_wrapper(image->wrappers.at(0));
  auto modules = binary ? registry->modules(*binary, 0) : decltype(registry->modules({}, 0))(binary.error());
  if (!modules || modules->empty() || (*modules)[0]->kernels().empty()) {
    std::fprintf(stderr, "%s: no kernel in bundle 0 for gfx90a\n", image->path.c_str());
    std::abort();
  }
  image->kernel = (*modules)[0]->kernels()[0].name;
  images.push_back(std::move(image));
  return *images.back();
}

// Registering every wrapper (then unregistering them, outside nothing: both
// are what a library's constructors and destructors cost).
void BM_RegisterEveryWrapper(benchmark::State& state, const char* file) {
  const LoadedImage& image = loaded(file);
  auto registry = dry_run_registry();
  std::vector<coload::BinaryHandle> binaries(image.wrappers.size());
  for (auto _ : state) {
    for (std::size_t i = 0; i < image.wrappers.size(); ++i)
      binaries[i] = *registry->register_wrapper(image.wrappers[i]);
    for (coload::BinaryHandle binary : binaries) (void)registry->unregister(binary);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * image.wrappers.size()));
  state.counters["wrappers"] = static_cast<double>(image.wrappers.size());
}
BENCHMARK_CAPTURE(BM_RegisterEveryWrapper, plain, "libbench_plain.so")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RegisterEveryWrapper, compressed, "libbench_compressed.so")->Unit(benchmark::kMicrosecond);

// A fresh registry, every wrapper registered, then the first lookup of a
// kernel of bundle 0: one bundle read, selected and loaded.
void BM_WrappersToFirstLookup(benchmark::State& state, const char* file) {
  const LoadedImage& image = loaded(file);
  for (auto _ : state) {
    auto registry = dry_run_registry();
    std::vector<coload::BinaryHandle> binaries;
    for (const void* wrapper : image.wrappers) binaries.push_back(*registry->register_wrapper(wrapper));
    auto kernel = registry->lookup_kernel(binaries[0], 0, image.kernel);
    if (!kernel) state.SkipWithError(kernel.error().message().c_str());
    benchmark::DoNotOptimize(kernel);
  }
}
BENCHMARK_CAPTURE(BM_WrappersToFirstLookup, plain, "libbench_plain.so")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WrappersToFirstLookup, compressed, "libbench_compressed.so")->Unit(benchmark::kMillisecond);

// The same image registered whole: the first lookup reads all 128 bundles.
void BM_WholeImageToFirstLookup(benchmark::State& state, const char* file) {
  const LoadedImage& image = loaded(file);
  for (auto _ : state) {
    auto registry = dry_run_registry();
    auto binary = registry->register_file(image.path);
    auto kernel = binary ? registry->lookup_kernel(*binary, 0, image.kernel) : binary.error();
    if (!kernel) state.SkipWithError(kernel.error().message().c_str());
    benchmark::DoNotOptimize(kernel);
  }
}
BENCHMARK_CAPTURE(BM_WholeImageToFirstLookup, plain, "libbench_plain.so")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WholeImageToFirstLookup, compressed, "libbench_compressed.so")->Unit(benchmark::kMillisecond);

}  // namespace

namespace {

// Warm lookups of one kernel, loaded before the loop: by name in its binary
// (lookup_kernel) and by its host stub (lookup_function: the stub's record,
// then the same path).
struct WarmStub {
  std::unique_ptr<coload::Registry> registry = dry_run_registry();
  coload::BinaryHandle binary;
  char stub = 0;
  explicit WarmStub(const LoadedImage& image) {
    binary = *registry->register_wrapper(image.wrappers[0]);
    if (!registry->register_function(binary, &stub, image.kernel) || !registry->lookup_function(&stub, 0)) std::abort();
  }
};

void BM_WarmLookupKernel(benchmark::State& state) {
  const LoadedImage& image = loaded("libbench_plain.so");
  WarmStub warm(image);
  for (auto _ : state) benchmark::DoNotOptimize(warm.registry->lookup_kernel(warm.binary, 0, image.kernel));
}
BENCHMARK(BM_WarmLookupKernel);

void BM_WarmLookupFunction(benchmark::State& state) {
  const LoadedImage& image = loaded("libbench_plain.so");
  WarmStub warm(image);
  for (auto _ : state) benchmark::DoNotOptimize(warm.registry->lookup_function(&warm.stub, 0));
}
BENCHMARK(BM_WarmLookupFunction);

}  // namespace
