//===- CudaDevice.h - an NVIDIA GPU as a Partita device --------------------===//
//
// `--device cuda` (a build with the CUDA toolkit): one GPU per rank, chosen by
// the rank's local rank among the GPUs CUDA_VISIBLE_DEVICES leaves visible.
// Device memory is cudaMalloc'd (the executor places a program's buffers in
// one arena it allocates once, so one cudaMalloc per memory plan; no managed
// memory). Three streams: compute (kernels run on it, in launch order),
// communication and copy, ordered among each other by events only. Host
// copies (Device.h: synchronous, after all queued work) run on the compute
// stream and go through a pinned staging buffer in chunks, two in flight.
//
// A kernel's run() enqueues its GPU work on computeStream() and returns, so
// launch() runs it at once and queuesWork() is true: the executor waits
// (finishWork) before a host read or a communicating kernel. A CUDA call
// that fails is kept as the device's first error; finishWork() returns it
// (GPU work fails asynchronously, so a call cannot say which kernel failed
// before the stream is synchronized).
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/Device.h"
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <mutex>
#include <string>

namespace partita::rt {

/// The device type the CUDA kernels are registered under.
inline constexpr DeviceType kCudaDevice{"cuda"};

class CudaDevice final : public Device {
public:
  /// The GPU numbered `ordinal` among the visible ones; an error when the
  /// process sees fewer (naming how many, and CUDA's reason when none).
  static llvm::Expected<std::unique_ptr<CudaDevice>> create(int ordinal);
  /// The GPU this process's rank uses: its local rank on its node (Open MPI's
  /// OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID; 0 outside mpirun).
  static int localRank();
  ~CudaDevice() override;

  DeviceType kind() const override { return kCudaDevice; }
  std::string name() const override;
  void *allocate(size_t bytes) override;
  void deallocate(void *p) override;
  void copyFromHost(void *dst, const void *src, size_t bytes) override;
  void copyToHost(void *dst, const void *src, size_t bytes) override;
  void copyOnDevice(void *dst, const void *src, size_t bytes) override;
  void fill(void *dst, uint8_t value, size_t bytes) override;
  Stream &defaultStream() override;
  std::unique_ptr<Stream> createStream() override;
  std::unique_ptr<Event> createEvent() override;
  void synchronize() override;
  llvm::Error launch(std::function<llvm::Error()> work) override;
  llvm::Error finishWork() override;
  llvm::Error takeError() override;
  bool queuesWork() const override { return true; }

  /// The stream kernels enqueue on (cudaStream_t).
  cudaStream_t computeStream() const { return compute_; }
  cudaStream_t communicationStream() const { return communication_; }
  cudaStream_t copyStream() const { return copy_; }
  /// Work enqueued on the communication stream after this waits for `event`
  /// (one of this device's): NCCL's operations follow the compute stream.
  void communicationWaits(const Event &event);
  int ordinal() const { return ordinal_; }
  /// The device's cuBLASLt handle, made on first use (it needs the GPU).
  llvm::Expected<cublasLtHandle_t> blasLt();
  /// Keeps the first failed CUDA call's message (`what` says which call);
  /// true when `status` is cudaSuccess.
  bool check(cudaError_t status, const char *what);
  /// A query's answer (`status` of cudaEventQuery or cudaStreamQuery): done
  /// or failed, not still running; a failure is kept as by check().
  bool finished(cudaError_t status, const char *what);
  /// A Stream of this device (wraps a cudaStream_t it may own).
  class CudaStream;

private:
  explicit CudaDevice(int ordinal);
  /// Host <-> device through the pinned staging buffers.
  void stagedCopy(void *dst, const void *src, size_t bytes, bool toDevice);
  int ordinal_;
  cudaStream_t compute_ = nullptr, communication_ = nullptr, copy_ = nullptr;
  std::unique_ptr<Stream> computeHandle_;
  static constexpr size_t kStagingChunk = 8u << 20; // bytes per pinned chunk
  void *staging_[2] = {nullptr, nullptr};           // pinned host chunks
  cudaEvent_t stagingFree_[2] = {nullptr, nullptr}; // a chunk's last copy done
  cublasLtHandle_t blasLt_ = nullptr;
  std::mutex errorMutex_;
  std::string firstError_;
};

} // namespace partita::rt
