// The parts of an RDMA write that both of the emulator's ways of carrying it share: in the writer's
// process, straight into the receiver's memory (emu_data_path.cc, one network namespace), or over
// TCP to the receiver's process, which lands it itself (emu_carrier*.cc, across namespaces).
// Every function here runs with the registry's lock held.
#pragma once

#include <infiniband/verbs.h>
#include <sys/uio.h>

#include <cstdint>

#include "emu_registry.h"

namespace verbs_emu {

// The writer's buffers, checked against its lkeys.
struct Gathered {
  iovec iov[kMaxSge];
  int count = 0;
  uint64_t bytes = 0;
};
// Fills `out` from the work request's gather list; LOC_PROT_ERR when an lkey is not a region of
// this process that covers its entry (inline data needs none: it is copied at post).
ibv_wc_status gather(Registry* r, const ibv_send_wr& wr, Gathered* out);

// What the responder needs to know of a write.
struct WriteRequest {
  int opcode;  // IBV_WR_RDMA_WRITE or IBV_WR_RDMA_WRITE_WITH_IMM
  uint32_t rkey;
  uint64_t remoteAddr;
  uint64_t bytes;
  uint32_t imm;
};

// The responder's checks: a live peer QP ready to receive, an rkey of its PD that allows remote
// writes and covers the range, a posted receive and room in its CQ for the immediate.
ibv_wc_status admit(Registry* r, const QpSlot& dest, const WriteRequest& write);

// After the bytes landed: a write with immediate consumes the receiver's oldest posted receive and
// completes it with the immediate and the byte count (from QP `srcQpn`).
void completeReceive(Registry* r, QpSlot& dest, uint32_t srcQpn, const WriteRequest& write);

// Fault injection (COLL_VERBS_EMU_FAIL_AFTER): true once this process has made its allowed writes;
// then its link is down: every QP it owns goes to ERR, so that peers' writes to it fail too.
bool linkFailed(Registry* r);

}  // namespace verbs_emu
