// The order of one communicator's device launches across the streams they are enqueued on.
// Every launch of a communicator uses the same channel memory, and the kernels number the slots
// of each connection from zero in every call (so that a captured graph replays correctly): two
// launches that overlapped would take each other's slots. So each launch is made to start after
// the previous one ended, whatever stream either is on: the engine records one event after every
// launch, and the next launch's stream waits for it (NCCL orders its launches the same way).
// A launch on the stream of the previous, eager, launch is ordered by the stream already.
//
// A launch captured into a CUDA graph runs whenever the graph is replayed: its wait and record
// are captured as graph nodes on the same event (cudaEventWaitExternal, cudaEventRecordExternal),
// so that replays and eager launches chain through it too. Once any launch was captured, every
// eager launch waits, even on the stream of the previous eager one: the library does not see
// cudaGraphLaunch, so a replay may have been enqueued on another stream between two eager launches
// on one stream (replay on A between eager launches on B), and only the event orders the second
// eager launch after it. This class is the CUDA-free bookkeeping of that rule (tested without a GPU); the
// device engine issues the waits and records it asks for.
#pragma once

namespace coll {

class LaunchOrder {
 public:
  // What to do before enqueueing a launch on `stream`.
  struct Before {
    bool wait = false;      // make the stream wait for the communicator's event
    bool external = false;  // as a graph node (the stream is capturing)
  };
  Before before(const void* stream, bool capturing) const;
  // After the launch was enqueued and the event recorded behind it.
  void recorded(const void* stream, bool capturing);
  // Whether any launch was enqueued, eager or captured: whether teardown has something to wait for.
  bool anyLaunch() const { return launches_ > 0; }
  unsigned long long launches() const { return launches_; }

 private:
  const void* lastStream_ = nullptr;
  bool anyCaptured_ = false;
  unsigned long long launches_ = 0;
};

}  // namespace coll
