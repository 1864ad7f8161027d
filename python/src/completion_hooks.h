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
    hooks_[id] = std::move(hook);
    count_.store(hooks_.size());
  }
  void remove(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    hooks_.erase(id);
    count_.store(hooks_.size());
  }
  // Whether a hook is registered (torch's Flight Recorder hook, which polls every call as it is
  // issued: collective_work.cc). Asked on every poll and completion: no lock.
  bool any() const { return count_.load() != 0; }
  // On the worker thread, after the Work completed: short, and without the GIL (Hooks.hpp).
  void completed(uint64_t key) {
    if (!any()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, hook] : hooks_) hook(c10d::CompletionHookArgs{key, std::nullopt});
  }

 private:
  std::mutex mutex_;
  std::map<int64_t, c10d::CompletionHook> hooks_;
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
