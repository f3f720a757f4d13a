// Helpers the benchmark files share (bench/coload_bench.cpp,
// bench/registry_bench.cpp): where the inputs are, the paired timing of
// coload and its peer, the gfx90a device, and how a benchmark treats CCOB
// hashes.
#pragma once

#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "coload/detail/stream_select.h"
#include "coload/device.h"

namespace coload_bench {

using Clock = std::chrono::steady_clock;

inline std::string inputs_dir() {
  if (const char* dir = std::getenv("COLOAD_BENCH_INPUTS"); dir && *dir) return dir;
  return COLOAD_BENCH_INPUTS;
}
inline std::string input(const std::string& name) { return inputs_dir() + "/" + name; }

inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// The two sides' times over a benchmark's iterations, reported as
// coload_us, peer_us and speedup.
class PairedTimes {
 public:
  template <class Side>
  void coload(Side&& side) {
    coload_ns_ += time(side);
  }
  template <class Side>
  void peer(Side&& side) {
    peer_ns_ += time(side);
  }
  void report(benchmark::State& state) const {
    double n = static_cast<double>(state.iterations());
    state.counters["coload_us"] = coload_ns_ / n / 1e3;
    state.counters["peer_us"] = peer_ns_ / n / 1e3;
    state.counters["speedup"] = peer_ns_ / coload_ns_;
  }

 private:
  template <class Side>
  static double time(Side&& side) {
    auto start = Clock::now();
    side();
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  }
  double coload_ns_ = 0;
  double peer_ns_ = 0;
};

// Runs coload's side and the peer's side once per iteration, timing each.
template <class Coload, class Peer>
void paired(benchmark::State& state, Coload&& coload, Peer&& peer) {
  PairedTimes times;
  for (auto _ : state) {
    times.coload(coload);
    times.peer(peer);
  }
  times.report(state);
}

inline const coload::Device& gfx90a() {
  static const coload::Device device = [] {
    auto d = coload::device_from_spec("gfx90a");
    if (!d) {
      std::fprintf(stderr, "device_from_spec(gfx90a): %s\n", d.error().message().c_str());
      std::abort();
    }
    return *d;
  }();
  return device;
}

/// A verified cache for one benchmark: a fresh directory, removed at the end.
class MarkDirectory {
 public:
  MarkDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "coload_bench_marks_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    path_ = pattern;
  }
  ~MarkDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  MarkDirectory(const MarkDirectory&) = delete;
  MarkDirectory& operator=(const MarkDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// How a benchmark treats CCOB hashes: checked, trusted from a mark an
/// untimed first run left (Verify with a verified cache), or skipped.
enum class HashMode { Verify, Marked, Skip };

struct HashSetup {
  explicit HashSetup(HashMode mode) {
    options.hash =
        mode == HashMode::Skip ? coload::StreamOptions::HashCheck::Skip : coload::StreamOptions::HashCheck::Verify;
    if (mode == HashMode::Marked) options.read.verified_cache = marks.path();
  }
  MarkDirectory marks;
  coload::StreamOptions options;
};

}  // namespace coload_bench
