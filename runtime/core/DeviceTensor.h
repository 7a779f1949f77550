//===- DeviceTensor.h - a tensor in device memory, and the copies to it ---===//
//
// What the runtime holds on a device outside its programs (AdamW's moments,
// the summed gradients, a micro-batch's token ids, a pipeline's saved
// copies) and how host bytes get there and back. Host code never
// dereferences device memory (Device.h): it uploads, downloads, or runs a
// kernel. On a device whose memory is the host's (`cpu`) an upload hands
// the host bytes over as they are: no copy.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "runtime/core/Device.h"
#include "runtime/core/MemoryLedger.h"
#include "runtime/core/TensorView.h"
#include "llvm/Support/Error.h"

namespace partita::rt {

class DeviceTensor {
public:
  DeviceTensor() = default;
  DeviceTensor(DeviceTensor &&o) noexcept;
  DeviceTensor &operator=(DeviceTensor &&o) noexcept;
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  ~DeviceTensor() { release(); }

  /// Device memory for `dtype` x `shape`, contents undefined, charged to
  /// `category` while it lives; an error naming `what` when the device is out
  /// of memory.
  static llvm::Expected<DeviceTensor> allocate(Device &device, DType dtype, const Shape &shape,
                                               MemoryCategory category, const llvm::Twine &what);
  /// The same, filled with zero bytes.
  static llvm::Expected<DeviceTensor> zeros(Device &device, DType dtype, const Shape &shape, MemoryCategory category,
                                            const llvm::Twine &what);
  /// `host`'s bytes on the device: on a device sharing host memory, `host`'s
  /// own bytes (which must outlive this, unchanged); elsewhere a copy.
  static llvm::Expected<DeviceTensor> upload(Device &device, const Tensor &host, MemoryCategory category,
                                             const llvm::Twine &what);
  /// Takes over `v`'s memory (device.allocate()'d, by someone who gives it
  /// up: Program::releaseWeight), charged to `category` from now on.
  static DeviceTensor adopt(Device &device, const TensorView &v, MemoryCategory category);
  /// A device copy of the device bytes of `v`.
  static llvm::Expected<DeviceTensor> copyOf(Device &device, const TensorView &v, MemoryCategory category,
                                             const llvm::Twine &what);

  const TensorView &view() const { return view_; }
  void *data() const { return view_.data; }

private:
  void release();
  Device *owner_ = nullptr; // null when borrowing host bytes (or empty)
  TensorView view_;
  MemoryCharge charge_;
};

/// The bytes of device view `v`, copied into a host tensor.
Tensor download(Device &device, const TensorView &v);
/// One float32 scalar (a loss, a norm) copied back from device memory.
float downloadScalar(Device &device, const void *at);

} // namespace partita::rt
