// Runs a call that might fault in a forked child, so that a fault fails the
// test instead of ending the run: the child returns a code, the parent reads
// how it ended. Only POSIX, so the C API's tests can use it too.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "loaded_wrappers.h"

namespace coload::testing {

/// How a child ended: the code it returned, or the signal that ended it.
struct ChildEnd {
  std::optional<int> code;
  int signal = 0;
  bool operator==(const ChildEnd&) const = default;
};

inline std::string describe(const ChildEnd& end) {
  if (end.code) return "exited with " + std::to_string(*end.code);
  return "killed by signal " + std::to_string(end.signal) + " (" + ::strsignal(end.signal) + ")";
}

/// Runs `body` (returning an int below 256) in a forked child; the child
/// leaves with _exit, running no destructor and no atexit handler.
template <class Body>
ChildEnd in_child(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  if (pid < 0) return {.code = std::nullopt, .signal = -1};
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return {.code = WEXITSTATUS(status)};
  return {.code = std::nullopt, .signal = WIFSIGNALED(status) ? WTERMSIG(status) : -1};
}

inline std::uintptr_t page_size() { return static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE)); }

/// The page that holds `address`.
inline void* page_of(const void* address) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(address) & ~(page_size() - 1));
}

/// The [vvar] page whose direct read faults on x86-64 (the time namespace
/// page, its second), or its first when it has one page; null without [vvar].
inline const void* vvar_page() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < 6 || line.substr(line.size() - 6) != "[vvar]") continue;
    std::uintptr_t start = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    std::uintptr_t end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    return reinterpret_cast<const void*>(end - start > page_size() ? start + page_size() : start);
  }
  return nullptr;
}

/// A memfd holding `size` bytes of `bytes` (the rest of its pages past the
/// file's end), mapped read-only for `mapped` bytes: the pages after the one
/// holding the file's last byte have no backing and fault with SIGBUS.
class PastEndMapping {
 public:
  PastEndMapping(const void* bytes, std::size_t size, std::size_t mapped) : mapped_(mapped) {
    fd_ = ::memfd_create("coload-past-end", MFD_CLOEXEC);
    if (fd_ < 0) return;
    if (::write(fd_, bytes, size) != static_cast<ssize_t>(size)) return;
    void* at = ::mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (at != MAP_FAILED) base_ = static_cast<const std::byte*>(at);
  }
  ~PastEndMapping() {
    if (base_) ::munmap(const_cast<std::byte*>(base_), mapped_);
    if (fd_ >= 0) ::close(fd_);
  }
  PastEndMapping(const PastEndMapping&) = delete;
  PastEndMapping& operator=(const PastEndMapping&) = delete;

  /// The mapping's first byte; null when it could not be made.
  const std::byte* base() const { return base_; }

 private:
  int fd_ = -1;
  std::size_t mapped_ = 0;
  const std::byte* base_ = nullptr;
};

/// The host fixture whose wrappers the row-1 cases protect, dlopen'ed for
/// each test: the pages made PROT_NONE lie in its PF_R PT_LOAD segment.
struct LoadedLibrary : ::testing::Test {
  const std::string path = std::string(COLOAD_FIXTURE_DIR) + "/host/libkernels_mixed.so";
  void* handle = nullptr;
  std::vector<const void*> wrappers;
  void SetUp() override {
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << ::dlerror();
    wrappers = loaded_wrappers(path, handle);
    ASSERT_EQ(wrappers.size(), 3u);
  }
  void TearDown() override {
    if (handle) ::dlclose(handle);
  }
};

}  // namespace coload::testing
