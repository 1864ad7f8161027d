#include "tests/cuda_host/unit_simulator.h"

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include "kernels/cuda/unit_order.h"

namespace coll {
namespace devsim {
namespace {

using device::DeviceBuffer;
using device::DeviceStep;

struct Event {
  bool meet;  // lanes of the rank meet here (a barrier, or the end of a launch)
  uint32_t step;
  uint64_t slice;
};

struct Slot {
  bool full = false;
  uint64_t seq = 0;
  std::vector<double> data;
};
using SlotKey = std::tuple<int, int, uint32_t, uint32_t>;  // from, to, lane, slot

std::vector<Event> eventsOf(const DeviceProgram& p) {
  std::vector<Event> events;
  const uint64_t sliceElemCount = device::sliceElems(p.geometry, static_cast<uint32_t>(p.elemSize));
  for (const device::DeviceLaunch& l : p.launches) {
    const DeviceStep* steps = p.steps.data() + l.firstStep;
    device::forEachUnit(
        steps, l.nsteps, sliceElemCount, l.firstRound, l.roundLimit,
        [&](uint32_t first) {
          if (steps[first].flags & device::kStepBarrierBefore) events.push_back({true, 0, 0});
        },
        [&](uint32_t index, uint64_t slice) {
          events.push_back({false, l.firstStep + index, slice});
        });
    events.push_back({true, 0, 0});
  }
  return events;
}

class Simulation {
 public:
  Simulation(const std::vector<DeviceProgram>& programs, std::vector<RankMemory>& memory)
      : programs_(programs), memory_(memory) {
    for (const DeviceProgram& p : programs) {
      events_.push_back(eventsOf(p));
      const uint32_t lanes = p.geometry.lanes;
      position_.emplace_back(lanes, 0);
      meetsPassed_.emplace_back(lanes, 0);
      arrived_.emplace_back(lanes, false);
    }
  }

  SimResult run(unsigned seed) {
    std::vector<std::pair<int, uint32_t>> agents;
    for (size_t r = 0; r < programs_.size(); ++r)
      for (uint32_t lane = 0; lane < programs_[r].geometry.lanes; ++lane) agents.emplace_back(int(r), lane);
    std::mt19937 rng(seed);
    while (result_.ok && !finished()) {
      if (seed != 0) std::shuffle(agents.begin(), agents.end(), rng);
      bool moved = false;
      for (auto [rank, lane] : agents) {
        const int budget = seed == 0 ? 1 << 30 : int(rng() % 3) + 1;
        for (int i = 0; i < budget && result_.ok && advance(rank, lane); ++i) moved = true;
      }
      if (!moved && result_.ok) fail("deadlock: no lane of any rank can move; " + positions());
    }
    return result_;
  }

 private:
  bool finished() const {
    for (size_t r = 0; r < position_.size(); ++r)
      for (size_t p : position_[r])
        if (p < events_[r].size()) return false;
    return true;
  }

  // Where every rank's first lane stands, and what its next unit waits for.
  std::string positions() const {
    std::ostringstream o;
    for (size_t r = 0; r < position_.size(); ++r) {
      o << "rank " << r << " at event";
      for (size_t p : position_[r]) o << " " << p;
      o << " of " << events_[r].size();
      const size_t p = position_[r][0];
      if (p < events_[r].size() && !events_[r][p].meet) {
        const Event& e = events_[r][p];
        const DeviceStep& st = programs_[r].steps[e.step];
        o << " (step " << e.step << " slice " << e.slice << ":";
        for (int k = 0; k < st.nrecv; ++k) o << " recv " << st.recvPeers[k] << "#" << st.recvSeq[k] + e.slice;
        for (int k = 0; k < st.nsend; ++k) o << " send " << st.sendPeers[k] << "#" << st.sendSeq[k] + e.slice;
        o << ")";
      }
      o << "; ";
    }
    return o.str();
  }

  void fail(const std::string& message) {
    if (!result_.ok) return;
    result_.ok = false;
    result_.error = message;
  }

  // Moves the agent over one event; false when it must wait (or is done).
  bool advance(int rank, uint32_t lane) {
    size_t& pos = position_[rank][lane];
    if (pos >= events_[rank].size()) return false;
    const Event& e = events_[rank][pos];
    if (e.meet) {
      const uint32_t lanes = programs_[rank].geometry.lanes;
      const size_t ordinal = meetsPassed_[rank][lane];
      if (!arrived_[rank][lane]) {
        arrived_[rank][lane] = true;
        ++arrivals_[{rank, ordinal}];
      }
      if (arrivals_[{rank, ordinal}] < lanes) return false;
      arrived_[rank][lane] = false;
      ++meetsPassed_[rank][lane];
      ++pos;
      return true;
    }
    if (!runUnit(rank, lane, programs_[rank].steps[e.step], e.slice)) return false;
    ++result_.units;
    ++pos;
    return true;
  }

  double* local(int rank, DeviceBuffer buffer, uint64_t offset, uint64_t elem, uint64_t n) {
    const RankMemory& m = memory_[rank];
    const size_t elemSize = programs_[rank].elemSize;
    uint64_t index = 0;
    switch (buffer) {
      case DeviceBuffer::kSend:
        index = m.sendIndex + offset + elem;
        break;
      case DeviceBuffer::kRecv:
        index = m.recvIndex + offset + elem;
        break;
      case DeviceBuffer::kAddress:
        index = (offset - m.fakeBase) / elemSize + elem;
        break;
      default:
        return nullptr;
    }
    if (index + n > m.mem.size()) {
      fail("bad access: rank " + std::to_string(rank) + " touches elements [" + std::to_string(index) + ", +" +
           std::to_string(n) + ") of " + std::to_string(m.mem.size()));
      return nullptr;
    }
    return memory_[rank].mem.data() + index;
  }

  bool runUnit(int rank, uint32_t lane, const DeviceStep& st, uint64_t slice) {
    const DeviceProgram& p = programs_[rank];
    const uint32_t depth = p.geometry.depth;
    const uint64_t sliceElemCount = device::sliceElems(p.geometry, static_cast<uint32_t>(p.elemSize));
    const device::LaneRange range =
        device::laneRange(st, slice, sliceElemCount, p.geometry.lanes, lane, static_cast<uint32_t>(p.elemSize));
    const uint64_t n = range.end - range.begin;
    std::vector<Slot*> received, sending;
    for (int k = 0; k < st.nrecv; ++k) {
      Slot& s = slots_[{st.recvPeers[k], rank, lane, uint32_t((st.recvSeq[k] + slice) % depth)}];
      if (!s.full) return false;
      if (s.seq != st.recvSeq[k] + slice) {
        fail("slot: rank " + std::to_string(rank) + " lane " + std::to_string(lane) + " expects slice " +
             std::to_string(st.recvSeq[k] + slice) + " from rank " + std::to_string(st.recvPeers[k]) +
             " but the slot holds slice " + std::to_string(s.seq));
        return false;
      }
      if (s.data.size() != n) {
        fail("slice mismatch: rank " + std::to_string(rank) + " expects " + std::to_string(n) + " elements from rank " +
             std::to_string(st.recvPeers[k]) + ", got " + std::to_string(s.data.size()));
        return false;
      }
      received.push_back(&s);
    }
    for (int k = 0; k < st.nsend; ++k) {
      Slot& s = slots_[{rank, st.sendPeers[k], lane, uint32_t((st.sendSeq[k] + slice) % depth)}];
      if (s.full) return false;
      sending.push_back(&s);
    }
    std::vector<double> values(n, 0.0);
    bool any = false;
    for (Slot* s : received) {
      for (uint64_t j = 0; j < n; ++j) values[j] += s->data[j];
      s->full = false;
      any = true;
    }
    if (st.srcBuffer != DeviceBuffer::kNone) {
      const double* src = local(rank, st.srcBuffer, st.srcOffset, range.begin, n);
      if (src == nullptr) return false;
      for (uint64_t j = 0; j < n; ++j) values[j] += src[j];
      any = true;
    }
    if (!any && n > 0) fail("a step with neither a source nor a received slot");
    if ((st.flags & device::kStepFinalAvg) && p.avgDivisor > 0)
      for (double& v : values) v /= p.avgDivisor;
    for (int k = 0; k < st.nsend; ++k) {
      sending[k]->full = true;
      sending[k]->seq = st.sendSeq[k] + slice;
      sending[k]->data = values;
    }
    if (st.dstBuffer != DeviceBuffer::kNone) {
      double* dst = local(rank, st.dstBuffer, st.dstOffset, range.begin, n);
      if (dst == nullptr) return false;
      std::copy(values.begin(), values.end(), dst);
    }
    return true;
  }

  const std::vector<DeviceProgram>& programs_;
  std::vector<RankMemory>& memory_;
  std::vector<std::vector<Event>> events_;
  std::vector<std::vector<size_t>> position_;
  std::vector<std::vector<size_t>> meetsPassed_;
  std::vector<std::vector<bool>> arrived_;
  std::map<std::pair<int, size_t>, uint32_t> arrivals_;
  std::map<SlotKey, Slot> slots_;
  SimResult result_;
};

}  // namespace

SimResult simulate(const std::vector<DeviceProgram>& programs, std::vector<RankMemory>& memory, unsigned seed) {
  Simulation simulation(programs, memory);
  return simulation.run(seed);
}

}  // namespace devsim
}  // namespace coll
