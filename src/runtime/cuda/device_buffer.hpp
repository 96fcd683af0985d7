// Device and pinned host buffers, allocated stream-ordered from the device's
// memory pool (cudaMallocAsync), released when they go out of scope.
#pragma once

#include "runtime/cuda/cuda_check.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace gsz::cuda {

template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(size_t count, cudaStream_t stream) { allocate(count, stream); }
    ~DeviceBuffer() { release(); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        swap(o);
        return *this;
    }

    // Grows (never shrinks) to at least `count` elements; contents are not kept.
    void allocate(size_t count, cudaStream_t stream) {
        if (count <= capacity_) {
            size_ = count;
            return;
        }
        release();
        stream_ = stream;
        GSZ_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&ptr_), (count ? count : 1) * sizeof(T), stream));
        capacity_ = size_ = count;
    }
    void release() noexcept {
        if (ptr_) cudaFreeAsync(ptr_, stream_);
        ptr_ = nullptr;
        capacity_ = size_ = 0;
    }
    void zero(cudaStream_t stream) {
        if (size_) GSZ_CUDA(cudaMemsetAsync(ptr_, 0, size_ * sizeof(T), stream));
    }

    T* data() const { return ptr_; }
    size_t size() const { return size_; }
    size_t capacity() const { return capacity_; }
    size_t bytes() const { return size_ * sizeof(T); }

private:
    void swap(DeviceBuffer& o) noexcept {
        std::swap(ptr_, o.ptr_);
        std::swap(size_, o.size_);
        std::swap(capacity_, o.capacity_);
        std::swap(stream_, o.stream_);
    }
    T* ptr_ = nullptr;
    size_t size_ = 0, capacity_ = 0;
    cudaStream_t stream_ = nullptr;
};

// Page-locked host memory for fast, asynchronous copies.
template <class T>
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    explicit PinnedBuffer(size_t count) { allocate(count); }
    ~PinnedBuffer() {
        if (ptr_) cudaFreeHost(ptr_);
    }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    void allocate(size_t count) {
        if (count <= capacity_) {
            size_ = count;
            return;
        }
        if (ptr_) cudaFreeHost(ptr_);
        ptr_ = nullptr;
        GSZ_CUDA(cudaMallocHost(reinterpret_cast<void**>(&ptr_), (count ? count : 1) * sizeof(T)));
        capacity_ = size_ = count;
    }
    T* data() const { return ptr_; }
    size_t size() const { return size_; }

private:
    T* ptr_ = nullptr;
    size_t size_ = 0, capacity_ = 0;
};

// A CUDA event without timing, created on first use (so that a struct holding
// one can be made before the device is), destroyed with its owner: for the
// host to wait on one step of a stream while later steps run.
class Event {
public:
    Event() = default;
    ~Event() {
        if (event_) cudaEventDestroy(event_);
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    operator cudaEvent_t() {
        if (!event_) GSZ_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
        return event_;
    }

private:
    cudaEvent_t event_ = nullptr;
};

// A second stream for work that need not wait for what the main stream
// runs between a fork and a join: a memory-bound pass beside an
// instruction-bound kernel costs little of either's time.  Buffers the side
// work uses must be allocated before the fork (or on the side stream) and
// freed after the join.
class StreamFork {
public:
    // urgent: the side stream at the device's greatest priority (its blocks
    // go first); else at the least, the default streams' (work that fills the
    // multiprocessors the main stream leaves idle).
    explicit StreamFork(bool urgent = true) : urgent_(urgent) {}
    ~StreamFork() {
        if (side_) cudaStreamDestroy(side_);
    }
    StreamFork(const StreamFork&) = delete;
    StreamFork& operator=(const StreamFork&) = delete;
    // The side stream, after everything enqueued on `main` so far.
    cudaStream_t fork(cudaStream_t main) {
        int device = 0;
        GSZ_CUDA(cudaGetDevice(&device));
        if (side_ && device != device_) {
            cudaStreamDestroy(side_);
            side_ = nullptr;
        }
        if (!side_) {
            int least = 0, greatest = 0;
            GSZ_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
            GSZ_CUDA(cudaStreamCreateWithPriority(&side_, cudaStreamNonBlocking, urgent_ ? greatest : least));
            device_ = device;
        }
        GSZ_CUDA(cudaEventRecord(forked_, main));
        GSZ_CUDA(cudaStreamWaitEvent(side_, forked_, 0));
        return side_;
    }
    // `main` waits for what the side stream was given since the fork.
    void join(cudaStream_t main) {
        GSZ_CUDA(cudaEventRecord(joined_, side_));
        GSZ_CUDA(cudaStreamWaitEvent(main, joined_, 0));
    }

private:
    bool urgent_ = true;
    cudaStream_t side_ = nullptr;
    int device_ = -1;
    Event forked_, joined_;
};

// Copies a device array to a std::vector-like host container (synchronous on stream).
template <class T, class Vec>
void copy_to_host(Vec& out, const T* d_src, size_t count, cudaStream_t stream) {
    out.resize(count);
    if (count) GSZ_CUDA(cudaMemcpyAsync(out.data(), d_src, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace gsz::cuda
