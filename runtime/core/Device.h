//===- Device.h - where tensors live and kernels run -----------------------===//
//
// The executor only allocates, frees, copies and offsets into device memory
// through this interface; CPU and (later) CUDA devices implement it. Nothing
// outside a device's own kernels assumes host-addressable memory: a device
// address is an opaque handle that only the device (offset, copies) and its
// kernels interpret.
//
// Device types are open: a backend names its type (DeviceType{"cpu"}) and
// registers its kernels under that name (KernelRegistry::Registrar); no list
// of devices exists anywhere else.
//
// Streams and events. A Stream is an ordered queue of device work: kernels and
// device-side copies enqueued on one stream run in the order they were
// enqueued; work on different streams may run concurrently (a CUDA device puts
// compute on one stream and communication on another so they overlap). The
// only ordering between streams is through events:
//   - Event::record(s) captures the work enqueued on s so far; the event
//     completes when that work has finished. Recording again re-captures.
//   - Stream::wait(e) makes work enqueued on the stream after the call start
//     only once e has completed; the host does not block.
//   - synchronize() (of a stream, an event or the whole device) blocks the
//     host until the captured work has finished; query() asks without
//     blocking (true: finished; an event never recorded counts as finished).
// Host-side calls (allocate, deallocate, copyFromHost, copyToHost,
// copyOnDevice) are synchronous: when they return the bytes are in place and
// the source may be reused; they are ordered after all work enqueued before.
// A device whose work is done when the call returns (the CPU) keeps the
// default, trivial streams and events: every record, wait and synchronize is
// a no-op and every query is true. The strict CPU device queues its work on
// threads of its own, one per stream, and its events are real: a position in
// a stream's queue (StrictCpuDevice.cpp).
//
// Communication follows the same rules (NCCL's model): a kernel that
// communicates gets an event recorded on the compute stream after every
// kernel launched before it (KernelContext::ready) and hands it to its
// communicator (Communicator::follow) before it reads or writes a buffer: a
// host-driven backend (MPI) waits for it on the host and then calls MPI; a
// device-driven one (NCCL) makes its communication stream wait for it. What
// an operation wrote is handed on once Communicator::wait returned: the host
// has seen it complete (MPI), or the compute stream waits for its completion
// event (NCCL).
//
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/MemoryLedger.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace partita::rt {

/// A kind of device, identified by the name its backend registers its kernels
/// under ("cpu", later "cuda"). Two types are equal when their names are.
class DeviceType {
public:
  explicit constexpr DeviceType(const char *name) : name_(name) {}
  llvm::StringRef name() const { return name_; }
  friend bool operator==(DeviceType a, DeviceType b) { return a.name() == b.name(); }
  friend bool operator!=(DeviceType a, DeviceType b) { return !(a == b); }

private:
  const char *name_;
};

class Event;

/// An ordered queue of device work (see the contract above).
class Stream {
public:
  virtual ~Stream() = default;
  /// Work enqueued after this call waits for `event`; the host does not block.
  virtual void wait(const Event &event) = 0;
  /// Blocks until everything enqueued so far has finished.
  virtual void synchronize() = 0;
  /// True when everything enqueued so far has finished; never blocks.
  virtual bool query() const = 0;
};

/// A point in a stream's work (see the contract above).
class Event {
public:
  virtual ~Event() = default;
  /// Captures the work enqueued on `stream` so far.
  virtual void record(Stream &stream) = 0;
  /// Blocks until the captured work has finished.
  virtual void synchronize() const = 0;
  /// True when the captured work has finished (or nothing was recorded).
  virtual bool query() const = 0;
};

class Device {
public:
  virtual ~Device() = default;
  virtual DeviceType kind() const = 0;
  virtual std::string name() const = 0;
  /// Memory aligned to `alignment()`; nullptr when out of memory.
  virtual void *allocate(size_t bytes) = 0;
  virtual void deallocate(void *p) = 0;
  virtual void copyFromHost(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyOnDevice(void *dst, const void *src, size_t bytes) = 0;
  /// Sets `bytes` bytes at `dst` to `value` (zeroing AdamW's moments, a sum),
  /// synchronous as the copies are. The default copies from a host buffer of
  /// at most a megabyte at a time; devices override it with a memset.
  virtual void fill(void *dst, uint8_t value, size_t bytes);
  /// The address `bytes` into the allocation at `base` (the executor places
  /// its buffers in one arena through this). The default is linear
  /// addressing, as host and CUDA memory have; a device whose addresses are
  /// handles overrides it.
  virtual void *offset(void *base, size_t bytes) const { return static_cast<char *>(base) + bytes; }
  /// The address this device's kernels read and write `deviceAddress` at
  /// (nullptr stays nullptr). Host code never dereferences a device address
  /// (it copies, or runs a kernel); the executor hands kernels views through
  /// this. The same address on every device but the strict CPU, whose device
  /// addresses fault when the host touches them.
  virtual void *kernelAddress(void *deviceAddress) const { return deviceAddress; }
  const void *kernelAddress(const void *deviceAddress) const {
    return kernelAddress(const_cast<void *>(deviceAddress));
  }

  /// What this device's memory holds, by category (MemoryLedger.h): a
  /// ledger of its own unless its memory is the host's.
  virtual MemoryLedger &ledger() { return ledger_; }

  /// Whether this device's memory is the host's, host addresses included
  /// (the `cpu` device): host bytes are handed to its kernels as they are,
  /// with no staging copy (DeviceTensor::upload).
  virtual bool sharesHostMemory() const { return false; }

  /// The stream kernels run on unless told otherwise.
  virtual Stream &defaultStream();
  /// A new stream (e.g. for communication), independent of the default one.
  virtual std::unique_ptr<Stream> createStream();
  virtual std::unique_ptr<Event> createEvent();
  /// Waits for queued work on every stream of the device.
  virtual void synchronize() {}
  /// Runs `work` (a kernel: it reads and writes kernelAddress()es only) on
  /// the device's compute stream, after everything launched before it. A
  /// device whose work is done when the call returns (the CPU) runs it at
  /// once and returns its error; a queueing one (cpu-strict) returns at once
  /// and keeps the first error for finishWork(). `work` owns what it reads
  /// (views, not references to the caller's vectors).
  virtual llvm::Error launch(std::function<llvm::Error()> work) { return work(); }
  /// Waits until all launched work is done; the first error it returned.
  virtual llvm::Error finishWork() { return llvm::Error::success(); }
  /// The first error of launched work so far, without waiting for the rest:
  /// a communicating kernel checks it once its ready event completed, so a
  /// rank does not communicate what a failed kernel left.
  virtual llvm::Error takeError() { return llvm::Error::success(); }
  /// Whether launch() queues work (false: it runs it at once, and a caller
  /// may run a kernel itself instead of making a closure for it).
  virtual bool queuesWork() const { return false; }
  static constexpr size_t alignment() { return 64; }

private:
  MemoryLedger ledger_;
};

/// The host CPU's device type: its kernels are in runtime/cpu.
inline constexpr DeviceType kCpuDevice{"cpu"};

/// The host CPU; kernels run on the calling thread plus an OpenMP team, so
/// its streams and events are the trivial ones.
class CpuDevice : public Device {
public:
  /// Sets flush-to-zero / denormals-are-zero on this thread and the OpenMP
  /// team: float denormals (e.g. softmax probabilities of very unlikely
  /// tokens in a backward pass) otherwise slow GEMMs down a hundredfold.
  CpuDevice();
  DeviceType kind() const override { return kCpuDevice; }
  std::string name() const override { return "cpu"; }
  bool sharesHostMemory() const override { return true; }
  /// Host memory: the process's ledger.
  MemoryLedger &ledger() override { return MemoryLedger::process(); }
  void *allocate(size_t bytes) override;
  void deallocate(void *p) override;
  void copyFromHost(void *dst, const void *src, size_t bytes) override;
  void copyToHost(void *dst, const void *src, size_t bytes) override;
  void copyOnDevice(void *dst, const void *src, size_t bytes) override;
  void fill(void *dst, uint8_t value, size_t bytes) override;
};

/// The CPU device with memory host code cannot touch (`--device cpu-strict`,
/// for tests): an allocation's device address lies in a range mapped without
/// access, so a read or write outside a kernel or a copy faults at once;
/// kernelAddress() maps it to the host memory that holds the bytes. Its
/// kernels run on a thread of their own, in launch order, while the host
/// goes on: a host copy (and a free) first waits for them, and work that
/// does not wait where it must reads results not yet written. Same kernels,
/// same results as `cpu`.
class StrictCpuDevice final : public CpuDevice {
public:
  StrictCpuDevice();
  ~StrictCpuDevice() override;
  std::string name() const override { return "cpu-strict"; }
  bool sharesHostMemory() const override { return false; }
  /// Memory apart from the host's: a ledger of its own.
  MemoryLedger &ledger() override { return Device::ledger(); }
  void *allocate(size_t bytes) override;
  void deallocate(void *p) override;
  void copyFromHost(void *dst, const void *src, size_t bytes) override;
  void copyToHost(void *dst, const void *src, size_t bytes) override;
  void copyOnDevice(void *dst, const void *src, size_t bytes) override;
  void fill(void *dst, uint8_t value, size_t bytes) override;
  using Device::kernelAddress;
  void *kernelAddress(void *deviceAddress) const override;
  llvm::Error launch(std::function<llvm::Error()> work) override;
  llvm::Error finishWork() override;
  llvm::Error takeError() override;
  bool queuesWork() const override { return true; }
  /// Waits for every stream of the device (the compute stream and those
  /// createStream made that still exist).
  void synchronize() override;
  /// The compute stream, where launch() queues: its thread.
  Stream &defaultStream() override;
  /// Another thread running work in order, independent of the compute stream.
  std::unique_ptr<Stream> createStream() override;
  /// A position in one of this device's streams (record), waited for by the
  /// host (synchronize) or by another stream (Stream::wait).
  std::unique_ptr<Event> createEvent() override;

  class Worker; // a stream: a thread running queued work in order

private:
  struct Allocations;
  std::unique_ptr<Allocations> allocations_;
  struct Streams;
  std::shared_ptr<Streams> streams_; // every live stream, for synchronize()
  std::unique_ptr<Worker> worker_;   // the compute stream
};

} // namespace partita::rt
