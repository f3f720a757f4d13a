// Internal: the MD5 of a decompressed CCOB as it streams by, for its stored
// hash (the first 8 bytes of the digest).
//
// The MD5 is libcrypto's (OpenSSL's assembly), linked statically and
// privately (cmake/Dependencies.cmake), through MD5_Init/Update/Final rather
// than EVP: the same code without EVP's providers, library context and
// configuration file. It runs 1.26x as fast as LLVM's portable C (610
// against 483 MiB/s here, docs/notes/first-check.md) and still several
// times slower than libzstd decodes, so, hashed on the decoding thread, a
// large bundle's first check takes the sum of both, most of it MD5. From
// kThreadedFrom bytes on, the hash runs on a helper thread fed through a ring
// of kSlots copies of kSlotBytes, so the check takes about as long as the MD5
// alone; the ring bounds the memory it adds (1 MiB) and makes the decoder
// wait when the hash falls behind. Below that size, when the process may run
// on one CPU only, or when no thread can be started, it hashes on the calling
// thread, as before.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "common/bytes.h"

struct MD5state_st;  // OpenSSL's MD5_CTX

namespace coload::detail {

class Md5Stream {
 public:
  static constexpr std::uint64_t kThreadedFrom = std::uint64_t{8} << 20;
  static constexpr std::size_t kSlots = 4;
  static constexpr std::size_t kSlotBytes = std::size_t{256} << 10;

  /// `expected_size`: how many bytes the stream will bring (the declared
  /// uncompressed size), which decides whether to hash on a helper thread.
  explicit Md5Stream(std::uint64_t expected_size);
  ~Md5Stream();  // stops and joins the helper, if any
  Md5Stream(const Md5Stream&) = delete;
  Md5Stream& operator=(const Md5Stream&) = delete;

  void update(Bytes chunk);
  /// Hashes what is left and returns the digest's first 8 bytes as a
  /// little-endian number (as llvm::MD5::MD5Result::low(), what the CCOB stores). Call once.
  std::uint64_t low();
  /// Whether a helper thread hashes.
  bool threaded() const { return helper_.joinable(); }

 private:
  void hash_slots();
  void hand_over();       // passes the filling slot to the helper
  void close_and_join();  // no more slots: the helper hashes what it has and ends

  std::unique_ptr<MD5state_st> md5_;
  std::unique_ptr<std::byte[]> ring_;
  std::size_t filling_ = 0;  // slot the decoder writes
  std::size_t filled_ = 0;   // bytes in it

  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t handed_ = 0;          // slots handed over (guarded by mutex_)
  std::size_t hashed_ = 0;          // slots hashed (guarded by mutex_)
  std::size_t sizes_[kSlots] = {};  // bytes in each handed-over slot (guarded by mutex_)
  bool closing_ = false;            // no more slots come (guarded by mutex_)
  std::thread helper_;
};

}  // namespace coload::detail
