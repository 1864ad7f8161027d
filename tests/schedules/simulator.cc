#include "tests/schedules/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

namespace coll {
namespace schedsim {
namespace {

struct SimFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* bufferName(BufferId id) {
  switch (id) {
    case BufferId::kNone:
      return "none";
    case BufferId::kSend:
      return "send";
    case BufferId::kRecv:
      return "recv";
    case BufferId::kAddress:
      return "address";
  }
  return "?";
}

std::string describeStep(const Step& s) {
  std::ostringstream o;
  o << "count " << s.count << " recv{";
  for (int i = 0; i < s.nrecv && i < kMaxStepPeers; ++i) o << (i ? "," : "") << s.recvPeers[i];
  o << "} send{";
  for (int i = 0; i < s.nsend && i < kMaxStepPeers; ++i) o << (i ? "," : "") << s.sendPeers[i];
  o << "}";
  if (s.src.buffer != BufferId::kNone) o << " src " << bufferName(s.src.buffer) << "+" << s.src.offset;
  if (s.dst.buffer != BufferId::kNone) o << " dst " << bufferName(s.dst.buffer) << "+" << s.dst.offset;
  if (s.finalAvg) o << " finalAvg";
  if (s.joinNext) o << " joinNext";
  return o.str();
}

class Simulator {
 public:
  Simulator(const std::vector<Schedule>& schedules, std::vector<RankMemory>& memory, const SimConfig& config, bool avg)
      : n_(static_cast<int>(schedules.size())),
        schedules_(schedules),
        memory_(memory),
        config_(config),
        avg_(avg),
        fifos_(static_cast<size_t>(n_) * n_),
        ranks_(n_),
        rng_(config.seed) {
    for (RankState& st : ranks_) {
      st.sendClaim.assign(n_, 0);
      st.recvClaim.assign(n_, 0);
    }
  }

  SimResult run() {
    SimResult result;
    try {
      if (memory_.size() != schedules_.size()) throw SimFailure("setup: one RankMemory per schedule expected");
      if (config_.depth < 1 || config_.slotElems < 1) throw SimFailure("setup: depth and slotElems must be >= 1");
      std::vector<int> order(n_);
      std::iota(order.begin(), order.end(), 0);
      if (config_.reverse) std::reverse(order.begin(), order.end());
      for (;;) {
        bool changed = false;
        if (config_.seed != 0) std::shuffle(order.begin(), order.end(), rng_);
        for (int r : order) changed |= turn(r);
        ++result.passes;
        if (allFinished()) break;
        if (!changed) throw SimFailure("deadlock: a full pass over the ranks moved nothing\n" + positions());
      }
      for (int s = 0; s < n_; ++s)
        for (int d = 0; d < n_; ++d)
          if (!fifo(s, d).empty())
            throw SimFailure("FIFO " + std::to_string(s) + "->" + std::to_string(d) + " holds " +
                             std::to_string(fifo(s, d).size()) + " unconsumed slot(s) at the end");
    } catch (const SimFailure& e) {
      result.ok = false;
      result.error = e.what();
    }
    result.slicesMoved = slices_;
    return result;
  }

 private:
  struct Active {
    size_t step;
    size_t done;
  };
  struct RankState {
    size_t next = 0;            // first step not yet in a batch
    std::vector<Active> batch;  // the batch in progress
    size_t remaining = 0;       // unfinished steps of the batch
    uint32_t round = 0;
    std::vector<uint32_t> sendClaim, recvClaim;
  };

  std::deque<std::vector<double>>& fifo(int from, int to) { return fifos_[static_cast<size_t>(from) * n_ + to]; }

  bool allFinished() const {
    for (int r = 0; r < n_; ++r)
      if (ranks_[r].remaining > 0 || ranks_[r].next < schedules_[r].steps.size()) return false;
    return true;
  }

  std::string positions() const {
    std::ostringstream o;
    for (int r = 0; r < n_; ++r) {
      const RankState& st = ranks_[r];
      const std::vector<Step>& steps = schedules_[r].steps;
      o << "  rank " << r << ": ";
      if (st.remaining == 0 && st.next >= steps.size()) {
        o << "finished (" << steps.size() << " steps)\n";
        continue;
      }
      o << "batch of " << st.batch.size() << " before step " << st.next << "/" << steps.size() << ":";
      for (const Active& a : st.batch)
        o << " [step " << a.step << " done " << a.done << "/" << steps[a.step].count << " "
          << describeStep(steps[a.step]) << "]";
      o << "\n";
    }
    for (int s = 0; s < n_; ++s)
      for (int d = 0; d < n_; ++d)
        if (!fifos_[static_cast<size_t>(s) * n_ + d].empty())
          o << "  FIFO " << s << "->" << d << ": " << fifos_[static_cast<size_t>(s) * n_ + d].size() << " slot(s)\n";
    return o.str();
  }

  // As Executor::claim: within one round the first unfinished step of a batch to use a
  // connection keeps it.
  bool claim(RankState& st, const Step& step) {
    for (int i = 0; i < step.nsend; ++i)
      if (st.sendClaim[step.sendPeers[i]] == st.round) return false;
    for (int i = 0; i < step.nrecv; ++i)
      if (st.recvClaim[step.recvPeers[i]] == st.round) return false;
    for (int i = 0; i < step.nsend; ++i) st.sendClaim[step.sendPeers[i]] = st.round;
    for (int i = 0; i < step.nrecv; ++i) st.recvClaim[step.recvPeers[i]] = st.round;
    return true;
  }

  // One executor round of rank r (starting its next batch first when the last one is done).
  // Returns whether anything changed.
  bool turn(int r) {
    RankState& st = ranks_[r];
    const std::vector<Step>& steps = schedules_[r].steps;
    bool changed = false;
    while (st.remaining == 0) {
      if (st.next >= steps.size()) return changed;
      st.batch.clear();
      do {
        validatePeers(r, st.next);
        st.batch.push_back({st.next, 0});
      } while (steps[st.next++].joinNext && st.next < steps.size());
      st.remaining = 0;
      for (const Active& a : st.batch)
        if (steps[a.step].count > 0) ++st.remaining;
      changed = true;
    }
    ++st.round;
    for (Active& a : st.batch) {
      const Step& step = steps[a.step];
      if (a.done == step.count) continue;
      if (st.batch.size() > 1 && !claim(st, step)) continue;
      size_t limit = config_.seed != 0 ? 1 + rng_() % 4 : config_.greedy ? SIZE_MAX : 1;
      for (size_t moves = 0; moves < limit && a.done < step.count && advance(r, a); ++moves) changed = true;
      if (a.done == step.count) --st.remaining;
    }
    return changed;
  }

  void validatePeers(int r, size_t index) {
    const Step& step = schedules_[r].steps[index];
    auto bad = [&](const std::string& what) {
      throw SimFailure("bad step: rank " + std::to_string(r) + " step " + std::to_string(index) + ": " + what);
    };
    if (step.nrecv < 0 || step.nrecv > kMaxStepPeers || step.nsend < 0 || step.nsend > kMaxStepPeers)
      bad("nrecv/nsend out of range");
    for (int i = 0; i < step.nrecv; ++i)
      if (step.recvPeers[i] < 0 || step.recvPeers[i] >= n_ || step.recvPeers[i] == r)
        bad("receive peer " + std::to_string(step.recvPeers[i]));
    for (int i = 0; i < step.nsend; ++i)
      if (step.sendPeers[i] < 0 || step.sendPeers[i] >= n_ || step.sendPeers[i] == r)
        bad("send peer " + std::to_string(step.sendPeers[i]));
  }

  // Index in memory_[r].mem of element `extra` of `ref`, for `slice` elements; throws on an
  // access outside the buffer the API gives this rank.
  size_t locate(int r, size_t stepIndex, BufferRef ref, size_t extra, size_t slice, const char* role) {
    const RankMemory& m = memory_[r];
    size_t base = 0, len = 0;
    if (ref.buffer == BufferId::kSend) {
      base = m.sendBase;
      len = m.sendLen;
    } else if (ref.buffer == BufferId::kRecv) {
      base = m.recvBase;
      len = m.recvLen;
    } else {
      throw SimFailure("bad access: rank " + std::to_string(r) + " step " + std::to_string(stepIndex) + " " + role +
                       " refers to the " + bufferName(ref.buffer) + " buffer, which a collective never uses");
    }
    size_t begin = ref.offset + extra;
    if (begin + slice > len)
      throw SimFailure("bad access: rank " + std::to_string(r) + " step " + std::to_string(stepIndex) + " " + role +
                       " elements [" + std::to_string(begin) + ", " + std::to_string(begin + slice) + ") of the " +
                       bufferName(ref.buffer) + " buffer, which holds " + std::to_string(len) + " on this rank");
    return base + begin;
  }

  bool advance(int r, Active& a) {
    const Step& step = schedules_[r].steps[a.step];
    size_t slice = step.count - a.done;
    if (step.nrecv + step.nsend > 0) slice = std::min(slice, config_.slotElems);
    for (int i = 0; i < step.nrecv; ++i) {
      auto& q = fifo(step.recvPeers[i], r);
      if (q.empty()) return false;
      if (q.front().size() != slice)
        throw SimFailure("slice mismatch: rank " + std::to_string(r) + " step " + std::to_string(a.step) + " (" +
                         describeStep(step) + ", done " + std::to_string(a.done) + ") expects " +
                         std::to_string(slice) + " elements from rank " + std::to_string(step.recvPeers[i]) +
                         ", whose oldest slot holds " + std::to_string(q.front().size()));
    }
    for (int i = 0; i < step.nsend; ++i)
      if (fifo(r, step.sendPeers[i]).size() >= static_cast<size_t>(config_.depth)) return false;

    std::vector<double> out(slice, std::numeric_limits<double>::quiet_NaN());  // unwritten slot: garbage
    RankMemory& m = memory_[r];
    bool hasSrc = step.src.buffer != BufferId::kNone, hasDst = step.dst.buffer != BufferId::kNone;
    size_t srcAt = hasSrc ? locate(r, a.step, step.src, a.done, slice, "reads") : 0;
    size_t dstAt = hasDst ? locate(r, a.step, step.dst, a.done, slice, "writes") : 0;
    if (hasSrc && hasDst && slice > 0 && srcAt != dstAt && srcAt < dstAt + slice && dstAt < srcAt + slice)
      throw SimFailure("bad access: rank " + std::to_string(r) + " step " + std::to_string(a.step) +
                       ": source and destination overlap partially (reduceCopy allows only exact aliasing)");
    int nsrcs = step.nrecv + (hasSrc ? 1 : 0);
    if (slice > 0 && nsrcs > 0) {
      double divisor = (step.finalAvg && avg_ && n_ > 1) ? static_cast<double>(n_) : 0.0;
      for (size_t i = 0; i < slice; ++i) {
        double v = 0;
        for (int k = 0; k < step.nrecv; ++k) v += fifo(step.recvPeers[k], r).front()[i];
        if (hasSrc) v += m.mem[srcAt + i];
        if (divisor > 0) v /= divisor;
        out[i] = v;
      }
      if (hasDst) std::copy(out.begin(), out.end(), m.mem.begin() + static_cast<std::ptrdiff_t>(dstAt));
    }
    for (int i = 0; i < step.nsend; ++i) fifo(r, step.sendPeers[i]).push_back(out);
    for (int i = 0; i < step.nrecv; ++i) fifo(step.recvPeers[i], r).pop_front();
    a.done += slice;
    ++slices_;
    return true;
  }

  int n_;
  const std::vector<Schedule>& schedules_;
  std::vector<RankMemory>& memory_;
  SimConfig config_;
  bool avg_;
  std::vector<std::deque<std::vector<double>>> fifos_;
  std::vector<RankState> ranks_;
  size_t slices_ = 0;
  std::mt19937 rng_;
};

}  // namespace

SimResult simulate(const std::vector<Schedule>& schedules, std::vector<RankMemory>& memory, const SimConfig& config,
                   bool avg) {
  return Simulator(schedules, memory, config, avg).run();
}

std::string checkStructure(const std::vector<Schedule>& schedules, size_t slotElems, bool avg, size_t maxStepElems) {
  int n = static_cast<int>(schedules.size());
  // slices[s * n + d]: slice sizes rank s sends to d, and that d receives from s, in order.
  std::vector<std::vector<size_t>> sent(static_cast<size_t>(n) * n), received(static_cast<size_t>(n) * n);
  std::ostringstream problem;
  for (int r = 0; r < n; ++r) {
    const std::vector<Step>& steps = schedules[r].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      auto fail = [&](const std::string& what) {
        problem << "rank " << r << " step " << i << " (" << describeStep(s) << "): " << what;
        return problem.str();
      };
      if (s.nrecv < 0 || s.nrecv > kMaxStepPeers) return fail("nrecv out of [0, kMaxStepPeers]");
      if (s.nsend < 0 || s.nsend > kMaxStepPeers) return fail("nsend out of [0, kMaxStepPeers]");
      for (int k = 0; k < s.nrecv; ++k) {
        int p = s.recvPeers[k];
        if (p < 0 || p >= n) return fail("receive peer out of range");
        if (p == r) return fail("receives from itself");
        for (int j = 0; j < k; ++j)
          if (s.recvPeers[j] == p) return fail("receives twice from one peer in one step");
      }
      for (int k = 0; k < s.nsend; ++k) {
        int p = s.sendPeers[k];
        if (p < 0 || p >= n) return fail("send peer out of range");
        if (p == r) return fail("sends to itself");
        for (int j = 0; j < k; ++j)
          if (s.sendPeers[j] == p) return fail("sends twice to one peer in one step");
      }
      bool hasSrc = s.src.buffer != BufferId::kNone, hasDst = s.dst.buffer != BufferId::kNone;
      if (s.src.buffer == BufferId::kAddress || s.dst.buffer == BufferId::kAddress)
        return fail("a collective schedule refers to memory by address");
      if (s.dst.buffer == BufferId::kSend) return fail("writes the caller's send buffer");
      if (s.count > 0 && s.nrecv + (hasSrc ? 1 : 0) == 0) return fail("moves data but has no source");
      if (s.count > 0 && s.nsend + (hasDst ? 1 : 0) == 0) return fail("moves data but has no destination");
      if (s.nrecv + (hasSrc ? 1 : 0) > 16) return fail("more sources than reduceCopy takes (16)");
      if (s.finalAvg && !avg) return fail("finalAvg in a call that does not average");
      if (maxStepElems > 0 && s.nrecv + s.nsend > 0 && s.count > maxStepElems)
        return fail("a step with peers moves more than maxStepElems");
      if (s.count == 0) continue;
      size_t nslices = (s.count + slotElems - 1) / slotElems;
      for (size_t k = 0; k < nslices; ++k) {
        size_t len = std::min(slotElems, s.count - k * slotElems);
        for (int j = 0; j < s.nsend; ++j) sent[static_cast<size_t>(r) * n + s.sendPeers[j]].push_back(len);
        for (int j = 0; j < s.nrecv; ++j) received[static_cast<size_t>(s.recvPeers[j]) * n + r].push_back(len);
      }
    }
  }
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const auto& a = sent[static_cast<size_t>(s) * n + d];
      const auto& b = received[static_cast<size_t>(s) * n + d];
      if (a != b) {
        size_t k = 0;
        while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
        problem << "connection " << s << "->" << d << ": rank " << s << " sends " << a.size() << " slice(s), rank " << d
                << " receives " << b.size() << "; first difference at slice " << k;
        return problem.str();
      }
    }
  return "";
}

}  // namespace schedsim
}  // namespace coll
