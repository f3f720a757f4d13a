// A FIFO that an open under test must not wait on (docs/reading-rules.md,
// "Files"): should the open wait for a writer, the watchdog opens the write
// end after kPatience so the test ends, and fails on the time stop() returns.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace coload::testing {

class FifoWatchdog {
 public:
  static constexpr std::chrono::seconds kPatience{5};

  explicit FifoWatchdog(std::string fifo) : fifo_(std::move(fifo)), thread_([this] { watch(); }) {}
  ~FifoWatchdog() { stop(); }
  FifoWatchdog(const FifoWatchdog&) = delete;
  FifoWatchdog& operator=(const FifoWatchdog&) = delete;

  /// Ends the watch; the time since the watchdog was made.
  std::chrono::steady_clock::duration stop() {
    auto elapsed = std::chrono::steady_clock::now() - start_;
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    returned_.notify_all();
    if (thread_.joinable()) thread_.join();
    return elapsed;
  }

 private:
  void watch() {
    std::unique_lock lock(mutex_);
    if (returned_.wait_for(lock, kPatience, [this] { return done_; })) return;
    int writer = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }

  std::string fifo_;
  std::mutex mutex_;
  std::condition_variable returned_;
  bool done_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::thread thread_;  // last: starts once the members it reads exist
};

}  // namespace coload::testing
