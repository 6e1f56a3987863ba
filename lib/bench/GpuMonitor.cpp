//===- lib/bench/GpuMonitor.cpp - NVML sampling through dlopen -------------===//
//
// Declares the handful of NVML entry points it needs (stable C ABI, see
// nvml.h: nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByIndex_v2,
// nvmlDeviceGetName, nvmlDeviceGetPowerUsage in milliwatts,
// nvmlDeviceGetTemperature with NVML_TEMPERATURE_GPU = 0) and resolves them
// with dlsym, so builds need no NVIDIA headers or libraries.
//
//===----------------------------------------------------------------------===//
#include "kiln/bench/GpuMonitor.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace kiln::bench {
namespace {

using NvmlDevice = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleFn = int (*)(unsigned, NvmlDevice*);
using NameFn = int (*)(NvmlDevice, char*, unsigned);
using PowerFn = int (*)(NvmlDevice, unsigned*);
using TemperatureFn = int (*)(NvmlDevice, int, unsigned*);
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;

}  // namespace

struct GpuMonitor::Impl {
  void* library = nullptr;
  ShutdownFn shutdown = nullptr;
  NameFn name = nullptr;
  PowerFn power = nullptr;
  TemperatureFn temperature = nullptr;
  NvmlDevice device = nullptr;
  std::string reason;

  std::thread sampler;
  std::atomic<bool> running{false};
  std::mutex mutex;
  double powerSum = 0, powerMax = 0, temperatureMax = 0;
  unsigned samples = 0;

  void sampleOnce() {
    unsigned milliwatts = 0, celsius = 0;
    bool havePower = power(device, &milliwatts) == kNvmlSuccess;
    bool haveTemperature = temperature(device, kNvmlTemperatureGpu, &celsius) == kNvmlSuccess;
    if (!havePower && !haveTemperature) return;
    std::lock_guard<std::mutex> lock(mutex);
    double watts = milliwatts / 1000.0;
    powerSum += watts;
    powerMax = std::max(powerMax, watts);
    temperatureMax = std::max(temperatureMax, double(celsius));
    ++samples;
  }
};

GpuMonitor::GpuMonitor() : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!m.library) {
    m.reason = "NVML not found (libnvidia-ml.so.1 comes with the NVIDIA driver)";
    return;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(m.library, "nvmlInit_v2"));
  auto handle = reinterpret_cast<HandleFn>(dlsym(m.library, "nvmlDeviceGetHandleByIndex_v2"));
  m.shutdown = reinterpret_cast<ShutdownFn>(dlsym(m.library, "nvmlShutdown"));
  m.name = reinterpret_cast<NameFn>(dlsym(m.library, "nvmlDeviceGetName"));
  m.power = reinterpret_cast<PowerFn>(dlsym(m.library, "nvmlDeviceGetPowerUsage"));
  m.temperature = reinterpret_cast<TemperatureFn>(dlsym(m.library, "nvmlDeviceGetTemperature"));
  if (!init || !handle || !m.shutdown || !m.name || !m.power || !m.temperature) {
    m.reason = "NVML lacks an expected entry point";
  } else if (init() != kNvmlSuccess) {
    m.reason = "nvmlInit failed (no NVIDIA GPU or driver)";
    m.shutdown = nullptr;
  } else if (handle(0, &m.device) != kNvmlSuccess) {
    m.reason = "NVML sees no GPU 0";
    m.device = nullptr;
  }
}

GpuMonitor::~GpuMonitor() {
  stop();
  if (impl_->shutdown) impl_->shutdown();
  if (impl_->library) dlclose(impl_->library);
}

bool GpuMonitor::available() const { return impl_->device != nullptr; }
const std::string& GpuMonitor::reason() const { return impl_->reason; }

std::string GpuMonitor::deviceName() const {
  if (!available()) return "";
  char buf[96] = {};
  return impl_->name(impl_->device, buf, sizeof buf - 1) == kNvmlSuccess ? std::string(buf) : std::string();
}

void GpuMonitor::start(unsigned periodMs) {
  if (!available() || impl_->running) return;
  Impl& m = *impl_;
  m.powerSum = m.powerMax = m.temperatureMax = 0;
  m.samples = 0;
  m.running = true;
  m.sampler = std::thread([&m, periodMs] {
    while (m.running) {
      m.sampleOnce();
      std::this_thread::sleep_for(std::chrono::milliseconds(periodMs));
    }
  });
}

std::optional<GpuSample> GpuMonitor::stop() {
  Impl& m = *impl_;
  if (!m.running) return std::nullopt;
  m.running = false;
  m.sampler.join();
  m.sampleOnce();  // at least one sample even for runs shorter than the period
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.samples == 0) return std::nullopt;
  return GpuSample{deviceName(), m.powerSum / m.samples, m.powerMax, m.temperatureMax, m.samples};
}

}  // namespace kiln::bench
