#include "tensor_staging.h"

#include <c10/util/Exception.h>

namespace torch_collective {

namespace {

struct TypePair {
  at::ScalarType torch;
  collDataType_t library;
};
constexpr TypePair kTypes[] = {{at::kChar, collInt8},      {at::kByte, collUint8},       {at::kInt, collInt32},
                               {at::kLong, collInt64},     {at::kHalf, collFloat16},     {at::kFloat, collFloat32},
                               {at::kDouble, collFloat64}, {at::kBFloat16, collBfloat16}};

struct OpPair {
  c10d::ReduceOp::RedOpType torch;
  collRedOp_t library;
};
constexpr OpPair kOps[] = {{c10d::ReduceOp::SUM, collSum},
                           {c10d::ReduceOp::PRODUCT, collProd},
                           {c10d::ReduceOp::MIN, collMin},
                           {c10d::ReduceOp::MAX, collMax},
                           {c10d::ReduceOp::AVG, collAvg}};

}  // namespace

collDataType_t collTypeOf(const at::Tensor& tensor, Combines combines, const char* op) {
  for (const TypePair& pair : kTypes)
    if (pair.torch == tensor.scalar_type()) return pair.library;
  if (tensor.scalar_type() == at::kBool && combines == Combines::kNo) return collUint8;
  TORCH_CHECK(false, "collective backend: ", op, " does not support tensors of type ", tensor.scalar_type(),
              combines == Combines::kYes ? " in reductions" : "",
              ": expected float32, float64, float16, bfloat16, int8, uint8, int32 or int64");
}

collRedOp_t collOpOf(const c10d::ReduceOp& reduceOp, const char* op) {
  for (const OpPair& pair : kOps)
    if (pair.torch == reduceOp.op_) return pair.library;
  TORCH_CHECK(false, "collective backend: ", op, " does not support ReduceOp ", static_cast<int>(reduceOp.op_),
              ": expected SUM, PRODUCT, MIN, MAX or AVG");
}

void checkDenseTensor(const at::Tensor& tensor, const char* op) {
  TORCH_CHECK(tensor.layout() == at::kStrided, "collective backend: ", op, " takes dense tensors, got layout ",
              tensor.layout());
  TORCH_CHECK(tensor.device().is_cpu() || tensor.device().is_cuda(), "collective backend: ", op,
              " takes CPU or CUDA tensors, got one on ", tensor.device());
}

void checkHostTensor(const at::Tensor& tensor, const char* op) {
  checkDenseTensor(tensor, op);
  TORCH_CHECK(tensor.device().is_cpu(), "collective backend: ", op, " takes CPU tensors, got one on ", tensor.device());
}

const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "collective backend: ", op, " takes exactly one tensor per rank, got ",
              tensors.size(), " (the multi-GPU forms are not supported)");
  checkDenseTensor(tensors[0], op);
  return tensors[0];
}

void checkMatchingTensors(const std::vector<at::Tensor>& tensors, const at::Tensor& like, size_t expectedCount,
                          const char* op, const char* what) {
  TORCH_CHECK(tensors.size() == expectedCount, "collective backend: ", op, ": ", what, " has ", tensors.size(),
              " tensors, expected ", expectedCount, " (one per rank)");
  for (const at::Tensor& tensor : tensors) {
    checkDenseTensor(tensor, op);
    TORCH_CHECK(tensor.scalar_type() == like.scalar_type(), "collective backend: ", op, ": ", what,
                " holds a tensor of type ", tensor.scalar_type(), ", expected ", like.scalar_type());
    TORCH_CHECK(tensor.numel() == like.numel(), "collective backend: ", op, ": ", what, " holds a tensor of ",
                tensor.numel(), " elements, expected ", like.numel());
  }
}

void checkSlicedPair(const at::Tensor& whole, const at::Tensor& slice, int slices, const char* op,
                     const char* wholeName) {
  checkDenseTensor(whole, op);
  checkDenseTensor(slice, op);
  TORCH_CHECK(whole.scalar_type() == slice.scalar_type(), "collective backend: ", op, ": the ", wholeName,
              " is of type ", whole.scalar_type(), ", expected ", slice.scalar_type());
  TORCH_CHECK(whole.numel() == slice.numel() * slices, "collective backend: ", op, ": the ", wholeName, " has ",
              whole.numel(), " elements, expected ", slices, " x ", slice.numel());
}

StagedTensor::StagedTensor(const at::Tensor& tensor) : user_(tensor), buffer_(tensor.contiguous()) {}

void StagedTensor::copyBack() const {
  if (!buffer_.is_same(user_)) user_.copy_(buffer_.view(user_.sizes()));
}

at::Tensor packTensors(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) flat.push_back(tensor.reshape({-1}));
  return at::cat(flat);
}

at::Tensor flatBufferFor(const at::Tensor& like, size_t slices) {
  return at::empty({static_cast<int64_t>(slices) * like.numel()}, like.options());
}

void unpackTensors(const at::Tensor& flat, const std::vector<at::Tensor>& outputs) {
  int64_t offset = 0;
  for (const at::Tensor& output : outputs) {
    output.copy_(flat.narrow(0, offset, output.numel()).view(output.sizes()));
    offset += output.numel();
  }
}

std::vector<at::Tensor> withTensor(std::vector<at::Tensor> tensors, const at::Tensor& one) {
  tensors.push_back(one);
  return tensors;
}

std::vector<at::Tensor> withTensors(std::vector<at::Tensor> tensors, const std::vector<at::Tensor>& more) {
  tensors.insert(tensors.end(), more.begin(), more.end());
  return tensors;
}

at::Tensor separateFrom(const at::Tensor& input, const at::Tensor& output) {
  if (!input.is_alias_of(output)) return input;
  return input.clone(at::MemoryFormat::Contiguous);
}

}  // namespace torch_collective
