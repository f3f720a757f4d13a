// coload's benchmarks, each paired with a peer measured in the same process
// and the same iteration (the two run back to back, so machine noise hits
// both alike). Every paired benchmark reports:
//   coload_us  mean time of coload's side per iteration
//   peer_us    mean time of the peer's side per iteration
//   speedup    peer_us / coload_us (> 1: coload is faster)
// Inputs come from bench/generate_inputs.sh; the directory is the first of
// $COLOAD_BENCH_INPUTS and the build's bench/inputs.
//
// Benchmarks:
//   HostExtract/*     open a 128-bundle host image, select gfx90a in every
//                     bundle and take the chosen entry (CCOBs streamed, hash
//                     verified, verified earlier (a mark in a verified cache
//                     warmed before timing) or skipped): coload vs LLVM 22's
//                     llvm::object::extractOffloadBundleFatBinary
//   Decompress        read_bundle (zstd + MD5 verify + table parse) of the
//                     large CCOB vs ZSTD_decompress of its payload into a
//                     preallocated buffer (the limit)
//   StreamSelect/*    select_in_compressed_bundle (gfx90a; gfx1030, whose entry
//                     comes first) of the large CCOB, Verify (whole stream +
//                     MD5), Verify with a mark from an earlier check (the
//                     xxh3 of the CCOB, then as Skip) and Skip (stop once the
//                     choice is final), vs ZSTD_decompress of its payload
//   Metadata/*        CodeObject::read (ELF + msgpack metadata + descriptor
//                     checks) vs comgr 5.2.3 amd_comgr_get_data_metadata plus
//                     a walk of every node; per-kernel counters
//   Registry*         cold first lookup (fresh registry, dry-run runtime;
//                     plain and compressed host image), the first verified
//                     use of the compressed image vs decoding and hashing its
//                     CCOBs alone on as many threads (RegistryFirstUse), and
//                     warm lookups, 1 and 16 threads (absolute; target < 1 us)
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#define OPENSSL_SUPPRESS_DEPRECATED  // MD5_* (ccob/md5_stream.h says why)
#include <openssl/md5.h>
#include <stdlib.h>
#include <zstd.h>

#include <amd_comgr.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "coload/code_object.h"
#include "coload/config.h"
#include "coload/detail/stream_select.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "coload/select.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Object/OffloadBundle.h"
#include "llvm/Support/MemoryBuffer.h"

namespace {

using namespace coload_bench;

constexpr const char* kEntryId = "hipv4-amdgcn-amd-amdhsa--gfx90a";

// ---------------------------------------------------------------------------
// HostExtract: every bundle of a host image, the gfx90a entry of each.

// coload: open (map + locate), then select in every bundle: a plain bundle
// read in place (one Selector and one reused Selection for the image), a CCOB streamed
// (select_in_compressed_bundle, `hash` mode), keeping only the chosen entry.
// Returns the bytes chosen, summed, so nothing is optimised away.
std::uint64_t coload_extract_all(const std::string& path, const coload::StreamOptions& stream) {
  auto fat = coload::FatBinary::open(path);
  if (!fat) {
    std::fprintf(stderr, "%s\n", fat.error().message().c_str());
    std::abort();
  }
  std::uint64_t total = 0;
  const coload::Selector selector(gfx90a());
  coload::Selection selection;  // reused bundle after bundle, as the CLI does
  for (std::size_t i = 0; i < fat->bundles().size(); ++i) {
    const coload::BundleInfo& info = fat->bundles()[i];
    if (info.format == coload::BundleFormat::Compressed) {
      auto streamed = coload::select_in_compressed_bundle(gfx90a(), fat->source().bytes(), info, {}, stream);
      if (!streamed || !streamed->selection.chosen()) std::abort();
      benchmark::DoNotOptimize(streamed->chosen.data());
      total += streamed->chosen.size();
      continue;
    }
    auto bundle = fat->read(i);
    if (!bundle) std::abort();
    if (!selector.select(*bundle, selection)) std::abort();
    const coload::Candidate* chosen = selection.chosen();
    if (!chosen) std::abort();
    std::span<const std::byte> bytes = bundle->entries()[chosen->entry_index].bytes;
    benchmark::DoNotOptimize(bytes.data());
    total += bytes.size();
  }
  return total;
}

// LLVM 22: ObjectFile over the mapped file, extractOffloadBundleFatBinary,
// then the entry whose ID is exactly gfx90a's (the API has no compatibility
// rules), its bytes taken from the file (plain) or the decompressed buffer.
// Returns the bytes found, summed; 0 bundles when the API finds none.
struct LlvmResult {
  std::uint64_t bytes = 0;
  std::size_t bundles = 0;
  std::string error;
};
LlvmResult llvm_extract_all(const std::string& path) {
  LlvmResult result;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    result.error = buffer.getError().message();
    return result;
  }
  auto object = llvm::object::ObjectFile::createObjectFile((*buffer)->getMemBufferRef());
  if (!object) {
    result.error = llvm::toString(object.takeError());
    return result;
  }
  llvm::SmallVector<llvm::object::OffloadBundleFatBin> bundles;
  if (llvm::Error error = llvm::object::extractOffloadBundleFatBinary(**object, bundles)) {
    result.error = llvm::toString(std::move(error));
    return result;
  }
  result.bundles = bundles.size();
  llvm::StringRef file = (*buffer)->getBuffer();
  for (auto& bundle : bundles) {
    for (const auto& entry : bundle.getEntries()) {
      if (entry.ID != kEntryId) continue;
      llvm::StringRef from =
          bundle.isDecompressed() && bundle.DecompressedBuffer ? bundle.DecompressedBuffer->getBuffer() : file;
      if (entry.Offset + entry.Size > from.size()) {
        result.error = "entry outside its buffer";
        return result;
      }
      llvm::StringRef bytes = from.substr(entry.Offset, entry.Size);
      benchmark::DoNotOptimize(bytes.data());
      result.bytes += bytes.size();
      break;
    }
  }
  return result;
}

// LLVM never checks a CCOB's stored hash (docs/format.md, "Compressed bundle"),
// so coload's Skip mode is the like-for-like comparison; Verify adds the MD5.
void BM_HostExtract(benchmark::State& state, const char* file, HashMode mode) {
  const std::string path = input(file);
  const HashSetup hash(mode);
  const std::uint64_t want = coload_extract_all(path, hash.options);  // also leaves the marks
  const LlvmResult check = llvm_extract_all(path);
  state.counters["bundles_llvm_found"] = static_cast<double>(check.bundles);
  state.counters["bytes_coload"] = static_cast<double>(want);
  state.counters["bytes_llvm"] = static_cast<double>(check.bytes);
  if (!check.error.empty())
    state.SetLabel("llvm: " + check.error);
  else if (check.bytes != want)
    state.SetLabel("llvm found a different number of bytes than coload");
  paired(
      state, [&] { benchmark::DoNotOptimize(coload_extract_all(path, hash.options)); },
      [&] { benchmark::DoNotOptimize(llvm_extract_all(path).bytes); });
}
BENCHMARK_CAPTURE(BM_HostExtract, plain, "libbench_plain.so", HashMode::Verify)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(BM_HostExtract, compressed_verify, "libbench_compressed.so", HashMode::Verify)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(BM_HostExtract, compressed_verify_marked, "libbench_compressed.so", HashMode::Marked)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(BM_HostExtract, compressed_skip, "libbench_compressed.so", HashMode::Skip)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

// ---------------------------------------------------------------------------
// The large CCOB and the peer both of its benchmarks run: raw zstd of its
// payload into a buffer allocated once (the limit).

struct LargeCcob {
  LargeCcob() = default;
  LargeCcob(const LargeCcob&) = delete;  // `fat` views `file`
  LargeCcob& operator=(const LargeCcob&) = delete;

  std::vector<std::byte> file = read_file(input("large.ccob"));
  coload::FatBinary fat = open(file);
  coload::BundleInfo info = fat.bundles()[0];
  coload::CompressedHeader header = *info.compressed;
  std::span<const std::byte> payload =
      std::span<const std::byte>(file).subspan(header.header_size, info.size - header.header_size);
  std::vector<std::byte> out = std::vector<std::byte>(header.uncompressed_size);

  static coload::FatBinary open(std::span<const std::byte> bytes) {
    auto fat = coload::FatBinary::from_memory(bytes, "large.ccob");
    if (!fat || fat->bundles().size() != 1 || !fat->bundles()[0].compressed ||
        fat->bundles()[0].compressed->method != coload::Compression::Zstd) {
      std::abort();
    }
    return std::move(*fat);
  }

  void zstd_decompress() {
    std::size_t n = ZSTD_decompress(out.data(), out.size(), payload.data(), payload.size());
    if (ZSTD_isError(n) || n != out.size()) std::abort();
    benchmark::DoNotOptimize(out.data());
  }
};

// Decompress: coload's whole read (read_bundle: zstd + MD5 + table) vs zstd;
// Marked: the CCOB marked as checked (untimed first read), so no MD5.
void BM_Decompress(benchmark::State& state, HashMode mode) {
  LargeCcob ccob;
  const HashSetup hash(mode);
  const coload::ReadOptions& options = hash.options.read;
  if (!coload::read_bundle(ccob.fat.source().bytes(), ccob.info, options)) std::abort();
  paired(
      state,
      [&] {
        auto bundle = coload::read_bundle(ccob.fat.source().bytes(), ccob.info, options);
        if (!bundle) std::abort();
        benchmark::DoNotOptimize(bundle->uncompressed().data());
      },
      [&] { ccob.zstd_decompress(); });
  // What verification alone costs: libcrypto's MD5 (what coload uses) over
  // the decompressed bytes, outside the timed loop.
  auto m0 = Clock::now();
  constexpr int kMd5Runs = 5;
  for (int r = 0; r < kMd5Runs; ++r) {
    MD5_CTX md5;
    MD5_Init(&md5);
    MD5_Update(&md5, ccob.out.data(), ccob.out.size());
    unsigned char digest[MD5_DIGEST_LENGTH];
    MD5_Final(digest, &md5);
    benchmark::DoNotOptimize(digest);
  }
  state.counters["md5_us"] = std::chrono::duration<double, std::micro>(Clock::now() - m0).count() / kMd5Runs;
  state.counters["ratio_vs_zstd_plus_md5"] =
      (state.counters["peer_us"] + state.counters["md5_us"]) / state.counters["coload_us"];
  const double bytes = static_cast<double>(ccob.header.uncompressed_size);
  state.counters["uncompressed_MiB"] = bytes / (1 << 20);
  state.counters["compressed_MiB"] = static_cast<double>(ccob.payload.size()) / (1 << 20);
  state.counters["coload_MiB_per_s"] = bytes / (1 << 20) / (state.counters["coload_us"] / 1e6);
  state.counters["zstd_MiB_per_s"] = bytes / (1 << 20) / (state.counters["peer_us"] / 1e6);
  // Throughput ratio coload / zstd (target >= 0.8): the same as speedup.
  state.counters["ratio_vs_zstd"] = state.counters["speedup"];
}
BENCHMARK_CAPTURE(BM_Decompress, verify, HashMode::Verify)->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_Decompress, marked, HashMode::Marked)->Unit(benchmark::kMillisecond)->MinTime(0.5);

// ---------------------------------------------------------------------------
// StreamSelect: the large CCOB, select_in_compressed_bundle vs raw zstd.

// `spec` names the device: gfx90a's entry is the second to last in offset
// order, gfx1030's the first (Skip stops after it: the other entries' IDs
// rule them out).
void BM_StreamSelect(benchmark::State& state, HashMode mode, const char* spec) {
  LargeCcob ccob;
  auto device = coload::device_from_spec(spec);
  if (!device) std::abort();
  const HashSetup hash(mode);
  // Untimed: the mark a Marked run trusts.
  if (!coload::select_in_compressed_bundle(*device, ccob.fat.source().bytes(), ccob.info, {}, hash.options))
    std::abort();
  std::uint64_t decoded = 0, chosen = 0;
  paired(
      state,
      [&] {
        auto result =
            coload::select_in_compressed_bundle(*device, ccob.fat.source().bytes(), ccob.info, {}, hash.options);
        if (!result || result->chosen.empty()) std::abort();
        if (mode == HashMode::Marked && result->hash != coload::StreamSelection::Hash::CheckedEarlier) std::abort();
        decoded = result->decoded_bytes;
        chosen = result->chosen.size();
        benchmark::DoNotOptimize(result->chosen.data());
      },
      [&] { ccob.zstd_decompress(); });
  const double bytes = static_cast<double>(ccob.header.uncompressed_size);
  state.counters["uncompressed_MiB"] = bytes / (1 << 20);
  state.counters["decoded_MiB"] = static_cast<double>(decoded) / (1 << 20);
  state.counters["chosen_MiB"] = static_cast<double>(chosen) / (1 << 20);
  // Throughput over the whole bundle (what the caller asked about), coload / zstd; target >= 0.8.
  state.counters["ratio_vs_zstd"] = state.counters["speedup"];
}
BENCHMARK_CAPTURE(BM_StreamSelect, verify, HashMode::Verify, "gfx90a")->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_StreamSelect, verify_marked, HashMode::Marked, "gfx90a")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(BM_StreamSelect, verify_marked_gfx1030, HashMode::Marked, "gfx1030")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(BM_StreamSelect, skip, HashMode::Skip, "gfx90a")->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_StreamSelect, skip_gfx1030, HashMode::Skip, "gfx1030")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

// ---------------------------------------------------------------------------
// Metadata: CodeObject::read vs comgr's metadata tree, walked in full.

struct Comgr {
  decltype(&amd_comgr_create_data) create_data = nullptr;
  decltype(&amd_comgr_set_data) set_data = nullptr;
  decltype(&amd_comgr_release_data) release_data = nullptr;
  decltype(&amd_comgr_get_data_metadata) get_data_metadata = nullptr;
  decltype(&amd_comgr_destroy_metadata) destroy_metadata = nullptr;
  decltype(&amd_comgr_get_metadata_kind) get_kind = nullptr;
  decltype(&amd_comgr_get_metadata_string) get_string = nullptr;
  decltype(&amd_comgr_iterate_map_metadata) iterate_map = nullptr;
  decltype(&amd_comgr_get_metadata_list_size) list_size = nullptr;
  decltype(&amd_comgr_index_list_metadata) index_list = nullptr;
  std::string error;

  static const Comgr& get() {
    static const Comgr comgr = [] {
      Comgr c;
      void* lib = dlopen("libamd_comgr.so.2", RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        c.error = dlerror();
        return c;
      }
      auto sym = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
        if (!fn && c.error.empty()) c.error = std::string("missing ") + name;
      };
      sym(c.create_data, "amd_comgr_create_data");
      sym(c.set_data, "amd_comgr_set_data");
      sym(c.release_data, "amd_comgr_release_data");
      sym(c.get_data_metadata, "amd_comgr_get_data_metadata");
      sym(c.destroy_metadata, "amd_comgr_destroy_metadata");
      sym(c.get_kind, "amd_comgr_get_metadata_kind");
      sym(c.get_string, "amd_comgr_get_metadata_string");
      sym(c.iterate_map, "amd_comgr_iterate_map_metadata");
      sym(c.list_size, "amd_comgr_get_metadata_list_size");
      sym(c.index_list, "amd_comgr_index_list_metadata");
      return c;
    }();
    return comgr;
  }

  // Visits every node, copying every string (what a loader reading the
  // metadata does); returns the number of nodes.
  std::size_t walk(amd_comgr_metadata_node_t node) const {
    amd_comgr_metadata_kind_t kind;
    if (get_kind(node, &kind) != AMD_COMGR_STATUS_SUCCESS) return 0;
    std::size_t nodes = 1;
    switch (kind) {
      case AMD_COMGR_METADATA_KIND_STRING: {
        char text[256];
        std::size_t size = 0;
        get_string(node, &size, nullptr);
        if (size <= sizeof text) get_string(node, &size, text);
        benchmark::DoNotOptimize(text);
        break;
      }
      case AMD_COMGR_METADATA_KIND_MAP: {
        struct Ctx {
          const Comgr* self;
          std::size_t nodes;
        } ctx{this, 0};
        iterate_map(
            node,
            [](amd_comgr_metadata_node_t key, amd_comgr_metadata_node_t value, void* user) {
              auto* c = static_cast<Ctx*>(user);
              c->nodes += c->self->walk(key) + c->self->walk(value);
              return AMD_COMGR_STATUS_SUCCESS;
            },
            &ctx);
        nodes += ctx.nodes;
        break;
      }
      case AMD_COMGR_METADATA_KIND_LIST: {
        std::size_t n = 0;
        list_size(node, &n);
        for (std::size_t i = 0; i < n; ++i) {
          amd_comgr_metadata_node_t child;
          if (index_list(node, i, &child) != AMD_COMGR_STATUS_SUCCESS) break;
          nodes += walk(child);
          destroy_metadata(child);
        }
        break;
      }
      default: break;
    }
    return nodes;
  }

  // Data object, metadata, walk, release: what a comgr user does per object.
  // Returns the node count, 0 on failure (status in *status).
  std::size_t read(std::span<const std::byte> bytes, amd_comgr_status_t* status) const {
    amd_comgr_data_t data;
    *status = create_data(AMD_COMGR_DATA_KIND_EXECUTABLE, &data);
    if (*status != AMD_COMGR_STATUS_SUCCESS) return 0;
    std::size_t nodes = 0;
    *status = set_data(data, bytes.size(), reinterpret_cast<const char*>(bytes.data()));
    if (*status == AMD_COMGR_STATUS_SUCCESS) {
      amd_comgr_metadata_node_t root;
      *status = get_data_metadata(data, &root);
      if (*status == AMD_COMGR_STATUS_SUCCESS) {
        nodes = walk(root);
        destroy_metadata(root);
      }
    }
    release_data(data);
    return nodes;
  }
};

void BM_Metadata(benchmark::State& state, const char* file) {
  const std::vector<std::byte> bytes = read_file(input(file));
  auto object = coload::CodeObject::read(bytes);
  if (!object) {
    state.SkipWithError(object.error().message().c_str());
    return;
  }
  const Comgr& comgr = Comgr::get();
  if (!comgr.error.empty()) {
    state.SkipWithError(("comgr: " + comgr.error).c_str());
    return;
  }
  amd_comgr_status_t status;
  const std::size_t nodes = comgr.read(bytes, &status);
  if (nodes == 0) {
    state.SkipWithError(("comgr amd_comgr_get_data_metadata status " + std::to_string(status)).c_str());
    return;
  }
  const double kernels = static_cast<double>(object->kernels().size());
  paired(
      state,
      [&] {
        auto o = coload::CodeObject::read(bytes);
        if (!o) std::abort();
        benchmark::DoNotOptimize(o->kernels().data());
      },
      [&] {
        amd_comgr_status_t s;
        benchmark::DoNotOptimize(comgr.read(bytes, &s));
      });
  state.counters["kernels"] = kernels;
  state.counters["comgr_nodes"] = static_cast<double>(nodes);
  state.counters["problems"] = static_cast<double>(object->problems().size());
  state.counters["coload_ns_per_kernel"] = state.counters["coload_us"] * 1e3 / kernels;
  state.counters["comgr_ns_per_kernel"] = state.counters["peer_us"] * 1e3 / kernels;
}
BENCHMARK_CAPTURE(BM_Metadata, large_1024_kernels, "co/large-gfx90a-cov4.co")
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(BM_Metadata, tu_6_kernels, "co/tu_000-gfx90a-cov4.co")->Unit(benchmark::kMicrosecond)->MinTime(0.5);

}  // namespace

BENCHMARK_MAIN();
