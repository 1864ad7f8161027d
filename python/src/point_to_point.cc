// Point-to-point calls and all_to_all. Sends and receives carry no tag in libcollective: between
// two ranks they match in the order they were posted, which is also the order torch issues them.
// An uneven all_to_all_single of host tensors is one collAllToAllV.
#include <c10/util/Exception.h>

#include <cstring>

#include "library_call.h"
#include "process_group.h"

namespace torch_collective {
namespace {

// The per-rank pieces of an all_to_all_single buffer, cut along dimension 0 by `splitSizes`
// (rows per rank; empty: equal parts).
std::vector<Segment> splitAlongRows(const StagedTensor& staged, const at::Tensor& tensor,
                                    const std::vector<int64_t>& splitSizes, int ranks, const char* what) {
  TORCH_CHECK(tensor.dim() > 0, "collective backend: alltoall_base: the ", what, " must have at least one dimension");
  int64_t rows = tensor.size(0);
  int64_t rowElements = rows > 0 ? tensor.numel() / rows : 0;
  std::vector<int64_t> splits = splitSizes;
  if (splits.empty()) {
    TORCH_CHECK(rows % ranks == 0, "collective backend: alltoall_base: the ", what, "'s ", rows,
                " rows do not split evenly over ", ranks, " ranks");
    splits.assign(ranks, rows / ranks);
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == ranks, "collective backend: alltoall_base: ", splits.size(), " ", what,
              " split sizes, expected ", ranks, " (one per rank)");
  std::vector<Segment> segments(ranks);
  int64_t row = 0;
  for (int r = 0; r < ranks; ++r) {
    TORCH_CHECK(splits[r] >= 0, "collective backend: alltoall_base: negative ", what, " split size ", splits[r]);
    segments[r].data = static_cast<char*>(staged.data()) + row * rowElements * tensor.element_size();
    segments[r].count = static_cast<size_t>(splits[r] * rowElements);
    row += splits[r];
  }
  TORCH_CHECK(row == rows, "collective backend: alltoall_base: the ", what, " split sizes add up to ", row,
              " rows, but the ", what, " has ", rows);
  return segments;
}

// The counts and displacements of collAllToAllV, in elements, read off the segments of one
// staged buffer each.
struct VariableCounts {
  std::vector<size_t> sendcounts, sdispls, recvcounts, rdispls;
};

void countsOf(const std::vector<Segment>& segments, const StagedTensor& staged, size_t elementSize,
              std::vector<size_t>* counts, std::vector<size_t>* displs) {
  for (const Segment& segment : segments) {
    counts->push_back(segment.count);
    displs->push_back(static_cast<size_t>(static_cast<char*>(segment.data) - static_cast<char*>(staged.data())) /
                      elementSize);
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                            int /*tag*/) {
  const at::Tensor& tensor = singleTensor(tensors, "send");
  checkPeer(dstRank, "send");
  collDataType_t type = collTypeOf(tensor, Combines::kNo, "send");
  collComm_t comm = comm_.handle();
  std::shared_ptr<AnySourceMatcher> anySource = anySource_;
  auto call = [=](void* data, size_t count, collStream_t stream) {
    anySource->noteSend(dstRank, stream != nullptr);
    return collSend(data, count, type, dstRank, comm, stream);
  };
  return enqueueOnTensor(c10d::OpType::SEND, "send", tensor, call, Writes::kNo, CallKind::kPointToPoint,
                         CallerWaits::kLater, dstRank);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                            int /*tag*/) {
  const at::Tensor& tensor = singleTensor(tensors, "recv");
  checkPeer(srcRank, "recv");
  collDataType_t type = collTypeOf(tensor, Combines::kNo, "recv");
  collComm_t comm = comm_.handle();
  std::shared_ptr<AnySourceMatcher> anySource = anySource_;
  auto call = [=](void* data, size_t count, collStream_t stream) {
    anySource->noteRecv(srcRank, stream != nullptr);
    return collRecv(data, count, type, srcRank, comm, stream);
  };
  return enqueueOnTensor(c10d::OpType::RECV, "recv", tensor, call, Writes::kYes, CallKind::kPointToPoint,
                         CallerWaits::kLater, srcRank);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::recvAnysource(std::vector<at::Tensor>& tensors, int /*tag*/) {
  const at::Tensor& tensor = singleTensor(tensors, "recvAnysource");
  collDataType_t type = collTypeOf(tensor, Combines::kNo, "recvAnysource");
  TORCH_CHECK(getSize() > 1, "collective backend: recv from any source in a group of one rank: no rank can send");
  std::shared_ptr<DeviceCall> device = deviceCallOf("recvAnysource", {tensor});
  const IssueOnCallStream issuing(device);
  const bool onDevice = device != nullptr;
  TORCH_CHECK(anySource_->available(onDevice), "collective backend: recv from any source is off in this group",
              " (its ranks do not all share one host's memory, so sends are counted in the store, and",
              " TORCH_COLLECTIVE_ANY_SOURCE=0 or a group without a store turned that off)");
  collStream_t stream = streamOf(device);
  StagedTensor data(tensor);
  collComm_t comm = comm_.handle();
  std::shared_ptr<AnySourceMatcher> anySource = anySource_;
  auto source = std::make_shared<std::atomic<int>>(-1);
  const std::chrono::milliseconds timeout(comm_.timeoutMs());
  auto issue = [=] {
    if (anySource->inLibrary(onDevice)) {
      int sender = -1;
      checkResult(collRecvAny(data.data(), data.count(), type, &sender, comm, stream));
      source->store(sender);
      return;
    }
    const int sender = anySource->claimSender(timeout);
    source->store(sender);
    checkResult(collRecv(data.data(), data.count(), type, sender, comm, stream));
  };
  // A collective as far as the queue goes: held calls before it start first, and it runs alone.
  c10::intrusive_ptr<c10d::Work> work = enqueue(
      c10d::OpType::RECVANYSOURCE, {tensor}, {tensor}, std::move(device), issue, [data] { data.copyBack(); },
      CallKind::kCollective);
  static_cast<CollectiveWork*>(work.get())->setSourceCell(std::move(source));
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::exchangeWithEveryRank(
    c10d::OpType type, std::vector<at::Tensor> outputs, const std::vector<at::Tensor>& inputs,
    std::shared_ptr<DeviceCall> device, std::vector<Segment> sends, std::vector<Segment> recvs, collDataType_t datatype,
    size_t elementSize, std::function<void()> finish) {
  int rank = getRank(), ranks = getSize();
  TORCH_CHECK(sends[rank].count == recvs[rank].count, "collective backend: all_to_all: this rank sends itself ",
              sends[rank].count, " elements but expects ", recvs[rank].count);
  collComm_t comm = comm_.handle();
  collStream_t stream = streamOf(device);
  auto issue = [=] {
    const size_t ownBytes = sends[rank].count * elementSize;
    if (device) {
      device->copyOnStream(recvs[rank].data, sends[rank].data, ownBytes);
    } else if (ownBytes > 0) {
      memcpy(recvs[rank].data, sends[rank].data, ownBytes);
    }
    runAsGroup([&] {
      for (int peer = 0; peer < ranks; ++peer) {
        if (peer == rank) continue;
        checkResult(collSend(sends[peer].data, sends[peer].count, datatype, peer, comm, stream));
        checkResult(collRecv(recvs[peer].data, recvs[peer].count, datatype, peer, comm, stream));
      }
    });
  };
  // `finish` holds the staged buffers that the segments point into until the call is done.
  return enqueue(type, std::move(outputs), inputs, std::move(device), issue, std::move(finish));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                                     std::vector<int64_t>& outputSplitSizes,
                                                                     std::vector<int64_t>& inputSplitSizes,
                                                                     const c10d::AllToAllOptions& /*opts*/) {
  checkDenseTensor(outputBuffer, "alltoall_base");
  checkDenseTensor(inputBuffer, "alltoall_base");
  TORCH_CHECK(outputBuffer.scalar_type() == inputBuffer.scalar_type(),
              "collective backend: alltoall_base: output type ", outputBuffer.scalar_type(),
              " differs from input type ", inputBuffer.scalar_type());
  collDataType_t type = collTypeOf(inputBuffer, Combines::kNo, "alltoall_base");
  std::shared_ptr<DeviceCall> device = deviceCallOf("alltoall_base", {outputBuffer, inputBuffer});
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  StagedTensor in(separateFrom(inputBuffer, outputBuffer)), out(outputBuffer);
  collComm_t comm = comm_.handle();
  int ranks = getSize();
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(in.count() == out.count() && in.count() % ranks == 0, "collective backend: alltoall_base: input (",
                in.count(), " elements) and output (", out.count(), ") must be equal and split evenly over ", ranks,
                " ranks");
    return enqueue(
        c10d::OpType::ALLTOALL_BASE, {outputBuffer}, {inputBuffer}, device,
        [=] { checkResult(collAllToAll(in.data(), out.data(), in.count() / ranks, type, comm, stream)); },
        [=] { out.copyBack(); });
  }
  std::vector<Segment> sends = splitAlongRows(in, inputBuffer, inputSplitSizes, ranks, "input");
  std::vector<Segment> recvs = splitAlongRows(out, outputBuffer, outputSplitSizes, ranks, "output");
  if (!device) {
    // Host memory: one collAllToAllV, which checks every pair's count as it moves the bytes.
    // Device tensors still go through grouped sends and receives below: the library's
    // variable-count calls on device memory have not run on a GPU yet (docs/cuda.md).
    auto counts = std::make_shared<VariableCounts>();
    const size_t elementSize = inputBuffer.element_size();
    countsOf(sends, in, elementSize, &counts->sendcounts, &counts->sdispls);
    countsOf(recvs, out, elementSize, &counts->recvcounts, &counts->rdispls);
    return enqueue(
        c10d::OpType::ALLTOALL_BASE, {outputBuffer}, {inputBuffer}, device,
        [=] {
          checkResult(collAllToAllV(in.data(), counts->sendcounts.data(), counts->sdispls.data(), out.data(),
                                    counts->recvcounts.data(), counts->rdispls.data(), type, comm, nullptr));
        },
        [=] { out.copyBack(); });
  }
  return exchangeWithEveryRank(c10d::OpType::ALLTOALL_BASE, {outputBuffer}, {inputBuffer}, std::move(device),
                               std::move(sends), std::move(recvs), type, inputBuffer.element_size(),
                               [in, out] { out.copyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::alltoall(std::vector<at::Tensor>& outputTensors,
                                                                std::vector<at::Tensor>& inputTensors,
                                                                const c10d::AllToAllOptions& /*opts*/) {
  int ranks = getSize();
  TORCH_CHECK(static_cast<int>(inputTensors.size()) == ranks && static_cast<int>(outputTensors.size()) == ranks,
              "collective backend: alltoall takes one input and one output tensor per rank, got ", inputTensors.size(),
              " and ", outputTensors.size());
  const at::Tensor& first = inputTensors[0];
  collDataType_t type = collTypeOf(first, Combines::kNo, "alltoall");
  std::shared_ptr<DeviceCall> device = deviceCallOf("alltoall", withTensors(inputTensors, outputTensors));
  const IssueOnCallStream issuing(device);
  std::vector<StagedTensor> ins, outs;
  std::vector<Segment> sends(ranks), recvs(ranks);
  for (int r = 0; r < ranks; ++r) {
    for (const at::Tensor* tensor : {&inputTensors[r], &outputTensors[r]}) {
      checkDenseTensor(*tensor, "alltoall");
      TORCH_CHECK(tensor->scalar_type() == first.scalar_type(), "collective backend: alltoall: a tensor of type ",
                  tensor->scalar_type(), " among tensors of type ", first.scalar_type());
    }
    ins.emplace_back(separateFrom(inputTensors[r], outputTensors[r]));
    outs.emplace_back(outputTensors[r]);
    sends[r] = {ins.back().data(), ins.back().count()};
    recvs[r] = {outs.back().data(), outs.back().count()};
  }
  return exchangeWithEveryRank(c10d::OpType::ALLTOALL, outputTensors, inputTensors, std::move(device), std::move(sends),
                               std::move(recvs), type, first.element_size(), [ins, outs] {
                                 for (const StagedTensor& out : outs) out.copyBack();
                               });
}

}  // namespace torch_collective
