#include "bundle/md5_stream.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <system_error>

// OpenSSL's x86-64 MD5 block function (crypto/md5/asm/md5-x86_64.pl), which
// MD5_Update calls: it hashes `blocks` 64-byte blocks into the state words
// A, B, C, D, the first 16 bytes of `state`. Called directly because
// MD5_Update/Final bring OPENSSL_cleanse, whose archive member runs a CPUID
// probe at every start of a process or load of libcoload.so (~20 us here,
// docs/performance.md, issue 27); this member needs nothing else. No public
// header declares it: a libcrypto without it fails the link.
extern "C" void ossl_md5_block_asm_data_order(std::uint32_t* state, const void* data, std::size_t blocks);

namespace coload::detail {

/// MD5 (RFC 1321) around OpenSSL's block function: the buffering of partial
/// blocks and the final padding.
class Md5 {
 public:
  void update(const std::byte* data, std::size_t size) {
    if (size == 0) return;  // `data` may be null
    length_ += size;
    if (filled_ > 0) {
      std::size_t take = std::min(size, kBlock - filled_);
      std::memcpy(tail_.data() + filled_, data, take);
      filled_ += take;
      data += take;
      size -= take;
      if (filled_ < kBlock) return;
      ossl_md5_block_asm_data_order(state_.data(), tail_.data(), 1);
      filled_ = 0;
    }
    if (size >= kBlock) ossl_md5_block_asm_data_order(state_.data(), data, size / kBlock);
    filled_ = size % kBlock;
    std::memcpy(tail_.data(), data + size - filled_, filled_);
  }

  /// Pads, and returns the digest's first 8 bytes as a little-endian number:
  /// the state words A and B, which the digest stores little-endian.
  std::uint64_t low() {
    const std::uint64_t bits = length_ * 8;
    const std::byte one{0x80};
    update(&one, 1);
    const std::array<std::byte, kBlock> zeros{};
    update(zeros.data(), (kBlock + kLengthAt - filled_) % kBlock);
    std::array<std::byte, 8> length;
    for (std::size_t i = 0; i < length.size(); ++i) length[i] = std::byte(static_cast<std::uint8_t>(bits >> (8 * i)));
    update(length.data(), length.size());
    return std::uint64_t{state_[1]} << 32 | state_[0];
  }

 private:
  static constexpr std::size_t kBlock = 64;
  static constexpr std::size_t kLengthAt = 56;  // where the bit count starts in the last block
  std::array<std::uint32_t, 4> state_{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  std::uint64_t length_ = 0;  // bytes hashed
  std::array<std::byte, kBlock> tail_{};
  std::size_t filled_ = 0;  // bytes of tail_ in use
};

namespace {

// On one CPU a helper only adds its copies and switches (~8 % on large.ccob).
bool may_run_on_two_cpus() {
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) > 1;
}

}  // namespace

Md5Stream::Md5Stream(std::uint64_t expected_size) : md5_(std::make_unique<Md5>()) {
  if (expected_size < kThreadedFrom || !may_run_on_two_cpus()) return;
  ring_ = std::make_unique_for_overwrite<std::byte[]>(kSlots * kSlotBytes);
  try {
    helper_ = std::thread(&Md5Stream::hash_slots, this);
  } catch (const std::system_error&) {
    ring_.reset();  // no thread to be had: hash on the calling thread
  }
}

Md5Stream::~Md5Stream() {
  if (helper_.joinable()) close_and_join();
}

void Md5Stream::close_and_join() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  helper_.join();
}

void Md5Stream::update(Bytes chunk) {
  if (!helper_.joinable()) {
    md5_->update(chunk.data(), chunk.size());
    return;
  }
  while (!chunk.empty()) {
    std::size_t take = std::min(chunk.size(), kSlotBytes - filled_);
    std::memcpy(ring_.get() + filling_ * kSlotBytes + filled_, chunk.data(), take);
    filled_ += take;
    chunk = chunk.subspan(take);
    if (filled_ == kSlotBytes) hand_over();
  }
}

void Md5Stream::hand_over() {
  {
    std::unique_lock lock(mutex_);
    sizes_[filling_] = filled_;
    ++handed_;
    changed_.notify_all();
    // The next slot must be hashed before it is written again.
    changed_.wait(lock, [&] { return handed_ - hashed_ < kSlots; });
  }
  filling_ = (filling_ + 1) % kSlots;
  filled_ = 0;
}

void Md5Stream::hash_slots() {
  // The helper owns md5_ until it ends; low() reads it only after the join.
  for (std::size_t slot = 0;; slot = (slot + 1) % kSlots) {
    std::size_t size = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return hashed_ < handed_ || closing_; });
      if (hashed_ == handed_) return;  // closing, nothing left
      size = sizes_[slot];
    }
    md5_->update(ring_.get() + slot * kSlotBytes, size);
    {
      std::lock_guard lock(mutex_);
      ++hashed_;
    }
    changed_.notify_all();
  }
}

std::uint64_t Md5Stream::low() {
  if (helper_.joinable()) {
    if (filled_ > 0) hand_over();
    close_and_join();  // the helper hashes every slot handed over first
  }
  return md5_->low();
}

}  // namespace coload::detail
