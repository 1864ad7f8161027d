// Torch 2.x's completion hooks (c10d/Hooks.hpp): consumers such as torch's Flight Recorder hook
// learn that a call completed, keyed by its Work's completion key, instead of polling. A backend
// keeps the registered hooks; each Work tells them when the worker completed it successfully
// (failed calls fire nothing, as torch asks, so a post-mortem sees them unfinished). Shared by the
// backend and its Works, since a Work may outlive its group.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "torch_compat.h"

namespace torch_collective {

#if TORCH_COLLECTIVE_HAS_COMPLETION_HOOKS
class CompletionHooks {
 public:
  void add(int64_t id, c10d::CompletionHook hook) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto hooks = std::make_shared<Table>(*hooks_);
    (*hooks)[id] = std::move(hook);
    publish(std::move(hooks));
  }
  void remove(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (hooks_->count(id) == 0) return;
    auto hooks = std::make_shared<Table>(*hooks_);
    hooks->erase(id);
    publish(std::move(hooks));
  }
  // Whether a hook is registered (torch's Flight Recorder hook, which polls every call as it is
  // issued: collective_work.cc). Asked on every poll and completion: no lock.
  bool any() const { return count_.load() != 0; }
  // On the worker thread, after the Work completed: short, and without the GIL (Hooks.hpp).
  // The hooks run outside mutex_: torch's FlightRecorderHook::remove() holds its own lock while it
  // unregisters here, and its completion hook takes that lock, so calling hooks under mutex_
  // would be the other half of a deadlock. A hook removed while a completion is under way may
  // still see that one completion: the snapshot keeps its function alive for it.
  void completed(uint64_t key) {
    if (!any()) return;
    std::shared_ptr<const Table> hooks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      hooks = hooks_;
    }
    for (const auto& [id, hook] : *hooks) hook(c10d::CompletionHookArgs{key, std::nullopt});
  }

 private:
  using Table = std::map<int64_t, c10d::CompletionHook>;
  // Replaced whole, never changed in place, so that completed() can call a snapshot unlocked.
  void publish(std::shared_ptr<const Table> hooks) {
    hooks_ = std::move(hooks);
    count_.store(hooks_->size());
  }

  std::mutex mutex_;
  std::shared_ptr<const Table> hooks_ = std::make_shared<const Table>();
  std::atomic<size_t> count_{0};
};
#else
class CompletionHooks {
 public:
  void completed(uint64_t) {}
  bool any() const { return false; }
};
#endif

}  // namespace torch_collective
