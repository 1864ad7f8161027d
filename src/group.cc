#include "src/group.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "common/error.h"
#include "src/comm.h"

namespace coll {
namespace {

struct QueuedFor {
  Communicator* comm;
  collStream_t stream;
};

// A queued variable-count call's arrays, copied: its CollCall points at `counts`, which points
// into the vectors (each holds nranks entries, or none where the collective has no such array).
struct OwnedCounts {
  VariableCounts counts;
  std::vector<size_t> sendcounts, sdispls, recvcounts, rdispls;
};

// The queue as two parallel vectors, so that the usual group (sends and receives on one
// communicator and stream) hands its calls to the communicator as they are, without a copy. The
// vectors keep their capacity between groups: a send/receive loop allocates nothing after its
// first round.
struct GroupState {
  std::vector<CollCall> calls;
  std::vector<QueuedFor> queuedFor;                 // per call
  std::vector<Communicator*> comms;                 // scratch for groupEnd
  std::vector<CollCall> batch;                      // scratch for groupEnd
  std::vector<std::unique_ptr<OwnedCounts>> owned;  // the queued variable-count calls' arrays
};

// The thread's group: its nesting depth and its queue, in one block with a constant initializer,
// so that every lookup is one TLS access without a guard (a thread_local GroupState with its
// vectors needed a guard check and its own lookups besides the depth's; with the inline lookup
// of the current communicator (last_error.h), the 8-byte sendrecv measured faster:
// docs/performance.md, "Choices in the code, and the measurement behind each"). The
// queue itself is made at the thread's first queued call and freed at its exit (QueueOwner).
struct GroupThread {
  int depth = 0;
  GroupState* queue = nullptr;
};
thread_local GroupThread tGroup;

struct QueueOwner {
  std::unique_ptr<GroupState> queue = std::make_unique<GroupState>();
  ~QueueOwner() { tGroup.queue = nullptr; }
};

GroupState& queueOf(GroupThread& group) {
  if (group.queue == nullptr) {
    thread_local QueueOwner owner;
    group.queue = owner.queue.get();
  }
  return *group.queue;
}

bool isPointToPoint(const CollCall& call) { return call.type == CollType::kSend || call.type == CollType::kRecv; }

// Every queued call is a send or receive of `comm` on one stream.
bool onePointToPointBatch(const GroupState& g) {
  for (size_t i = 0; i < g.calls.size(); ++i)
    if (!isPointToPoint(g.calls[i]) || g.queuedFor[i].comm != g.queuedFor[0].comm ||
        g.queuedFor[i].stream != g.queuedFor[0].stream)
      return false;
  return true;
}

// Per communicator, in the order of first use: consecutive point-to-point calls on one stream run
// together (so a rank can send to and receive from the same peers without deadlock); collectives
// run in the order they were called.
void runQueued(GroupState& g) {
  g.comms.clear();
  for (const QueuedFor& q : g.queuedFor)
    if (std::find(g.comms.begin(), g.comms.end(), q.comm) == g.comms.end()) g.comms.push_back(q.comm);
  for (Communicator* comm : g.comms) {
    Communicator::CallInFlight inFlight(*comm);
    g.batch.clear();
    collStream_t batchStream = nullptr;
    auto flush = [&] {
      if (!g.batch.empty()) comm->runPointToPoint(g.batch, batchStream);
      g.batch.clear();
    };
    try {
      for (size_t i = 0; i < g.calls.size(); ++i) {
        const QueuedFor& q = g.queuedFor[i];
        if (q.comm != comm) continue;
        if (isPointToPoint(g.calls[i])) {
          if (!g.batch.empty() && q.stream != batchStream) flush();
          batchStream = q.stream;
          g.batch.push_back(g.calls[i]);
          continue;
        }
        flush();
        comm->run(g.calls[i], q.stream);
      }
      flush();
    } catch (CollError& e) {
      e.setCommunicator(comm->id());  // collGetLastError(comm) then finds it
      throw;
    }
  }
}

}  // namespace

void groupStart() { ++tGroup.depth; }

bool groupIsOpen() { return tGroup.depth > 0; }

namespace {

// The call as the queue keeps it: a variable-count call's arrays copied into `g` (nranks entries
// each), the call pointing at the copies.
CollCall withOwnedCounts(GroupState& g, const CollCall& call, int nranks) {
  auto owned = std::make_unique<OwnedCounts>();
  const VariableCounts& given = *call.counts;
  auto copy = [nranks](const size_t* array, std::vector<size_t>* into) -> const size_t* {
    if (array == nullptr) return nullptr;
    into->assign(array, array + nranks);
    return into->data();
  };
  owned->counts = given;
  owned->counts.sendcounts = copy(given.sendcounts, &owned->sendcounts);
  owned->counts.sdispls = copy(given.sdispls, &owned->sdispls);
  owned->counts.recvcounts = copy(given.recvcounts, &owned->recvcounts);
  owned->counts.rdispls = copy(given.rdispls, &owned->rdispls);
  CollCall queued = call;
  queued.counts = &owned->counts;
  g.owned.push_back(std::move(owned));
  return queued;
}

}  // namespace

bool groupEnqueueIfOpen(Communicator* comm, const CollCall& call, collStream_t stream) {
  GroupThread& group = tGroup;
  if (group.depth == 0) return false;
  GroupState& g = queueOf(group);
  g.calls.push_back(call.counts == nullptr ? call : withOwnedCounts(g, call, comm->nranks()));
  g.queuedFor.push_back({comm, stream});
  return true;
}

void groupEnd() {
  GroupThread& group = tGroup;
  if (group.depth == 0) throwError(collInvalidUsage, "collGroupEnd: no matching collGroupStart on this thread");
  if (--group.depth > 0) return;
  GroupState& g = queueOf(group);
  // The queue is empty again when this returns, whatever a call throws. (Calls run with the depth
  // back at 0, so nothing they do can add to the queue meanwhile.)
  struct Clear {
    GroupState& g;
    ~Clear() {
      g.calls.clear();
      g.queuedFor.clear();
      g.owned.clear();
    }
  } clear{g};
  if (g.calls.empty()) return;
  if (!onePointToPointBatch(g)) {
    runQueued(g);
    return;
  }
  Communicator* comm = g.queuedFor[0].comm;
  // collCommAbort from another thread waits for this before it frees the communicator.
  Communicator::CallInFlight inFlight(*comm);
  try {
    comm->runPointToPoint(g.calls, g.queuedFor[0].stream);
  } catch (CollError& e) {
    e.setCommunicator(comm->id());
    throw;
  }
}

}  // namespace coll
