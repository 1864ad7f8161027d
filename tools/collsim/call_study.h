// One call (a collective of some size) on a simulated job, with one algorithm of the table: the
// library's planner plans it (COLL_ALGO-style when the algorithm is named), the row's builder
// makes each examined rank's schedule, and walking them gives what each rank sends and holds.
//
// Both ends of every connection are checked: for each examined rank, every peer it sends to
// (receives from) is built too, and must receive from (send to) it exactly the same slices and
// bytes. So a lazily opened connection is never one-sided: no rank holds a connection or a FIFO
// that the schedules do not use, and nothing a rank sends is left unread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/algorithms/algorithm_table.h"
#include "src/coll_call.h"
#include "tools/collsim/job_model.h"
#include "tools/collsim/rank_traffic.h"

namespace collsim {

// A call of `bytes` per rank: the larger of its input and output buffer (a gather-like call's
// count is its per-rank block, at least one element).
coll::CollCall callOfBytes(coll::CollType type, size_t bytes, int nranks);

struct CallStudy {
  coll::Algo algo = coll::Algo::kAuto;
  double modelUs = 0;     // the row's cost model
  bool eligible = false;  // whether the planner may choose it here on its own
  int examined = 0;       // ranks whose schedules were walked (partners not counted)
  int maxPeers = 0, maxNetPeers = 0, maxSendPeers = 0, maxRecvPeers = 0;
  double meanPeers = 0;
  uint64_t maxMessages = 0, maxBytes = 0;
  size_t maxSteps = 0;
  // Bytes that leave the busiest host over the network (its ranks share its link): known only
  // when every rank was walked, else 0.
  uint64_t busiestHostNetBytes = 0;
  Holdings worstHoldings;              // of the rank with the most FIFO bytes
  std::map<int, RankTraffic> traffic;  // examined ranks and the partners checked against them
  std::vector<std::string> problems;   // both-ends mismatches; empty when consistent
};

// Partners checked per direction per rank: all of them up to this many, else this many spread
// over the list (direct and pairwise have n-1).
constexpr int kPartnersChecked = 32;

CallStudy studyCall(const JobShape& shape, const TransportShape& transports, const coll::PlanContext& ctx,
                    const coll::CollCall& call, coll::Algo algo, const std::vector<int>& ranks);

// The rows that can run `call` here and have a schedule (candidates of the model or not).
std::vector<coll::Algo> scheduleAlgorithms(const coll::CollCall& call, const coll::PlanContext& ctx);

}  // namespace collsim
