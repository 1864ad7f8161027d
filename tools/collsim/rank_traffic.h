// What one rank's schedule asks of the transports, found by walking it the way the host
// executor runs it (src/exec/executor.cc): a step with a non-zero count asks for a connection to
// each of its peers (a lazy transport opens it then) and moves one slot-sized slice at a time;
// a zero-count step touches nothing. From that, what the rank holds: the connections and FIFOs a
// lazy transport would create, against what today's eager transports create at init.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/algorithms/schedule.h"
#include "tools/collsim/job_model.h"

namespace collsim {

struct PeerTraffic {
  int peer;
  uint64_t slices;  // transport slots (one message each)
  uint64_t bytes;
};

struct RankTraffic {
  int rank = -1;
  std::vector<PeerTraffic> sends;  // by peer, ascending: the send connections it opens
  std::vector<PeerTraffic> recvs;  // the receive connections
  uint64_t messagesSent = 0;
  uint64_t bytesSent = 0;
  size_t steps = 0;
  int distinctPeers() const;  // send and receive peers together
};

// Peers are ranks below nranks (the schedule builders' contract, checked by tests/schedules).
RankTraffic walkSchedule(int rank, int nranks, const coll::Schedule& schedule, size_t elemSize, size_t slotBytes);

// "" when `from` sends to `to` exactly the slices and bytes `to` receives from `from` (or neither
// talks to the other); otherwise what differs. A connection used on one end only would be a
// lazily opened connection, FIFO or socket that the other end never opens, or data never read.
std::string connectionMismatch(const RankTraffic& from, const RankTraffic& to);

// What a rank holds. FIFO bytes count only what lives in this rank's memory: a shared-memory FIFO
// in the receiver's segment, a socket peer's FIFO on each side, for each direction.
struct Holdings {
  int peers = 0;     // distinct peers with any connection
  int netPeers = 0;  // of which on another host (sockets)
  int shmFifos = 0;  // receive FIFOs in this rank's segment
  int netFifos = 0;  // socket FIFOs, one per direction used
  int sockets = 0;
  uint64_t fifoBytes = 0;
};

// A lazy transport: exactly the connections the walked schedules use (union over `plans`, the
// traffic of one rank under several calls).
Holdings lazyHoldings(const std::vector<const RankTraffic*>& plans, const JobShape& shape,
                      const TransportShape& transports);
// Today's transports: at init every rank opens a FIFO for every other rank on its host and
// sockets with FIFOs both ways to every rank on other hosts.
Holdings eagerHoldings(const JobShape& shape, const TransportShape& transports);

}  // namespace collsim
