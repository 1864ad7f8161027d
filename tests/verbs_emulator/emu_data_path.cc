// The emulator's data path: RDMA write and write with immediate, posted receives, polling.
// A write is carried out inside ibv_post_send, by the writer's process: the kernel copies from the
// writer's buffers into the receiver's registered memory (process_vm_writev), then the completions
// are queued: the writer's send completion, and for a write with immediate the receiver's receive
// completion, consuming one of its posted receives. Every check a real responder makes on an
// incoming write is made here with the registry's lock held, so a QP or region cannot vanish
// between the check and the copy. What real RC would retry and then fail, the emulator fails at
// once with the status the retries would end in: a peer gone or not yet ready (RETRY_EXC_ERR), no
// receive posted (RNR_RETRY_EXC_ERR). A failed work request puts the QP in the error state, and
// later ones complete with WR_FLUSH_ERR, as on a device.
// A QP whose peer lives in another network namespace (with COLL_VERBS_EMU_TCP=1) hands its writes
// to this process's carrier instead, which takes them over TCP (emu_carrier.h).
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "emu_carrier.h"
#include "emu_faults.h"
#include "emu_objects.h"
#include "emu_registry.h"
#include "emu_write.h"

namespace verbs_emu {
namespace {

bool inside(uint64_t addr, uint64_t length, const MrSlot& mr) {
  return addr >= mr.addr && length <= mr.length && addr - mr.addr <= mr.length - length;
}

ibv_wc_status copyToPeer(pid_t pid, const Gathered& g, uint64_t remote) {
  if (g.bytes == 0) return IBV_WC_SUCCESS;
  iovec target{reinterpret_cast<void*>(remote), g.bytes};
  ssize_t done = process_vm_writev(pid, g.iov, static_cast<unsigned long>(g.count), &target, 1, 0);
  if (done == static_cast<ssize_t>(g.bytes)) return IBV_WC_SUCCESS;
  if (done < 0 && errno == ESRCH) return IBV_WC_RETRY_EXC_ERR;  // exited since the check
  return done >= 0 || errno == EFAULT ? IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_OP_ERR;
}

// Hands what a CQ held back to its poller (after `overtaking` later completions, or none).
void releaseHeld(Registry* r, CqSlot* cq, bool overtaken) {
  for (uint32_t i = 0; i < cq->heldCount; i++) pushCompletion(cq, cq->held[i]);
  if (overtaken) r->overtaken += cq->heldCount;
  cq->heldCount = 0;
  cq->idlePolls = 0;
}

// A receive completion: held back when its QP is delayed (fault injection, reordering across QPs),
// else queued, followed by whatever was held, which it thereby overtook. Room checked by admit().
void deliverReceive(Registry* r, const QpSlot& dest, const ibv_wc& wc) {
  CqSlot* cq = &r->cqs[dest.recvCq];
  if (dest.delayed && cq->heldCount < kMaxHeld) {
    cq->held[cq->heldCount++] = wc;
    return;
  }
  pushCompletion(cq, wc);
  if (cq->heldCount > 0) releaseHeld(r, cq, true);
}

ibv_wc_status rdmaWrite(Registry* r, const QpSlot& self, const ibv_send_wr& wr) {
  Gathered g;
  if (ibv_wc_status s = gather(r, wr, &g); s != IBV_WC_SUCCESS) return s;
  int d = findQp(r, self.destQpn);
  if (d < 0) return IBV_WC_RETRY_EXC_ERR;  // destroyed, or never existed: nobody answers
  QpSlot& dest = r->qps[d];
  const WriteRequest write{static_cast<int>(wr.opcode), wr.wr.rdma.rkey, wr.wr.rdma.remote_addr, g.bytes, wr.imm_data};
  if (ibv_wc_status s = admit(r, dest, write); s != IBV_WC_SUCCESS) return s;
  if (ibv_wc_status s = copyToPeer(dest.pid, g, wr.wr.rdma.remote_addr); s != IBV_WC_SUCCESS) return s;
  completeReceive(r, dest, self.qpn, write);
  return IBV_WC_SUCCESS;
}

int validate(const EmuQp& qp, const QpSlot& self, const CqSlot& cq, const ibv_send_wr& wr) {
  if (self.state != IBV_QPS_RTS && self.state != IBV_QPS_ERR) return EINVAL;
  if (wr.opcode != IBV_WR_RDMA_WRITE && wr.opcode != IBV_WR_RDMA_WRITE_WITH_IMM) return EINVAL;
  if (wr.num_sge < 0 || wr.num_sge > kMaxSge) return EINVAL;
  uint64_t bytes = 0;
  for (int i = 0; i < wr.num_sge; i++) bytes += wr.sg_list[i].length;
  if ((wr.send_flags & IBV_SEND_INLINE) != 0 && bytes > qp.maxInline) return EINVAL;
  // No room for a completion it may need (held and owed ones count: they are owed their places).
  if (!cqHasRoom(cq)) return ENOMEM;
  return 0;
}

// A write of a QP whose peer is in another network namespace: its checks and bytes travel to the
// peer's process, which answers; the completion comes from this process's carrier, in order.
void carriedWrite(Registry* r, EmuQp* qp, QpSlot& self, const ibv_send_wr& wr) {
  Gathered g;
  ibv_wc_status status = self.state == IBV_QPS_ERR ? IBV_WC_WR_FLUSH_ERR
                         : linkFailed(r)           ? IBV_WC_RETRY_EXC_ERR
                                                   : gather(r, wr, &g);
  if (status != IBV_WC_SUCCESS) self.state = qp->qp.state = IBV_QPS_ERR;
  const bool signaled = qp->signalAll || (wr.send_flags & IBV_SEND_SIGNALED) != 0;
  const WriteRequest write{static_cast<int>(wr.opcode), wr.wr.rdma.rkey, wr.wr.rdma.remote_addr, g.bytes, wr.imm_data};
  carryWrite(r, self, &qp->qp, wr.wr_id, signaled, write, g, status);
}

}  // namespace

ibv_wc_status gather(Registry* r, const ibv_send_wr& wr, Gathered* out) {
  for (int i = 0; i < wr.num_sge; i++) {
    const ibv_sge& sge = wr.sg_list[i];
    if ((wr.send_flags & IBV_SEND_INLINE) == 0) {
      int m = findMr(r, sge.lkey);
      if (m < 0 || r->mrs[m].pid != getpid() || !inside(sge.addr, sge.length, r->mrs[m])) return IBV_WC_LOC_PROT_ERR;
    }
    out->iov[out->count++] = iovec{reinterpret_cast<void*>(sge.addr), sge.length};
    out->bytes += sge.length;
  }
  return IBV_WC_SUCCESS;
}

ibv_wc_status admit(Registry* r, const QpSlot& dest, const WriteRequest& write) {
  if (ownerGone(dest.pid) || (dest.state != IBV_QPS_RTR && dest.state != IBV_QPS_RTS)) return IBV_WC_RETRY_EXC_ERR;
  int m = findMr(r, write.rkey);
  if (m < 0 || r->mrs[m].pid != dest.pid || r->mrs[m].pd != dest.pd ||
      (r->mrs[m].access & IBV_ACCESS_REMOTE_WRITE) == 0 || !inside(write.remoteAddr, write.bytes, r->mrs[m]))
    return IBV_WC_REM_ACCESS_ERR;
  if (write.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    if (dest.recvHead == dest.recvTail) return IBV_WC_RNR_RETRY_EXC_ERR;
    if (!cqHasRoom(r->cqs[dest.recvCq])) return IBV_WC_REM_OP_ERR;
  }
  return IBV_WC_SUCCESS;
}

void completeReceive(Registry* r, QpSlot& dest, uint32_t srcQpn, const WriteRequest& write) {
  if (write.opcode != IBV_WR_RDMA_WRITE_WITH_IMM) return;
  ibv_wc wc{};
  wc.wr_id = dest.recvWrIds[dest.recvHead++ % kRecvDepth];
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
  wc.byte_len = static_cast<uint32_t>(write.bytes);
  wc.imm_data = write.imm;
  wc.qp_num = dest.qpn;
  wc.src_qp = srcQpn;
  wc.wc_flags = IBV_WC_WITH_IMM;
  deliverReceive(r, dest, wc);
}

bool linkFailed(Registry* r) {
  static long writes = 0;  // this process's; counted under the registry's lock
  const long allowed = failAfterWrites();
  if (allowed < 0 || ++writes <= allowed) return false;
  for (QpSlot& q : r->qps)
    if (q.pid == getpid()) q.state = IBV_QPS_ERR;
  return true;
}

int postSend(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  EmuQp* qp = emu(ibqp);
  Registry* r = registry();
  Locked lock(r);
  QpSlot& self = r->qps[qp->slot];
  CqSlot& cq = r->cqs[self.sendCq];
  for (; wr != nullptr; wr = wr->next) {
    if (int err = validate(*qp, self, cq, *wr); err != 0) {
      *bad = wr;
      return errno = err, err;
    }
    ibv_send_wr sent = *wr;
    if (sent.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) sent.imm_data |= immediateOr();  // fault injection
    if (carriedQp(r, self)) {
      carriedWrite(r, qp, self, sent);
      continue;
    }
    ibv_wc_status status = self.state == IBV_QPS_ERR ? IBV_WC_WR_FLUSH_ERR
                           : linkFailed(r)           ? IBV_WC_RETRY_EXC_ERR
                                                     : rdmaWrite(r, self, sent);
    if (status != IBV_WC_SUCCESS) self.state = qp->qp.state = IBV_QPS_ERR;
    if (status == IBV_WC_SUCCESS && !qp->signalAll && (wr->send_flags & IBV_SEND_SIGNALED) == 0) continue;
    ibv_wc wc{};
    wc.wr_id = wr->wr_id;
    wc.status = status;
    wc.opcode = IBV_WC_RDMA_WRITE;
    wc.qp_num = self.qpn;
    pushCompletion(&cq, wc);
  }
  return 0;
}

int postRecv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  EmuQp* qp = emu(ibqp);
  Registry* r = registry();
  Locked lock(r);
  QpSlot& self = r->qps[qp->slot];
  for (; wr != nullptr; wr = wr->next) {
    int err = self.state == IBV_QPS_RESET || wr->num_sge < 0 || wr->num_sge > kMaxSge ? EINVAL
              : self.recvTail - self.recvHead >= self.maxRecv                         ? ENOMEM
                                                                                      : 0;
    if (err != 0) {
      *bad = wr;
      return errno = err, err;
    }
    if (self.state == IBV_QPS_ERR) {
      ibv_wc wc{};
      wc.wr_id = wr->wr_id;
      wc.status = IBV_WC_WR_FLUSH_ERR;
      wc.opcode = IBV_WC_RECV;
      wc.qp_num = self.qpn;
      pushCompletion(&r->cqs[self.recvCq], wc);
      continue;
    }
    self.recvWrIds[self.recvTail++ % kRecvDepth] = wr->wr_id;
  }
  return 0;
}

int pollCq(ibv_cq* ibcq, int entries, ibv_wc* wc) {
  Registry* r = registry();
  Locked lock(r);
  CqSlot& cq = r->cqs[emu(ibcq)->slot];
  // Held completions wait for a later one at most a few empty polls: late, never lost.
  constexpr uint32_t kIdlePollsBeforeRelease = 4;
  if (cq.tail == cq.head && cq.heldCount > 0 && ++cq.idlePolls >= kIdlePollsBeforeRelease)
    releaseHeld(r, &cq, false);
  int n = std::min<int>(entries, static_cast<int>(cq.tail - cq.head));
  for (int i = 0; i < n; i++) wc[i] = cq.entries[cq.head++ % kCqDepth];
  return n;
}

}  // namespace verbs_emu
