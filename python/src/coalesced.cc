// The coalesced collectives: several tensors, one library call. Torch hands a list of tensors
// (DDP's bucket views, FSDP's and DeepSpeed's parameter groups, _coalescing_manager blocks); they
// are packed into one flat buffer so that the ranks pay one call's latency, not one per tensor,
// and unpacked into the caller's tensors when the call is done.
#include <c10/util/Exception.h>

#include <functional>

#include "library_call.h"
#include "process_group.h"

namespace torch_collective {
namespace {

// Every tensor dense, on the CPU or CUDA, and of the first one's element type: one buffer has one
// type.
void checkSameType(const std::vector<at::Tensor>& tensors, const char* op, const char* what) {
  TORCH_CHECK(!tensors.empty(), "collective backend: ", op, ": ", what, " is empty, expected at least one tensor");
  for (const at::Tensor& tensor : tensors) {
    checkDenseTensor(tensor, op);
    TORCH_CHECK(tensor.scalar_type() == tensors[0].scalar_type(), "collective backend: ", op, ": ", what,
                " mixes tensors of type ", tensors[0].scalar_type(), " and ", tensor.scalar_type(),
                ", expected one type (coalesce each type separately)");
  }
}

// The two halves of an all-gather of several tensors packed into one buffer: `issue` gathers
// every rank's packed inputs, rank-major (rank r's are elements [r*total, (r+1)*total));
// `finish` copies tensor i of rank r (count elements) to destination(i, r, count). Both
// all-gather forms use it; they differ only in where tensor i of rank r goes.
struct PackedAllGather {
  std::function<void()> issue;
  std::function<void()> finish;
};

PackedAllGather packedAllGather(const std::vector<at::Tensor>& inputs, collDataType_t type, collComm_t comm,
                                collStream_t stream, int ranks,
                                std::function<at::Tensor(size_t tensor, int rank, int64_t count)> destination) {
  at::Tensor packed = packTensors(inputs);
  const int64_t total = packed.numel();
  at::Tensor gathered = flatBufferFor(packed, ranks);
  std::vector<int64_t> counts;
  for (const at::Tensor& input : inputs) counts.push_back(input.numel());
  PackedAllGather call;
  call.issue = [=] { checkResult(collAllGather(packed.data_ptr(), gathered.data_ptr(), total, type, comm, stream)); };
  call.finish = [=] {
    for (int rank = 0; rank < ranks; ++rank) {
      int64_t offset = rank * total;
      for (size_t i = 0; i < counts.size(); ++i) {
        at::Tensor target = destination(i, rank, counts[i]);
        target.copy_(gathered.narrow(0, offset, counts[i]).view(target.sizes()));
        offset += counts[i];
      }
    }
  };
  return call;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                           const c10d::AllreduceCoalescedOptions& opts) {
  checkSameType(tensors, "allreduce_coalesced", "the tensor list");
  collDataType_t type = collTypeOf(tensors[0], Combines::kYes, "allreduce_coalesced");
  collRedOp_t op = collOpOf(opts.reduceOp, "allreduce_coalesced");
  std::shared_ptr<DeviceCall> device = deviceCallOf("allreduce_coalesced", tensors);
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  at::Tensor flat = packTensors(tensors);
  collComm_t comm = comm_.handle();
  std::vector<at::Tensor> outputs = tensors;
  return enqueue(
      c10d::OpType::ALLREDUCE_COALESCED, outputs, outputs, device,
      [=] { checkResult(collAllReduce(flat.data_ptr(), flat.data_ptr(), flat.numel(), type, op, comm, stream)); },
      [=] { unpackTensors(flat, outputs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputTensors,
    const c10d::AllgatherOptions& /*opts*/) {
  checkSameType(inputTensors, "allgather_coalesced", "the input list");
  // torch's layout: outputTensorLists[r][i] receives rank r's input i.
  TORCH_CHECK(static_cast<int>(outputTensorLists.size()) == getSize(), "collective backend: allgather_coalesced: ",
              outputTensorLists.size(), " output lists, expected one per rank (", getSize(), ")");
  for (const std::vector<at::Tensor>& list : outputTensorLists) {
    TORCH_CHECK(list.size() == inputTensors.size(), "collective backend: allgather_coalesced: an output list has ",
                list.size(), " tensors, expected one per input (", inputTensors.size(), ")");
    for (size_t i = 0; i < list.size(); ++i)
      checkMatchingTensors({list[i]}, inputTensors[i], 1, "allgather_coalesced", "an output list");
  }
  collDataType_t type = collTypeOf(inputTensors[0], Combines::kNo, "allgather_coalesced");
  std::vector<std::vector<at::Tensor>> outputLists = outputTensorLists;
  std::vector<at::Tensor> outputs;
  for (const auto& list : outputLists) outputs.insert(outputs.end(), list.begin(), list.end());
  std::shared_ptr<DeviceCall> device = deviceCallOf("allgather_coalesced", withTensors(outputs, inputTensors));
  const IssueOnCallStream issuing(device);
  PackedAllGather call = packedAllGather(inputTensors, type, comm_.handle(), streamOf(device), getSize(),
                                         [outputLists](size_t i, int rank, int64_t) { return outputLists[rank][i]; });
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, outputs, inputTensors, std::move(device), std::move(call.issue),
                 std::move(call.finish));
}

#if TORCH_COLLECTIVE_HAS_TENSOR_COALESCED
c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& /*opts*/) {
  const char* op = "allgather_into_tensor_coalesced";
  checkSameType(inputs, op, "the input list");
  TORCH_CHECK(outputs.size() == inputs.size(), "collective backend: ", op, ": ", outputs.size(), " outputs for ",
              inputs.size(), " inputs, expected one output per input");
  for (size_t i = 0; i < inputs.size(); ++i) checkSlicedPair(outputs[i], inputs[i], getSize(), op, "output");
  collDataType_t type = collTypeOf(inputs[0], Combines::kNo, op);
  std::vector<at::Tensor> out = outputs;
  std::shared_ptr<DeviceCall> device = deviceCallOf(op, withTensors(out, inputs));
  const IssueOnCallStream issuing(device);
  PackedAllGather call = packedAllGather(inputs, type, comm_.handle(), streamOf(device), getSize(),
                                         [out](size_t i, int rank, int64_t count) {
                                           return out[i].view({-1}).narrow(0, rank * count, count);
                                         });
  return enqueue(c10d::OpType::COALESCED, out, inputs, std::move(device), std::move(call.issue),
                 std::move(call.finish));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor_coalesced";
  checkSameType(outputs, op, "the output list");
  TORCH_CHECK(outputs.size() == inputs.size(), "collective backend: ", op, ": ", outputs.size(), " outputs for ",
              inputs.size(), " inputs, expected one input per output");
  for (size_t i = 0; i < inputs.size(); ++i) checkSlicedPair(inputs[i], outputs[i], getSize(), op, "input");
  collDataType_t type = collTypeOf(outputs[0], Combines::kYes, op);
  collRedOp_t reduceOp = collOpOf(opts.reduceOp, op);
  std::shared_ptr<DeviceCall> device = deviceCallOf(op, withTensors(outputs, inputs));
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  // The library scatters slice r of one buffer to rank r: lay out every input's slice r together.
  std::vector<at::Tensor> pieces;
  for (int rank = 0; rank < getSize(); ++rank)
    for (size_t i = 0; i < inputs.size(); ++i) {
      int64_t count = outputs[i].numel();
      pieces.push_back(inputs[i].reshape({-1}).narrow(0, rank * count, count));
    }
  at::Tensor packed = at::cat(pieces);
  int64_t total = packed.numel() / getSize();
  at::Tensor reduced = at::empty({total}, outputs[0].options());
  collComm_t comm = comm_.handle();
  std::vector<at::Tensor> out = outputs;
  return enqueue(
      c10d::OpType::COALESCED, out, inputs, device,
      [=] {
        checkResult(collReduceScatter(packed.data_ptr(), reduced.data_ptr(), total, type, reduceOp, comm, stream));
      },
      [=] { unpackTensors(reduced, out); });
}
#endif

}  // namespace torch_collective
