// Carrying RDMA writes between network namespaces over TCP (COLL_VERBS_EMU_TCP=1), so that
// tests/multihost's "hosts" (network namespaces of one machine) talk verbs through their own
// network: a link taken down there fails the writes, as a cable pulled fails a real fabric's.
//
// Without it every write goes by process_vm_writev, whatever namespace the peer is in (they share
// one kernel). With it, each process that creates a QP runs a carrier: a thread with a TCP
// listener, whose port and IPv4 addresses it publishes in its QPs' registry slots. A QP whose
// peer lives in another network namespace (decided at its first write, and kept, so that its
// completions stay in order) hands each write to its carrier, which sends it, header and bytes, on
// a TCP connection of that QP to the peer's carrier. The peer's carrier makes the responder's
// checks (emu_write.h: admit), lands the bytes in its own process's memory, completes the
// receive, and answers with the status; the writer's carrier then completes the send, in order.
//
// What real RC reports after its retries, the carrier reports the same way: a write not answered
// within the QP's retry time (4.096 us x 2^timeout x (retry_cnt + 1), from RTS), a connection
// that cannot be made or breaks (the peer's process ended, the link is down) complete with
// IBV_WC_RETRY_EXC_ERR; the QP goes to ERR and the writes behind it complete with WR_FLUSH_ERR.
// The control path (QP numbers, keys, states) stays in the shared registry.
#pragma once

#include <cstdint>

#include "emu_registry.h"
#include "emu_write.h"

namespace verbs_emu {

// COLL_VERBS_EMU_TCP, read once per process: unset or 0, no carrier; 1, writes to a QP in another
// network namespace are carried; `all` (test-only), writes to a QP of any other process are, over
// loopback within a namespace, so that the carrier's tests need no namespaces (nor root).
enum class Carriage { kOff, kAcrossNamespaces, kAll };
Carriage tcpCarriage();

// At QP creation (registry lock held): records the owner's network namespace and, with carriage
// on, starts this process's carrier if it has none and publishes where it listens.
void publishCarrier(QpSlot* slot);

// Whether QP `self`'s writes go by the carrier (registry lock held; decided at its first write
// that finds its peer).
bool carriedQp(Registry* r, QpSlot& self);

// Hands a write of QP `self` to the carrier (registry lock held). With `status` IBV_WC_SUCCESS its
// bytes (`g`, copied now) travel to the peer; otherwise it completes with that status, behind the
// QP's earlier writes. The send completion comes from the carrier's thread (always for an error,
// else only when `signaled`).
// `qp` is the process's own object, whose state an error completion sets to ERR as well.
void carryWrite(Registry* r, QpSlot& self, ibv_qp* qp, uint64_t wrId, bool signaled, const WriteRequest& write,
                const Gathered& g, ibv_wc_status status);

// QP `qpn` was destroyed (registry lock held): its connection closes and what it still waited for
// is dropped.
void forgetQp(Registry* r, uint32_t qpn);

}  // namespace verbs_emu
