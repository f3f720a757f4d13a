// What handing HIP 6+ a heap copy of a code object costs (docs/loading.md,
// "HIP releases"): finding whether the bytes lie in a file mapping, which
// reads /proc/self/maps once per load, and copying the code object.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "io/process_maps.h"

namespace {

/// A temporary file of `size` bytes mapped read-only, as the registry maps a binary.
class MappedFile {
 public:
  explicit MappedFile(std::size_t size) : size_(size) {
    char path[] = "/tmp/coload-hip-copy-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) std::abort();
    std::vector<char> bytes(size, '\x5a');
    if (write(fd, bytes.data(), size) != static_cast<ssize_t>(size)) std::abort();
    data_ = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    unlink(path);  // still a file mapping, as HIP would see it ("(deleted)")
    if (data_ == MAP_FAILED) std::abort();
  }
  ~MappedFile() { munmap(data_, size_); }
  const void* data() const { return data_; }

 private:
  std::size_t size_;
  void* data_;
};

void BM_HipMappedFileLookup(benchmark::State& state) {
  MappedFile file(1 << 20);
  for (auto _ : state) {
    auto found = coload::detail::mapped_file_at(file.data());
    if (!found || !*found) state.SkipWithError("the mapping was not found");
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_HipMappedFileLookup);

void BM_HipHeapCopy(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  MappedFile file(size);
  for (auto _ : state) {
    auto copy = std::make_shared_for_overwrite<std::byte[]>(size);
    std::memcpy(copy.get(), file.data(), size);
    benchmark::DoNotOptimize(copy.get());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}
BENCHMARK(BM_HipHeapCopy)->Arg(16 << 10)->Arg(1 << 20)->Arg(16 << 20);

}  // namespace
