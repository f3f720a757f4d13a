// How many more mappings the process may make (io/map_budget.h).
#include "io/map_budget.h"

#include <atomic>
#include <cstdio>

namespace coload::detail {
namespace {

std::atomic<std::uint64_t> g_test_max_map_count{0};  // 0: none; ScopedMaxMapCount sets and restores it

std::optional<std::uint64_t> read_number(const char* path) {
  std::FILE* file = std::fopen(path, "re");
  if (!file) return std::nullopt;
  unsigned long long value = 0;
  bool read = std::fscanf(file, "%llu", &value) == 1;
  std::fclose(file);
  if (!read) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> count_lines(const char* path) {
  std::FILE* file = std::fopen(path, "re");
  if (!file) return std::nullopt;
  std::uint64_t lines = 0;
  char buffer[65536];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, file)) > 0;) {
    for (std::size_t i = 0; i < got; ++i) lines += buffer[i] == '\n';
  }
  std::fclose(file);
  return lines;
}

}  // namespace

std::optional<MapBudget> map_budget() {
  std::optional<std::uint64_t> limit = g_test_max_map_count.load();
  if (*limit == 0) limit = read_number("/proc/sys/vm/max_map_count");
  std::optional<std::uint64_t> in_use = count_lines("/proc/self/maps");
  if (!limit || !in_use) return std::nullopt;
  return MapBudget{*limit, *in_use};
}

ScopedMaxMapCount::ScopedMaxMapCount(std::uint64_t max_map_count)
    : previous_(g_test_max_map_count.exchange(max_map_count)) {}

ScopedMaxMapCount::~ScopedMaxMapCount() { g_test_max_map_count.store(previous_); }

}  // namespace coload::detail
