#include "tests/schedules/collectives.h"

#include <algorithm>
#include <sstream>

#include "src/algorithms/algorithms.h"
#include "src/plan/planner.h"

namespace coll {
namespace schedsim {
namespace {

constexpr size_t kGuard = 3;  // sentinel elements around and between the buffers

double sentinel(int rank, size_t index) { return -1e7 * (rank + 1) - static_cast<double>(index) - 0.25; }
double inputValue(int rank, size_t index) { return rank * 100000.0 + static_cast<double>(index) + 1; }

struct Sizes {
  size_t sendNominal, recvNominal;  // what the caller allocates
  size_t sendLen, recvLen;          // what the API lets the collective use on this rank
};

Sizes sizesOf(const Case& c, int r) {
  size_t k = c.count, nk = c.count * static_cast<size_t>(c.nranks);
  bool root = r == c.root;
  switch (collectiveOf(c)) {
    case CollType::kAllReduce:
      return {k, k, k, k};
    case CollType::kReduceScatter:
      return {nk, k, nk, k};
    case CollType::kAllGather:
      return {k, nk, k, nk};
    case CollType::kBroadcast:
      return {k, k, root ? k : 0, k};
    case CollType::kReduce:
      return {k, k, k, root ? k : 0};
    case CollType::kGather:
      return {k, nk, k, root ? nk : 0};
    case CollType::kScatter:
      return {nk, k, root ? nk : 0, k};
    case CollType::kAllToAll:
      return {nk, nk, nk, nk};
    default:
      return {0, 0, 0, 0};
  }
}

}  // namespace

const char* builderName(Builder b) {
  switch (b) {
    case Builder::kRingAllReduce:
      return "ringAllReduce";
    case Builder::kRingReduceScatter:
      return "ringReduceScatter";
    case Builder::kRingAllGather:
      return "ringAllGather";
    case Builder::kChainBroadcast:
      return "chainBroadcast";
    case Builder::kTreeBroadcast:
      return "treeBroadcast";
    case Builder::kTreeReduce:
      return "treeReduce";
    case Builder::kTreeAllReduce:
      return "treeAllReduce";
    case Builder::kDirectGather:
      return "directGather";
    case Builder::kDirectScatter:
      return "directScatter";
    case Builder::kPairwiseAllToAll:
      return "pairwiseAllToAll";
    case Builder::kHostRingAllReduce:
      return "hostRingAllReduce";
    case Builder::kHostRingReduceScatter:
      return "hostRingReduceScatter";
    case Builder::kHostRingAllGather:
      return "hostRingAllGather";
    case Builder::kHierAllReduce:
      return "hierarchicalAllReduce";
    case Builder::kDoubleTreeAllReduce:
      return "doubleTreeAllReduce";
    case Builder::kTableRow:
      return "tableRow";
    default:
      return "?";
  }
}

CollType collectiveOf(const Case& c) {
  switch (c.builder) {
    case Builder::kRingAllReduce:
    case Builder::kTreeAllReduce:
    case Builder::kHostRingAllReduce:
    case Builder::kHierAllReduce:
    case Builder::kDoubleTreeAllReduce:
      return CollType::kAllReduce;
    case Builder::kRingReduceScatter:
    case Builder::kHostRingReduceScatter:
      return CollType::kReduceScatter;
    case Builder::kRingAllGather:
    case Builder::kHostRingAllGather:
      return CollType::kAllGather;
    case Builder::kChainBroadcast:
    case Builder::kTreeBroadcast:
      return CollType::kBroadcast;
    case Builder::kTreeReduce:
      return CollType::kReduce;
    case Builder::kDirectGather:
      return CollType::kGather;
    case Builder::kDirectScatter:
      return CollType::kScatter;
    case Builder::kPairwiseAllToAll:
      return CollType::kAllToAll;
    default:
      return c.type;
  }
}

const char* expectedAlgorithm(const Case& c) {
  switch (c.builder) {
    case Builder::kRingAllReduce:
    case Builder::kRingReduceScatter:
    case Builder::kRingAllGather:
    case Builder::kHostRingAllReduce:
    case Builder::kHostRingReduceScatter:
    case Builder::kHostRingAllGather:
      return "ring";
    case Builder::kHierAllReduce:
      return "hier";
    case Builder::kDoubleTreeAllReduce:
      return "dbtree";
    case Builder::kChainBroadcast:
      return "chain";
    case Builder::kTreeBroadcast:
    case Builder::kTreeReduce:
    case Builder::kTreeAllReduce:
      return "tree";
    case Builder::kDirectGather:
    case Builder::kDirectScatter:
      return "direct";
    case Builder::kPairwiseAllToAll:
      return "pairwise";
    default:
      return algoName(c.algo);
  }
}

bool isRooted(const Case& c) {
  CollType t = collectiveOf(c);
  return t == CollType::kBroadcast || t == CollType::kReduce || t == CollType::kGather || t == CollType::kScatter;
}

bool isReducing(const Case& c) {
  CollType t = collectiveOf(c);
  return t == CollType::kAllReduce || t == CollType::kReduceScatter || t == CollType::kReduce;
}

bool usesMaxStep(const Case& c) {
  // Direct exchanges move whole blocks in joined steps; nothing waits on them in a cycle.
  std::string algorithm = expectedAlgorithm(c);
  return algorithm != "direct" && algorithm != "pairwise";
}

bool allowsInPlace(const Case& c) { return collectiveOf(c) != CollType::kAllToAll; }

std::string Case::describe() const {
  std::ostringstream o;
  o << builderName(builder);
  if (builder == Builder::kTableRow) o << " " << algoName(algo) << " " << collTypeName(type);
  o << " n=" << nranks;
  if (isRooted(*this)) o << " root=" << root;
  o << " count=" << count << " maxStepElems=" << maxStepElems << (avg ? " avg" : "") << (inPlace ? " in-place" : "")
    << " depth=" << sim.depth << " slotElems=" << sim.slotElems;
  if (sim.seed != 0)
    o << " random order seed " << sim.seed;
  else
    o << (sim.greedy ? " greedy" : " one-slice") << (sim.reverse ? " reverse" : "");
  return o.str();
}

std::vector<std::vector<int>> simulatedHosts(int nranks) {
  int nhosts = std::min(nranks, 3);
  std::vector<std::vector<int>> hosts(nhosts);
  for (int r = 0; r < nranks; ++r) hosts[r % nhosts].push_back(r);
  return hosts;
}

CollCall tableRowCall(const Case& c) {
  CollCall call;
  call.type = c.type;
  call.count = c.count;
  call.root = c.root;
  call.datatype = collFloat64;
  call.elemSize = sizeof(double);
  call.op = c.avg ? collAvg : collSum;
  return call;
}

PlanContext tableRowContext(const Case& c) {
  PlanContext ctx;
  ctx.nranks = c.nranks;
  algorithms::describeHostLayout(ctx, simulatedHosts(c.nranks));
  // A FIFO of two slots of maxStepElems: the planner's step bound is then maxStepElems, as here.
  ctx.slotBytes = c.maxStepElems * sizeof(double);
  ctx.fifoDepth = 2;
  return ctx;
}

bool tableRowCanRun(const Case& c) {
  return c.builder != Builder::kTableRow || algorithmRow(c.algo).canRun(tableRowCall(c), tableRowContext(c), nullptr);
}

std::vector<Schedule> buildAll(const Case& c) {
  namespace a = algorithms;
  std::vector<Schedule> out;
  int n = c.nranks;
  std::vector<std::vector<int>> hosts = simulatedHosts(n);
  std::vector<int> order = a::hostOrderedRing(hosts);
  for (int r = 0; r < n; ++r) {
    switch (c.builder) {
      case Builder::kRingAllReduce:
        out.push_back(a::ringAllReduce(n, r, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kRingReduceScatter:
        out.push_back(a::ringReduceScatter(n, r, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kRingAllGather:
        out.push_back(a::ringAllGather(n, r, c.count, c.maxStepElems));
        break;
      case Builder::kChainBroadcast:
        out.push_back(a::chainBroadcast(n, r, c.root, c.count, c.maxStepElems));
        break;
      case Builder::kTreeBroadcast:
        out.push_back(a::treeBroadcast(n, r, c.root, c.count, c.maxStepElems));
        break;
      case Builder::kTreeReduce:
        out.push_back(a::treeReduce(n, r, c.root, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kTreeAllReduce:
        out.push_back(a::treeAllReduce(n, r, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kDirectGather:
        out.push_back(a::directGather(n, r, c.root, c.count));
        break;
      case Builder::kDirectScatter:
        out.push_back(a::directScatter(n, r, c.root, c.count));
        break;
      case Builder::kPairwiseAllToAll:
        out.push_back(a::pairwiseAllToAll(n, r, c.count));
        break;
      case Builder::kHostRingAllReduce:
        out.push_back(a::ringAllReduce(order, r, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kHostRingReduceScatter:
        out.push_back(a::ringReduceScatter(order, r, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kHostRingAllGather:
        out.push_back(a::ringAllGather(order, r, c.count, c.maxStepElems));
        break;
      case Builder::kHierAllReduce:
        out.push_back(a::hierarchicalAllReduce(hosts, r, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kDoubleTreeAllReduce:
        out.push_back(a::doubleTreeAllReduce(order, r, c.count, c.maxStepElems, c.avg));
        break;
      case Builder::kTableRow: {
        const CollCall call = tableRowCall(c);
        const PlanContext ctx = tableRowContext(c);
        Plan plan;
        plan.algo = c.algo;
        plan.maxStepElems = c.maxStepElems;
        out.push_back(buildSchedule(call, plan, r, ctx));
        break;
      }
      default:
        break;
    }
  }
  return out;
}

std::vector<RankMemory> initialMemory(const Case& c) {
  std::vector<RankMemory> mems(c.nranks);
  size_t k = c.count;
  for (int r = 0; r < c.nranks; ++r) {
    RankMemory& m = mems[r];
    Sizes s = sizesOf(c, r);
    m.sendLen = s.sendLen;
    m.recvLen = s.recvLen;
    if (c.inPlace) {
      size_t region = std::max(s.sendNominal, s.recvNominal);
      m.mem.resize(kGuard + region + kGuard);
      m.sendBase = m.recvBase = kGuard;
      switch (collectiveOf(c)) {
        case CollType::kAllGather:
          m.sendBase = kGuard + r * k;
          break;
        case CollType::kReduceScatter:
          m.recvBase = kGuard + r * k;
          break;
        case CollType::kGather:
          m.sendBase = kGuard + c.root * k;
          break;
        case CollType::kScatter:
          m.recvBase = kGuard + c.root * k;
          break;
        default:
          break;
      }
    } else {
      m.mem.resize(kGuard + s.sendNominal + kGuard + s.recvNominal + kGuard);
      m.sendBase = kGuard;
      m.recvBase = kGuard + s.sendNominal + kGuard;
    }
    for (size_t i = 0; i < m.mem.size(); ++i) m.mem[i] = sentinel(r, i);
    for (size_t i = 0; i < m.sendLen; ++i) m.mem[m.sendBase + i] = inputValue(r, i);
  }
  return mems;
}

std::vector<std::vector<double>> expectedMemory(const Case& c, const std::vector<RankMemory>& initial) {
  int n = c.nranks;
  size_t k = c.count;
  auto in = [&](int p, size_t i) { return initial[p].mem[initial[p].sendBase + i]; };
  auto reduced = [&](size_t i) {
    double sum = 0;
    for (int p = 0; p < n; ++p) sum += in(p, i);
    return c.avg ? sum / n : sum;
  };
  std::vector<std::vector<double>> out;
  for (int r = 0; r < n; ++r) {
    std::vector<double> mem = initial[r].mem;
    size_t base = initial[r].recvBase;
    bool root = r == c.root;
    switch (collectiveOf(c)) {
      case CollType::kAllReduce:
        for (size_t i = 0; i < k; ++i) mem[base + i] = reduced(i);
        break;
      case CollType::kReduceScatter:
        for (size_t i = 0; i < k; ++i) mem[base + i] = reduced(r * k + i);
        break;
      case CollType::kAllGather:
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < k; ++i) mem[base + p * k + i] = in(p, i);
        break;
      case CollType::kBroadcast:
        for (size_t i = 0; i < k; ++i) mem[base + i] = in(c.root, i);
        break;
      case CollType::kReduce:
        if (root)
          for (size_t i = 0; i < k; ++i) mem[base + i] = reduced(i);
        break;
      case CollType::kGather:
        if (root)
          for (int p = 0; p < n; ++p)
            for (size_t i = 0; i < k; ++i) mem[base + p * k + i] = in(p, i);
        break;
      case CollType::kScatter:
        for (size_t i = 0; i < k; ++i) mem[base + i] = in(c.root, r * k + i);
        break;
      case CollType::kAllToAll:
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < k; ++i) mem[base + p * k + i] = in(p, r * k + i);
        break;
      default:
        break;
    }
    out.push_back(std::move(mem));
  }
  return out;
}

std::string runCase(const Case& c) { return runCase(c, buildAll(c)); }

std::string runCase(const Case& c, const std::vector<Schedule>& schedules) {
  std::ostringstream o;
  if (static_cast<int>(schedules.size()) != c.nranks) return "wrong number of schedules";
  for (int r = 0; r < c.nranks; ++r)
    if (schedules[r].algorithm != expectedAlgorithm(c)) {
      o << "rank " << r << " schedule says algorithm \"" << schedules[r].algorithm << "\", expected \""
        << expectedAlgorithm(c) << "\"";
      return o.str();
    }
  std::string structure = checkStructure(schedules, c.sim.slotElems, c.avg, usesMaxStep(c) ? c.maxStepElems : 0);
  if (!structure.empty()) return "structure: " + structure;

  std::vector<RankMemory> memory = initialMemory(c);
  std::vector<std::vector<double>> expected = expectedMemory(c, memory);
  SimResult result = simulate(schedules, memory, c.sim, c.avg);
  if (!result.ok) return result.error;

  int shown = 0, wrong = 0;
  for (int r = 0; r < c.nranks; ++r) {
    const RankMemory& m = memory[r];
    for (size_t i = 0; i < m.mem.size(); ++i) {
      if (m.mem[i] == expected[r][i]) continue;
      ++wrong;
      if (shown++ >= 6) continue;
      o << "  rank " << r << " element " << i;
      if (i >= m.recvBase && i < m.recvBase + m.recvLen)
        o << " (recv+" << i - m.recvBase << ")";
      else if (i >= m.sendBase && i < m.sendBase + m.sendLen)
        o << " (send+" << i - m.sendBase << ")";
      else
        o << " (outside the rank's buffers)";
      o << ": got " << m.mem[i] << ", expected " << expected[r][i] << "\n";
    }
  }
  if (wrong > 0) return std::to_string(wrong) + " wrong element(s):\n" + o.str();
  return "";
}

}  // namespace schedsim
}  // namespace coll
