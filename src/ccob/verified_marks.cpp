// VerifiedMark: one small file per checked CCOB (ccob/verified_marks.h).
#include "ccob/verified_marks.h"

#include <cstdio>

#include "io/private_files.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/xxhash.h"

namespace coload::detail {
namespace {

constexpr std::size_t kMaxContents = 256;

std::string hex128(llvm::XXH128_hash_t hash) {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return text;
}

}  // namespace

VerifiedMark::VerifiedMark(const std::string& directory, Bytes ccob, const CompressedHeader& header) {
  auto key =
      llvm::xxh3_128bits(llvm::ArrayRef<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(ccob.data()), ccob.size()));
  path_ = directory + "/" + hex128(key);
  // The header's claims, so that a mark left by anything else is a miss.
  contents_ = "coload verified CCOB v" + std::to_string(header.version) + " " + std::string(to_string(header.method)) +
              ", " + hex(ccob.size()) + " bytes: stored hash " + hex(header.hash) + ", uncompressed size " +
              hex(header.uncompressed_size) + "\n";
}

bool VerifiedMark::present() const {
  auto contents = read_private_file(path_, kMaxContents);
  return contents && *contents == contents_;
}

void VerifiedMark::record() const { replace_private_file(path_, contents_); }

}  // namespace coload::detail
