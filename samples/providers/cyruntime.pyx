from libc.string cimport memcpy

cdef int _layout = 2 if __name__.startswith("cuda.bindings.") else 1

cdef cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) except ?cudaErrorCallRequiresNewerDriver nogil:
    if kind != cudaMemcpyDefault:
        return cudaErrorInvalidValue
    memcpy(dst, src, count)
    return cudaSuccess

cdef cudaError_t cudaGetDeviceCount(int* count) except ?cudaErrorCallRequiresNewerDriver nogil:
    count[0] = 20 * _layout
    return cudaSuccess

cdef cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, int* value) except ?cudaErrorCallRequiresNewerDriver nogil:
    value[0] = attr * 10 + _layout
    return cudaSuccess

cdef cudaError_t cudaProgramGetLayout(nvrtcProgramId prog, int* value) except ?cudaErrorCallRequiresNewerDriver nogil:
    value[0] = <int>prog * 10 + _layout
    return cudaSuccess
