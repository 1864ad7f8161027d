// From torch tensors to what libcollective takes: element types, reduction ops, and contiguous
// buffers (host or, in a build with CUDA support, device). Checks that fail throw c10::Error,
// which Python sees as RuntimeError.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "collective.h"
#include "torch_compat.h"

namespace torch_collective {

// Whether a call combines values (and so needs a type the library can add up).
enum class Combines { kNo, kYes };

// The library's name for the tensor's element type. bool travels as uint8 but cannot be reduced.
collDataType_t collTypeOf(const at::Tensor& tensor, Combines combines, const char* op);
collRedOp_t collOpOf(const c10d::ReduceOp& reduceOp, const char* op);

// The one tensor of a single-tensor call (torch passes lists, longer only for the multi-GPU forms).
const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* op);
// Checks that a tensor can be handed to the library: dense, on the CPU or a CUDA device (whether
// the tensors of one call share a device is deviceCallFor's check, device_call.h).
void checkDenseTensor(const at::Tensor& tensor, const char* op);
// The same, on the CPU only (the ZeRO functions, which take host buffers).
void checkHostTensor(const at::Tensor& tensor, const char* op);
// Checks that every tensor of a list has `like`'s element type and number of elements.
void checkMatchingTensors(const std::vector<at::Tensor>& tensors, const at::Tensor& like, size_t expectedCount,
                          const char* op, const char* what);
// Checks the flat forms (_allgather_base, _reduce_scatter_base): `whole` (named `wholeName`)
// holds `slices` slices the size of `slice`, of the same element type.
void checkSlicedPair(const at::Tensor& whole, const at::Tensor& slice, int slices, const char* op,
                     const char* wholeName);

// A tensor's data as one contiguous buffer (on the tensor's device): the tensor's own memory when it is contiguous, else a
// contiguous copy taken now, which copyBack() writes into the tensor once the call is done.
class StagedTensor {
 public:
  StagedTensor() = default;
  explicit StagedTensor(const at::Tensor& tensor);

  void* data() const { return buffer_.data_ptr(); }
  size_t count() const { return static_cast<size_t>(buffer_.numel()); }
  size_t bytes() const { return count() * buffer_.element_size(); }
  void copyBack() const;

 private:
  at::Tensor user_, buffer_;
};

// A run of elements in a contiguous buffer: what one rank sends to, or receives from, another.
struct Segment {
  void* data = nullptr;
  size_t count = 0;
};

// Equally sized tensors as one flat buffer, for the list forms of all_gather, gather, scatter and
// reduce_scatter, which the library does on one buffer of nranks slices.
at::Tensor packTensors(const std::vector<at::Tensor>& tensors);
at::Tensor flatBufferFor(const at::Tensor& like, size_t slices);
void unpackTensors(const at::Tensor& flat, const std::vector<at::Tensor>& outputs);

// `tensors` and `one` (or `more`) in one list: every tensor of a call, for deviceCallFor.
std::vector<at::Tensor> withTensor(std::vector<at::Tensor> tensors, const at::Tensor& one);
std::vector<at::Tensor> withTensors(std::vector<at::Tensor> tensors, const std::vector<at::Tensor>& more);

// A private copy of `input` when it shares memory with `output` (calls that send from one while
// receiving into the other must not read what they already overwrote).
at::Tensor separateFrom(const at::Tensor& input, const at::Tensor& output);

}  // namespace torch_collective
