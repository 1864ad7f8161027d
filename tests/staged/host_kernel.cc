#include "tests/staged/host_kernel.h"

#include <sched.h>

#include <algorithm>
#include <numeric>

#include "common/clock.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cuda/unit_order.h"

namespace coll {
namespace staging_test {
namespace {

uint32_t loadFlag(const char* region, size_t offset) {
  return __atomic_load_n(reinterpret_cast<const uint32_t*>(region + offset), __ATOMIC_ACQUIRE);
}
void storeFlag(char* region, size_t offset, uint32_t value) {
  __atomic_store_n(reinterpret_cast<uint32_t*>(region + offset), value, __ATOMIC_RELEASE);
}

}  // namespace

HostKernel::HostKernel(const HostKernelArgs& args) : args_(args), layout_{args.program->geometry} {
  const DeviceProgram& p = *args_.program;
  const uint64_t sliceElemCount = device::sliceElems(p.geometry, static_cast<uint32_t>(p.elemSize));
  for (const device::DeviceLaunch& l : p.launches) {
    const device::DeviceStep* steps = p.steps.data() + l.firstStep;
    device::forEachUnit(
        steps, l.nsteps, sliceElemCount, l.firstRound, l.roundLimit,
        [&](uint32_t first) {
          if (steps[first].flags & device::kStepBarrierBefore) events_.push_back({true, 0, 0});
        },
        [&](uint32_t index, uint64_t slice) {
          events_.push_back({false, l.firstStep + index, slice});
        });
    events_.push_back({true, 0, 0});
  }
  position_.assign(lanes(), 0);
  meetsPassed_.assign(lanes(), 0);
  arrived_.assign(lanes(), false);
  arrivals_.assign(events_.size() + 1, 0);
}

bool HostKernel::done() const {
  for (size_t p : position_)
    if (p < events_.size()) return false;
  return true;
}

char* HostKernel::local(device::DeviceBuffer buffer, uint64_t offset, uint64_t elem) const {
  const size_t size = args_.program->elemSize;
  switch (buffer) {
    case device::DeviceBuffer::kSend:
      return args_.sendBuffer + (offset + elem) * size;
    case device::DeviceBuffer::kRecv:
      return args_.recvBuffer + (offset + elem) * size;
    case device::DeviceBuffer::kAddress:
      return reinterpret_cast<char*>(offset) + elem * size;
    default:
      return nullptr;
  }
}

bool HostKernel::runUnit(uint32_t lane, const device::DeviceStep& st, uint64_t slice) {
  const DeviceProgram& p = *args_.program;
  const std::vector<device::PeerChannels>& table = *args_.table;
  const uint32_t depth = p.geometry.depth;
  const uint64_t sliceElemCount = device::sliceElems(p.geometry, static_cast<uint32_t>(p.elemSize));
  const device::LaneRange range =
      device::laneRange(st, slice, sliceElemCount, p.geometry.lanes, lane, static_cast<uint32_t>(p.elemSize));
  auto slotOf = [&](uint32_t seq) { return static_cast<uint32_t>((seq + slice) % depth); };
  for (int i = 0; i < st.nrecv; ++i)
    if (loadFlag(table[st.recvPeers[i]].recv, layout_.flagOffset(lane, slotOf(st.recvSeq[i]))) != 1u) return false;
  for (int i = 0; i < st.nsend; ++i)
    if (loadFlag(table[st.sendPeers[i]].send, layout_.flagOffset(lane, slotOf(st.sendSeq[i]))) != 0u) return false;
  const void* srcs[device::kMaxDevicePeers + 1];
  void* dsts[device::kMaxDevicePeers + 1];
  int nsrcs = 0, ndsts = 0;
  for (int i = 0; i < st.nrecv; ++i)
    srcs[nsrcs++] = table[st.recvPeers[i]].recvSlots + layout_.slotInSlots(lane, slotOf(st.recvSeq[i]));
  for (int i = 0; i < st.nsend; ++i)
    dsts[ndsts++] = table[st.sendPeers[i]].send + layout_.slotOffset(lane, slotOf(st.sendSeq[i]));
  if (char* src = local(st.srcBuffer, st.srcOffset, range.begin)) srcs[nsrcs++] = src;
  if (char* dst = local(st.dstBuffer, st.dstOffset, range.begin)) dsts[ndsts++] = dst;
  const uint64_t count = range.end - range.begin;
  const int divisor = (st.flags & device::kStepFinalAvg) ? p.avgDivisor : 0;
  if (count > 0 && nsrcs > 0 && ndsts > 0)
    kernels::reduceCopy(args_.type, args_.op, srcs, nsrcs, dsts, ndsts, count, divisor);
  for (int i = 0; i < st.nsend; ++i)
    storeFlag(table[st.sendPeers[i]].send, layout_.flagOffset(lane, slotOf(st.sendSeq[i])), 1u);
  for (int i = 0; i < st.nrecv; ++i)
    storeFlag(table[st.recvPeers[i]].recv, layout_.flagOffset(lane, slotOf(st.recvSeq[i])), 0u);
  return true;
}

bool HostKernel::step(uint32_t lane) {
  size_t& pos = position_[lane];
  if (pos >= events_.size()) return false;
  const Event& e = events_[pos];
  if (!e.meet) {
    if (!runUnit(lane, args_.program->steps[e.step], e.slice)) return false;
    ++pos;
    return true;
  }
  const size_t ordinal = meetsPassed_[lane];
  if (!arrived_[lane]) {
    arrived_[lane] = true;
    ++arrivals_[ordinal];
  }
  if (arrivals_[ordinal] < lanes()) return false;
  arrived_[lane] = false;
  ++meetsPassed_[lane];
  ++pos;
  return true;
}

void HostKernel::report(uint32_t error) {
  volatile device::DeviceStatus* s = args_.status;
  if (s->error != device::kDeviceOk) return;
  s->peer = 0;
  s->step = 0;
  __atomic_store_n(&args_.status->error, error, __ATOMIC_RELEASE);
}

bool HostKernel::runToEnd(unsigned seed) {
  std::vector<uint32_t> order(lanes());
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937 rng(seed);
  int64_t stalledSinceNs = 0;
  while (!done()) {
    if (__atomic_load_n(&args_.status->error, __ATOMIC_ACQUIRE) != device::kDeviceOk) return false;
    if (seed != 0) std::shuffle(order.begin(), order.end(), rng);
    bool moved = false;
    for (uint32_t lane : order) {
      const int budget = seed == 0 ? 1 << 20 : static_cast<int>(rng() % 3) + 1;
      for (int i = 0; i < budget && step(lane); ++i) moved = true;
    }
    if (moved) {
      stalledSinceNs = 0;
      continue;
    }
    if (__atomic_load_n(&args_.status->abort, __ATOMIC_ACQUIRE) != 0) {
      report(device::kDeviceAborted);
      return false;
    }
    const int64_t now = monotonicNs();
    if (stalledSinceNs == 0) stalledSinceNs = now;
    if (static_cast<uint64_t>(now - stalledSinceNs) > args_.timeoutNs) {
      report(device::kDeviceTimeout);
      return false;
    }
    sched_yield();
  }
  return true;
}

}  // namespace staging_test
}  // namespace coll
