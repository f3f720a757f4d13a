// Reads of this process's memory that cannot fault (io/checked_read.h).
#include "io/checked_read.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/try.h"
#include "io/read_pages.h"

namespace coload::detail {
namespace {

constexpr std::size_t kMaxIovecs = 1024;  // IOV_MAX on Linux

/// What one method made of a read: bytes copied, or the errno that says the
/// method cannot be used here (a seccomp filter's EPERM or ENOSYS, no /proc).
struct Attempt {
  std::size_t copied = 0;
  int unavailable = 0;
};

bool refused(int error) { return error == EPERM || error == ENOSYS || error == EACCES || error == ENOENT; }

/// One read of up to `size` bytes: how many it copied (0 at an unreadable
/// first byte), or -errno when the method itself failed.
using ReadOnce = ssize_t (*)(int fd, std::uintptr_t from, std::size_t size, void* out);

ssize_t vm_read_once(int, std::uintptr_t from, std::size_t size, void* out) {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(from), size};
  return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
}

ssize_t mem_read_once(int fd, std::uintptr_t from, std::size_t size, void* out) {
  return ::pread(fd, out, size, static_cast<off_t>(from));
}

/// Copies as checked_copy does, through `read`. An unreadable byte ends the
/// copy (EFAULT from process_vm_readv, EIO or EFAULT from /proc/self/mem);
/// a kernel that refuses to split one request at the bad page is asked again
/// for the rest of the current page alone, so the copy ends at the page.
Attempt copy_with(ReadOnce read, int fd, std::uintptr_t from, std::size_t size, std::byte* out) {
  std::size_t done = 0;
  bool page_only = false;
  while (done < size) {
    std::uintptr_t at = from + done;
    std::size_t want = size - done;
    if (page_only) want = std::min<std::size_t>(want, page_size() - at % page_size());
    ssize_t got = read(fd, at, want, out + done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && refused(errno) && done == 0) return {.unavailable = errno};
    if (got <= 0) {
      if (got < 0 && (errno == EFAULT || errno == EIO) && !page_only) {
        page_only = true;
        continue;
      }
      break;
    }
    done += static_cast<std::size_t>(got);
    page_only = false;
  }
  return {.copied = done};
}

Attempt copy_via_vm(std::uintptr_t from, std::size_t size, std::byte* out) {
  return copy_with(vm_read_once, -1, from, size, out);
}

Attempt copy_via_proc_mem(std::uintptr_t from, std::size_t size, std::byte* out) {
  int fd = ::open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {.unavailable = errno == 0 ? ENOENT : errno};
  Attempt attempt = copy_with(mem_read_once, fd, from, size, out);
  ::close(fd);
  return attempt;
}

/// Set once Auto found process_vm_readv refused: a seccomp filter, once
/// installed, is never removed, so later reads go to /proc/self/mem at once.
std::atomic<bool> vm_refused{false};

Error unavailable_error(int vm_errno, int mem_errno) {
  return Error(ErrorKind::Io, std::string("cannot read this process's memory without risking a fault: "
                                          "process_vm_readv: ") +
                                  std::strerror(vm_errno) + "; /proc/self/mem: " + std::strerror(mem_errno));
}

}  // namespace

Expected<std::size_t> checked_copy(const void* address, std::size_t size, void* out, CheckedReadMethod method) {
  if (size == 0) return std::size_t{0};
  const auto from = reinterpret_cast<std::uintptr_t>(address);
  auto* to = static_cast<std::byte*>(out);
  const bool automatic = method == CheckedReadMethod::Auto;
  int vm_errno = ENOSYS;
  if (method == CheckedReadMethod::ProcessVmReadv || (automatic && !vm_refused.load(std::memory_order_relaxed))) {
    Attempt attempt = copy_via_vm(from, size, to);
    if (!attempt.unavailable) return attempt.copied;
    vm_errno = attempt.unavailable;
    if (!automatic) return unavailable_error(vm_errno, ENOSYS);
    vm_refused.store(true, std::memory_order_relaxed);
  }
  Attempt attempt = copy_via_proc_mem(from, size, to);
  if (attempt.unavailable) return unavailable_error(vm_errno, attempt.unavailable);
  return attempt.copied;
}

Expected<std::size_t> checked_probe(const void* address, std::size_t size) {
  const auto from = reinterpret_cast<std::uintptr_t>(address);
  const std::uintptr_t page = page_size();
  std::array<std::byte, kMaxIovecs> sink{};
  std::array<iovec, kMaxIovecs> local{}, remote{};
  std::size_t done = 0;  // bytes from `address` known readable
  while (done < size) {
    // One byte at `address + done` (a page start after the first), then one per page after it.
    std::size_t count = 0;
    for (std::uintptr_t at = from + done; at < from + size && count < kMaxIovecs; ++count) {
      local[count] = {&sink[count], 1};
      remote[count] = {reinterpret_cast<void*>(at), 1};
      at = (at / page + 1) * page;
    }
    ssize_t got = ::process_vm_readv(::getpid(), local.data(), count, remote.data(), count, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno != EFAULT) {
      // No process_vm_readv here: a page at a time through checked_copy.
      while (done < size) {
        std::size_t want = std::min<std::size_t>(size - done, page - (from + done) % page);
        auto copied = checked_copy(reinterpret_cast<const void*>(from + done), 1, sink.data());
        COLOAD_RETURN_IF_ERROR(copied);
        if (*copied == 0) return done;
        done += want;
      }
      return done;
    }
    const auto readable = static_cast<std::size_t>(std::max<ssize_t>(got, 0));
    if (readable < count) {
      // Up to the start of the first page that could not be read.
      return readable == 0 ? done
                           : std::min(size, static_cast<std::size_t>(
                                                reinterpret_cast<std::uintptr_t>(remote[readable].iov_base) - from));
    }
    std::uintptr_t last = reinterpret_cast<std::uintptr_t>(remote[count - 1].iov_base);
    done = std::min(size, static_cast<std::size_t>((last / page + 1) * page - from));
  }
  return done;
}

}  // namespace coload::detail
