// A large job on paper: N ranks on H hosts, described to the planner exactly as a communicator
// would describe itself at init (src/comm_init.cc, describePlanContext), but without processes:
// the host layout, the FIFO shape from the transports' default settings, and no one-shot or
// direct reads (those need every rank on one host). The simulator then asks the library's own
// planner and schedule builders what each rank would do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/algorithms/plan_context.h"

namespace collsim {

// Ranks are placed in blocks, as launchers do: host h holds ranks [h*N/H, (h+1)*N/H).
struct JobShape {
  int nranks = 0;
  int nhosts = 1;
  int ranksPerHost() const { return nranks / nhosts; }
  int hostOf(int rank) const { return rank / ranksPerHost(); }
  bool sameHost(int a, int b) const { return hostOf(a) == hostOf(b); }
};

// What the transports allocate, from the library's defaults (coll::Params, docs/env.md).
struct TransportShape {
  size_t slotBytes;
  int shmFifoDepth;    // a shared-memory FIFO lives in the receiver's segment
  int netFifoDepth;    // a socket peer has one FIFO per direction, in process memory
  int socketsPerPeer;  // TCP connections per socket peer
};
TransportShape defaultTransportShape();

// Throws coll::CollError(collInvalidArgument) unless 1 <= H <= N and H divides N.
void checkShape(const JobShape& shape);

// The context every rank's planner would see (equal on every rank).
coll::PlanContext planContextFor(const JobShape& shape, const TransportShape& transports);

// The ranks whose schedules are built and walked. Every rank when N <= allUpTo; otherwise the
// ranks where schedules differ in kind (the first and last rank of the job and of the first,
// a middle and the last host, each host's first rank on those hosts, rank 0's binomial children
// and the tree's middle), plus `extra` ranks spread by a fixed pseudo-random sequence. Sorted,
// distinct.
std::vector<int> ranksToExamine(const JobShape& shape, int allUpTo, int extra);

}  // namespace collsim
