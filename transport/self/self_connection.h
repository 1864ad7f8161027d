// A rank's connection to itself: a FIFO of slots in process memory, written and read by the
// rank's own executor (a send to oneself in a group of sends and receives). No other thread or
// process touches it, so it needs no atomics and wakes no one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace coll {
namespace transport {

class SelfFifo {
 public:
  SelfFifo(int depth, size_t slotBytes);
  int depth() const { return depth_; }
  size_t slotBytes() const { return slotBytes_; }

  void* tryAcquire();
  void post(size_t bytes, uint64_t tag);
  const void* tryPeek(size_t* bytes, uint64_t* tag);
  void release();

 private:
  int depth_;
  size_t slotBytes_;
  std::unique_ptr<uint8_t[]> slots_;
  std::vector<size_t> sizes_;
  std::vector<uint64_t> tags_;
  uint64_t head_ = 0;  // slots posted
  uint64_t tail_ = 0;  // slots released
};

class SelfSendConnection : public SendConnection {
 public:
  explicit SelfSendConnection(SelfFifo& fifo) : fifo_(fifo) {}
  void* tryAcquire() override { return fifo_.tryAcquire(); }
  void post(size_t bytes, uint64_t tag) override { fifo_.post(bytes, tag); }
  size_t slotBytes() const override { return fifo_.slotBytes(); }
  int depth() const override { return fifo_.depth(); }

 private:
  SelfFifo& fifo_;
};

class SelfRecvConnection : public RecvConnection {
 public:
  explicit SelfRecvConnection(SelfFifo& fifo) : fifo_(fifo) {}
  const void* tryPeek(size_t* bytes, uint64_t* tag) override { return fifo_.tryPeek(bytes, tag); }
  void release() override { fifo_.release(); }
  size_t slotBytes() const override { return fifo_.slotBytes(); }

 private:
  SelfFifo& fifo_;
};

}  // namespace transport
}  // namespace coll
