//===- StrictCpuDevice.cpp - CPU memory the host cannot touch -------------===//
//
// Each allocation gets two ranges of the same size: the bytes (host memory,
// what kernels and copies use) and a range mapped PROT_NONE whose address is
// handed out as the device address. Nothing is ever mapped there, so host
// code dereferencing a device address faults at its first byte; offsets into
// an allocation (the executor's arena) stay within its range and translate
// by the distance from its start.
//
// Launched work runs on one worker thread, in order (the compute stream);
// createStream makes more. Each item runs with the OpenMP thread count its
// launcher had (so kernels split their work, and round, as on the host
// thread) and the worker sets flush-to-zero as CpuDevice does. Events are
// tickets: recorded on a stream, an event is the number of items queued
// there so far, and it completes when that many have run; a stream waiting
// for an event queues an item that blocks until it completes. Host-side
// calls that read or free device memory wait for every stream first, except
// from a worker itself.
//===----------------------------------------------------------------------===//
#include "runtime/core/Device.h"
#include <algorithm>
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

namespace {
thread_local bool onWorker = false; // this thread is a stream's
} // namespace

/// A stream: a thread running queued work in order. Its positions are
/// tickets: the n-th item queued is ticket n, and an event recorded after it
/// completes once `completed_` reaches n. A stream outlives the events
/// recorded on it and the waits for them (as the device outlives its
/// streams); `forget` (a stream createStream made) unregisters it from the
/// device once its work is done.
class StrictCpuDevice::Worker final : public Stream {
public:
  explicit Worker(std::function<void(Worker *)> forget = nullptr)
      : forget_(std::move(forget)), thread_([this] { loop(); }) {}
  ~Worker() override {
    drain();
    if (forget_)
      forget_(this);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    llvm::consumeError(std::move(error_)); // a created stream's work reports no error to anyone
  }
  void push(std::function<llvm::Error()> work) {
    int threads = omp_get_max_threads();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({std::move(work), threads});
      ++enqueued_;
    }
    wake_.notify_all();
  }
  /// The ticket of the last item queued so far (0: none yet).
  uint64_t enqueued() const {
    std::lock_guard<std::mutex> lock(mu_);
    return enqueued_;
  }
  bool reached(uint64_t ticket) const {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_ >= ticket;
  }
  /// Blocks until the items up to `ticket` have run (at once on the worker
  /// thread itself, which runs them in order: they are behind it).
  void waitFor(uint64_t ticket) const {
    if (std::this_thread::get_id() == thread_.get_id())
      return;
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return completed_ >= ticket; });
  }
  /// Waits for the queue to drain.
  void drain() const { waitFor(enqueued()); }
  llvm::Error takeError(bool wait) {
    if (wait)
      drain();
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(error_);
  }

  // Stream
  void wait(const Event &event) override;
  void synchronize() override { drain(); }
  bool query() const override { return reached(enqueued()); }

private:
  struct Item {
    std::function<llvm::Error()> work;
    int threads;
  };
  void loop() {
    onWorker = true;
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
      lock.unlock();
      if (item.threads != threads)
        omp_set_num_threads(threads = item.threads);
      llvm::Error err = item.work();
      lock.lock();
      ++completed_;
      if (err && !error_)
        error_ = std::move(err);
      else
        llvm::consumeError(std::move(err));
      idle_.notify_all();
    }
  }
  std::function<void(Worker *)> forget_;
  mutable std::mutex mu_;
  mutable std::condition_variable idle_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  uint64_t enqueued_ = 0, completed_ = 0;
  bool stopping_ = false;
  llvm::Error error_ = llvm::Error::success();
  std::thread thread_; // last: started once the rest is made
};

namespace {
/// A position in a Worker's queue; never recorded (or recorded on a stream
/// of another device, whose work is done at once): complete.
class StrictEvent final : public Event {
public:
  void record(Stream &stream) override {
    stream_ = dynamic_cast<StrictCpuDevice::Worker *>(&stream);
    ticket_ = stream_ ? stream_->enqueued() : 0;
  }
  void synchronize() const override {
    if (stream_)
      stream_->waitFor(ticket_);
  }
  bool query() const override { return !stream_ || stream_->reached(ticket_); }
  const StrictCpuDevice::Worker *stream() const { return stream_; }
  uint64_t ticket() const { return ticket_; }

private:
  StrictCpuDevice::Worker *stream_ = nullptr;
  uint64_t ticket_ = 0;
};
} // namespace

void StrictCpuDevice::Worker::wait(const Event &event) {
  // The event as it is now (recording it again later does not move this wait).
  const auto *e = dynamic_cast<const StrictEvent *>(&event);
  if (!e || !e->stream() || e->stream() == this) // nothing to wait for, or already in order
    return;
  push([from = e->stream(), ticket = e->ticket()]() {
    from->waitFor(ticket);
    return llvm::Error::success();
  });
}

struct StrictCpuDevice::Streams {
  std::mutex mu;
  std::vector<Worker *> made; // by createStream, still alive
};

StrictCpuDevice::StrictCpuDevice()
    : allocations_(std::make_unique<Allocations>()), streams_(std::make_shared<Streams>()),
      worker_(std::make_unique<Worker>()) {}

llvm::Error StrictCpuDevice::launch(std::function<llvm::Error()> work) {
  worker_->push(std::move(work));
  return llvm::Error::success();
}

llvm::Error StrictCpuDevice::finishWork() { return worker_->takeError(/*wait=*/true); }
llvm::Error StrictCpuDevice::takeError() { return worker_->takeError(/*wait=*/false); }

Stream &StrictCpuDevice::defaultStream() { return *worker_; }

std::unique_ptr<Stream> StrictCpuDevice::createStream() {
  auto made = std::make_unique<Worker>([streams = streams_](Worker *w) { // shared: the device may go first
    std::lock_guard<std::mutex> lock(streams->mu);
    streams->made.erase(std::find(streams->made.begin(), streams->made.end(), w));
  });
  std::lock_guard<std::mutex> lock(streams_->mu);
  streams_->made.push_back(made.get());
  return made;
}

std::unique_ptr<Event> StrictCpuDevice::createEvent() { return std::make_unique<StrictEvent>(); }

void StrictCpuDevice::synchronize() {
  if (onWorker) // a kernel's own copy: its stream runs in order, and waiting for another could close a cycle
    return;
  worker_->drain();
  std::vector<Worker *> made;
  {
    std::lock_guard<std::mutex> lock(streams_->mu); // not held while waiting: their work may copy too
    made = streams_->made;
  }
  for (Worker *w : made)
    w->drain();
}

StrictCpuDevice::~StrictCpuDevice() {
  llvm::consumeError(worker_->takeError(/*wait=*/true));
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
  synchronize(); // launched work may still use it
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
  synchronize();
  if (bytes)
    std::memcpy(kernelAddress(dst), src, bytes);
}
void StrictCpuDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  synchronize();
  if (bytes)
    std::memcpy(dst, kernelAddress(src), bytes);
}
void StrictCpuDevice::fill(void *dst, uint8_t value, size_t bytes) {
  synchronize();
  if (bytes)
    std::memset(kernelAddress(dst), value, bytes);
}
void StrictCpuDevice::copyOnDevice(void *dst, const void *src, size_t bytes) {
  synchronize();
  if (bytes)
    std::memmove(kernelAddress(dst), kernelAddress(src), bytes);
}

} // namespace partita::rt
