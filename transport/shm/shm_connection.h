// The shared-memory FIFO between two ranks of one host, as both ends see it: the counters, the
// slot sizes and the slots, all in the receiver's segment (shm_domain.h), plus the doorbell of
// the other end, which each side rings after it posts or releases a slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/doorbell.h"
#include "transport/transport.h"

namespace coll {
namespace transport {

struct alignas(64) ShmFifoHeader {
  std::atomic<uint64_t> head{0};  // slots posted by the sender
  char padHead[56];
  std::atomic<uint64_t> tail{0};  // slots released by the receiver
  char padTail[56];
};

// Bytes one FIFO of `depth` slots of `slotBytes` takes in a segment (header, sizes, slots).
size_t shmFifoBytes(int depth, size_t slotBytes);

struct ShmFifoView {
  ShmFifoView(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* otherEnd);
  uint8_t* slot(uint64_t index) const { return data + (index % depth) * slotBytes; }

  ShmFifoHeader* header;
  uint64_t* sizes;
  uint8_t* data;
  size_t slotBytes;
  int depth;
  Doorbell* bell;
};

class ShmSendConnection : public SendConnection {
 public:
  ShmSendConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* receiverBell);
  void* tryAcquire() override;
  void post(size_t bytes) override;
  size_t slotBytes() const override { return fifo_.slotBytes; }
  int depth() const override { return fifo_.depth; }

 private:
  ShmFifoView fifo_;
  uint64_t head_;
};

class ShmRecvConnection : public RecvConnection {
 public:
  ShmRecvConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* senderBell);
  const void* tryPeek(size_t* bytes) override;
  void release() override;
  size_t slotBytes() const override { return fifo_.slotBytes; }

 private:
  ShmFifoView fifo_;
  uint64_t tail_;
};

}  // namespace transport
}  // namespace coll
