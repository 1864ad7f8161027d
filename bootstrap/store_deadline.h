// A bound on the store requests one thread makes while it lives, for work that must not wait on a
// store whose host is stopped (not dead: its connection stays open and nothing answers): a hang
// report, the notices of a revoke or a shrink, a communicator's watcher thread. A TCP store's set,
// add and check otherwise wait for the client's request timeout (300 s by default), and a get or
// a wait for its own deadline. Bounds nest; the earliest wins.
#pragma once

#include <algorithm>

#include "common/clock.h"

namespace coll {
namespace bootstrap {

class StoreRequestDeadline {
 public:
  explicit StoreRequestDeadline(Deadline deadline) : deadline_(deadline), outer_(innermost_) { innermost_ = this; }
  ~StoreRequestDeadline() { innermost_ = outer_; }
  StoreRequestDeadline(const StoreRequestDeadline&) = delete;
  StoreRequestDeadline& operator=(const StoreRequestDeadline&) = delete;

  // `deadline`, or the earliest bound this thread holds if that comes sooner.
  static Deadline bound(Deadline deadline) {
    for (const StoreRequestDeadline* d = innermost_; d != nullptr; d = d->outer_) deadline = std::min(deadline, d->deadline_);
    return deadline;
  }

 private:
  Deadline deadline_;
  const StoreRequestDeadline* outer_;
  static inline thread_local const StoreRequestDeadline* innermost_ = nullptr;
};

}  // namespace bootstrap
}  // namespace coll
