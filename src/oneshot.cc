#include "src/oneshot.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/reduce.h"
#include "src/plan/planner.h"

namespace coll {

void OneShot::run(const CollCall& call, ProgressWaiter& waiter) {
  uint64_t seq = ++seq_;
  int buffer = static_cast<int>(seq & 1);
  publish(call, shm_.oneshotBuffer(rank_, buffer));
  shm_.myHeader()->oneshotSeq.store(seq, std::memory_order_release);
  shm_.ringPeers();
  waitForAll(seq, waiter);
  computeOutput(call, buffer);
}

void OneShot::publish(const CollCall& call, uint8_t* mine) {
  bool hasInput = true;
  switch (call.type) {
    case CollType::kBroadcast:
    case CollType::kScatter:
      hasInput = rank_ == call.root;
      break;
    case CollType::kBarrier:
      hasInput = false;
      break;
    default:
      break;
  }
  if (!hasInput) return;
  size_t bytes = oneshotInputBytes(call, nranks_);
  if (bytes > 0) memcpy(mine, call.sendbuff, bytes);
}

void OneShot::waitForAll(uint64_t seq, ProgressWaiter& waiter) {
  int next = 0;
  while (next < nranks_) {
    if (shm_.header(next)->oneshotSeq.load(std::memory_order_acquire) >= seq) {
      ++next;
      waiter.progressed();
    } else {
      waiter.idle();
    }
  }
}

void OneShot::reduceAll(const CollCall& call, int buffer, size_t offset, size_t count, void* dst) {
  // The kernel takes a bounded number of sources per pass; wider jobs fold into dst.
  const void* srcs[kernels::kMaxReduceSources];
  void* dsts[1] = {dst};
  int first = 0;
  bool folded = false;
  while (first < nranks_) {
    int nsrcs = 0;
    if (folded) srcs[nsrcs++] = dst;
    while (first < nranks_ && nsrcs < kernels::kMaxReduceSources)
      srcs[nsrcs++] = shm_.oneshotBuffer(first++, buffer) + offset * call.elemSize;
    int avgDivisor = (call.op == collAvg && first == nranks_ && nranks_ > 1) ? nranks_ : 0;
    kernels::reduceCopy(call.datatype, call.op, srcs, nsrcs, dsts, 1, count, avgDivisor);
    folded = true;
  }
}

void OneShot::computeOutput(const CollCall& call, int buffer) {
  size_t bytes = call.count * call.elemSize;
  uint8_t* out = static_cast<uint8_t*>(call.recvbuff);
  switch (call.type) {
    case CollType::kAllReduce:
      reduceAll(call, buffer, 0, call.count, out);
      break;
    case CollType::kReduce:
      if (rank_ == call.root) reduceAll(call, buffer, 0, call.count, out);
      break;
    case CollType::kReduceScatter:
      reduceAll(call, buffer, static_cast<size_t>(rank_) * call.count, call.count, out);
      break;
    case CollType::kBroadcast:
      kernels::copyBytes(out, shm_.oneshotBuffer(call.root, buffer), bytes);
      break;
    case CollType::kAllGather:
      for (int r = 0; r < nranks_; ++r) kernels::copyBytes(out + r * bytes, shm_.oneshotBuffer(r, buffer), bytes);
      break;
    case CollType::kGather:
      if (rank_ == call.root)
        for (int r = 0; r < nranks_; ++r) kernels::copyBytes(out + r * bytes, shm_.oneshotBuffer(r, buffer), bytes);
      break;
    case CollType::kScatter:
      kernels::copyBytes(out, shm_.oneshotBuffer(call.root, buffer) + rank_ * bytes, bytes);
      break;
    case CollType::kAllToAll:
      for (int r = 0; r < nranks_; ++r)
        kernels::copyBytes(out + r * bytes, shm_.oneshotBuffer(r, buffer) + rank_ * bytes, bytes);
      break;
    default:
      break;
  }
}

}  // namespace coll
