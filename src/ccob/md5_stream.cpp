#include "ccob/md5_stream.h"

// MD5_Init/Update/Final are deprecated in OpenSSL 3.0 in favour of EVP, and
// kept: EVP_MD_fetch would load the provider machinery for the same
// assembly (ccob/md5_stream.h).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>
#include <sched.h>
#include <string.h>  // explicit_bzero

#include <cstring>
#include <system_error>

// MD5_Final wipes its context with OPENSSL_cleanse. In libcrypto's archive
// that function shares a member (x86_64cpuid.o) with OpenSSL's CPU probe, an
// .init entry (OPENSSL_cpuid_setup: CPUID, ~20 us in a VM, and a getenv)
// that would then run at every load of libcoload.so into a host process and
// every start of the tool. The MD5 assembly consults no CPU flags, so this
// weak definition resolves the reference and keeps that member out; a
// program that links it for something else gets OpenSSL's own
// (docs/first-check.md, "No CPU probe").
extern "C" __attribute__((weak, visibility("hidden"))) void OPENSSL_cleanse(void* pointer, std::size_t length) {
  explicit_bzero(pointer, length);
}

namespace coload::detail {
namespace {

// On one CPU a helper only adds its copies and switches (~8 % on large.ccob).
bool may_run_on_two_cpus() {
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) > 1;
}

}  // namespace

Md5Stream::Md5Stream(std::uint64_t expected_size) : md5_(std::make_unique<MD5_CTX>()) {
  MD5_Init(md5_.get());
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
    MD5_Update(md5_.get(), chunk.data(), chunk.size());
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
    MD5_Update(md5_.get(), ring_.get() + slot * kSlotBytes, size);
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
  unsigned char digest[MD5_DIGEST_LENGTH];
  MD5_Final(digest, md5_.get());
  std::uint64_t low = 0;
  for (int i = 7; i >= 0; --i) low = low << 8 | digest[i];
  return low;
}

}  // namespace coload::detail
