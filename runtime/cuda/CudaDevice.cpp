//===- CudaDevice.cpp -----------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CublasLt.h"
#include "llvm/Support/FormatVariadic.h"
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

namespace partita::rt {

namespace {

llvm::Error cudaError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

class CudaEvent final : public Event {
public:
  explicit CudaEvent(CudaDevice &device) : device_(device) {
    device_.check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~CudaEvent() override {
    if (event_)
      cudaEventDestroy(event_);
  }
  void record(Stream &stream) override;
  void synchronize() const override { device_.check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }
  bool query() const override { return device_.finished(cudaEventQuery(event_), "cudaEventQuery"); }
  cudaEvent_t handle() const { return event_; }

private:
  CudaDevice &device_;
  cudaEvent_t event_ = nullptr;
};

} // namespace

/// A stream of the device: wraps a cudaStream_t it may own.
class CudaDevice::CudaStream final : public Stream {
public:
  CudaStream(CudaDevice &device, cudaStream_t stream, bool owned) : device_(device), stream_(stream), owned_(owned) {}
  ~CudaStream() override {
    if (owned_ && stream_)
      cudaStreamDestroy(stream_);
  }
  void wait(const Event &event) override {
    device_.check(cudaStreamWaitEvent(stream_, static_cast<const CudaEvent &>(event).handle(), 0),
                  "cudaStreamWaitEvent");
  }
  void synchronize() override { device_.check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  bool query() const override { return device_.finished(cudaStreamQuery(stream_), "cudaStreamQuery"); }
  cudaStream_t handle() const { return stream_; }

private:
  CudaDevice &device_;
  cudaStream_t stream_;
  bool owned_;
};

void CudaEvent::record(Stream &stream) {
  device_.check(cudaEventRecord(event_, static_cast<CudaDevice::CudaStream &>(stream).handle()), "cudaEventRecord");
}

int CudaDevice::localRank() {
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char *v = std::getenv(var))
      return std::atoi(v);
  return 0;
}

llvm::Expected<std::unique_ptr<CudaDevice>> CudaDevice::create(int ordinal) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string where = visible ? llvm::formatv(" (CUDA_VISIBLE_DEVICES={0})", visible).str() : std::string();
  if (status != cudaSuccess || count == 0) {
    cudaGetLastError(); // not sticky: clear it
    return cudaError("--device cuda: this process sees no CUDA GPU" + where +
                     (status != cudaSuccess ? llvm::Twine(": ") + cudaGetErrorString(status) : llvm::Twine()));
  }
  if (ordinal < 0 || ordinal >= count)
    return cudaError(llvm::formatv("--device cuda: local rank {0} has no GPU of its own: {1} visible{2}; run at "
                                   "most {1} ranks per node",
                                   ordinal, count, where)
                         .str());
  std::unique_ptr<CudaDevice> device(new CudaDevice(ordinal));
  if (!device->firstError_.empty())
    return cudaError("--device cuda: GPU " + llvm::Twine(ordinal) + ": " + device->firstError_);
  return device;
}

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  if (!check(cudaSetDevice(ordinal), "cudaSetDevice"))
    return;
  // Non-blocking: none of them waits for the legacy default stream.
  check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&communication_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate");
  computeHandle_ = std::make_unique<CudaStream>(*this, compute_, false);
  for (int i = 0; i < 2; ++i) {
    check(cudaMallocHost(&staging_[i], kStagingChunk), "cudaMallocHost");
    check(cudaEventCreateWithFlags(&stagingFree_[i], cudaEventDisableTiming), "cudaEventCreate");
  }
}

CudaDevice::~CudaDevice() {
  cudaDeviceSynchronize();
  if (blasLt_) {
    auto lt = cuda::cublasLt(); // opened: the handle was made
    if (lt)
      (*lt)->cublasLtDestroy(blasLt_);
    else
      llvm::consumeError(lt.takeError());
  }
  for (int i = 0; i < 2; ++i) {
    if (staging_[i])
      cudaFreeHost(staging_[i]);
    if (stagingFree_[i])
      cudaEventDestroy(stagingFree_[i]);
  }
  computeHandle_.reset();
  for (cudaStream_t s : {compute_, communication_, copy_})
    if (s)
      cudaStreamDestroy(s);
}

std::string CudaDevice::name() const {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal_) != cudaSuccess)
    return "cuda:" + std::to_string(ordinal_);
  return "cuda:" + std::to_string(ordinal_) + " (" + prop.name + ")";
}

llvm::Expected<cublasLtHandle_t> CudaDevice::blasLt() {
  if (!blasLt_) {
    auto lt = cuda::cublasLt();
    if (!lt)
      return lt.takeError();
    cublasStatus_t s = (*lt)->cublasLtCreate(&blasLt_);
    if (s != CUBLAS_STATUS_SUCCESS) {
      blasLt_ = nullptr;
      return cudaError("GPU " + llvm::Twine(ordinal_) + ": cublasLtCreate failed: " +
                       (*lt)->cublasLtGetStatusString(s));
    }
  }
  return blasLt_;
}

bool CudaDevice::finished(cudaError_t status, const char *what) {
  if (status != cudaSuccess && status != cudaErrorNotReady)
    check(status, what); // failed: finishWork reports it
  return status != cudaErrorNotReady;
}

bool CudaDevice::check(cudaError_t status, const char *what) {
  if (status == cudaSuccess)
    return true;
  std::lock_guard<std::mutex> lock(errorMutex_);
  if (firstError_.empty())
    firstError_ = std::string(what) + ": " + cudaGetErrorString(status);
  return false;
}

void *CudaDevice::allocate(size_t bytes) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes ? bytes : alignment()) != cudaSuccess) {
    cudaGetLastError(); // out of memory is the caller's to report (nullptr), not sticky
    return nullptr;
  }
  return p;
}

void CudaDevice::deallocate(void *p) {
  if (!p)
    return;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); // work on any stream (NCCL's too) may still use it
  check(cudaFree(p), "cudaFree");
}

void CudaDevice::stagedCopy(void *dst, const void *src, size_t bytes, bool toDevice) {
  // Chunk k goes through staging_[k % 2]: the host fills (or drains) one
  // chunk while the other crosses the bus; a chunk is reused once the copy
  // that last read (or wrote) it is done.
  auto *d = static_cast<char *>(dst);
  auto *s = static_cast<const char *>(src);
  size_t chunks = (bytes + kStagingChunk - 1) / kStagingChunk;
  for (size_t k = 0; k < chunks; ++k) {
    int b = static_cast<int>(k % 2);
    size_t at = k * kStagingChunk, n = std::min(kStagingChunk, bytes - at);
    if (!check(cudaEventSynchronize(stagingFree_[b]), "cudaEventSynchronize"))
      return;
    if (toDevice) {
      std::memcpy(staging_[b], s + at, n);
      check(cudaMemcpyAsync(d + at, staging_[b], n, cudaMemcpyHostToDevice, compute_), "cudaMemcpyAsync");
      check(cudaEventRecord(stagingFree_[b], compute_), "cudaEventRecord");
    } else {
      check(cudaMemcpyAsync(staging_[b], s + at, n, cudaMemcpyDeviceToHost, compute_), "cudaMemcpyAsync");
      check(cudaEventRecord(stagingFree_[b], compute_), "cudaEventRecord");
      check(cudaEventSynchronize(stagingFree_[b]), "cudaEventSynchronize");
      std::memcpy(d + at, staging_[b], n);
    }
  }
  check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
}

void CudaDevice::copyFromHost(void *dst, const void *src, size_t bytes) { stagedCopy(dst, src, bytes, true); }
void CudaDevice::copyToHost(void *dst, const void *src, size_t bytes) { stagedCopy(dst, src, bytes, false); }

void CudaDevice::copyOnDevice(void *dst, const void *src, size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
}

void CudaDevice::fill(void *dst, uint8_t value, size_t bytes) {
  check(cudaMemsetAsync(dst, value, bytes, compute_), "cudaMemsetAsync");
  check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
}

Stream &CudaDevice::defaultStream() { return *computeHandle_; }

std::unique_ptr<Stream> CudaDevice::createStream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return std::make_unique<CudaStream>(*this, s, true);
}

std::unique_ptr<Event> CudaDevice::createEvent() { return std::make_unique<CudaEvent>(*this); }

void CudaDevice::communicationWaits(const Event &event) {
  check(cudaStreamWaitEvent(communication_, static_cast<const CudaEvent &>(event).handle(), 0), "cudaStreamWaitEvent");
}

void CudaDevice::synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

llvm::Error CudaDevice::launch(std::function<llvm::Error()> work) {
  // The kernel enqueues on the compute stream and returns; a launch failure
  // (bad configuration) shows at once, a failure while running at finishWork.
  if (auto err = work())
    return err;
  check(cudaGetLastError(), "kernel launch");
  return llvm::Error::success();
}

llvm::Error CudaDevice::finishWork() {
  check(cudaStreamSynchronize(compute_), "a kernel on the compute stream");
  return takeError();
}

llvm::Error CudaDevice::takeError() {
  std::lock_guard<std::mutex> lock(errorMutex_);
  if (firstError_.empty())
    return llvm::Error::success();
  return cudaError("GPU " + llvm::Twine(ordinal_) + ": " + firstError_);
}

} // namespace partita::rt
