// One source for both torch lines. Torch 1.x has backends subclass c10d::ProcessGroup; torch 2.x
// moved that role to c10d::Backend, which a Python-side ProcessGroup wraps per device. Torch's
// own version macros choose.
#pragma once

#include <torch/version.h>

#include <type_traits>
#include <utility>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

// endCoalescing() returned nothing and took the batch's Work objects until torch 2.1, which made
// it return one Work for the whole batch.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TORCH_COLLECTIVE_COALESCING_RETURNS_WORK 1
#else
#define TORCH_COLLECTIVE_COALESCING_RETURNS_WORK 0
#endif

// allgather_into_tensor_coalesced and reduce_scatter_tensor_coalesced (FSDP, DeepSpeed ZeRO-3,
// _coalescing_manager) are torch 2.1's.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TORCH_COLLECTIVE_HAS_TENSOR_COALESCED 1
#else
#define TORCH_COLLECTIVE_HAS_TENSOR_COALESCED 0
#endif

// Backend::split(store, ranks, options) (torch.distributed.split_group) and Backend::abort()
// in the form this backend was checked against (2.15); older 2.x lines keep torch's defaults:
// split_group then says the backend cannot split, and abort does nothing.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 15)
#define TORCH_COLLECTIVE_HAS_SPLIT_AND_ABORT 1
#else
#define TORCH_COLLECTIVE_HAS_SPLIT_AND_ABORT 0
#endif

// Backend::registerCompletionHook and Work::getCompletionKey (c10d/Hooks.hpp), which torch's
// Flight Recorder hook retires its entries by: the 2.15 headers this backend was checked against.
#if TORCH_COLLECTIVE_HAS_SPLIT_AND_ABORT
#define TORCH_COLLECTIVE_HAS_COMPLETION_HOOKS 1
#include <torch/csrc/distributed/c10d/Hooks.hpp>
#else
#define TORCH_COLLECTIVE_HAS_COMPLETION_HOOKS 0
#endif

namespace torch_collective {

// Whether the caller waits for the call as soon as it is issued. Torch 2.x's options carry
// torch.distributed's async_op (asyncOp, true unless Python's synchronous form set it false);
// torch 1.x's do not, and there every call counts as asynchronous.
template <typename Options, typename = void>
struct HasAsyncOp : std::false_type {};
template <typename Options>
struct HasAsyncOp<Options, std::void_t<decltype(std::declval<const Options&>().asyncOp)>> : std::true_type {};
template <typename Options>
bool callerWaitsAtOnce(const Options& opts) {
  if constexpr (HasAsyncOp<Options>::value) {
    return !opts.asyncOp;
  } else {
    (void)opts;
    return false;
  }
}

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

}  // namespace torch_collective
