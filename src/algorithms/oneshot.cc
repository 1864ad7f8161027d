#include "src/algorithms/oneshot.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "src/algorithms/cost_model.h"

namespace coll {

OneShot::OneShot(const NativeArgs& args) : memory_(*args.memory), rank_(args.rank), nranks_(args.nranks) {
  for (int r = 0; r < nranks_; ++r) {
    areas_.push_back(memory_.area(r));
    for (int which = 0; which < 2; ++which) buffers_.push_back(memory_.oneshotBuffer(r, which));
  }
}

void OneShot::run(const CollCall& call, PeerWaiter& waiter) {
  uint64_t seq = ++seq_;
  int buffer = static_cast<int>(seq & 1);
  publish(call, bufferOf(rank_, buffer));
  areas_[rank_]->oneshotSeq.store(seq, std::memory_order_release);
  memory_.ringPeers();
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

void OneShot::waitForAll(uint64_t seq, PeerWaiter& waiter) {
  int next = 0;
  while (next < nranks_) {
    if (areas_[next]->oneshotSeq.load(std::memory_order_acquire) >= seq) {
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
      srcs[nsrcs++] = bufferOf(first++, buffer) + offset * call.elemSize;
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
      kernels::copyBytes(out, bufferOf(call.root, buffer), bytes);
      break;
    case CollType::kAllGather:
      for (int r = 0; r < nranks_; ++r) kernels::copyBytes(out + r * bytes, bufferOf(r, buffer), bytes);
      break;
    case CollType::kGather:
      if (rank_ == call.root)
        for (int r = 0; r < nranks_; ++r) kernels::copyBytes(out + r * bytes, bufferOf(r, buffer), bytes);
      break;
    case CollType::kScatter:
      kernels::copyBytes(out, bufferOf(call.root, buffer) + rank_ * bytes, bytes);
      break;
    case CollType::kAllToAll:
      for (int r = 0; r < nranks_; ++r) kernels::copyBytes(out + r * bytes, bufferOf(r, buffer) + rank_ * bytes, bytes);
      break;
    default:
      break;
  }
}

namespace {

// Bytes a rank moves through memory per byte of its input.
double oneshotTraffic(CollType type, int n) {
  switch (type) {
    case CollType::kAllReduce:
    case CollType::kReduce:
    case CollType::kAllGather:
    case CollType::kGather:
      return 2.0 + n;  // publish (read+write), then read every rank's copy
    default:
      return 3.0;
  }
}

}  // namespace

bool oneshotCanRun(const CollCall& call, const PlanContext& ctx, std::string* why) {
  size_t input = oneshotInputBytes(call, ctx.nranks);
  if (ctx.oneshotAvailable && input <= ctx.oneshotBytes) return true;
  if (why != nullptr)
    *why = formatString(
        "oneshot cannot run this %s: it needs every rank on one host with shared memory and at most %zu input "
        "bytes per rank (COLL_ONESHOT_BYTES), got %zu",
        collTypeName(call.type), ctx.oneshotBytes, input);
  return false;
}

bool oneshotEligible(const CollCall& call, const PlanContext& ctx) {
  return call.type == CollType::kBarrier || modelOneShot(call, ctx) <= pipelineUs(call, ctx.nranks);
}

double modelOneShot(const CollCall& call, const PlanContext& ctx) {
  return kOneshotLatencyUs +
         oneshotInputBytes(call, ctx.nranks) * oneshotTraffic(call.type, ctx.nranks) / kCopyBytesPerUs;
}

std::unique_ptr<NativeRunner> makeOneShot(const NativeArgs& args) { return std::make_unique<OneShot>(args); }

}  // namespace coll
