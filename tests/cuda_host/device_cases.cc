#include "tests/cuda_host/device_cases.h"

#include <algorithm>
#include <sstream>

#include "tests/cuda_host/call_layout.h"

namespace coll {
namespace devsim {
namespace {

constexpr size_t kGuard = 3;

double inputValue(int rank, size_t i) { return rank * 100003.0 + static_cast<double>(i) + 1; }

// In place on this rank: the region holding both buffers and their offsets in it; false when the
// call is out of place here.
bool inPlaceLayout(const DeviceCase& c, int rank, size_t* region, size_t* sendAt, size_t* recvAt) {
  if (!c.inPlace || !colltest::inPlaceOffsets(c.type, rank, c.root, c.count, sendAt, recvAt)) return false;
  const colltest::CallExtents e = colltest::callExtents(c.type, c.nranks, rank, c.root, c.count);
  *region = std::max(*sendAt + e.send, *recvAt + e.recv);
  return true;
}

}  // namespace

std::string DeviceCase::describe() const {
  std::ostringstream o;
  o << collTypeName(type) << " nranks=" << nranks << " root=" << root << " count=" << count << (avg ? " avg" : "")
    << (inPlace ? " in-place" : "") << (mode == DeviceMode::kSerialized ? " serialized" : " concurrent")
    << " COLL_PROTO=" << protoChoiceName(protocol) << " COLL_ALGO=" << algoName(algo) << " elemSize=" << elemSize;
  return o.str();
}

bool hasInPlaceForm(CollType type) {
  return type != CollType::kAllToAll && type != CollType::kBarrier && type != CollType::kSend &&
         type != CollType::kRecv;
}

std::vector<RankMemory> initialMemory(const DeviceCase& c) {
  std::vector<RankMemory> all(static_cast<size_t>(c.nranks));
  for (int r = 0; r < c.nranks; ++r) {
    RankMemory& m = all[r];
    const colltest::CallExtents e = colltest::callExtents(c.type, c.nranks, r, c.root, c.count);
    size_t region = 0, sendAt = 0, recvAt = 0;
    if (inPlaceLayout(c, r, &region, &sendAt, &recvAt)) {
      m.mem.resize(kGuard + region + kGuard);
      m.sendIndex = kGuard + sendAt;
      m.recvIndex = kGuard + recvAt;
    } else {
      m.mem.resize(kGuard + e.send + kGuard + e.recv + kGuard);
      m.sendIndex = kGuard;
      m.recvIndex = kGuard + e.send + kGuard;
    }
    m.fakeBase = (uintptr_t(r) + 1) << 32;
    for (size_t i = 0; i < m.mem.size(); ++i) m.mem[i] = -2e6 - double(i);
    for (size_t i = 0; i < e.recv; ++i) m.mem[m.recvIndex + i] = -1e6 - double(i);
    for (size_t i = 0; i < e.send; ++i) m.mem[m.sendIndex + i] = inputValue(r, i);
  }
  return all;
}

CollCall callOf(const DeviceCase& c, const RankMemory& m, int rank) {
  const colltest::CallExtents e = colltest::callExtents(c.type, c.nranks, rank, c.root, c.count);
  CollCall call;
  call.type = c.type;
  call.count = c.type == CollType::kBarrier ? 0 : c.count;
  call.elemSize = c.elemSize;
  call.datatype = c.elemSize == 8 ? collFloat64 : c.elemSize == 4 ? collFloat32 : collUint8;
  call.op = c.avg ? collAvg : collSum;
  call.root = c.root;
  call.sendbuff = e.send > 0 ? reinterpret_cast<const void*>(m.sendAddress(c.elemSize)) : nullptr;
  call.recvbuff = e.recv > 0 ? reinterpret_cast<void*>(m.recvAddress(c.elemSize)) : nullptr;
  return call;
}

std::vector<std::vector<double>> expectedMemory(const DeviceCase& c, const std::vector<RankMemory>& initial) {
  const int n = c.nranks;
  const size_t k = c.count;
  auto sum = [&](size_t i) {
    double s = 0;
    for (int q = 0; q < n; ++q) s += inputValue(q, i);
    return c.avg && n > 1 ? s / n : s;
  };
  std::vector<std::vector<double>> out;
  for (int r = 0; r < n; ++r) {
    std::vector<double> mem = initial[r].mem;
    double* recv = mem.data() + initial[r].recvIndex;
    const bool root = r == c.root;
    switch (c.type) {
      case CollType::kAllReduce:
        for (size_t i = 0; i < k; ++i) recv[i] = sum(i);
        break;
      case CollType::kBroadcast:
        for (size_t i = 0; i < k; ++i) recv[i] = inputValue(c.root, i);
        break;
      case CollType::kReduce:
        if (root)
          for (size_t i = 0; i < k; ++i) recv[i] = sum(i);
        break;
      case CollType::kAllGather:
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < k; ++i) recv[q * k + i] = inputValue(q, i);
        break;
      case CollType::kReduceScatter:
        for (size_t i = 0; i < k; ++i) recv[i] = sum(r * k + i);
        break;
      case CollType::kGather:
        if (root)
          for (int q = 0; q < n; ++q)
            for (size_t i = 0; i < k; ++i) recv[q * k + i] = inputValue(q, i);
        break;
      case CollType::kScatter:
        for (size_t i = 0; i < k; ++i) recv[i] = inputValue(c.root, r * k + i);
        break;
      case CollType::kAllToAll:
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < k; ++i) recv[q * k + i] = inputValue(q, r * k + i);
        break;
      default:  // barrier: the scratch element holds the sum of everyone's
        recv[0] = [&] {
          double s = 0;
          for (int q = 0; q < n; ++q) s += inputValue(q, 0);
          return s;
        }();
        break;
    }
    out.push_back(std::move(mem));
  }
  return out;
}

namespace {

// The lowered steps say what the schedule's steps say.
std::string compareSteps(const Schedule& schedule, const DeviceProgram& program) {
  if (schedule.steps.size() != program.steps.size())
    return "the program has " + std::to_string(program.steps.size()) + " steps, the schedule " +
           std::to_string(schedule.steps.size());
  auto same = [](const BufferRef& ref, device::DeviceBuffer buffer, uint64_t offset) {
    switch (ref.buffer) {
      case BufferId::kNone:
        return buffer == device::DeviceBuffer::kNone;
      case BufferId::kSend:
        return buffer == device::DeviceBuffer::kSend && offset == ref.offset;
      case BufferId::kRecv:
        return buffer == device::DeviceBuffer::kRecv && offset == ref.offset;
      default:
        return buffer == device::DeviceBuffer::kAddress &&
               offset == reinterpret_cast<uintptr_t>(ref.address) + ref.offset;
    }
  };
  // A batch keeps its joins unless one of its steps both receives and sends (or has several
  // peers): the device runs those step after step (device_program.cc).
  std::vector<bool> fusedBatch(schedule.steps.size(), false);
  for (size_t begin = 0; begin < schedule.steps.size();) {
    size_t end = begin + 1;
    while (end < schedule.steps.size() && schedule.steps[end - 1].joinNext) ++end;
    bool fused = false;
    for (size_t i = begin; i < end; ++i) fused = fused || schedule.steps[i].nrecv + schedule.steps[i].nsend >= 2;
    for (size_t i = begin; i < end; ++i) fusedBatch[i] = fused;
    begin = end;
  }
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& s = schedule.steps[i];
    const device::DeviceStep& d = program.steps[i];
    bool ok = s.count == d.count && s.nrecv == d.nrecv && s.nsend == d.nsend && same(s.src, d.srcBuffer, d.srcOffset) &&
              same(s.dst, d.dstBuffer, d.dstOffset) && s.finalAvg == bool(d.flags & device::kStepFinalAvg) &&
              (s.joinNext && !fusedBatch[i]) == bool(d.flags & device::kStepJoinNext);
    for (int p = 0; p < s.nrecv && ok; ++p) ok = s.recvPeers[p] == d.recvPeers[p];
    for (int p = 0; p < s.nsend && ok; ++p) ok = s.sendPeers[p] == d.sendPeers[p];
    if (!ok) return "step " + std::to_string(i) + " was not lowered faithfully";
  }
  return "";
}

// Launches cover the steps in order; concurrent ones hold whole batches, serialized ones one unit.
std::string checkLaunches(const DeviceProgram& p, DeviceMode mode) {
  uint32_t next = 0;
  for (const device::DeviceLaunch& l : p.launches) {
    if (l.nsteps == 0 || l.nsteps > uint32_t(device::kMaxLaunchSteps))
      return "a launch of " + std::to_string(l.nsteps) + " steps";
    if (mode == DeviceMode::kSerialized) {
      if (l.nsteps != 1 || l.roundLimit != l.firstRound + 1) return "a serialized launch of more than one unit";
      continue;
    }
    if (l.firstStep < next) return "concurrent launches out of order";
    if (l.firstStep > 0 && (p.steps[l.firstStep - 1].flags & device::kStepJoinNext)) return "a launch splits a batch";
    next = l.firstStep + l.nsteps;
  }
  return "";
}

}  // namespace

std::string runDeviceCase(const DeviceCase& c, device::ChannelGeometry (*geometryOf)(device::Protocol), unsigned seed) {
  std::vector<RankMemory> memory = initialMemory(c);
  const std::vector<std::vector<double>> expected = expectedMemory(c, memory);
  std::vector<DeviceProgram> programs;
  Algo overrides[static_cast<int>(CollType::kCount)] = {};
  overrides[static_cast<int>(c.type)] = c.algo;
  for (int r = 0; r < c.nranks; ++r) {
    DeviceCallContext context;
    context.overrides = overrides;
    context.rank = r;
    context.nranks = c.nranks;
    context.mode = c.mode;
    context.forced = c.protocol;
    context.geometryOf = geometryOf;
    const CollCall call = callOf(c, memory[r], r);
    device::ChannelGeometry geometry;
    const Schedule schedule = planDeviceSchedule(call, context, &geometry);
    programs.push_back(planDeviceCall(call, context));
    std::string problem = compareSteps(schedule, programs.back());
    if (problem.empty()) problem = checkLaunches(programs.back(), c.mode);
    if (!problem.empty()) return c.describe() + ": rank " + std::to_string(r) + ": " + problem;
  }
  return simulateAndCompare(c.describe(), programs, memory, expected, seed);
}

std::string simulateAndCompare(const std::string& what, const std::vector<DeviceProgram>& programs,
                               std::vector<RankMemory>& memory, const std::vector<std::vector<double>>& expected,
                               unsigned seed) {
  const SimResult result = simulate(programs, memory, seed);
  if (!result.ok) return what + " seed " + std::to_string(seed) + ": " + result.error;
  for (size_t r = 0; r < memory.size(); ++r)
    for (size_t i = 0; i < expected[r].size(); ++i)
      if (memory[r].mem[i] != expected[r][i])
        return what + " seed " + std::to_string(seed) + ": rank " + std::to_string(r) + " element " +
               std::to_string(i) + " is " + std::to_string(memory[r].mem[i]) + ", expected " +
               std::to_string(expected[r][i]) + " (send buffer at " + std::to_string(memory[r].sendIndex) +
               ", receive buffer at " + std::to_string(memory[r].recvIndex) + ")";
  return "";
}

}  // namespace devsim
}  // namespace coll
