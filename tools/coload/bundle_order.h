// Work on a fat binary's bundles on several threads, results handed over in
// bundle order on the calling thread: what the CLI's subcommands print and
// write stays exactly what one thread would produce.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

namespace coload::cli {

/// Calls `work(index)` for each of `indices` on up to `threads` threads (this
/// one included) and `take(index, result)` on this thread, in the order of
/// `indices`, each as soon as its result and those before it are made. A
/// helper begins no new work while 8 x `threads` results wait to be taken,
/// so a slow `take` (a full pipe) holds a few results, not every bundle's
/// (2 x `threads` kept a helper idle behind this thread's own work: `coload
/// select` on 128 CCOBs took 18 % longer).
/// `take` returns false to stop: work not begun is skipped, results made
/// ahead are dropped. An exception from `work` on a helper thread is
/// rethrown here, in order, once the helpers are joined.
template <class Work, class Take>
void in_bundle_order(std::span<const std::size_t> indices, std::size_t threads, Work work, Take take) {
  using Result = decltype(work(std::size_t{}));
  if (threads < 2 || indices.size() < 2) {
    for (std::size_t index : indices) {
      Result result = work(index);
      if (!take(index, result)) return;
    }
    return;
  }
  const std::size_t window = 8 * threads;
  std::vector<std::optional<Result>> made(indices.size());
  std::vector<std::exception_ptr> thrown(indices.size());
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
    if (slot >= indices.size()) return false;
    std::optional<Result> result;
    std::exception_ptr failure;
    try {
      result.emplace(work(indices[slot]));
    } catch (...) {
      failure = std::current_exception();
    }
    {
      std::lock_guard lock(mutex);
      if (failure) {
        thrown[slot] = failure;
      } else {
        made[slot] = std::move(result);
      }
      ++waiting;
    }
    ready.notify_all();
    return true;
  };
  std::vector<std::jthread> helpers;
  for (std::size_t t = 1; t < std::min(threads, indices.size()); ++t) {
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
    while (taken < indices.size()) {
      std::unique_lock lock(mutex);
      if (wait) ready.wait(lock, [&] { return made[taken].has_value() || thrown[taken]; });
      if (thrown[taken]) {
        failure = thrown[taken];
        return false;
      }
      if (!made[taken]) return true;
      Result result = std::move(*made[taken]);
      made[taken].reset();
      --waiting;
      lock.unlock();
      room.notify_all();
      wait = false;
      if (!take(indices[taken], result)) return false;
      ++taken;
    }
    return true;
  };
  bool going = true;
  while (going && taken < indices.size()) {
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

}  // namespace coload::cli
