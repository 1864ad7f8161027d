// The one-shot path for small messages on one host: every rank copies its whole input into its
// own shared-memory buffer and raises a sequence flag; once every rank's flag shows the call,
// each rank computes its own output straight from the others' buffers, in rank order (so an
// all-reduce gives bitwise-identical results everywhere). One synchronisation per call, which is
// what makes 8-byte latency a fraction of a microsecond.
//
// Two buffers alternate between calls. A rank may overwrite buffer (s % 2) at call s because it
// saw every peer's flag reach s-1 during call s-1, and a peer raises flag s-1 only after it has
// finished reading the buffers of call s-2.
#pragma once

#include <cstdint>

#include <string>
#include <vector>

#include "src/algorithms/native.h"
#include "src/algorithms/plan_context.h"

namespace coll {

class OneShot : public NativeRunner {
 public:
  explicit OneShot(const NativeArgs& args);
  void run(const CollCall& call, PeerWaiter& waiter) override;

 private:
  void publish(const CollCall& call, uint8_t* mine);
  void waitForAll(uint64_t seq, PeerWaiter& waiter);
  void computeOutput(const CollCall& call, int buffer);
  // Reduces `count` elements at `offset` of every rank's buffer into dst.
  void reduceAll(const CollCall& call, int buffer, size_t offset, size_t count, void* dst);
  uint8_t* bufferOf(int rank, int which) const { return buffers_[2 * rank + which]; }

  transport::LocalMemory& memory_;
  // Every rank's area and two buffers, looked up once: a small call's latency is a few hundred
  // nanoseconds, and the lookups would be a measurable part of it.
  std::vector<transport::NativeArea*> areas_;
  std::vector<uint8_t*> buffers_;
  int rank_;
  int nranks_;
  uint64_t seq_ = 0;
};

// The table's entry (algorithm_table.cc).
bool oneshotCanRun(const CollCall& call, const PlanContext& ctx, std::string* why);
// Taken whenever it fits and its model beats a pipeline's (and always for a barrier).
bool oneshotEligible(const CollCall& call, const PlanContext& ctx);
double modelOneShot(const CollCall& call, const PlanContext& ctx);
std::unique_ptr<NativeRunner> makeOneShot(const NativeArgs& args);

}  // namespace coll
