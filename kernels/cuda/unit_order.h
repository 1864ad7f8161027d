// The order in which one rank works through its steps on the device: the single source of truth
// shared by the kernel (which waits for each unit in this order), the host launcher of serialized
// mode (which issues one launch per unit, in this order) and the host tests that simulate every
// rank's order to prove it cannot deadlock (tests/cuda_host).
//
// A unit is one slice of one step. Steps run in order; a batch (steps chained by kStepJoinNext)
// interleaves its steps slice by slice, so that independent transfers (all-to-all, gather, a
// group of sends and receives) all progress. Within one slice round of a batch the steps that
// only send go first: a send needs nothing but a free slot, so no rank waits for a receive
// while a peer waits for it to send.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_step.h"

namespace coll {
namespace device {

// Calls visit(stepIndex, slice) for every unit of steps[0, nsteps), in execution order, and
// visitBatch(firstStep) once before each batch's first unit. A batch runs in rounds: in round r,
// each step with firstRound <= r < firstRound + its slices moves slice r - firstRound. Only rounds
// in [firstRound, roundLimit) run (the serialized launcher runs one unit per launch this way).
template <typename VisitBatch, typename Visit>
COLL_HOST_DEVICE void forEachUnit(const DeviceStep* steps, uint32_t nsteps, uint64_t sliceElemCount,
                                  uint64_t firstRound, uint64_t roundLimit, VisitBatch&& visitBatch, Visit&& visit) {
  uint32_t begin = 0;
  while (begin < nsteps) {
    uint32_t end = begin + 1;
    while (end < nsteps && (steps[end - 1].flags & kStepJoinNext)) ++end;
    uint64_t rounds = 0;
    for (uint32_t i = begin; i < end; ++i) {
      const uint64_t n = stepSlices(steps[i], sliceElemCount);
      if (n > 0 && steps[i].firstRound + n > rounds) rounds = steps[i].firstRound + n;
    }
    if (rounds > roundLimit) rounds = roundLimit;
    visitBatch(begin);
    for (uint64_t round = firstRound; round < rounds; ++round) {
      for (int sendsFirst = 1; sendsFirst >= 0; --sendsFirst) {
        for (uint32_t i = begin; i < end; ++i) {
          const DeviceStep& step = steps[i];
          const bool onlySends = step.nrecv == 0 && step.nsend > 0;
          if (onlySends != (sendsFirst == 1) || round < step.firstRound) continue;
          const uint64_t slice = round - step.firstRound;
          if (slice < stepSlices(step, sliceElemCount)) visit(i, slice);
        }
      }
    }
    begin = end;
  }
}

}  // namespace device
}  // namespace coll
