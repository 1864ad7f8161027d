#include "src/group.h"

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "src/comm.h"

namespace coll {
namespace {

struct PendingCall {
  Communicator* comm;
  CollCall call;
  collStream_t stream;
};

struct GroupState {
  int depth = 0;
  std::vector<PendingCall> pending;
};

thread_local GroupState tGroup;

bool isPointToPoint(const CollCall& call) { return call.type == CollType::kSend || call.type == CollType::kRecv; }

}  // namespace

bool groupActive() { return tGroup.depth > 0; }

void groupStart() { ++tGroup.depth; }

void groupEnqueue(Communicator* comm, const CollCall& call, collStream_t stream) {
  tGroup.pending.push_back({comm, call, stream});
}

void groupEnd() {
  if (tGroup.depth == 0) throwError(collInvalidUsage, "collGroupEnd: no matching collGroupStart on this thread");
  if (--tGroup.depth > 0) return;
  std::vector<PendingCall> pending;
  pending.swap(tGroup.pending);
  // Per communicator, in the order of first use: consecutive point-to-point calls on one stream
  // run together (so a rank can send to and receive from the same peers without deadlock);
  // collectives run in the order they were called.
  std::vector<Communicator*> comms;
  for (const PendingCall& p : pending)
    if (std::find(comms.begin(), comms.end(), p.comm) == comms.end()) comms.push_back(p.comm);
  for (Communicator* comm : comms) {
    std::vector<CollCall> batch;
    collStream_t batchStream = nullptr;
    auto flush = [&] {
      if (!batch.empty()) comm->runPointToPoint(batch, batchStream);
      batch.clear();
    };
    try {
      for (const PendingCall& p : pending) {
        if (p.comm != comm) continue;
        if (isPointToPoint(p.call)) {
          if (!batch.empty() && p.stream != batchStream) flush();
          batchStream = p.stream;
          batch.push_back(p.call);
          continue;
        }
        flush();
        comm->run(p.call, p.stream);
      }
      flush();
    } catch (CollError& e) {
      e.setCommunicator(comm->id());  // collGetLastError(comm) then finds it
      throw;
    }
  }
}

}  // namespace coll
