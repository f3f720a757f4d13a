// kpack'd libraries (docs/loading.md, "kpack'd libraries"): the 128-wrapper
// libbench_plain.so packed as TheRock packs it (tests/support/kpack_split,
// one archive per target, both schemes) against the original, in one run:
//  - a lookup of one kernel in every wrapper for one device, each wrapper
//    registered as a runtime registers it. The targets: kpack_none / hipf and
//    kpack_zstd / hipf_compressed (the same code objects as CCOBs) at most 1;
//  - listing an archive: only its header, its TOC and the frames' size words
//    are read (counter: pages faulted in, against the archive's pages); and a
//    1 GiB set of eight sparse archives (1024 code objects of 128 KiB each,
//    their bytes holes): listing it costs what its TOCs and size words cost.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.h"
#include "coload/config.h"
#include "coload/detail/kpack_archive.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "loaded_wrappers.h"
#include "support/msgpack_writer.h"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

namespace {

using namespace coload_bench;

/// The packed tree of libbench_plain.so for `scheme`, made once per input set.
std::string packed(const std::string& scheme) {
  const std::string root = input("kpack/" + scheme);
  const std::string image = root + "/lib/libbench_plain.so";
  if (!std::filesystem::exists(image)) {
    const std::string command = std::string(COLOAD_BENCH_KPACK_SPLIT) + " --scheme " + scheme + " bench " + root + " " +
                                input("libbench_plain.so") + " lib/libbench_plain.so > /dev/null";
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "%s failed\n", command.c_str());
      std::abort();
    }
  }
  return image;
}

/// A library loaded for the run: its wrappers and one kernel of each.
struct Library {
  std::vector<const void*> wrappers;
  std::vector<std::string> kernels;
};

const Library& library(const std::string& path, const Library* kernels_from = nullptr) {
  static std::vector<std::pair<std::string, std::unique_ptr<Library>>> loaded;
  for (const auto& [name, one] : loaded)
    if (name == path) return *one;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the run
  if (!handle) {
    std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), ::dlerror());
    std::abort();
  }
  auto one = std::make_unique<Library>();
  one->wrappers = coload::testing::loaded_wrappers(path, handle);
  if (kernels_from) {
    one->kernels = kernels_from->kernels;
  } else {
    coload::Registry registry(coload::open_dry_run_runtime({gfx90a()}), coload::Config{});
    for (const void* wrapper : one->wrappers) {
      auto binary = registry.register_wrapper(wrapper);
      auto modules = binary ? registry.modules(*binary, 0) : decltype(registry.modules({}, 0))(binary.error());
      if (!modules || modules->empty() || (*modules)[0]->kernels().empty()) {
        std::fprintf(stderr, "%s: a wrapper without a gfx90a kernel\n", path.c_str());
        std::abort();
      }
      one->kernels.push_back((*modules)[0]->kernels()[0].name);
    }
  }
  loaded.emplace_back(path, std::move(one));
  return *loaded.back().second;
}

// A fresh registry, every wrapper registered, one kernel of each looked up:
// every code object read (or decoded), selected and loaded once.
void BM_EveryWrapperLookup(benchmark::State& state, const char* scheme) {
  const Library& original = library(input("libbench_plain.so"));
  const std::string kind = scheme;
  const Library& image = kind == "hipf"              ? original
                         : kind == "hipf_compressed" ? library(input("libbench_compressed.so"))
                                                     : library(packed(scheme), &original);
  for (auto _ : state) {
    coload::Registry registry(coload::open_dry_run_runtime({gfx90a()}), coload::Config{});
    for (std::size_t i = 0; i < image.wrappers.size(); ++i) {
      auto binary = registry.register_wrapper(image.wrappers[i]);
      auto kernel = binary ? registry.lookup_kernel(*binary, 0, image.kernels[i]) : binary.error();
      if (!kernel) {
        state.SkipWithError(kernel.error().message().c_str());
        return;
      }
    }
  }
  state.counters["wrappers"] = static_cast<double>(image.wrappers.size());
}
BENCHMARK_CAPTURE(BM_EveryWrapperLookup, hipf, "hipf")->Unit(benchmark::kMillisecond)->MinTime(1);
BENCHMARK_CAPTURE(BM_EveryWrapperLookup, hipf_compressed, "hipf_compressed")->Unit(benchmark::kMillisecond)->MinTime(1);
BENCHMARK_CAPTURE(BM_EveryWrapperLookup, kpack_none, "none")->Unit(benchmark::kMillisecond)->MinTime(1);
BENCHMARK_CAPTURE(BM_EveryWrapperLookup, kpack_zstd, "zstd-per-kernel")->Unit(benchmark::kMillisecond)->MinTime(1);

long faults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

// Opening the gfx90a archive and listing every entry's stored range, as
// `coload ls` does: header, TOC, frame size words; no code object is read.
void BM_ListArchive(benchmark::State& state, const char* scheme) {
  packed(scheme);
  const std::string archive = input(std::string("kpack/") + scheme + "/.kpack/bench_gfx90a.kpack");
  long faulted = 0;
  std::size_t entries = 0;
  for (auto _ : state) {
    const long before = faults();
    auto binary = coload::FatBinary::open(archive);
    if (!binary) {
      state.SkipWithError(binary.error().message().c_str());
      return;
    }
    entries = 0;
    for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
      for (const auto& member : binary->kpack_members(i)->members) {
        auto stored = member.file->archive->stored(member.toc());
        benchmark::DoNotOptimize(stored);
        ++entries;
      }
    }
    faulted += faults() - before;
  }
  state.counters["entries"] = static_cast<double>(entries);
  state.counters["faults_per_listing"] = static_cast<double>(faulted) / static_cast<double>(state.iterations());
  state.counters["archive_pages"] = static_cast<double>(std::filesystem::file_size(archive) / 4096);
}
/// Eight 128 MiB archives of 1024 entries each, their code objects holes of
/// a sparse file: what listing a 1 GiB-class set reads, without the disk.
std::vector<std::string> large_set(bool zstd) {
  constexpr std::uint32_t kEntries = 1024;
  constexpr std::uint64_t kObject = 128 * 1024;
  const std::string dir = input(zstd ? "kpack/large_zstd" : "kpack/large_none");
  std::vector<std::string> paths;
  std::filesystem::create_directories(dir);
  for (int a = 0; a < 8; ++a) {
    const std::string target = "gfx90" + std::to_string(a);
    const std::string path = dir + "/large_" + target + ".kpack";
    paths.push_back(path);
    if (std::filesystem::exists(path)) continue;
    const std::uint64_t data = zstd ? 4 + kEntries * (4 + kObject) : kEntries * kObject;
    coload::testing::msgpack::Writer toc;
    toc.map(zstd ? 8 : 7)
        .str("format_version")
        .uint(1)
        .str("group_name")
        .str("large")
        .str("gfx_arch_family")
        .str(target);
    toc.str("gfx_arches").array(1).str(target).str("toc").map16(kEntries);
    for (std::uint32_t i = 0; i < kEntries; ++i) {
      toc.str("large/lib/libbig.so#" + std::to_string(i)).map(1).str(target).map(3);
      toc.str("type").str("hsaco").str("ordinal").uint(i).str("original_size").uint(kObject);
    }
    toc.str("compression_scheme").str(zstd ? "zstd-per-kernel" : "none");
    if (zstd) {
      toc.str("zstd_offset").uint(64).str("zstd_size").uint(data);
    } else {
      toc.str("blobs").array16(kEntries);
      for (std::uint32_t i = 0; i < kEntries; ++i)
        toc.map(2).str("offset").uint(64 + i * kObject).str("size").uint(kObject);
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    auto put = [&](std::uint64_t at, const void* bytes, std::size_t size) {
      if (::pwrite(fd, bytes, size, static_cast<off_t>(at)) != static_cast<ssize_t>(size)) std::abort();
    };
    unsigned char header[16] = {'K', 'P', 'A', 'K', 1, 0, 0, 0};
    const std::uint64_t toc_offset = 64 + data;
    std::memcpy(header + 8, &toc_offset, 8);
    put(0, header, sizeof header);
    if (zstd) {  // the frame count and each frame's size word; the frames are holes
      put(64, &kEntries, 4);
      const std::uint32_t size = kObject;
      for (std::uint32_t i = 0; i < kEntries; ++i) put(68 + i * (4 + kObject), &size, 4);
    }
    put(toc_offset, toc.bytes().data(), toc.bytes().size());
    ::close(fd);
  }
  return paths;
}

// Listing the 1 GiB-class set: every archive opened, every entry's stored range.
void BM_ListLargeSet(benchmark::State& state, bool zstd) {
  const std::vector<std::string> paths = large_set(zstd);
  long faulted = 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    const long before = faults();
    bytes = 0;
    for (const std::string& path : paths) {
      auto binary = coload::FatBinary::open(path);
      if (!binary) {
        state.SkipWithError(binary.error().message().c_str());
        return;
      }
      bytes += binary->source().bytes().size();
      for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
        for (const auto& member : binary->kpack_members(i)->members) {
          auto stored = member.file->archive->stored(member.toc());
          benchmark::DoNotOptimize(stored);
        }
      }
    }
    faulted += faults() - before;
  }
  state.counters["GiB"] = static_cast<double>(bytes) / (1u << 30);
  state.counters["faults_per_listing"] = static_cast<double>(faulted) / static_cast<double>(state.iterations());
}
// The first lookup of one wrapper of the zstd set's image, in a fresh
// process state: the heap it leaves in use (mallinfo2) against the one code
// object decoded and the TOC read. Counters: heap_kib, code_object_kib, toc_kib.
void BM_FirstLookupMemory(benchmark::State& state) {
  const std::string image = packed("zstd-per-kernel");
  const std::string archive = input("kpack/zstd-per-kernel/.kpack/bench_gfx90a.kpack");
  double heap = 0, object = 0;
  for (auto _ : state) {
    const std::size_t before = ::mallinfo2().uordblks;
    auto binary = coload::FatBinary::open_kpack_wrapper(image, 0, "wrapper 0");
    if (!binary) {
      state.SkipWithError(binary.error().message().c_str());
      return;
    }
    std::vector<std::size_t> first{0};
    coload::choose_in_binary(*binary, first, gfx90a(), {.threads = 1},
                             [&](std::size_t, coload::Expected<coload::BundleChoice>& choice) {
                               object = choice ? static_cast<double>(choice->chosen_bytes().size()) : 0;
                               heap = static_cast<double>(::mallinfo2().uordblks - before);
                               return true;
                             });
  }
  auto toc = coload::FatBinary::open(archive);
  state.counters["heap_kib"] = heap / 1024;
  state.counters["code_object_kib"] = object / 1024;
  state.counters["toc_kib"] = toc ? static_cast<double>(toc->source().bytes().size() -
                                                        toc->kpack_members(0)->members[0].file->archive->toc_offset()) /
                                        1024
                                  : 0;
}
BENCHMARK(BM_FirstLookupMemory)->Unit(benchmark::kMicrosecond)->Iterations(20);

BENCHMARK_CAPTURE(BM_ListLargeSet, none, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ListLargeSet, zstd, true)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_ListArchive, none, "none")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ListArchive, zstd, "zstd-per-kernel")->Unit(benchmark::kMicrosecond);

}  // namespace
