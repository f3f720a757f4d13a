// load/process_exit.cpp: see process_exit.h.
#include "load/process_exit.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace coload::detail {
namespace {

// Trivially destructible: read by destructors that run after this file's
// own static objects would have been destroyed.
std::atomic<bool> exiting{false};

void mark_exiting() { exiting.store(true, std::memory_order_release); }

}  // namespace

void watch_process_exit() noexcept {
  static std::once_flag armed;
  std::call_once(armed, [] { std::atexit(mark_exiting); });
}

bool process_exiting() noexcept { return exiting.load(std::memory_order_acquire); }

}  // namespace coload::detail
