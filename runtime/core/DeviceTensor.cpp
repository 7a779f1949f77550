//===- DeviceTensor.cpp ---------------------------------------------------===//
#include "runtime/core/DeviceTensor.h"
#include <utility>
#include <vector>

namespace partita::rt {

DeviceTensor::DeviceTensor(DeviceTensor &&o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)), view_(std::exchange(o.view_, TensorView{})),
      charge_(std::move(o.charge_)) {}

DeviceTensor &DeviceTensor::operator=(DeviceTensor &&o) noexcept {
  if (this != &o) {
    release();
    owner_ = std::exchange(o.owner_, nullptr);
    view_ = std::exchange(o.view_, TensorView{});
    charge_ = std::move(o.charge_);
  }
  return *this;
}

void DeviceTensor::release() {
  if (owner_ && view_.data)
    owner_->deallocate(view_.data);
  owner_ = nullptr;
  view_ = TensorView{};
  charge_.resize(0);
}

llvm::Expected<DeviceTensor> DeviceTensor::allocate(Device &device, DType dtype, const Shape &shape,
                                                    MemoryCategory category, const llvm::Twine &what) {
  DeviceTensor t;
  t.view_ = TensorView{dtype, shape, nullptr};
  size_t bytes = t.view_.bytes();
  t.view_.data = device.allocate(std::max<size_t>(bytes, 1));
  if (!t.view_.data)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "out of " + device.name() + " memory for " + what +
                                                                       " (" + std::to_string(bytes) + " bytes)");
  t.owner_ = &device;
  t.charge_.setLedger(device.ledger());
  t.charge_.setCategory(category);
  t.charge_.resize(bytes);
  return std::move(t);
}

DeviceTensor DeviceTensor::adopt(Device &device, const TensorView &v, MemoryCategory category) {
  DeviceTensor t;
  t.view_ = v;
  t.owner_ = &device;
  t.charge_.setLedger(device.ledger());
  t.charge_.setCategory(category);
  t.charge_.resize(v.bytes());
  return t;
}

llvm::Expected<DeviceTensor> DeviceTensor::zeros(Device &device, DType dtype, const Shape &shape,
                                                 MemoryCategory category, const llvm::Twine &what) {
  auto t = allocate(device, dtype, shape, category, what);
  if (!t)
    return t.takeError();
  device.fill(t->data(), 0, t->view_.bytes());
  return t;
}

llvm::Expected<DeviceTensor> DeviceTensor::upload(Device &device, const Tensor &host, MemoryCategory category,
                                                  const llvm::Twine &what) {
  if (device.sharesHostMemory()) {
    DeviceTensor t;
    t.view_ = TensorView{host.dtype(), host.shape(), const_cast<uint8_t *>(host.data())};
    return std::move(t);
  }
  auto t = allocate(device, host.dtype(), host.shape(), category, what);
  if (!t)
    return t.takeError();
  device.copyFromHost(t->data(), host.data(), host.byteSize());
  return t;
}

llvm::Expected<DeviceTensor> DeviceTensor::copyOf(Device &device, const TensorView &v, MemoryCategory category,
                                                  const llvm::Twine &what) {
  auto t = allocate(device, v.dtype, v.shape, category, what);
  if (!t)
    return t.takeError();
  device.copyOnDevice(t->data(), v.data, v.bytes());
  return t;
}

Tensor download(Device &device, const TensorView &v) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(v.bytes());
  device.copyToHost(bytes->data(), v.data, v.bytes());
  return Tensor(v.dtype, v.shape, std::move(bytes));
}

float downloadScalar(Device &device, const void *at) {
  float v = 0;
  device.copyToHost(&v, at, sizeof v);
  return v;
}

} // namespace partita::rt
