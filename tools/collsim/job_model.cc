#include "tools/collsim/job_model.h"

#include <algorithm>
#include <random>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/params.h"

namespace collsim {

TransportShape defaultTransportShape() {
  const coll::Params defaults;  // the values a job gets without any COLL_* variable
  const coll::transport::TransportSettings& t = defaults.transportSettings;
  return {t.slotBytes, t.shmFifoDepth, t.netFifoDepth, t.socketsPerPeer};
}

void checkShape(const JobShape& shape) {
  if (shape.nranks < 1 || shape.nhosts < 1 || shape.nhosts > shape.nranks || shape.nranks % shape.nhosts != 0)
    coll::throwError(collInvalidArgument,
                     "collsim: %d ranks on %d hosts: expected 1 <= hosts <= ranks, with hosts dividing ranks",
                     shape.nranks, shape.nhosts);
}

coll::PlanContext planContextFor(const JobShape& shape, const TransportShape& transports) {
  checkShape(shape);
  coll::PlanContext ctx;
  ctx.nranks = shape.nranks;
  coll::algorithms::HostLayout hosts(static_cast<size_t>(shape.nhosts));
  for (int r = 0; r < shape.nranks; ++r) hosts[static_cast<size_t>(shape.hostOf(r))].push_back(r);
  coll::algorithms::describeHostLayout(ctx, hosts);
  const coll::Params defaults;
  ctx.oneshotBytes = defaults.oneshotBytes;
  ctx.directReadBytes = defaults.directReadBytes;
  ctx.oneshotAvailable = shape.nhosts == 1;
  ctx.directReadAvailable = false;  // a probe at init decides; the simulated job never has it
  ctx.slotBytes = transports.slotBytes;
  // The shallowest FIFO of the domains in use, as init computes it.
  const bool shm = shape.ranksPerHost() > 1, net = shape.nhosts > 1;
  ctx.fifoDepth = shm && net ? std::min(transports.shmFifoDepth, transports.netFifoDepth)
                  : net      ? transports.netFifoDepth
                             : transports.shmFifoDepth;
  return ctx;
}

std::vector<int> ranksToExamine(const JobShape& shape, int allUpTo, int extra) {
  const int n = shape.nranks, ppn = shape.ranksPerHost();
  std::vector<int> ranks;
  if (n <= allUpTo) {
    for (int r = 0; r < n; ++r) ranks.push_back(r);
    return ranks;
  }
  for (int host : {0, 1, shape.nhosts / 2, shape.nhosts - 1}) {
    if (host >= shape.nhosts) continue;
    const int first = host * ppn;
    for (int r : {first, first + 1, first + ppn / 2, first + ppn - 2, first + ppn - 1})
      if (r >= first && r < first + ppn) ranks.push_back(r);
  }
  for (int bit = 1; bit < n; bit <<= 1) ranks.push_back(bit);  // rank 0's binomial children
  ranks.push_back(n / 2 - 1);
  std::mt19937 random(12345);  // fixed: the same ranks every run
  for (int i = 0; i < extra; ++i) ranks.push_back(static_cast<int>(random() % static_cast<unsigned>(n)));
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

}  // namespace collsim
