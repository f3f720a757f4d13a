// make_ccob: wraps an uncompressed clang offload bundle into a CCOB with the
// test-side writer (used by tests/fixtures/build_fixtures.sh for the CCOB
// flavours the real tools cannot produce: v1, and zlib).
//
//   make_ccob --version 1|2|3 --method zlib|zstd [--level L] IN OUT
#include "bundle_writer.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace {

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s --version 1|2|3 --method zlib|zstd [--level L] IN OUT\n", argv0);
  return 2;
}

bool parse_int(std::string_view text, int& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  std::string s(text);
  long v = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0' || v < -1000 || v > 1000) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace coload::testing;
  int version = 0;
  int level = -1;
  bool have_method = false;
  CcobMethod method = CcobMethod::Zstd;
  std::string paths[2];
  int npaths = 0;

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--version") {
      const char* v = value();
      if (!v || !parse_int(v, version)) return usage(argv[0]);
    } else if (arg == "--level") {
      const char* v = value();
      if (!v || !parse_int(v, level)) return usage(argv[0]);
    } else if (arg == "--method") {
      const char* v = value();
      if (!v) return usage(argv[0]);
      std::string_view m = v;
      if (m == "zlib")
        method = CcobMethod::Zlib;
      else if (m == "zstd")
        method = CcobMethod::Zstd;
      else
        return usage(argv[0]);
      have_method = true;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return usage(argv[0]);
    } else if (npaths < 2) {
      paths[npaths++] = std::string(arg);
    } else {
      return usage(argv[0]);
    }
  }
  if (version < 1 || version > 3 || !have_method || npaths != 2) return usage(argv[0]);

  try {
    Bytes plain = read_file(paths[0]);
    if (plain.size() < kBundleMagic.size() ||
        std::string_view(reinterpret_cast<const char*>(plain.data()), kBundleMagic.size()) != kBundleMagic) {
      std::fprintf(stderr, "make_ccob: %s is not an uncompressed offload bundle\n", paths[0].c_str());
      return 1;
    }
    CcobOptions options;
    options.level = level;
    write_file(paths[1], write_ccob(plain, version, method, options));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_ccob: %s\n", e.what());
    return 1;
  }
  return 0;
}
