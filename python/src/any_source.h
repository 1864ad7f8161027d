// Receive from any source (dist.recv(tensor) with no src) on top of the library's point-to-point
// calls, which always name their peer. Every send counts itself in the group's torch store, one
// counter per (receiver, sender) pair; a receive from any source polls its own counters for a
// rank that has sent more messages than this rank has taken from it, claims that message and
// then receives it from that rank by name. Between two ranks messages still match in the order
// they were posted: explicit receives from a rank take its messages in order too, and both kinds
// are counted in the order the worker runs them.
//
// Cost: one store round trip (a TCP add to the store's server, rank 0) per send, on the group's
// worker thread before the send starts, and a poll of (ranks - 1) counters per receive from any
// source. TORCH_COLLECTIVE_ANY_SOURCE=0 (the same on every rank) turns the counting off for
// programs that send a lot and never receive from any source; recv without src then raises.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace torch_collective {

class AnySourceMatcher {
 public:
  // `store` may be null (a group made without one): receiving from any source is then refused.
  AnySourceMatcher(c10::intrusive_ptr<c10d::Store> store, int rank, int size);

  bool enabled() const { return enabled_; }
  // On the worker, before a send to `peer` starts: counts it where `peer` can see it.
  void noteSend(int peer);
  // On the worker, when a receive from `peer` is issued: that peer's next message is taken.
  void noteRecv(int peer);
  // On the worker: waits up to `timeout` for a rank with a message this rank has not taken yet,
  // takes it and returns that rank. Throws, with torch's "Timed out" words, when none comes.
  int claimSender(std::chrono::milliseconds timeout);
  // The group was aborted: a claimSender in progress, and every later one, fails at once (the
  // library's abort cannot end a wait that is not in the library).
  void cancel() { cancelled_.store(true); }

 private:
  std::string counterKey(int receiver, int sender) const;

  c10::intrusive_ptr<c10d::Store> store_;
  const int rank_, size_;
  const bool enabled_;
  std::mutex mutex_;
  std::vector<int64_t> taken_;  // messages from each rank that this rank's receives took
  int nextCandidate_ = 0;       // where the next search starts: no sender is always preferred
  std::atomic<bool> cancelled_{false};
};

}  // namespace torch_collective
