// The collectives of ProcessGroupCollective: each checks its tensors, stages them as contiguous
// buffers on the calling thread and queues one library call, on the current stream for CUDA
// tensors.
#include <c10/util/Exception.h>

#include "library_call.h"
#include "process_group.h"

namespace torch_collective {
namespace {

bool sameSizes(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors)
    if (tensor.numel() != tensors[0].numel()) return false;
  return true;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::allreduce(std::vector<at::Tensor>& tensors,
                                                                 const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].is_sparse()) return sparseAllreduce(tensors[0], opts.reduceOp);
  const at::Tensor& tensor = singleTensor(tensors, "allreduce");
  if (isBitwiseOp(opts.reduceOp)) return bitwiseAllreduce(tensor, opts.reduceOp);
  collDataType_t type = collTypeOf(tensor, Combines::kYes, "allreduce");
  collRedOp_t op = collOpOf(opts.reduceOp, "allreduce");
  collComm_t comm = comm_.handle();
  return enqueueOnTensor(
      c10d::OpType::ALLREDUCE, "allreduce", tensor,
      [=](void* data, size_t count, collStream_t stream) {
        return collAllReduce(data, data, count, type, op, comm, stream);
      },
      Writes::kYes, CallKind::kCollective, waitsOf(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::broadcast(std::vector<at::Tensor>& tensors,
                                                                 const c10d::BroadcastOptions& opts) {
  const at::Tensor& tensor = singleTensor(tensors, "broadcast");
  collDataType_t type = collTypeOf(tensor, Combines::kNo, "broadcast");
  checkRoot(opts.rootRank, "broadcast");
  int root = static_cast<int>(opts.rootRank);
  collComm_t comm = comm_.handle();
  return enqueueOnTensor(
      c10d::OpType::BROADCAST, "broadcast", tensor,
      [=](void* data, size_t count, collStream_t stream) {
        return collBroadcast(data, data, count, type, root, comm, stream);
      },
      Writes::kYes, CallKind::kCollective, waitsOf(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::reduce(std::vector<at::Tensor>& tensors,
                                                              const c10d::ReduceOptions& opts) {
  const at::Tensor& tensor = singleTensor(tensors, "reduce");
  collDataType_t type = collTypeOf(tensor, Combines::kYes, "reduce");
  collRedOp_t op = collOpOf(opts.reduceOp, "reduce");
  checkRoot(opts.rootRank, "reduce");
  int root = static_cast<int>(opts.rootRank);
  collComm_t comm = comm_.handle();
  // In place: the library writes only the root's buffer, so the others keep their input.
  return enqueueOnTensor(
      c10d::OpType::REDUCE, "reduce", tensor,
      [=](void* data, size_t count, collStream_t stream) {
        return collReduce(data, data, count, type, op, root, comm, stream);
      },
      Writes::kYes, CallKind::kCollective, waitsOf(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                                 std::vector<at::Tensor>& inputTensors,
                                                                 const c10d::AllgatherOptions& /*opts*/) {
  const at::Tensor& input = singleTensor(inputTensors, "allgather");
  TORCH_CHECK(outputTensors.size() == 1, "collective backend: allgather takes one output list per rank, got ",
              outputTensors.size());
  std::vector<at::Tensor> outputs = outputTensors[0];
  if (outputs.size() == static_cast<size_t>(getSize()) && !sameSizes(outputs)) {
    // Rank r's output holds what rank r sends: one collAllGatherV into a flat buffer of every size,
    // which every rank derives alike from its own output list.
    const int rank = getRank();
    for (const at::Tensor& output : outputs) {
      checkDenseTensor(output, "allgather");
      TORCH_CHECK(output.scalar_type() == input.scalar_type(),
                  "collective backend: allgather: the output list holds a tensor of type ", output.scalar_type(),
                  ", expected ", input.scalar_type());
    }
    TORCH_CHECK(outputs[rank].numel() == input.numel(), "collective backend: allgather: this rank's output holds ",
                outputs[rank].numel(), " elements but its input ", input.numel(),
                " (outputs of different sizes: output r receives rank r's input)");
    collDataType_t type = collTypeOf(input, Combines::kNo, "allgather");
    std::shared_ptr<DeviceCall> device = deviceCallOf("allgather", withTensor(outputs, input));
    const IssueOnCallStream issuing(device);
    TORCH_CHECK(!device, "collective backend: allgather: outputs of different sizes take CPU tensors for now ",
                "(collAllGatherV on device memory has not run on a GPU yet)");
    auto counts = std::make_shared<std::vector<size_t>>(), displs = std::make_shared<std::vector<size_t>>();
    size_t total = 0;
    for (const at::Tensor& output : outputs) {
      counts->push_back(static_cast<size_t>(output.numel()));
      displs->push_back(total);
      total += counts->back();
    }
    StagedTensor in(input);
    at::Tensor gathered = at::empty({static_cast<int64_t>(total)}, input.options());
    collComm_t comm = comm_.handle();
    return enqueue(
        c10d::OpType::ALLGATHER, outputs, {input}, device,
        [=] {
          checkResult(collAllGatherV(in.data(), in.count(), gathered.data_ptr(), counts->data(), displs->data(), type,
                                     comm, nullptr));
        },
        [=] { unpackTensors(gathered, outputs); });
  }
  checkMatchingTensors(outputs, input, getSize(), "allgather", "the output list");
  collDataType_t type = collTypeOf(input, Combines::kNo, "allgather");
  std::shared_ptr<DeviceCall> device = deviceCallOf("allgather", withTensor(outputs, input));
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  StagedTensor in(input);
  at::Tensor gathered = flatBufferFor(input, getSize());
  collComm_t comm = comm_.handle();
  return enqueue(
      c10d::OpType::ALLGATHER, outputs, {input}, device,
      [=] { checkResult(collAllGather(in.data(), gathered.data_ptr(), in.count(), type, comm, stream)); },
      [=] { unpackTensors(gathered, outputs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::_allgather_base(at::Tensor& outputBuffer,
                                                                       at::Tensor& inputBuffer,
                                                                       const c10d::AllgatherOptions& opts) {
  checkSlicedPair(outputBuffer, inputBuffer, getSize(), "_allgather_base", "output");
  collDataType_t type = collTypeOf(inputBuffer, Combines::kNo, "_allgather_base");
  std::shared_ptr<DeviceCall> device = deviceCallOf("_allgather_base", {outputBuffer, inputBuffer});
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  StagedTensor in(inputBuffer), out(outputBuffer);
  collComm_t comm = comm_.handle();
  return enqueue(
      c10d::OpType::_ALLGATHER_BASE, {outputBuffer}, {inputBuffer}, device,
      [=] { checkResult(collAllGather(in.data(), out.data(), in.count(), type, comm, stream)); },
      [=] { out.copyBack(); }, CallKind::kCollective, waitsOf(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                              std::vector<at::Tensor>& inputTensors,
                                                              const c10d::GatherOptions& opts) {
  const at::Tensor& input = singleTensor(inputTensors, "gather");
  checkRoot(opts.rootRank, "gather");
  int root = static_cast<int>(opts.rootRank);
  bool isRoot = root == getRank();
  std::vector<at::Tensor> outputs;
  if (isRoot) {
    TORCH_CHECK(outputTensors.size() == 1, "collective backend: gather takes one output list on the root, got ",
                outputTensors.size());
    outputs = outputTensors[0];
    checkMatchingTensors(outputs, input, getSize(), "gather", "the output list");
  } else {
    TORCH_CHECK(outputTensors.empty(), "collective backend: gather takes no output list on a rank that is not root");
  }
  collDataType_t type = collTypeOf(input, Combines::kNo, "gather");
  std::shared_ptr<DeviceCall> device = deviceCallOf("gather", withTensor(outputs, input));
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  StagedTensor in(input);
  at::Tensor gathered = isRoot ? flatBufferFor(input, getSize()) : at::Tensor();
  collComm_t comm = comm_.handle();
  return enqueue(
      c10d::OpType::GATHER, outputs, {input}, device,
      [=] {
        void* recv = isRoot ? gathered.data_ptr() : nullptr;
        checkResult(collGather(in.data(), recv, in.count(), type, root, comm, stream));
      },
      [=] {
        if (isRoot) unpackTensors(gathered, outputs);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::scatter(std::vector<at::Tensor>& outputTensors,
                                                               std::vector<std::vector<at::Tensor>>& inputTensors,
                                                               const c10d::ScatterOptions& opts) {
  const at::Tensor& output = singleTensor(outputTensors, "scatter");
  checkRoot(opts.rootRank, "scatter");
  int root = static_cast<int>(opts.rootRank);
  bool isRoot = root == getRank();
  at::Tensor pieces;
  if (isRoot) {
    TORCH_CHECK(inputTensors.size() == 1, "collective backend: scatter takes one input list on the root, got ",
                inputTensors.size());
    checkMatchingTensors(inputTensors[0], output, getSize(), "scatter", "the input list");
    pieces = packTensors(inputTensors[0]);
  } else {
    TORCH_CHECK(inputTensors.empty(), "collective backend: scatter takes no input list on a rank that is not root");
  }
  collDataType_t type = collTypeOf(output, Combines::kNo, "scatter");
  std::shared_ptr<DeviceCall> device =
      deviceCallOf("scatter", isRoot ? withTensor(inputTensors[0], output) : std::vector<at::Tensor>{output});
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  StagedTensor out(output);
  collComm_t comm = comm_.handle();
  return enqueue(
      c10d::OpType::SCATTER, {output}, isRoot ? inputTensors[0] : std::vector<at::Tensor>{}, device,
      [=] {
        const void* send = isRoot ? pieces.data_ptr() : nullptr;
        checkResult(collScatter(send, out.data(), out.count(), type, root, comm, stream));
      },
      [=] { out.copyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::reduce_scatter(
    std::vector<at::Tensor>& outputTensors, std::vector<std::vector<at::Tensor>>& inputTensors,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& output = singleTensor(outputTensors, "reduce_scatter");
  TORCH_CHECK(inputTensors.size() == 1, "collective backend: reduce_scatter takes one input list per rank, got ",
              inputTensors.size());
  checkMatchingTensors(inputTensors[0], output, getSize(), "reduce_scatter", "the input list");
  collDataType_t type = collTypeOf(output, Combines::kYes, "reduce_scatter");
  collRedOp_t op = collOpOf(opts.reduceOp, "reduce_scatter");
  std::shared_ptr<DeviceCall> device = deviceCallOf("reduce_scatter", withTensor(inputTensors[0], output));
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  at::Tensor pieces = packTensors(inputTensors[0]);
  StagedTensor out(output);
  collComm_t comm = comm_.handle();
  return enqueue(
      c10d::OpType::REDUCE_SCATTER, {output}, inputTensors[0], device,
      [=] { checkResult(collReduceScatter(pieces.data_ptr(), out.data(), out.count(), type, op, comm, stream)); },
      [=] { out.copyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::_reduce_scatter_base(at::Tensor& outputBuffer,
                                                                            at::Tensor& inputBuffer,
                                                                            const c10d::ReduceScatterOptions& opts) {
  checkSlicedPair(inputBuffer, outputBuffer, getSize(), "_reduce_scatter_base", "input");
  collDataType_t type = collTypeOf(outputBuffer, Combines::kYes, "_reduce_scatter_base");
  collRedOp_t op = collOpOf(opts.reduceOp, "_reduce_scatter_base");
  std::shared_ptr<DeviceCall> device = deviceCallOf("_reduce_scatter_base", {outputBuffer, inputBuffer});
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  StagedTensor in(inputBuffer), out(outputBuffer);
  collComm_t comm = comm_.handle();
  return enqueue(
      c10d::OpType::_REDUCE_SCATTER_BASE, {outputBuffer}, {inputBuffer}, device,
      [=] { checkResult(collReduceScatter(in.data(), out.data(), out.count(), type, op, comm, stream)); },
      [=] { out.copyBack(); }, CallKind::kCollective, waitsOf(opts));
}

}  // namespace torch_collective
