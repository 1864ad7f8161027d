// Receive from any source (dist.recv(tensor) with no src). On CPU tensors the library does it
// (collRecvAny) where every rank of the group shares one host's memory: each send is counted in
// shared memory where the receiver reads it, at no cost worth a store round trip
// (src/comm_any_source.cc). Elsewhere (ranks on several hosts, shared memory off) and for CUDA
// tensors, the backend counts sends in the group's torch store instead, one counter per
// (receiver, sender) pair: a receive from any source polls its own counters for a rank that has
// sent more messages than this rank has taken from it, claims that message and then receives it
// from that rank by name. Between two ranks messages still match in the order they were posted:
// explicit receives from a rank take its messages in order too, and both kinds are counted in the
// order the worker runs them.
//
// Cost of the store's way: one store round trip (a TCP add to the store's server, rank 0) per
// send it counts, on the group's worker thread before the send starts, and a poll of (ranks - 1)
// counters per receive from any source. TORCH_COLLECTIVE_ANY_SOURCE=0 (the same on every rank)
// turns that counting off for programs that send a lot and never receive from any source; a recv
// without src that would need it then raises.
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
  // `store` may be null (a group made without one). `libraryReceives`: collRecvAny works on the
  // group's communicator (collCommRecvAnyAvailable), the same on every rank.
  AnySourceMatcher(c10::intrusive_ptr<c10d::Store> store, int rank, int size, bool libraryReceives);

  // A receive from any source into host (false) or device (true) memory can be made.
  bool available(bool onDevice) const { return (libraryReceives_ && !onDevice) || storeCounts_; }
  // It is the library's (collRecvAny) rather than the store's.
  bool inLibrary(bool onDevice) const { return libraryReceives_ && !onDevice; }
  // On the worker, before a send to `peer` starts: counts it in the store where that is the way.
  void noteSend(int peer, bool onDevice);
  // On the worker, when a receive from `peer` is issued: that peer's next message is taken.
  void noteRecv(int peer, bool onDevice);
  // The store's way, on the worker: waits up to `timeout` for a rank with a message this rank has
  // not taken yet, takes it and returns that rank. Throws, with torch's "Timed out" words, when
  // none comes.
  int claimSender(std::chrono::milliseconds timeout);
  // The group was aborted: a claimSender in progress, and every later one, fails at once (the
  // library's abort cannot end a wait that is not in the library).
  void cancel() { cancelled_.store(true); }

 private:
  std::string counterKey(int receiver, int sender) const;
  bool countsInStore(bool onDevice) const { return storeCounts_ && !inLibrary(onDevice); }

  c10::intrusive_ptr<c10d::Store> store_;
  const int rank_, size_;
  const bool libraryReceives_;
  const bool storeCounts_;  // there is a store and TORCH_COLLECTIVE_ANY_SOURCE is not 0
  std::mutex mutex_;
  std::vector<int64_t> taken_;  // messages counted in the store that this rank's receives took
  int nextCandidate_ = 0;       // where the next search starts: no sender is always preferred
  std::atomic<bool> cancelled_{false};
};

}  // namespace torch_collective
