#include "tests/verbs_emulator/verbs_test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace coll {
namespace verbs_test {
namespace {

using Clock = std::chrono::steady_clock;

void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string(what) + " failed: " + std::strerror(errno));
}

}  // namespace

std::shared_ptr<const transport::VerbsApi> loadEmulator() {
  std::string reason;
  auto api = transport::loadVerbsApi(COLL_VERBS_EMULATOR_PATH, &reason);
  if (api == nullptr) throw std::runtime_error(reason);
  return api;
}

VerbsEndpoint::VerbsEndpoint(std::shared_ptr<const transport::VerbsApi> api, size_t bytes)
    : api_(std::move(api)), buffer_(bytes) {
  int count = 0;
  ibv_device** list = api_->getDeviceList(&count);
  require(list != nullptr && count > 0, "ibv_get_device_list");
  ctx_ = api_->openDevice(list[0]);
  api_->freeDeviceList(list);
  require(ctx_ != nullptr, "ibv_open_device");
  pd_ = api_->allocPd(ctx_);
  require(pd_ != nullptr, "ibv_alloc_pd");
  mr_ = api_->regMr(pd_, buffer_.data(), buffer_.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  require(mr_ != nullptr, "ibv_reg_mr");
  cq_ = api_->createCq(ctx_, 16, nullptr, nullptr, 0);
  require(cq_ != nullptr, "ibv_create_cq");
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq_;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 8;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 64;
  qp_ = api_->createQp(pd_, &init);
  require(qp_ != nullptr, "ibv_create_qp");
}

VerbsEndpoint::~VerbsEndpoint() {
  if (qp_ != nullptr) api_->destroyQp(qp_);
  if (cq_ != nullptr) api_->destroyCq(cq_);
  if (mr_ != nullptr) api_->deregMr(mr_);
  if (pd_ != nullptr) api_->deallocPd(pd_);
  if (ctx_ != nullptr) api_->closeDevice(ctx_);
}

void VerbsEndpoint::deregister() {
  errno = api_->deregMr(mr_);
  require(errno == 0, "ibv_dereg_mr");
  mr_ = nullptr;
}

ConnectionInfo VerbsEndpoint::info() const {
  return ConnectionInfo{qp_->qp_num, reinterpret_cast<uint64_t>(buffer_.data()), mr_->rkey};
}

void VerbsEndpoint::connect(uint32_t remoteQpn, int last) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  errno = api_->modifyQp(qp_, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  require(errno == 0, "ibv_modify_qp(INIT)");
  if (last == IBV_QPS_INIT) return;
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_4096;
  attr.dest_qp_num = remoteQpn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.dlid = 1;
  attr.ah_attr.port_num = 1;
  errno = api_->modifyQp(qp_, &attr,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  require(errno == 0, "ibv_modify_qp(RTR)");
  if (last == IBV_QPS_RTR) return;
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  errno = api_->modifyQp(
      qp_, &attr,
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  require(errno == 0, "ibv_modify_qp(RTS)");
}

void VerbsEndpoint::postRecv(uint64_t wrId) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = wrId;
  errno = transport::VerbsApi::postRecv(qp_, &wr, &bad);
  require(errno == 0, "ibv_post_recv");
}

int VerbsEndpoint::postWrite(const ConnectionInfo& to, uint32_t bytes, const uint32_t* imm, bool inlineData) {
  ibv_sge sge{reinterpret_cast<uint64_t>(buffer_.data()), bytes, mr_->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = 42;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = imm != nullptr ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | (inlineData ? IBV_SEND_INLINE : 0);
  if (imm != nullptr) wr.imm_data = *imm;
  wr.wr.rdma.remote_addr = to.addr;
  wr.wr.rdma.rkey = to.rkey;
  return transport::VerbsApi::postSend(qp_, &wr, &bad);
}

bool VerbsEndpoint::pollOne(ibv_wc* wc, int timeoutMs) {
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  do {
    int n = transport::VerbsApi::pollCq(cq_, 1, wc);
    if (n < 0) throw std::runtime_error("ibv_poll_cq failed");
    if (n == 1) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  } while (Clock::now() < deadline);
  return false;
}

Channel::Channel() { require(pipe2(toChild_, O_CLOEXEC) == 0 && pipe2(toParent_, O_CLOEXEC) == 0, "pipe2"); }

Channel::~Channel() {
  for (int fd : {toChild_[0], toChild_[1], toParent_[0], toParent_[1]})
    if (fd >= 0) close(fd);
}

void Channel::becomeChild() {
  in_ = toChild_[0];
  out_ = toParent_[1];
}

void Channel::becomeParent() {
  in_ = toParent_[0];
  out_ = toChild_[1];
}

void Channel::send(const void* data, size_t bytes) {
  require(write(out_, data, bytes) == static_cast<ssize_t>(bytes), "write to pipe");
}

void Channel::receive(void* data, size_t bytes, int timeoutMs) {
  auto* p = static_cast<uint8_t*>(data);
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  while (bytes > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{in_, POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) <= 0) throw std::runtime_error("pipe: no message in time");
    ssize_t n = read(in_, p, bytes);
    if (n <= 0) throw std::runtime_error("pipe: peer closed");
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

pid_t forkChild(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int code = 1;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", getpid(), e.what());
  }
  _exit(code);
}

int waitChild(pid_t pid, int timeoutMs) {
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace verbs_test
}  // namespace coll
