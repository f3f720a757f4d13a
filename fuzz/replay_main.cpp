// Replays fuzz inputs without libFuzzer, so the seed corpus, the fixtures and
// every past crash (fuzz/regressions/<target>/) run under plain ctest.
// Usage: replay_<target> FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int replay(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path root(argv[i]);
    if (!std::filesystem::exists(root)) continue;
    if (std::filesystem::is_regular_file(root)) {
      count += replay(root);
      continue;
    }
    for (const auto& item : std::filesystem::recursive_directory_iterator(root)) {
      if (item.is_regular_file()) count += replay(item.path());
    }
  }
  std::printf("replayed %zu inputs\n", count);
  return count == 0 ? 1 : 0;  // an empty corpus means the test ran nothing
}
