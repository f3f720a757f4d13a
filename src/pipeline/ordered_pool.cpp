// for_each_in_order (coload/detail/ordered_pool.h): work on several threads, results
// taken in order on the calling thread, so that what a caller prints or
// loads is exactly what one thread would produce.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "coload/detail/ordered_pool.h"

namespace coload {

void for_each_in_order(std::size_t count, std::size_t threads, const std::function<void(std::size_t slot)>& work,
                       const std::function<bool(std::size_t slot)>& take, std::size_t ahead) {
  if (threads < 2 || count < 2) {
    for (std::size_t slot = 0; slot < count; ++slot) {
      work(slot);
      if (!take(slot)) return;
    }
    return;
  }
  // Counting results waiting to be taken, not results begun: a window of
  // 2 x threads begun kept a helper idle behind this thread's own work
  // (docs/notes/performance.md, "CLI's decode threads stop while results wait to be taken").
  const std::size_t window = ahead ? ahead : 8 * threads;
  std::vector<char> made(count, 0);
  std::vector<std::exception_ptr> thrown(count);
  std::mutex mutex;
  std::condition_variable ready, room;
  std::atomic<std::size_t> next{0};
  bool stop = false;        // under `mutex`
  std::size_t waiting = 0;  // results made and not yet taken, under `mutex`
  std::size_t taken = 0;    // read by this thread only
  auto make_next = [&]() -> bool {
    std::size_t slot;
    {
      std::lock_guard lock(mutex);
      if (stop) return false;
      slot = next.fetch_add(1, std::memory_order_relaxed);
    }
    if (slot >= count) return false;
    std::exception_ptr failure;
    try {
      work(slot);
    } catch (...) {
      failure = std::current_exception();
    }
    {
      std::lock_guard lock(mutex);
      if (failure) thrown[slot] = failure;
      made[slot] = 1;
      ++waiting;
    }
    ready.notify_all();
    return true;
  };
  std::vector<std::jthread> helpers;
  for (std::size_t t = 1; t < std::min(threads, count); ++t) {
    try {
      helpers.emplace_back([&] {
        for (;;) {
          {
            std::unique_lock lock(mutex);
            room.wait(lock, [&] { return stop || waiting < window; });
          }
          if (!make_next()) return;
        }
      });
    } catch (const std::system_error&) {
      break;  // no more threads: the ones running share the rest
    }
  }
  std::exception_ptr failure;
  auto halt = [&] {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    room.notify_all();
  };
  // Destroyed before `helpers` (declared after it): a `take` that throws
  // still lets the helpers waiting for room finish before they are joined.
  struct Halt {
    decltype(halt)& run;
    ~Halt() { run(); }
  } halt_on_exit{halt};
  // Takes what is ready, in order; with `wait`, waits for the next one first
  // (only called when that one is begun: every begun slot is some thread's).
  auto take_ready = [&](bool wait) -> bool {
    while (taken < count) {
      std::unique_lock lock(mutex);
      if (wait) ready.wait(lock, [&] { return made[taken] != 0; });
      if (!made[taken]) return true;
      if (thrown[taken]) {
        failure = thrown[taken];
        return false;
      }
      made[taken] = 0;
      --waiting;
      lock.unlock();
      room.notify_all();
      wait = false;
      if (!take(taken)) return false;
      ++taken;
    }
    return true;
  };
  bool going = true;
  while (going && taken < count) {
    bool room_left;
    {
      std::lock_guard lock(mutex);
      room_left = waiting < window;
    }
    if (room_left && make_next()) {
      going = take_ready(false);
    } else {
      going = take_ready(true);  // the next slot is begun: this one ran out of room or of work
    }
  }
  halt();
  helpers.clear();  // joins
  if (failure) std::rethrow_exception(failure);
}

}  // namespace coload
