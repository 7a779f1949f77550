//===- StrictCpuDevice.cpp - CPU memory the host cannot touch -------------===//
//
// Each allocation gets two ranges of the same size: the bytes (host memory,
// what kernels and copies use) and a range mapped PROT_NONE whose address is
// handed out as the device address. Nothing is ever mapped there, so host
// code dereferencing a device address faults at its first byte; offsets into
// an allocation (the executor's arena) stay within its range and translate
// by the distance from its start.
//
// Launched work runs on one worker thread, in order (the compute stream).
// Each item runs with the OpenMP thread count its launcher had (so kernels
// split their work, and round, as on the host thread) and the worker sets
// flush-to-zero as CpuDevice does. Host-side calls that read or free device
// memory wait for the queue first, except from the worker itself.
//===----------------------------------------------------------------------===//
#include "runtime/core/Device.h"
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <omp.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace partita::rt {

struct StrictCpuDevice::Allocations {
  struct Block {
    size_t bytes;  // the handle range's size
    void *backing; // the host memory holding the bytes
  };
  mutable std::mutex mu;
  std::map<uintptr_t, Block> byAddress; // handle range start -> block
};

namespace {
[[noreturn]] void notDeviceMemory(const void *p) {
  std::fprintf(stderr, "cpu-strict: %p is not memory of this device (host memory handed to a kernel or a copy)\n", p);
  std::abort();
}
} // namespace

class StrictCpuDevice::Worker {
public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void push(std::function<llvm::Error()> work) {
    int threads = omp_get_max_threads();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({std::move(work), threads});
    }
    wake_.notify_all();
  }
  /// Waits for the queue to drain (at once on the worker thread itself).
  void drain() {
    if (std::this_thread::get_id() == thread_.get_id())
      return;
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !running_; });
  }
  llvm::Error takeError() {
    drain();
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(error_);
  }

private:
  struct Item {
    std::function<llvm::Error()> work;
    int threads;
  };
  void loop() {
#if defined(__SSE__)
    auto ftz = [] { _mm_setcsr(_mm_getcsr() | 0x8040); }; // FTZ | DAZ, as CpuDevice's threads
    ftz();
#pragma omp parallel
    ftz();
#endif
    int threads = omp_get_max_threads();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping, nothing left
      Item item = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      lock.unlock();
      if (item.threads != threads)
        omp_set_num_threads(threads = item.threads);
      llvm::Error err = item.work();
      lock.lock();
      running_ = false;
      if (err && !error_)
        error_ = std::move(err);
      else
        llvm::consumeError(std::move(err));
      if (queue_.empty())
        idle_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Item> queue_;
  bool running_ = false, stopping_ = false;
  llvm::Error error_ = llvm::Error::success();
  std::thread thread_; // last: started once the rest is made
};

StrictCpuDevice::StrictCpuDevice()
    : allocations_(std::make_unique<Allocations>()), worker_(std::make_unique<Worker>()) {}

llvm::Error StrictCpuDevice::launch(std::function<llvm::Error()> work) {
  worker_->push(std::move(work));
  return llvm::Error::success();
}

llvm::Error StrictCpuDevice::finishWork() { return worker_->takeError(); }

void StrictCpuDevice::synchronize() { worker_->drain(); }

StrictCpuDevice::~StrictCpuDevice() {
  llvm::consumeError(worker_->takeError());
  worker_.reset();
  for (auto &[at, block] : allocations_->byAddress) {
    ::munmap(reinterpret_cast<void *>(at), block.bytes);
    std::free(block.backing);
  }
}

void *StrictCpuDevice::allocate(size_t bytes) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t rounded = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
  void *handle = ::mmap(nullptr, rounded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (handle == MAP_FAILED)
    return nullptr;
  void *backing = CpuDevice::allocate(rounded);
  if (!backing) {
    ::munmap(handle, rounded);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(allocations_->mu);
  allocations_->byAddress[reinterpret_cast<uintptr_t>(handle)] = {rounded, backing};
  return handle;
}

void StrictCpuDevice::deallocate(void *p) {
  if (!p)
    return;
  worker_->drain(); // launched work may still use it
  std::lock_guard<std::mutex> lock(allocations_->mu);
  auto it = allocations_->byAddress.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations_->byAddress.end())
    notDeviceMemory(p);
  ::munmap(p, it->second.bytes);
  std::free(it->second.backing);
  allocations_->byAddress.erase(it);
}

void *StrictCpuDevice::kernelAddress(void *deviceAddress) const {
  if (!deviceAddress)
    return nullptr;
  auto at = reinterpret_cast<uintptr_t>(deviceAddress);
  std::lock_guard<std::mutex> lock(allocations_->mu);
  auto it = allocations_->byAddress.upper_bound(at);
  if (it == allocations_->byAddress.begin())
    notDeviceMemory(deviceAddress);
  --it;
  size_t into = at - it->first;
  if (into > it->second.bytes) // one past the end is an address, not a byte
    notDeviceMemory(deviceAddress);
  return static_cast<char *>(it->second.backing) + into;
}

void StrictCpuDevice::copyFromHost(void *dst, const void *src, size_t bytes) {
  worker_->drain();
  if (bytes)
    std::memcpy(kernelAddress(dst), src, bytes);
}
void StrictCpuDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  worker_->drain();
  if (bytes)
    std::memcpy(dst, kernelAddress(src), bytes);
}
void StrictCpuDevice::fill(void *dst, uint8_t value, size_t bytes) {
  worker_->drain();
  if (bytes)
    std::memset(kernelAddress(dst), value, bytes);
}
void StrictCpuDevice::copyOnDevice(void *dst, const void *src, size_t bytes) {
  worker_->drain();
  if (bytes)
    std::memmove(kernelAddress(dst), kernelAddress(src), bytes);
}

} // namespace partita::rt
